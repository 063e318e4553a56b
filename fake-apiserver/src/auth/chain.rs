//! The authorizer chain as the server applies it (see the module doc of `auth`): the
//! privileged group, then the Node authorizer, then the pluggable authorizer, and the
//! impersonation modes that last worked. It owns the order of the chain, not what any
//! authorizer decides; the identities and requests it judges are `auth`'s.

use super::{AllowAuthenticated, Authorizer, Decision, Identity, RequestAttributes, node};
use crate::error::ApiError;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The authorizer chain, as the server applies it.
#[derive(Clone)]
pub struct Policy {
    pub authorizer: Arc<dyn Authorizer>,
    /// `AuthorizeNodeWithSelectors` (beta and on from 1.32, GA and locked from 1.34): a kubelet
    /// reads only its own Node and lists pods only by `spec.nodeName`. Off, a kubelet may read
    /// every Node and Pod, as the node rules of 1.31 and before allowed (the release-4.12
    /// daemon's node writer lists every Node with the kubelet's kubeconfig).
    pub node_selectors: bool,
    /// Per requestor, the impersonation mode that last worked (`modeIndexCache`).
    pub(super) impersonation_modes: Arc<Mutex<HashMap<String, usize>>>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(Arc::new(AllowAuthenticated))
    }
}

impl Policy {
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        Policy {
            authorizer,
            node_selectors: true,
            impersonation_modes: Arc::default(),
        }
    }

    /// Privileged group, then Node, then the pluggable authorizer (`union.New`).
    pub fn check(&self, who: &Identity, request: &RequestAttributes, store: &Store) -> Result<(), ApiError> {
        if who.in_group("system:masters") {
            return Ok(());
        }
        let mut reason = String::new();
        if let Some(node) = who.node_name() {
            match node::authorize(who, node, request, store, self.node_selectors) {
                Decision::Allow => return Ok(()),
                Decision::NoOpinion(why) => reason = why,
            }
        }
        match self.authorizer.authorize(who, request) {
            Ok(()) => Ok(()),
            Err(e) if reason.is_empty() => Err(e),
            Err(_) => Err(request.denial(who, &reason)),
        }
    }
}

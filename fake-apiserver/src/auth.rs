//! Who is asking, and may they: client-certificate and bearer-token authentication, the
//! pluggable authorizer, and the built-in NodeRestriction rule.
//!
//! As kube-apiserver does (apiserver-wire.md, "Authentication"), the TLS layer accepts any
//! client certificate; this module then verifies the chain against the client CAs at wall time.
//! An untrusted or expired certificate, or an unknown token, is a 401 on every request of the
//! connection; no credentials at all is `system:anonymous` when anonymous access is on and a
//! 401 when it is off. Identity: CN = user, O = groups.

use crate::error::ApiError;
use rustls_pki_types::{CertificateDer, UnixTime};
use std::collections::HashMap;
use std::sync::Arc;
use x509_parser::prelude::{FromDer, X509Certificate};

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
}

impl Identity {
    pub fn new(user: &str, groups: &[&str]) -> Self {
        Identity {
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    pub fn anonymous() -> Self {
        Identity::new("system:anonymous", &["system:unauthenticated"])
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    pub fn is_anonymous(&self) -> bool {
        self.user == "system:anonymous"
    }

    /// `Some("node-1")` for `system:node:node-1` in `system:nodes`.
    pub fn node_name(&self) -> Option<&str> {
        self.user
            .strip_prefix("system:node:")
            .filter(|_| self.in_group("system:nodes"))
    }
}

/// The result of authenticating a connection's certificate.
#[derive(Debug, Clone)]
pub enum CertAuth {
    None,
    Valid(Identity),
    /// Presented but not trusted at wall time; the reason is logged, never sent.
    Rejected(String),
}

/// What authentication needs: the trusted client CAs, tokens, and the anonymous switch.
#[derive(Debug, Clone, Default)]
pub struct Authenticator {
    anchors: Vec<CertificateDer<'static>>,
    tokens: HashMap<String, Identity>,
    anonymous: bool,
}

impl Authenticator {
    pub fn new(
        client_ca_pems: &[String],
        tokens: HashMap<String, Identity>,
        anonymous: bool,
    ) -> Result<Self, String> {
        use rustls_pki_types::pem::PemObject;
        let mut anchors = Vec::new();
        for pem in client_ca_pems {
            for der in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                anchors.push(der.map_err(|e| format!("client CA is not PEM: {e}"))?);
            }
        }
        Ok(Authenticator {
            anchors,
            tokens,
            anonymous,
        })
    }

    /// The subjects of the client CAs, for the TLS CertificateRequest hints.
    pub fn anchor_subjects(&self) -> Vec<Vec<u8>> {
        self.anchors
            .iter()
            .filter_map(|d| {
                X509Certificate::from_der(d)
                    .ok()
                    .map(|(_, c)| c.subject().as_raw().to_vec())
            })
            .collect()
    }

    /// Verify a presented chain (leaf first) at the wall-clock time now.
    pub fn verify_chain(&self, chain: &[CertificateDer<'_>]) -> CertAuth {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return CertAuth::None;
        };
        let anchors: Result<Vec<_>, _> = self
            .anchors
            .iter()
            .map(|d| webpki::anchor_from_trusted_cert(d).map(|a| a.to_owned()))
            .collect();
        let anchors = match anchors {
            Ok(a) => a,
            Err(e) => return CertAuth::Rejected(format!("client CA unusable: {e}")),
        };
        let verdict = webpki::EndEntityCert::try_from(leaf).and_then(|ee| {
            ee.verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &anchors,
                intermediates,
                UnixTime::now(),
                webpki::KeyUsage::client_auth(),
                None,
                None,
            )
            .map(|_| ())
        });
        if let Err(e) = verdict {
            return CertAuth::Rejected(e.to_string());
        }
        match identity_of(leaf) {
            Some(id) => CertAuth::Valid(id),
            None => CertAuth::Rejected("certificate has no common name".into()),
        }
    }

    /// The identity behind a request: its bearer token if it sent one, else its connection's
    /// certificate, else anonymous (if allowed).
    pub fn authenticate(&self, cert: &CertAuth, authorization: Option<&str>) -> Result<Identity, ApiError> {
        if let Some(header) = authorization {
            let token = header.strip_prefix("Bearer ").ok_or(ApiError::Unauthorized)?;
            return self
                .tokens
                .get(token.trim())
                .cloned()
                .ok_or(ApiError::Unauthorized);
        }
        match cert {
            CertAuth::Valid(id) => Ok(id.clone()),
            CertAuth::Rejected(_) => Err(ApiError::Unauthorized),
            CertAuth::None if self.anonymous => Ok(Identity::anonymous()),
            CertAuth::None => Err(ApiError::Unauthorized),
        }
    }
}

/// CN and O of a certificate.
pub fn identity_of(der: &CertificateDer<'_>) -> Option<Identity> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let user = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(Identity { user, groups })
}

/// What a resource request wants to do, as an authorizer sees it.
#[derive(Debug, Clone)]
pub struct RequestAttributes {
    /// get, list, watch, create, update, patch, delete, deletecollection
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl RequestAttributes {
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    fn forbidden(&self, message: String) -> ApiError {
        ApiError::Forbidden {
            message,
            resource: self.resource.clone(),
            name: self.name.clone(),
        }
    }

    /// kube-apiserver's RBAC denial wording.
    pub fn rbac_denial(&self, who: &Identity) -> ApiError {
        let object = match &self.name {
            Some(n) => format!("{} {n:?}", self.resource),
            None => self.resource.clone(),
        };
        let scope = match &self.namespace {
            Some(ns) => format!("in the namespace {ns:?}"),
            None => "at the cluster scope".into(),
        };
        self.forbidden(format!(
            "{object} is forbidden: User {:?} cannot {} resource {:?} in API group {:?} {scope}",
            who.user, self.verb, self.resource, self.group
        ))
    }
}

/// Decides whether an identity may make a request. The default allows every authenticated
/// identity; anonymous requests to resources are denied. NodeRestriction applies on top of
/// any authorizer.
pub trait Authorizer: Send + Sync + 'static {
    fn authorize(&self, who: &Identity, request: &RequestAttributes) -> Result<(), ApiError>;
}

/// Allow any authenticated identity.
#[derive(Debug, Default)]
pub struct AllowAuthenticated;

impl Authorizer for AllowAuthenticated {
    fn authorize(&self, who: &Identity, request: &RequestAttributes) -> Result<(), ApiError> {
        if who.is_anonymous() {
            Err(request.rbac_denial(who))
        } else {
            Ok(())
        }
    }
}

/// The NodeRestriction rule: a kubelet identity (`system:node:<name>` in `system:nodes`) may
/// write only its own Node, and beyond Nodes only events and leases.
pub fn node_restriction(who: &Identity, request: &RequestAttributes) -> Result<(), ApiError> {
    let Some(node) = who.node_name() else {
        return Ok(());
    };
    if !request.is_write() {
        return Ok(());
    }
    match (request.group.as_str(), request.resource.as_str()) {
        ("", "nodes") => match request.name.as_deref() {
            Some(target) if target == node => Ok(()),
            Some(target) => Err(request.forbidden(format!(
                "nodes {target:?} is forbidden: node {node:?} is not allowed to modify node {target:?}"
            ))),
            None if request.verb == "create" => Ok(()),
            None => Err(request.rbac_denial(who)),
        },
        ("" | "events.k8s.io", "events") | ("coordination.k8s.io", "leases") => Ok(()),
        _ => Err(request.rbac_denial(who)),
    }
}

/// The authorizer plus NodeRestriction, as the server applies them.
#[derive(Clone)]
pub struct Policy {
    pub authorizer: Arc<dyn Authorizer>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            authorizer: Arc::new(AllowAuthenticated),
        }
    }
}

impl Policy {
    pub fn check(&self, who: &Identity, request: &RequestAttributes) -> Result<(), ApiError> {
        if who.in_group("system:masters") {
            return Ok(());
        }
        self.authorizer.authorize(who, request)?;
        node_restriction(who, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(verb: &str, resource: &str, name: Option<&str>) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            group: String::new(),
            resource: resource.into(),
            subresource: None,
            namespace: None,
            name: name.map(str::to_string),
        }
    }

    #[test]
    fn node_identities_write_only_their_own_node() {
        let kubelet = Identity::new("system:node:node-1", &["system:nodes"]);
        let policy = Policy::default();
        policy
            .check(&kubelet, &attrs("patch", "nodes", Some("node-1")))
            .unwrap();
        policy
            .check(&kubelet, &attrs("get", "nodes", Some("node-2")))
            .unwrap();
        let e = policy
            .check(&kubelet, &attrs("patch", "nodes", Some("node-2")))
            .unwrap_err();
        assert_eq!((e.code(), e.reason()), (403, "Forbidden"));
        assert_eq!(
            e.to_string(),
            "nodes \"node-2\" is forbidden: node \"node-1\" is not allowed to modify node \"node-2\""
        );
        assert_eq!(
            policy
                .check(&kubelet, &attrs("create", "configmaps", None))
                .unwrap_err()
                .code(),
            403
        );
        policy.check(&kubelet, &attrs("create", "events", None)).unwrap();
        // The same name without the group is not a kubelet.
        let impostor = Identity::new("system:node:node-1", &[]);
        policy
            .check(&impostor, &attrs("patch", "nodes", Some("node-2")))
            .unwrap();
    }

    #[test]
    fn anonymous_is_denied_resources() {
        let e = Policy::default()
            .check(&Identity::anonymous(), &attrs("list", "configmaps", None))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope"
        );
    }
}

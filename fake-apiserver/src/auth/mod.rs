//! Who is asking, and may they: client-certificate and bearer-token authentication,
//! impersonation, the authorizer chain, and the NodeRestriction admission plugin.
//!
//! As kube-apiserver does (apiserver-wire.md, "Authentication"), the TLS layer accepts any
//! client certificate; this module then verifies the chain against the client CAs at wall time.
//! An untrusted or expired certificate, or an unknown token, is a 401 on every request of the
//! connection; no credentials at all is `system:anonymous` when anonymous access is on and a
//! 401 when it is off. Identity: CN = user, O = groups.
//!
//! # Authorization
//!
//! The chain of a kube-apiserver started with `--authorization-mode=Node,RBAC`, in its order:
//! `system:masters` may do anything; then the Node authorizer (`node`) decides for kubelet
//! identities (`system:node:<name>` in `system:nodes`); whatever it has no opinion on goes to
//! the pluggable [`Authorizer`], which stands for RBAC. The default, [`AllowAuthenticated`], is
//! RBAC as the identities this server mints meet it: every authenticated user may do anything
//! (the harness's service accounts are bound by the operator's manifests), nodes get nothing
//! (the `system:node` ClusterRoleBinding has had no subjects since 1.8), and nobody outside
//! `system:masters` may impersonate (only `cluster-admin` holds the `impersonate` verbs). A
//! refusal is 1.36's `ForbiddenStatusError`, the Node authorizer's reason appended. The chain
//! itself, in that order, is `chain`'s [`Policy`].
//!
//! After authorization, writes of kubelet identities pass the NodeRestriction admission plugin
//! (`node_restriction`); impersonation headers are honoured or refused by `impersonation`.
//!
//! Not modelled: RBAC objects (Roles and bindings are not served); the Node authorizer's graph
//! edges through PersistentVolumeClaims, PersistentVolumes, ResourceClaims, VolumeAttachments,
//! CSINodes, ResourceSlices and PodCertificateRequests (none of them is served);
//! OpenShift's carry that lets a kubelet register with `node-role.kubernetes.io/*` labels
//! (upstream refuses them, and so does this server).

mod chain;
mod impersonation;
mod node;
mod node_restriction;

pub use chain::Policy;
pub(crate) use impersonation::impersonate;
pub(crate) use node_restriction::{Operation, admit};

use crate::error::ApiError;
use rustls_pki_types::{CertificateDer, UnixTime};
use std::collections::{BTreeMap, HashMap};
use x509_parser::prelude::{FromDer, X509Certificate};

/// An authenticated (or impersonated) user, as apiserver's `user.Info` holds one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
    /// Set only by `Impersonate-Uid`.
    pub uid: String,
    /// Set only by `Impersonate-Extra-*`.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Identity {
    pub fn new(user: &str, groups: &[&str]) -> Self {
        Identity {
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Identity::default()
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

    /// `Some("node-1")` for `system:node:node-1` in `system:nodes` (apiserver
    /// `nodeidentifier.NodeIdentity`; `Some("")` for a node it cannot name).
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

    /// The identity behind a request, as kube-apiserver's union authenticator finds it: the
    /// connection's certificate, else the bearer token, the first that authenticates winning.
    /// One that fails (an untrusted certificate, an unknown token) only says so when nothing
    /// else authenticates; then it is a 401, anonymous access or not. An `Authorization`
    /// header that holds no bearer token (`Basic …`, `Bearer` alone) is nobody's to judge.
    pub fn authenticate(&self, cert: &CertAuth, authorization: Option<&str>) -> Result<Identity, ApiError> {
        let mut refused = matches!(cert, CertAuth::Rejected(_));
        if let CertAuth::Valid(id) = cert {
            return Ok(id.clone());
        }
        if let Some(token) = authorization.and_then(bearer_token) {
            match self.tokens.get(token) {
                Some(id) => return Ok(id.clone()),
                None => refused = true,
            }
        }
        if self.anonymous && !refused {
            Ok(Identity::anonymous())
        } else {
            Err(ApiError::Unauthorized)
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header, as apiserver's `bearertoken`
/// authenticator reads it: the scheme in any case, the token up to the next space, none when
/// it is empty.
fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
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
    Some(Identity {
        user,
        groups,
        ..Identity::default()
    })
}

/// What a request wants to do, as an authorizer sees it (apiserver `authorizer.Attributes`,
/// built from the URL as `request.RequestInfoFactory` builds it).
#[derive(Debug, Clone, Default)]
pub struct RequestAttributes {
    /// get, list, watch, create, update, patch, delete, deletecollection; for a request for no
    /// resource the lower-cased method; `impersonate…` for impersonation checks.
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    /// The URL's name; on list and watch, the name a `metadata.name=` field selector pins.
    pub name: Option<String>,
    /// The `fieldSelector` of a list, watch or deletecollection.
    pub field_selector: Option<String>,
    /// The path of a request for no resource (discovery, OpenAPI, health); `None` for resources.
    pub path: Option<String>,
}

impl RequestAttributes {
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    /// `schema.GroupResource.String()`: `resource` or `resource.group`.
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// The value an exact `field=value` (or `==`) requirement of the field selector pins
    /// (apimachinery `fields.Selector.RequiresExactMatch`).
    pub fn field_value(&self, field: &str) -> Option<&str> {
        self.field_selector.as_deref()?.split(',').find_map(|term| {
            let (f, v) = term
                .split_once("==")
                .or_else(|| term.split_once('=').filter(|(f, _)| !f.ends_with('!')))?;
            (f.trim() == field).then_some(v.trim())
        })
    }

    /// `apierrors.NewForbidden(groupResource, name, message)`: `Status` message and details.
    pub fn forbidden_because(&self, name: Option<&str>, message: String) -> ApiError {
        let name = name.filter(|n| !n.is_empty()).map(str::to_string);
        let prefix = match (self.resource.is_empty(), &name) {
            (true, _) => "forbidden".to_string(),
            (false, Some(n)) => format!("{} {n:?} is forbidden", self.qualified_resource()),
            (false, None) => format!("{} is forbidden", self.qualified_resource()),
        };
        ApiError::Forbidden {
            message: format!("{prefix}: {message}"),
            group: self.group.clone(),
            resource: self.resource.clone(),
            name,
        }
    }

    /// An authorizer's refusal (apiserver `responsewriters.ForbiddenStatusError`), with the
    /// reason the authorizers gave, if any.
    pub fn denial(&self, who: &Identity, reason: &str) -> ApiError {
        let action = match &self.path {
            Some(path) => format!("User {:?} cannot {} path {path:?}", who.user, self.verb),
            None => {
                let resource = match &self.subresource {
                    Some(sub) => format!("{}/{sub}", self.resource),
                    None => self.resource.clone(),
                };
                let scope = match &self.namespace {
                    Some(ns) => format!("in the namespace {ns:?}"),
                    None => "at the cluster scope".into(),
                };
                format!(
                    "User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
                    who.user, self.verb, self.group
                )
            }
        };
        // Nothing that reads like HTML (`sanitizer` in responsewriters/errors.go).
        let action = action
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let message = if reason.is_empty() {
            action
        } else {
            format!("{action}: {reason}")
        };
        self.forbidden_because(self.name.as_deref(), message)
    }

    /// kube-apiserver's RBAC denial wording (a refusal without a reason).
    pub fn rbac_denial(&self, who: &Identity) -> ApiError {
        self.denial(who, "")
    }
}

/// The RBAC stand-in of the chain (see the module doc): `Err` is a refusal.
pub trait Authorizer: Send + Sync + 'static {
    fn authorize(&self, who: &Identity, request: &RequestAttributes) -> Result<(), ApiError>;
}

/// RBAC as the identities this server mints meet it (see the module doc).
#[derive(Debug, Default)]
pub struct AllowAuthenticated;

impl Authorizer for AllowAuthenticated {
    fn authorize(&self, who: &Identity, request: &RequestAttributes) -> Result<(), ApiError> {
        let refused =
            who.is_anonymous() || who.node_name().is_some() || request.verb.starts_with("impersonate");
        if refused {
            Err(request.rbac_denial(who))
        } else {
            Ok(())
        }
    }
}

/// An authorizer's verdict, where one may pass the request on (`authorizer.Decision`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Not this authorizer's to allow; the reason is kept for the refusal.
    NoOpinion(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn attrs(verb: &str, resource: &str, name: Option<&str>) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            resource: resource.into(),
            name: name.map(str::to_string),
            ..RequestAttributes::default()
        }
    }

    #[test]
    fn anonymous_is_denied_resources() {
        let e = Policy::default()
            .check(
                &Identity::anonymous(),
                &attrs("list", "configmaps", None),
                &Store::new(Default::default()),
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope"
        );
    }

    #[test]
    fn denials_name_the_subresource_and_qualify_the_group() {
        let who = Identity::new("u", &[]);
        let mut a = attrs("patch", "leases", Some("x"));
        a.group = "coordination.k8s.io".into();
        a.subresource = Some("status".into());
        a.namespace = Some("ns".into());
        let e = a.denial(&who, "because");
        assert_eq!(
            e.to_string(),
            "leases.coordination.k8s.io \"x\" is forbidden: User \"u\" cannot patch resource \"leases/status\" in API group \"coordination.k8s.io\" in the namespace \"ns\": because"
        );
        assert_eq!(
            e.status()["details"],
            serde_json::json!({"name": "x", "group": "coordination.k8s.io", "kind": "leases"})
        );
        let path = RequestAttributes {
            verb: "get".into(),
            path: Some("/api<x>".into()),
            ..RequestAttributes::default()
        };
        let e = path.rbac_denial(&who);
        assert_eq!(
            e.to_string(),
            "forbidden: User \"u\" cannot get path \"/api&lt;x&gt;\""
        );
        assert_eq!(e.status()["details"], serde_json::json!({}));
    }

    #[test]
    fn exact_field_matches() {
        let mut a = attrs("list", "pods", None);
        for (selector, want) in [
            ("spec.nodeName=n1", Some("n1")),
            ("metadata.name=x,spec.nodeName==n1", Some("n1")),
            ("spec.nodeName!=n1", None),
            ("spec.nodeNameX=n1", None),
        ] {
            a.field_selector = Some(selector.into());
            assert_eq!(a.field_value("spec.nodeName"), want, "{selector}");
        }
    }
}

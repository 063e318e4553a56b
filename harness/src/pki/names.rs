//! The names a scenario may write for a certificate of the catalogue (`fixtures/signers.yaml`),
//! and the Secret each stands for. Pure: it reads the catalogue only.
//!
//! OpenShift people name a certificate three ways, and each means the Secret the certificate
//! lives in:
//! - the Secret's name (`kube-apiserver-to-kubelet-signer`, `csr-signer-signer`, `csr-signer`);
//! - the common name of the certificate it holds: the installer's first one
//!   (`kubelet-signer` is the installer's first csr-signer-signer, seed MCO-499: "called
//!   kubelet-signer until the first rotation"; `kube-apiserver-lb-signer`), or a signer-kind
//!   target's (`kube-csr-signer`, `kube-csr-signer_@1675718562`);
//! - the name an operator gives what it issues, `<operator namespace>_<secret>@<unix>`
//!   (`openshift-kube-controller-manager-operator_csr-signer-signer`, library-go `crypto.go`).
//!
//! A name none of these matches is refused with every name accepted and what each stands for.

use super::catalogue::{Catalogue, TargetKind};

/// What a written name stands for: a signer or a target of the catalogue, by its Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateName {
    /// What the scenario wrote.
    pub written: String,
    /// The Secret's name (the catalogue's name for the signer or target).
    pub name: String,
    pub namespace: String,
    pub role: Role,
    /// A target's signer.
    pub issued_by: Option<String>,
    /// Why `written` names this Secret, when it is not the Secret's own name: a sentence
    /// messages may quote ("kubelet-signer is the CN of the installer's first csr-signer-signer").
    pub alias: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A CA the cluster rotates; it has a bundle.
    Signer,
    /// A certificate a signer issues: a CA of its own (KCM-O's `csr-signer`), with the bundle
    /// that collects it, or a client certificate with none.
    Target { kind: TargetKind },
}

impl CertificateName {
    /// The name with what it stands for, for messages: `kubelet-signer (the CN of …)`.
    pub fn described(&self) -> String {
        match &self.alias {
            Some(why) => format!("{} ({why})", self.written),
            None => self.written.clone(),
        }
    }

    /// Whether the certificate signs others (a signer, or a signer-kind target).
    pub fn is_ca(&self) -> bool {
        matches!(
            self.role,
            Role::Signer
                | Role::Target {
                    kind: TargetKind::Signer
                }
        )
    }
}

/// A common name that names a Secret other than by the Secret's own name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonName {
    pub common_name: String,
    /// The Secret it names.
    pub name: String,
    pub namespace: String,
    pub role: Role,
    /// Why, as a sentence messages quote.
    pub why: String,
}

/// An unknown name, with every name the catalogue accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no signer or target {written:?} in fixtures/signers.yaml; signers: {signers}; targets: {targets}; a certificate's CN names the Secret it lives in: {aliases}"
)]
pub struct UnknownName {
    pub written: String,
    pub signers: String,
    pub targets: String,
    pub aliases: String,
}

impl Catalogue {
    /// The Secret `written` names (see the module's rules), or why it names none.
    pub fn resolve(&self, written: &str) -> Result<CertificateName, UnknownName> {
        let found = |name: &str, namespace: &str, role: Role, alias: Option<String>| CertificateName {
            written: written.to_string(),
            name: name.to_string(),
            namespace: namespace.to_string(),
            role,
            issued_by: self.target(name).map(|t| t.signer.clone()),
            alias,
        };
        if let Some(s) = self.signer(written) {
            return Ok(found(&s.name, &s.namespace, Role::Signer, None));
        }
        if let Some(t) = self.target(written) {
            return Ok(found(&t.name, &t.namespace, Role::Target { kind: t.kind }, None));
        }
        for a in self.common_names() {
            // A signer-kind target is named `<CN>_@<unix>` (library-go `MakeCAConfigForDuration`).
            let stamped = matches!(a.role, Role::Target { .. })
                && written
                    .strip_prefix(a.common_name.as_str())
                    .and_then(|rest| rest.strip_prefix('_'))
                    .is_some_and(unix_suffix);
            if written == a.common_name || stamped {
                return Ok(found(&a.name, &a.namespace, a.role, Some(a.why)));
            }
        }
        for s in &self.signers {
            let operator_name = format!("{}_{}", s.namespace, s.name);
            let stamped = written
                .strip_prefix(operator_name.as_str())
                .is_some_and(|rest| rest.is_empty() || unix_suffix(rest));
            if stamped {
                return Ok(found(
                    &s.name,
                    &s.namespace,
                    Role::Signer,
                    Some(format!("the name {} gives the {} it issues", s.namespace, s.name)),
                ));
            }
        }
        Err(UnknownName {
            written: written.to_string(),
            signers: self
                .signers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            targets: self
                .targets
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            aliases: self
                .common_names()
                .iter()
                .map(|a| format!("{} → {}", a.common_name, a.name))
                .chain(std::iter::once(
                    "<operator namespace>_<signer>@<unix> → <signer>".to_string(),
                ))
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// Every accepted name other than a Secret's own: each CN a certificate of the catalogue is
    /// first issued under, where it differs from its Secret's name, with the Secret it names
    /// and why.
    pub fn common_names(&self) -> Vec<CommonName> {
        let installers = self.signers.iter().filter_map(|s| {
            let cn = &s.installer.as_ref()?.common_name;
            (cn != &s.name).then(|| CommonName {
                common_name: cn.clone(),
                name: s.name.clone(),
                namespace: s.namespace.clone(),
                role: Role::Signer,
                why: format!("the CN of the installer's first {}", s.name),
            })
        });
        let targets = self
            .targets
            .iter()
            .filter(|t| t.kind == TargetKind::Signer && t.common_name != t.name)
            .map(|t| CommonName {
                common_name: t.common_name.clone(),
                name: t.name.clone(),
                namespace: t.namespace.clone(),
                role: Role::Target { kind: t.kind },
                why: format!("the CN of every {} its signer {} issues", t.name, t.signer),
            });
        installers.chain(targets).collect()
    }
}

/// `@<unix seconds>`, the stamp library-go puts after an operator-issued signer's name.
fn unix_suffix(rest: &str) -> bool {
    rest.strip_prefix('@')
        .is_some_and(|unix| !unix.is_empty() && unix.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue() -> Catalogue {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/signers.yaml");
        Catalogue::load(&file).unwrap()
    }

    /// Every way the seeds and OpenShift name a certificate, and the Secret it names.
    #[test]
    fn names_a_qe_engineer_writes_name_their_secrets() {
        let c = catalogue();
        let cases = [
            (
                "kube-apiserver-to-kubelet-signer",
                "kube-apiserver-to-kubelet-signer",
                false,
            ),
            ("csr-signer-signer", "csr-signer-signer", false),
            ("csr-signer", "csr-signer", false),
            ("kubelet-client", "kubelet-client", false),
            // The installer's CNs.
            ("kubelet-signer", "csr-signer-signer", true),
            ("kube-apiserver-lb-signer", "loadbalancer-serving-signer", true),
            (
                "kube-apiserver-localhost-signer",
                "localhost-serving-signer",
                true,
            ),
            (
                "kube-apiserver-service-network-signer",
                "service-network-serving-signer",
                true,
            ),
            // KCM-O's CSR signer as the seeds print it.
            ("kube-csr-signer", "csr-signer", true),
            ("kube-csr-signer_@1675718562", "csr-signer", true),
            // The operators' names for what they issue.
            (
                "openshift-kube-controller-manager-operator_csr-signer-signer",
                "csr-signer-signer",
                true,
            ),
            (
                "openshift-kube-apiserver-operator_node-system-admin-signer@1675718563",
                "node-system-admin-signer",
                true,
            ),
        ];
        for (written, secret, aliased) in cases {
            let name = c.resolve(written).unwrap_or_else(|e| panic!("{written}: {e}"));
            assert_eq!(
                (name.name.as_str(), name.alias.is_some()),
                (secret, aliased),
                "{written}"
            );
        }
        let kubelet_signer = c.resolve("kubelet-signer").unwrap();
        assert_eq!(
            kubelet_signer.described(),
            "kubelet-signer (the CN of the installer's first csr-signer-signer)"
        );
        assert_eq!(
            kubelet_signer.namespace,
            "openshift-kube-controller-manager-operator"
        );
        assert!(c.resolve("csr-signer").unwrap().is_ca());
        let client = c.resolve("kubelet-client").unwrap();
        assert!(!client.is_ca());
        assert_eq!(
            client.issued_by.as_deref(),
            Some("kube-apiserver-to-kubelet-signer")
        );
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_mapping() {
        let c = catalogue();
        for written in [
            "kubelet-signerr",
            "kube-csr-signer_@",
            "kube-csr-signer_@12x",
            "kubelet-signer_@1675718562",
            "openshift-kube-apiserver-operator_csr-signer-signer",
            "openshift-kube-apiserver-operator_node-system-admin-signer@",
        ] {
            assert!(c.resolve(written).is_err(), "{written} should be refused");
        }
        let e = c.resolve("kubelet-signerr").unwrap_err().to_string();
        for expected in [
            "\"kubelet-signerr\"",
            "csr-signer-signer",
            "kubelet-client",
            "kubelet-signer → csr-signer-signer",
            "kube-csr-signer → csr-signer",
        ] {
            assert!(e.contains(expected), "{expected:?} missing from: {e}");
        }
    }
}

//! The steps' own judgement: what a node should hold, computed here from API objects and the
//! upstream rule, never with the reference cluster's or daemon's code (`harness::agent`,
//! `harness::cluster`, `harness::pki`'s merge), so a bug in the reference cannot become the
//! expectation. Certificates are read with x509-parser directly; the upstream paths are written
//! out here again, as upstream spells them. API objects are read through the MCO model's
//! types (`harness::mco`: the API's schema, as `k8s_openapi` is for core objects); what their
//! fields mean — a `data:` URL's bytes, a mode's default, a bundle's certificates — is worked
//! out here.

use anyhow::{Context, bail};
use base64::Engine;
use harness::mco::controller_config::ControllerConfigSpec;
use harness::mco::machine_config::File as IgnitionFile;

/// `/run/machine-config-daemon-force` (MCO `pkg/daemon/constants`).
pub const FORCE_FILE: &str = "/run/machine-config-daemon-force";
/// Where the 4.16 daemon writes the internal registry's pull secret, and where a per-role
/// secret is mounted (release-4.16 `certificate_writer.go syncOSImagePullSecrets`).
pub const INTERNAL_REGISTRY_PULL_SECRET: &str = "/etc/mco/internal-registry-pull-secret.json";
pub const MOUNTED_PULL_SECRETS: &str = "/run/secrets/os-image-pull-secrets";

/// One certificate of a PEM bundle, as a reader of the file sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cert {
    pub der: Vec<u8>,
    /// The subject's common name (or the whole subject when it has none).
    pub name: String,
    /// The subject as Go's `pkix.Name.String()` would contain it (`CN=…,OU=…`).
    pub subject: String,
    /// NotBefore and NotAfter, in unix seconds.
    pub not_before: i64,
    pub not_after: i64,
}

/// Every certificate of a PEM text, in order. A block that is not a complete certificate is an
/// error: a reader (the kubelet) would not load the file.
pub fn certs(pem: &[u8]) -> anyhow::Result<Vec<Cert>> {
    let mut out = Vec::new();
    for block in x509_parser::pem::Pem::iter_from_buffer(pem) {
        let block = block.context("not a complete PEM bundle")?;
        if block.label != "CERTIFICATE" {
            continue;
        }
        let (_, cert) = x509_parser::parse_x509_certificate(&block.contents)
            .map_err(|e| anyhow::anyhow!("a PEM block is not an X.509 certificate: {e}"))?;
        let subject = cert.subject().to_string();
        let name = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .map(str::to_string)
            .unwrap_or_else(|| subject.clone());
        out.push(Cert {
            der: block.contents.clone(),
            name,
            subject,
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
        });
    }
    Ok(out)
}

/// The names of a bundle's certificates, in order.
pub fn names(pem: &[u8]) -> anyhow::Result<Vec<String>> {
    Ok(certs(pem)?.into_iter().map(|c| c.name).collect())
}

/// What MCO 4.12 renders into kubelet-ca.crt (release-4.12 `pkg/operator/sync.go`
/// `mergeCertWithCABundle`): the installer's initial bundle walked in order, each certificate
/// whose subject contains `kube-apiserver-to-kubelet-signer` replaced in place by the whole
/// bundle of that signer, every other certificate kept where it is.
pub fn merge_4_12(initial: &[Cert], kubelet_signer_bundle: &[Cert]) -> Vec<Cert> {
    let mut out = Vec::new();
    for cert in initial {
        if cert.subject.contains("kube-apiserver-to-kubelet-signer") {
            out.extend(kubelet_signer_bundle.iter().cloned());
        } else {
            out.push(cert.clone());
        }
    }
    out
}

/// What the 4.16 daemon's `writeToDisk` puts in a file for a ControllerConfig field: the
/// field's bytes, with a newline appended when they do not end in one.
pub fn written_by_4_16(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    out
}

/// A ControllerConfig spec field of bytes (base64 on the wire, as Go encodes `[]byte`), by its
/// JSON name, decoded; a field the spec lacks is an error.
pub fn spec_bytes(spec: &ControllerConfigSpec, field: &str) -> anyhow::Result<Vec<u8>> {
    let encoded = spec
        .other
        .get(field)
        .with_context(|| format!("controllerconfig machine-config-controller has no spec.{field}"))?
        .as_str()
        .unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .with_context(|| format!("controllerconfig spec.{field} is not base64"))
}

/// An Ignition file entry of a MachineConfig: its path, its contents (the `data:` URL
/// decoded here, RFC 2397) and its mode (Ignition's default 0644).
pub fn ignition_file(file: &IgnitionFile) -> anyhow::Result<(String, Vec<u8>, u32)> {
    let path = file.path.clone();
    if path.is_empty() {
        bail!("an Ignition file without a path");
    }
    let source = file
        .contents
        .as_ref()
        .and_then(|c| c.source.as_deref())
        .unwrap_or("data:,");
    let rest = source
        .strip_prefix("data:")
        .with_context(|| format!("{path}: source {source:?} is not a data: URL"))?;
    let (meta, data) = rest
        .split_once(',')
        .with_context(|| format!("{path}: a data: URL without a comma"))?;
    let contents = if meta.ends_with(";base64") {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .with_context(|| format!("{path}: bad base64"))?
    } else {
        percent_decode(data).with_context(|| format!("{path}: bad percent-encoding"))?
    };
    let mode = file.mode.unwrap_or(0o644);
    Ok((path, contents, mode))
}

fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Why two bundles differ, in a reader's words: which certificates one has and the other lacks,
/// or the order.
pub fn bundle_difference(seen: &[Cert], expected: &[Cert]) -> Option<String> {
    if seen.iter().map(|c| &c.der).eq(expected.iter().map(|c| &c.der)) {
        return None;
    }
    let missing: Vec<&str> = expected
        .iter()
        .filter(|e| !seen.iter().any(|s| s.der == e.der))
        .map(|c| c.name.as_str())
        .collect();
    let extra: Vec<&str> = seen
        .iter()
        .filter(|s| !expected.iter().any(|e| e.der == s.der))
        .map(|c| c.name.as_str())
        .collect();
    let names = |v: &[Cert]| v.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    Some(if missing.is_empty() && extra.is_empty() {
        format!(
            "the same certificates in another order: {:?}, expected {:?}",
            names(seen),
            names(expected)
        )
    } else {
        format!(
            "it lacks {missing:?} and has {extra:?} besides; it holds {:?}, expected {:?}",
            names(seen),
            names(expected)
        )
    })
}

/// The CA bundle a kubeconfig trusts (`certificate-authority-data` of its first cluster).
pub fn kubeconfig_ca(text: &[u8]) -> anyhow::Result<Vec<u8>> {
    let config: serde_yaml::Value = serde_yaml::from_slice(text).context("not YAML")?;
    let Some(encoded) = config["clusters"][0]["cluster"]["certificate-authority-data"].as_str() else {
        bail!("no clusters[0].cluster.certificate-authority-data");
    };
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .context("certificate-authority-data is not base64")
}

//! `certificates.k8s.io/v1` CertificateSigningRequests as kube-apiserver's registry strategy
//! treats them (`pkg/registry/certificates/certificates/strategy.go`, validation in
//! `pkg/apis/certificates/validation`): what a kubelet's TLS bootstrap and an approver meet.
//!
//! - On create the server fills `spec.username`, `spec.uid`, `spec.groups` and `spec.extra` from
//!   the requester, whatever the body said, and drops any `status`.
//! - The object itself never changes `spec` or `status` on update; `/status` writes the status
//!   but keeps the `Approved`/`Denied` conditions; `/approval` writes only those conditions and
//!   keeps the certificate.
//! - A create must carry a PEM `CERTIFICATE REQUEST`, a `signerName` and `usages`.
//!
//! Not modelled: signer-name syntax, usage values, the per-signer `approve`/`sign` RBAC checks,
//! `expirationSeconds` bounds, the one-certificate-only rule and certificate parsing on `/status`,
//! and Go's `asn1:` wording for a PEM block that is not a request.

use crate::auth::Identity;
use crate::error::{ApiError, Cause};
use crate::resource::ResourceInfo;
use base64::Engine;
use serde_json::{Map, Value, json};
use x509_parser::prelude::FromDer;

pub const GROUP: &str = "certificates.k8s.io";
pub const RESOURCE: &str = "certificatesigningrequests";

/// Whether `info` is the CSR resource.
pub fn is_csr(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.resource == RESOURCE
}

/// The condition types only `/approval` sets.
const DECISIONS: &[&str] = &["Approved", "Denied"];

/// What a create stores: the requester's identity in `spec`, no status; or the 422 the real
/// server answers for a missing or unparsable request, signer name or usages.
pub fn prepare_create(who: &Identity, value: &mut Value) -> Result<(), ApiError> {
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !value["spec"].is_object() {
        value["spec"] = json!({});
    }
    let mut causes = Vec::new();
    let spec = value["spec"].as_object_mut().expect("made an object above");
    // The order and wording of kube-apiserver 1.36 (checked against one): the request (a
    // missing one is `null`, not "required"), then usages, then the signer.
    let request = spec.get("request").and_then(Value::as_str);
    if let Some(encoded) = request
        && let Some(at) = first_non_base64(encoded)
    {
        return Err(ApiError::BadRequest(format!(
            "CertificateSigningRequest in version \"v1\" cannot be handled as a CertificateSigningRequest: illegal base64 data at input byte {at}"
        )));
    }
    if let Err(e) = request.map_or(Err(PEM_ERROR.to_string()), parse_request) {
        let shown = request.map_or("null".to_string(), |r| format!("{r:?}"));
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {shown}: {e}"),
            field: "spec.request".into(),
        });
    }
    if spec
        .get("usages")
        .and_then(Value::as_array)
        .is_none_or(|u| u.is_empty())
    {
        causes.push(Cause {
            reason: "FieldValueRequired",
            message: "Required value".into(),
            field: "spec.usages".into(),
        });
    }
    if spec
        .get("signerName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        causes.push(Cause {
            reason: "FieldValueRequired",
            message: "Required value".into(),
            field: "spec.signerName".into(),
        });
    }
    if !causes.is_empty() {
        return Err(ApiError::Invalid {
            group: GROUP.into(),
            kind: "CertificateSigningRequest".into(),
            name,
            causes,
        });
    }
    let mut groups = who.groups.clone();
    if !who.is_anonymous() && !groups.iter().any(|g| g == "system:authenticated") {
        groups.push("system:authenticated".into());
    }
    spec.insert("username".into(), json!(who.user));
    spec.remove("uid");
    if !who.uid.is_empty() {
        spec.insert("uid".into(), json!(who.uid));
    }
    spec.insert("groups".into(), json!(groups));
    spec.remove("extra");
    if !who.extra.is_empty() {
        spec.insert("extra".into(), json!(who.extra));
    }
    if let Some(object) = value.as_object_mut() {
        object.remove("status");
    }
    Ok(())
}

/// apiserver's `ParseCSR` error for anything but a PEM certificate request.
const PEM_ERROR: &str = "PEM block type must be CERTIFICATE REQUEST";

/// Where Go's base64 decoder gives up on `text` (it skips CR and LF), if it does.
fn first_non_base64(text: &str) -> Option<usize> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\r' | b'\n');
    text.bytes().position(|b| !allowed(b))
}

/// The CSR in `spec.request` (base64 of PEM), parsed; the error as apiserver's `ParseCSR` words
/// it.
pub fn parse_request(encoded: &str) -> Result<Vec<u8>, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("not base64: {e}"))?;
    let (_, block) = x509_parser::pem::parse_x509_pem(&pem).map_err(|_| PEM_ERROR.to_string())?;
    if block.label != "CERTIFICATE REQUEST" {
        return Err(PEM_ERROR.into());
    }
    x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
        .map_err(|e| format!("asn1: {e}"))?;
    Ok(block.contents)
}

/// Which part of a CSR an update may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The object: metadata only.
    Main,
    /// `/status`: the certificate and conditions other than the decisions.
    Status,
    /// `/approval`: the `Approved`/`Denied` conditions only.
    Approval,
}

/// `old` with what `part` lets `new` change.
pub fn prepare_update(part: Part, old: &Value, mut new: Value) -> Value {
    new["spec"] = old.get("spec").cloned().unwrap_or(json!({}));
    let old_status = old.get("status").cloned().unwrap_or(json!({}));
    let new_status = new.get("status").cloned().unwrap_or(json!({}));
    let status = match part {
        Part::Main => old_status,
        Part::Status => merge_conditions(&new_status, &old_status, |t| !DECISIONS.contains(&t)),
        Part::Approval => merge_conditions(&old_status, &new_status, |t| !DECISIONS.contains(&t)),
    };
    match status.as_object() {
        Some(s) if !s.is_empty() => new["status"] = status,
        _ => {
            if let Some(o) = new.as_object_mut() {
                o.remove("status");
            }
        }
    }
    new
}

/// `base` with its conditions: those whose type `from_base` accepts from `base`, the rest from
/// `other`.
fn merge_conditions(base: &Value, other: &Value, from_base: impl Fn(&str) -> bool) -> Value {
    let conditions = |v: &Value| v["conditions"].as_array().cloned().unwrap_or_default();
    let kind = |c: &Value| c["type"].as_str().unwrap_or("").to_string();
    let mut merged: Vec<Value> = conditions(base)
        .into_iter()
        .filter(|c| from_base(&kind(c)))
        .collect();
    merged.extend(conditions(other).into_iter().filter(|c| !from_base(&kind(c))));
    let mut status: Map<String, Value> = base.as_object().cloned().unwrap_or_default();
    if merged.is_empty() {
        status.remove("conditions");
    } else {
        status.insert("conditions".into(), json!(merged));
    }
    Value::Object(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_pem() -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "system:node:worker-0");
        let csr = params.serialize_request(&key).expect("csr");
        base64::engine::general_purpose::STANDARD.encode(csr.pem().expect("pem"))
    }

    #[test]
    fn a_create_takes_the_requester_and_drops_the_status() {
        let who = Identity::new(
            "system:serviceaccount:ns:node-bootstrapper",
            &["system:serviceaccounts"],
        );
        let mut csr = json!({"metadata": {"name": "csr-1"}, "spec": {
            "request": request_pem(), "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"], "username": "someone-else", "groups": ["x"]},
            "status": {"certificate": "Zm9v"}});
        prepare_create(&who, &mut csr).expect("valid");
        assert_eq!(
            csr["spec"]["username"],
            "system:serviceaccount:ns:node-bootstrapper"
        );
        assert_eq!(
            csr["spec"]["groups"],
            json!(["system:serviceaccounts", "system:authenticated"])
        );
        assert!(csr.get("status").is_none(), "{csr}");
    }

    #[test]
    fn a_create_without_request_signer_or_usages_names_each_field() {
        let who = Identity::new("u", &[]);
        let mut csr = json!({"metadata": {"name": "c"}, "spec": {"request": "bm90IHBlbQ=="}});
        let e = prepare_create(&who, &mut csr).expect_err("invalid");
        let ApiError::Invalid { causes, .. } = &e else {
            panic!("{e:?}")
        };
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["spec.request", "spec.usages", "spec.signerName"]);
        assert_eq!(
            causes[0].message,
            "Invalid value: \"bm90IHBlbQ==\": PEM block type must be CERTIFICATE REQUEST"
        );
        let mut missing = json!({"metadata": {"name": "c"}, "spec": {}});
        let e = prepare_create(&who, &mut missing).expect_err("invalid");
        assert!(
            e.to_string()
                .contains("spec.request: Invalid value: null: PEM block type"),
            "{e}"
        );
        let mut garbled = json!({"metadata": {"name": "c"}, "spec": {"request": "not base64!"}});
        let e = prepare_create(&who, &mut garbled).expect_err("invalid");
        assert_eq!(e.code(), 400, "{e}");
        assert!(
            e.to_string().ends_with("illegal base64 data at input byte 3"),
            "{e}"
        );
    }

    #[test]
    fn each_subresource_writes_its_own_part() {
        let old = json!({"spec": {"username": "a"}, "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        let forged = json!({"spec": {"username": "b"}, "status": {"certificate": "Y2VydA==",
            "conditions": [{"type": "Denied", "status": "True"}, {"type": "Failed", "status": "True"}]}});
        let main = prepare_update(Part::Main, &old, forged.clone());
        assert_eq!(main["spec"], old["spec"]);
        assert_eq!(main["status"], old["status"]);
        let status = prepare_update(Part::Status, &old, forged.clone());
        assert_eq!(status["status"]["certificate"], "Y2VydA==");
        let kinds: Vec<&str> = status["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["Failed", "Approved"]);
        let approval = prepare_update(Part::Approval, &old, forged);
        assert!(approval["status"].get("certificate").is_none(), "{approval}");
        let kinds: Vec<&str> = approval["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["Denied"]);
    }
}

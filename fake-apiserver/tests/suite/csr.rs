//! CertificateSigningRequests over the wire, as a kubelet's TLS bootstrap and an approver use
//! them: the server records who asked, whatever the body claims; the object, `/status` and
//! `/approval` each write only their own part; a create without a request, signer or usages is a
//! 422 naming each field. Runs against `APISERVER_KUBECONFIG` too.

use crate::common::{cluster, send};
use base64::Engine;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

/// A PKCS#10 request for `cn` in `system:nodes`: its PEM, base64-encoded as `spec.request` holds it.
pub(crate) fn request_pem(cn: &str) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    let csr = params.serialize_request(&key).expect("csr");
    base64::engine::general_purpose::STANDARD.encode(csr.pem().expect("pem"))
}

pub(crate) fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..10])
}

#[tokio::test]
async fn the_server_records_the_requester_and_each_subresource_writes_its_own_part() {
    let c = cluster().await;
    let user = unique("csr-requester");
    let requester = c.client_as(&user, &["system:masters"]).await;
    let name = unique("csr");
    let body = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": request_pem("system:node:worker-0"),
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"],
            "username": "system:node:someone-else", "groups": ["forged"]},
        "status": {"certificate": base64::engine::general_purpose::STANDARD.encode("forged")},
    });
    let r = send(
        &requester,
        "POST",
        CSRS,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["username"], json!(user), "{}", r.body);
    let groups = r.body["spec"]["groups"].as_array().cloned().unwrap_or_default();
    for wanted in ["system:masters", "system:authenticated"] {
        assert!(groups.contains(&json!(wanted)), "{wanted} missing: {}", r.body);
    }
    assert!(!groups.contains(&json!("forged")), "{}", r.body);
    assert!(r.body["status"].get("certificate").is_none(), "{}", r.body);

    let api: Api<CertificateSigningRequest> = Api::all(c.client.clone());
    // The object itself: a status in the body is ignored.
    let mut csr = api.get(&name).await.expect("get");
    csr.status = Some(
        serde_json::from_value(
            json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Forged"}]}),
        )
        .unwrap(),
    );
    let updated = api
        .replace(&name, &PostParams::default(), &csr)
        .await
        .expect("update");
    assert!(
        updated
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_none(),
        "{:?}",
        updated.status
    );

    // /approval: the decision, not a certificate.
    let mut csr = api.get(&name).await.expect("get");
    csr.status = Some(
        serde_json::from_value(json!({
            "certificate": base64::engine::general_purpose::STANDARD.encode("forged"),
            "conditions": [{"type": "Approved", "status": "True", "reason": "ByTest", "message": "approved by the test"}]}))
        .unwrap(),
    );
    let approved = api
        .replace_subresource("approval", &name, &PostParams::default(), &csr)
        .await
        .expect("approval");
    let status: Value = serde_json::to_value(&approved.status).unwrap();
    assert_eq!(status["conditions"][0]["type"], "Approved", "{status}");
    assert_eq!(status["conditions"][0]["reason"], "ByTest", "{status}");
    assert!(status.get("certificate").is_none(), "{status}");

    // /status: the certificate, while the decision stays.
    let mut csr = api.get(&name).await.expect("get");
    let certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    csr.status = Some(
        serde_json::from_value(json!({
            "certificate": base64::engine::general_purpose::STANDARD.encode(certificate),
            "conditions": []}))
        .unwrap(),
    );
    let issued = api.replace_status(&name, &PostParams::default(), &csr).await;
    match issued {
        Ok(issued) => {
            let status: Value = serde_json::to_value(&issued.status).unwrap();
            assert_eq!(status["conditions"][0]["type"], "Approved", "{status}");
        }
        // A real server checks the certificate is PEM it can parse; the fake does not.
        Err(kube::Error::Api(s))
            if c.fake_because(
                "an unparsable certificate on /status",
                "the real server validates it",
            )
            .is_none() =>
        {
            assert_eq!(s.code, 422, "{s:?}");
        }
        Err(e) => panic!("/status: {e}"),
    }
    let _ = api.delete(&name, &Default::default()).await;
    c.cleanup().await;
}

#[tokio::test]
async fn a_csr_without_request_signer_or_usages_is_invalid_naming_each_field() {
    let c = cluster().await;
    let name = unique("bad-csr");
    let body = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode("not a PEM block")},
    });
    let r = send(
        &c.client,
        "POST",
        CSRS,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid", "{}", r.body);
    assert_eq!(r.body["details"]["group"], "certificates.k8s.io", "{}", r.body);
    assert_eq!(
        r.body["details"]["kind"], "CertificateSigningRequest",
        "{}",
        r.body
    );
    let causes = r.body["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for field in ["spec.request", "spec.signerName", "spec.usages"] {
        assert!(
            causes.iter().any(|c| c["field"] == field),
            "no cause for {field}: {}",
            r.body
        );
    }
    let fields: Vec<&str> = causes.iter().filter_map(|c| c["field"].as_str()).collect();
    assert_eq!(
        fields,
        ["spec.request", "spec.usages", "spec.signerName"],
        "{}",
        r.body
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode("not a PEM block");
    assert_eq!(
        r.body["message"],
        format!(
            "CertificateSigningRequest.certificates.k8s.io \"{name}\" is invalid: [spec.request: Invalid value: \"{encoded}\": PEM block type must be CERTIFICATE REQUEST, spec.usages: Required value, spec.signerName: Required value]"
        ),
        "{}",
        r.body
    );
    // Not base64 at all: the body does not decode (400), as a []byte field in Go.
    let garbled = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": "not base64!", "signerName": "example.com/x", "usages": ["client auth"]},
    });
    let r = send(
        &c.client,
        "POST",
        CSRS,
        Some("application/json"),
        garbled.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "CertificateSigningRequest in version \"v1\" cannot be handled as a CertificateSigningRequest: illegal base64 data at input byte 3",
        "{}",
        r.body
    );
    let api: Api<CertificateSigningRequest> = Api::all(c.client.clone());
    assert!(api.get_opt(&name).await.expect("get").is_none(), "nothing stored");
    c.cleanup().await;
}

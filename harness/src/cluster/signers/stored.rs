//! A certificate Secret (`kubernetes.io/tls`, with library-go's annotations) as the signer
//! controller reads it back: its certificate, parsed, and its annotations. Plain data and its
//! reading; the controller's reads and writes (`store`) and its decisions are not here.

use crate::cluster::ClusterError;
use crate::pki::{IssuedCert, parse_certs};
use k8s_openapi::api::core::v1::Secret;
use std::collections::BTreeMap;

pub(super) fn stored_from_secret(secret: Secret) -> Result<Option<Stored>, ClusterError> {
    let data = secret.data.unwrap_or_default();
    let text = |k: &str| {
        data.get(k)
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .unwrap_or_default()
    };
    let (pem, key_pem) = (text("tls.crt"), text("tls.key"));
    let Some(parsed) = parse_certs(&pem)?.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some(Stored {
        cert: IssuedCert {
            pem,
            key_pem,
            common_name: parsed.common_name,
            issuer_common_name: parsed.issuer,
            not_before: parsed.not_before,
            not_after: parsed.not_after,
            serial: parsed.serial,
        },
        annotations: secret.metadata.annotations.unwrap_or_default(),
    }))
}

/// A certificate Secret as read back from the API server.
#[derive(Clone)]
pub(super) struct Stored {
    pub(super) cert: IssuedCert,
    pub(super) annotations: BTreeMap<String, String>,
}

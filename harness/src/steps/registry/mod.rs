//! 4.14 and 4.16 registry trust on the node: image registry CAs under `/etc/docker/certs.d` and
//! the internal registry's pull secret. The steps publish what the cluster and its administrator
//! publish (ConfigMaps, `image.config`, the image registry's service account); the operator
//! copies them into the ControllerConfig, and the oracle works out what that copy holds from
//! the same objects by upstream's rule.
//!
//! `cas`: the registry CAs (the cluster's and the user's) and the other CAs the ControllerConfig
//! carries to the node; `pull_secret`: the internal registry's pull secret, assembled by the
//! operator and merged on the node with a mounted one. What both need to read a step's list and
//! to write base64 is here.

mod cas;
mod pull_secret;

use base64::Engine;

/// The quoted names of a list such as `"a", "b" and "c"`.
fn quoted(list: &str) -> Vec<String> {
    list.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

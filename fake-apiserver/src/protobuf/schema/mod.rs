//! The messages this server reads in protobuf, as tables: each field's number and wire shape
//! (from the upstream `generated.proto` files), its Go field name (what a decode error names)
//! and how Go's `encoding/json` writes it (the struct's `json` tag: `omitempty`, pointer or
//! plain). A body decoded through these tables becomes the JSON document the same Go object
//! marshals to, so it then takes the path a JSON body takes.
//!
//! Only the kinds named in `KINDS` are modelled; the others are refused before any decoding.
//!
//! # Layout
//! - `types`: what a table is written in: a message, its fields, their wire and JSON shapes.
//! - `meta`: apimachinery's envelope, metadata, `DeleteOptions` and `Status`.
//! - `core`: core/v1 kinds.
//! - `groups`: the kinds of other API groups.

mod core;
mod groups;
mod meta;
mod types;

pub(super) use self::core::CONFIG_MAP;
use self::core::*;
pub(super) use groups::EXTRA_VALUE;
use groups::*;
pub(super) use meta::{DELETE_OPTIONS, LIST_META, QUANTITY, STATUS, TIMESTAMP, TYPE_META, UNKNOWN};
#[cfg(test)]
use meta::{OBJECT_META, OWNER_REFERENCE, PRECONDITIONS, STATUS_CAUSE, STATUS_DETAILS};
#[cfg(test)]
pub(crate) use types::Field;
pub(super) use types::{Json, Message, Ty};

/// The built-in kinds read in protobuf, by API group and kind.
pub(super) static KINDS: &[(&str, &str, &Message)] = &[
    ("", "ConfigMap", &CONFIG_MAP),
    ("", "Secret", &SECRET),
    ("", "Namespace", &NAMESPACE),
    ("", "ServiceAccount", &SERVICE_ACCOUNT),
    ("", "Event", &EVENT),
    ("", "Node", &NODE),
    ("coordination.k8s.io", "Lease", &LEASE),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        &CERTIFICATE_SIGNING_REQUEST,
    ),
    ("events.k8s.io", "Event", &EVENTS_EVENT),
];

/// Every table of a Go struct in Kubernetes' API packages, with the package that declares it
/// (relative to `k8s.io/`): what `tests::tables_match_the_upstream_sources` checks.
#[cfg(test)]
pub(super) static UPSTREAM: &[(&str, &Message)] = &[
    ("apimachinery/pkg/apis/meta/v1", &OBJECT_META),
    ("apimachinery/pkg/apis/meta/v1", &OWNER_REFERENCE),
    ("apimachinery/pkg/apis/meta/v1", &DELETE_OPTIONS),
    ("apimachinery/pkg/apis/meta/v1", &PRECONDITIONS),
    ("apimachinery/pkg/apis/meta/v1", &STATUS),
    ("apimachinery/pkg/apis/meta/v1", &STATUS_DETAILS),
    ("apimachinery/pkg/apis/meta/v1", &STATUS_CAUSE),
    ("apimachinery/pkg/apis/meta/v1", &LIST_META),
    ("api/core/v1", &CONFIG_MAP),
    ("api/core/v1", &SECRET),
    ("api/core/v1", &NAMESPACE),
    ("api/core/v1", &NAMESPACE_SPEC),
    ("api/core/v1", &NAMESPACE_STATUS),
    ("api/core/v1", &NAMESPACE_CONDITION),
    ("api/core/v1", &SERVICE_ACCOUNT),
    ("api/core/v1", &OBJECT_REFERENCE),
    ("api/core/v1", &LOCAL_OBJECT_REFERENCE),
    ("api/core/v1", &EVENT),
    ("api/core/v1", &EVENT_SOURCE),
    ("api/core/v1", &EVENT_SERIES),
    ("api/core/v1", &NODE),
    ("api/core/v1", &NODE_SPEC),
    ("api/core/v1", &TAINT),
    ("api/core/v1", &NODE_CONFIG_SOURCE),
    ("api/core/v1", &CONFIG_MAP_NODE_CONFIG_SOURCE),
    ("api/core/v1", &NODE_STATUS),
    ("api/core/v1", &NODE_CONDITION),
    ("api/core/v1", &NODE_ADDRESS),
    ("api/core/v1", &NODE_DAEMON_ENDPOINTS),
    ("api/core/v1", &DAEMON_ENDPOINT),
    ("api/core/v1", &NODE_SYSTEM_INFO),
    ("api/core/v1", &NODE_SWAP_STATUS),
    ("api/core/v1", &CONTAINER_IMAGE),
    ("api/core/v1", &ATTACHED_VOLUME),
    ("api/core/v1", &NODE_CONFIG_STATUS),
    ("api/core/v1", &NODE_RUNTIME_HANDLER),
    ("api/core/v1", &NODE_RUNTIME_HANDLER_FEATURES),
    ("api/core/v1", &NODE_FEATURES),
    ("api/coordination/v1", &LEASE),
    ("api/coordination/v1", &LEASE_SPEC),
    ("api/certificates/v1", &CERTIFICATE_SIGNING_REQUEST),
    ("api/certificates/v1", &CSR_SPEC),
    ("api/certificates/v1", &CSR_STATUS),
    ("api/certificates/v1", &CSR_CONDITION),
    ("api/events/v1", &EVENTS_EVENT),
    ("api/events/v1", &EVENTS_EVENT_SERIES),
];

/// The message of a built-in kind this server reads in protobuf.
pub(super) fn kind(group: &str, kind: &str) -> Option<&'static Message> {
    KINDS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, m)| *m)
}

//! The messages this server reads in protobuf, as tables: each field's number and wire shape
//! (from the upstream `generated.proto` files), its Go field name (what a decode error names)
//! and how Go's `encoding/json` writes it (the struct's `json` tag: `omitempty`, pointer or
//! plain). A body decoded through these tables becomes the JSON document the same Go object
//! marshals to, so it then takes the path a JSON body takes.
//!
//! Only the kinds named in `KINDS` are modelled; the others are refused before any decoding.
//!
//! # Layout
//! - `meta`: apimachinery's envelope, metadata, `DeleteOptions` and `Status`.
//! - `core`: core/v1 kinds.
//! - `groups`: the kinds of other API groups.

/// One protobuf message: its Go type name (what the generated decoder's errors name) and its
/// fields in the Go struct's order (the order `encoding/json` writes them).
pub struct Message {
    pub go: &'static str,
    pub fields: &'static [Field],
}

pub struct Field {
    pub number: i32,
    pub json: &'static str,
    /// The Go struct field, as `proto: wrong wireType = 0 for field ObjectMeta` names it.
    pub go: &'static str,
    pub ty: Ty,
    pub json_rule: Json,
}

#[derive(Clone, Copy)]
pub enum Ty {
    String,
    Bool,
    Int32,
    Int64,
    /// `[]byte`: base64 in JSON.
    Bytes,
    Message(&'static Message),
    /// `metav1.Time`: a `Timestamp` on the wire, whole seconds in JSON (nanoseconds are read and
    /// dropped, as `Time.Unmarshal` drops them).
    Time,
    /// `metav1.MicroTime`: a `Timestamp` on the wire, microseconds in JSON.
    MicroTime,
    Strings,
    Messages(&'static Message),
    StringMap,
    BytesMap,
    /// `map[string]ExtraValue`: each value a message of strings on the wire, a list in JSON.
    StringsMap,
    /// `ResourceList`: each value a `Quantity` message on the wire (its string, field 1), that
    /// string in JSON. A quantity is kept as written (not parsed and put in canonical form, as
    /// a JSON body's is not either).
    QuantityMap,
    /// A message read for its framing only and not kept (`managedFields`: this server keeps no
    /// field owners).
    Dropped,
}

/// How `encoding/json` writes a field, from its Go type and tag.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Json {
    /// `omitempty` on a value: left out when zero; a struct (and a `Time`) is always written.
    OmitEmpty,
    /// No `omitempty`: always written, `null` for a nil slice or map.
    Always,
    /// A pointer with `omitempty`: written when the body carried the field.
    Pointer,
}

pub(super) const fn field(
    number: i32,
    json: &'static str,
    go: &'static str,
    ty: Ty,
    json_rule: Json,
) -> Field {
    Field {
        number,
        json,
        go,
        ty,
        json_rule,
    }
}

mod core;
mod groups;
mod meta;

pub use self::core::CONFIG_MAP;
use self::core::*;
pub use groups::EXTRA_VALUE;
use groups::*;
pub use meta::{DELETE_OPTIONS, LIST_META, QUANTITY, STATUS, TIMESTAMP, TYPE_META, UNKNOWN};
#[cfg(test)]
use meta::{OBJECT_META, OWNER_REFERENCE, PRECONDITIONS, STATUS_CAUSE, STATUS_DETAILS};

/// The built-in kinds read in protobuf, by API group and kind.
pub static KINDS: &[(&str, &str, &Message)] = &[
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
pub static UPSTREAM: &[(&str, &Message)] = &[
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
pub fn kind(group: &str, kind: &str) -> Option<&'static Message> {
    KINDS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, m)| *m)
}

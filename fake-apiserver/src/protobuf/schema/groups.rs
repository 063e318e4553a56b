//! The other API groups' kinds: coordination.k8s.io/v1 Lease, certificates.k8s.io/v1
//! CertificateSigningRequest, events.k8s.io/v1 Event.

use super::core::{EVENT_SOURCE, OBJECT_REFERENCE};
use super::meta::{METADATA, OBJECT_META};
use super::types::{
    Json::{Always, OmitEmpty, Pointer},
    Message, Ty, field,
};

pub(super) static LEASE: Message = Message {
    go: "Lease",
    fields: &[
        METADATA,
        field(2, "spec", "Spec", Ty::Message(&LEASE_SPEC), OmitEmpty),
    ],
};

pub(super) static LEASE_SPEC: Message = Message {
    go: "LeaseSpec",
    fields: &[
        field(1, "holderIdentity", "HolderIdentity", Ty::String, Pointer),
        field(
            2,
            "leaseDurationSeconds",
            "LeaseDurationSeconds",
            Ty::Int32,
            Pointer,
        ),
        field(3, "acquireTime", "AcquireTime", Ty::MicroTime, Pointer),
        field(4, "renewTime", "RenewTime", Ty::MicroTime, Pointer),
        field(5, "leaseTransitions", "LeaseTransitions", Ty::Int32, Pointer),
        field(6, "strategy", "Strategy", Ty::String, Pointer),
        field(7, "preferredHolder", "PreferredHolder", Ty::String, Pointer),
    ],
};

pub(super) static CERTIFICATE_SIGNING_REQUEST: Message = Message {
    go: "CertificateSigningRequest",
    fields: &[
        METADATA,
        field(2, "spec", "Spec", Ty::Message(&CSR_SPEC), Always),
        field(3, "status", "Status", Ty::Message(&CSR_STATUS), OmitEmpty),
    ],
};

pub(super) static CSR_SPEC: Message = Message {
    go: "CertificateSigningRequestSpec",
    fields: &[
        field(1, "request", "Request", Ty::Bytes, Always),
        field(7, "signerName", "SignerName", Ty::String, Always),
        field(8, "expirationSeconds", "ExpirationSeconds", Ty::Int32, Pointer),
        field(5, "usages", "Usages", Ty::Strings, OmitEmpty),
        field(2, "username", "Username", Ty::String, OmitEmpty),
        field(3, "uid", "UID", Ty::String, OmitEmpty),
        field(4, "groups", "Groups", Ty::Strings, OmitEmpty),
        field(6, "extra", "Extra", Ty::StringsMap, OmitEmpty),
    ],
};

/// The value of a CSR's `extra` map on the wire.
pub(crate) static EXTRA_VALUE: Message = Message {
    go: "ExtraValue",
    fields: &[field(1, "items", "Items", Ty::Strings, OmitEmpty)],
};

pub(super) static CSR_STATUS: Message = Message {
    go: "CertificateSigningRequestStatus",
    fields: &[
        field(
            1,
            "conditions",
            "Conditions",
            Ty::Messages(&CSR_CONDITION),
            OmitEmpty,
        ),
        field(2, "certificate", "Certificate", Ty::Bytes, OmitEmpty),
    ],
};

pub(super) static CSR_CONDITION: Message = Message {
    go: "CertificateSigningRequestCondition",
    fields: &[
        field(1, "type", "Type", Ty::String, Always),
        field(6, "status", "Status", Ty::String, Always),
        field(2, "reason", "Reason", Ty::String, OmitEmpty),
        field(3, "message", "Message", Ty::String, OmitEmpty),
        field(4, "lastUpdateTime", "LastUpdateTime", Ty::Time, OmitEmpty),
        field(5, "lastTransitionTime", "LastTransitionTime", Ty::Time, OmitEmpty),
    ],
};

/// events.k8s.io/v1 `Event`, which client-go's newer event recorder writes.
pub(super) static EVENTS_EVENT: Message = Message {
    go: "Event",
    fields: &[
        field(1, "metadata", "ObjectMeta", Ty::Message(&OBJECT_META), Always),
        field(2, "eventTime", "EventTime", Ty::MicroTime, Always),
        field(3, "series", "Series", Ty::Message(&EVENTS_EVENT_SERIES), Pointer),
        field(
            4,
            "reportingController",
            "ReportingController",
            Ty::String,
            OmitEmpty,
        ),
        field(5, "reportingInstance", "ReportingInstance", Ty::String, OmitEmpty),
        field(6, "action", "Action", Ty::String, OmitEmpty),
        field(7, "reason", "Reason", Ty::String, OmitEmpty),
        field(
            8,
            "regarding",
            "Regarding",
            Ty::Message(&OBJECT_REFERENCE),
            OmitEmpty,
        ),
        field(9, "related", "Related", Ty::Message(&OBJECT_REFERENCE), Pointer),
        field(10, "note", "Note", Ty::String, OmitEmpty),
        field(11, "type", "Type", Ty::String, OmitEmpty),
        field(
            12,
            "deprecatedSource",
            "DeprecatedSource",
            Ty::Message(&EVENT_SOURCE),
            OmitEmpty,
        ),
        field(
            13,
            "deprecatedFirstTimestamp",
            "DeprecatedFirstTimestamp",
            Ty::Time,
            OmitEmpty,
        ),
        field(
            14,
            "deprecatedLastTimestamp",
            "DeprecatedLastTimestamp",
            Ty::Time,
            OmitEmpty,
        ),
        field(15, "deprecatedCount", "DeprecatedCount", Ty::Int32, OmitEmpty),
    ],
};

pub(super) static EVENTS_EVENT_SERIES: Message = Message {
    go: "EventSeries",
    fields: &[
        field(1, "count", "Count", Ty::Int32, Always),
        field(2, "lastObservedTime", "LastObservedTime", Ty::MicroTime, Always),
    ],
};

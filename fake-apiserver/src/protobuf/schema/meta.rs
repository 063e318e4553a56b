//! apimachinery's messages (`pkg/runtime`, `pkg/apis/meta/v1`): the envelope, object and list
//! metadata, times, `DeleteOptions` and `Status`.

use super::types::{
    Field,
    Json::{Always, OmitEmpty, Pointer},
    Message, Ty, field,
};

/// `runtime.Unknown`, the envelope after the `k8s\0` magic.
pub(crate) static UNKNOWN: Message = Message {
    go: "Unknown",
    fields: &[
        field(1, "typeMeta", "TypeMeta", Ty::Message(&TYPE_META), OmitEmpty),
        field(2, "raw", "Raw", Ty::Bytes, OmitEmpty),
        field(3, "contentEncoding", "ContentEncoding", Ty::String, OmitEmpty),
        field(4, "contentType", "ContentType", Ty::String, OmitEmpty),
    ],
};

pub(crate) static TYPE_META: Message = Message {
    go: "TypeMeta",
    fields: &[
        field(1, "apiVersion", "APIVersion", Ty::String, OmitEmpty),
        field(2, "kind", "Kind", Ty::String, OmitEmpty),
    ],
};

/// A `resource.Quantity` on the wire (apimachinery `pkg/api/resource`).
pub(crate) static QUANTITY: Message = Message {
    go: "Quantity",
    fields: &[field(1, "string", "String_", Ty::String, OmitEmpty)],
};

/// The wire form of `Time` and `MicroTime`.
pub(crate) static TIMESTAMP: Message = Message {
    go: "Timestamp",
    fields: &[
        field(1, "seconds", "Seconds", Ty::Int64, OmitEmpty),
        field(2, "nanos", "Nanos", Ty::Int32, OmitEmpty),
    ],
};

pub(super) static OBJECT_META: Message = Message {
    go: "ObjectMeta",
    fields: &[
        field(1, "name", "Name", Ty::String, OmitEmpty),
        field(2, "generateName", "GenerateName", Ty::String, OmitEmpty),
        field(3, "namespace", "Namespace", Ty::String, OmitEmpty),
        field(4, "selfLink", "SelfLink", Ty::String, OmitEmpty),
        field(5, "uid", "UID", Ty::String, OmitEmpty),
        field(6, "resourceVersion", "ResourceVersion", Ty::String, OmitEmpty),
        field(7, "generation", "Generation", Ty::Int64, OmitEmpty),
        field(8, "creationTimestamp", "CreationTimestamp", Ty::Time, OmitEmpty),
        field(9, "deletionTimestamp", "DeletionTimestamp", Ty::Time, Pointer),
        field(
            10,
            "deletionGracePeriodSeconds",
            "DeletionGracePeriodSeconds",
            Ty::Int64,
            Pointer,
        ),
        field(11, "labels", "Labels", Ty::StringMap, OmitEmpty),
        field(12, "annotations", "Annotations", Ty::StringMap, OmitEmpty),
        field(
            13,
            "ownerReferences",
            "OwnerReferences",
            Ty::Messages(&OWNER_REFERENCE),
            OmitEmpty,
        ),
        field(14, "finalizers", "Finalizers", Ty::Strings, OmitEmpty),
        field(17, "managedFields", "ManagedFields", Ty::Dropped, OmitEmpty),
    ],
};

pub(super) static OWNER_REFERENCE: Message = Message {
    go: "OwnerReference",
    fields: &[
        field(5, "apiVersion", "APIVersion", Ty::String, Always),
        field(1, "kind", "Kind", Ty::String, Always),
        field(3, "name", "Name", Ty::String, Always),
        field(4, "uid", "UID", Ty::String, Always),
        field(6, "controller", "Controller", Ty::Bool, Pointer),
        field(7, "blockOwnerDeletion", "BlockOwnerDeletion", Ty::Bool, Pointer),
    ],
};

pub(super) const METADATA: Field = field(1, "metadata", "ObjectMeta", Ty::Message(&OBJECT_META), OmitEmpty);

/// The body of a DELETE (`meta.k8s.io/v1`).
pub(crate) static DELETE_OPTIONS: Message = Message {
    go: "DeleteOptions",
    fields: &[
        field(1, "gracePeriodSeconds", "GracePeriodSeconds", Ty::Int64, Pointer),
        field(
            2,
            "preconditions",
            "Preconditions",
            Ty::Message(&PRECONDITIONS),
            Pointer,
        ),
        field(3, "orphanDependents", "OrphanDependents", Ty::Bool, Pointer),
        field(4, "propagationPolicy", "PropagationPolicy", Ty::String, Pointer),
        field(5, "dryRun", "DryRun", Ty::Strings, OmitEmpty),
        field(
            6,
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "IgnoreStoreReadErrorWithClusterBreakingPotential",
            Ty::Bool,
            Pointer,
        ),
    ],
};

pub(super) static PRECONDITIONS: Message = Message {
    go: "Preconditions",
    fields: &[
        field(1, "uid", "UID", Ty::String, Pointer),
        field(2, "resourceVersion", "ResourceVersion", Ty::String, Pointer),
    ],
};

/// Errors and a DELETE's success, when an answer is written in protobuf.
pub(crate) static STATUS: Message = Message {
    go: "Status",
    fields: &[
        field(1, "metadata", "ListMeta", Ty::Message(&LIST_META), OmitEmpty),
        field(2, "status", "Status", Ty::String, OmitEmpty),
        field(3, "message", "Message", Ty::String, OmitEmpty),
        field(4, "reason", "Reason", Ty::String, OmitEmpty),
        field(5, "details", "Details", Ty::Message(&STATUS_DETAILS), Pointer),
        field(6, "code", "Code", Ty::Int32, OmitEmpty),
    ],
};

pub(super) static STATUS_DETAILS: Message = Message {
    go: "StatusDetails",
    fields: &[
        field(1, "name", "Name", Ty::String, OmitEmpty),
        field(2, "group", "Group", Ty::String, OmitEmpty),
        field(3, "kind", "Kind", Ty::String, OmitEmpty),
        field(6, "uid", "UID", Ty::String, OmitEmpty),
        field(4, "causes", "Causes", Ty::Messages(&STATUS_CAUSE), OmitEmpty),
        field(5, "retryAfterSeconds", "RetryAfterSeconds", Ty::Int32, OmitEmpty),
    ],
};

pub(super) static STATUS_CAUSE: Message = Message {
    go: "StatusCause",
    fields: &[
        field(1, "reason", "Type", Ty::String, OmitEmpty),
        field(2, "message", "Message", Ty::String, OmitEmpty),
        field(3, "field", "Field", Ty::String, OmitEmpty),
    ],
};

/// A list's metadata; a list is this (field 1) and its items (field 2, each its kind's message).
pub(crate) static LIST_META: Message = Message {
    go: "ListMeta",
    fields: &[
        field(1, "selfLink", "SelfLink", Ty::String, OmitEmpty),
        field(2, "resourceVersion", "ResourceVersion", Ty::String, OmitEmpty),
        field(3, "continue", "Continue", Ty::String, OmitEmpty),
        field(4, "remainingItemCount", "RemainingItemCount", Ty::Int64, Pointer),
        field(5, "shardInfo", "ShardInfo", Ty::Dropped, Pointer),
    ],
};

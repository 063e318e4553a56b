//! The Go types of the built-in kinds, as tables: each kind's fields with the Go type a JSON
//! body must match (k8s.io/api at 1.36, apiextensions-apiserver for CRDs), named as Go's
//! `encoding/json` names them in decode errors.

/// A Go type, named as Go prints it in decode errors.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ty {
    /// A string type (`string`, `types.UID`, `v1.SecretType`).
    Str(&'static str),
    Bool,
    /// An integer type (`int64`, `int32`).
    Int(&'static str),
    /// `[]byte`: a base64 string.
    Bytes,
    /// `metav1.Time` or `MicroTime`: a string, read by the type's own unmarshaller.
    Time,
    Map(&'static Ty, &'static str),
    List(&'static Ty, &'static str),
    Struct(&'static Struct),
    /// A struct whose fields are not modelled here: any JSON object (`v1.NodeSpec`).
    Object(&'static str),
}

#[derive(Debug)]
pub(super) struct Struct {
    /// The struct's own name, as errors inside it name it (`ObjectMeta`).
    pub(super) name: &'static str,
    /// The type's qualified name (`v1.ObjectMeta`).
    pub(super) go: &'static str,
    pub(super) fields: &'static [(&'static str, Ty)],
}

const STRING: Ty = Ty::Str("string");
const STRINGS: Ty = Ty::List(&STRING, "[]string");
const STRING_MAP: Ty = Ty::Map(&STRING, "map[string]string");
const BYTES_MAP: Ty = Ty::Map(&Ty::Bytes, "map[string][]uint8");

pub(super) const OWNER_REFERENCE: Struct = Struct {
    name: "OwnerReference",
    go: "v1.OwnerReference",
    fields: &[
        ("apiVersion", STRING),
        ("kind", STRING),
        ("name", STRING),
        ("uid", Ty::Str("types.UID")),
        ("controller", Ty::Bool),
        ("blockOwnerDeletion", Ty::Bool),
    ],
};

/// `metav1.ObjectMeta` (apimachinery `pkg/apis/meta/v1/types.go`).
pub(super) const OBJECT_META: Struct = Struct {
    name: "ObjectMeta",
    go: "v1.ObjectMeta",
    fields: &[
        ("name", STRING),
        ("generateName", STRING),
        ("namespace", STRING),
        ("selfLink", STRING),
        ("uid", Ty::Str("types.UID")),
        ("resourceVersion", STRING),
        ("generation", Ty::Int("int64")),
        ("creationTimestamp", Ty::Time),
        ("deletionTimestamp", Ty::Time),
        ("deletionGracePeriodSeconds", Ty::Int("int64")),
        ("labels", STRING_MAP),
        ("annotations", STRING_MAP),
        (
            "ownerReferences",
            Ty::List(&Ty::Struct(&OWNER_REFERENCE), "[]v1.OwnerReference"),
        ),
        ("finalizers", STRINGS),
        (
            "managedFields",
            Ty::List(&Ty::Object("v1.ManagedFieldsEntry"), "[]v1.ManagedFieldsEntry"),
        ),
    ],
};

pub(super) const METADATA: (&str, Ty) = ("metadata", Ty::Struct(&OBJECT_META));

const CRD_NAMES: Struct = Struct {
    name: "CustomResourceDefinitionNames",
    go: "v1.CustomResourceDefinitionNames",
    fields: &[
        ("plural", STRING),
        ("singular", STRING),
        ("shortNames", STRINGS),
        ("kind", STRING),
        ("listKind", STRING),
        ("categories", STRINGS),
    ],
};

const CRD_VERSION: Struct = Struct {
    name: "CustomResourceDefinitionVersion",
    go: "v1.CustomResourceDefinitionVersion",
    fields: &[
        ("name", STRING),
        ("served", Ty::Bool),
        ("storage", Ty::Bool),
        ("deprecated", Ty::Bool),
        ("schema", Ty::Object("v1.CustomResourceValidation")),
        ("subresources", Ty::Object("v1.CustomResourceSubresources")),
        (
            "additionalPrinterColumns",
            Ty::List(
                &Ty::Object("v1.CustomResourceColumnDefinition"),
                "[]v1.CustomResourceColumnDefinition",
            ),
        ),
    ],
};

const CRD_SPEC: Struct = Struct {
    name: "CustomResourceDefinitionSpec",
    go: "v1.CustomResourceDefinitionSpec",
    fields: &[
        ("group", STRING),
        ("names", Ty::Struct(&CRD_NAMES)),
        ("scope", Ty::Str("v1.ResourceScope")),
        (
            "versions",
            Ty::List(&Ty::Struct(&CRD_VERSION), "[]v1.CustomResourceDefinitionVersion"),
        ),
        ("preserveUnknownFields", Ty::Bool),
    ],
};

const LEASE_SPEC: Struct = Struct {
    name: "LeaseSpec",
    go: "v1.LeaseSpec",
    fields: &[
        ("holderIdentity", STRING),
        ("leaseDurationSeconds", Ty::Int("int32")),
        ("acquireTime", Ty::Time),
        ("renewTime", Ty::Time),
        ("leaseTransitions", Ty::Int("int32")),
    ],
};

const NAMESPACE_SPEC: Struct = Struct {
    name: "NamespaceSpec",
    go: "v1.NamespaceSpec",
    fields: &[(
        "finalizers",
        Ty::List(&Ty::Str("v1.FinalizerName"), "[]v1.FinalizerName"),
    )],
};

/// The top-level fields of each built-in kind (k8s.io/api `core/v1`, `coordination/v1`,
/// `events/v1`, apiextensions `v1`).
pub(super) const KINDS: &[(&str, &[(&str, Ty)])] = &[
    (
        "ConfigMap",
        &[
            METADATA,
            ("data", STRING_MAP),
            ("binaryData", BYTES_MAP),
            ("immutable", Ty::Bool),
        ],
    ),
    (
        "Secret",
        &[
            METADATA,
            ("data", BYTES_MAP),
            ("stringData", STRING_MAP),
            ("type", Ty::Str("v1.SecretType")),
            ("immutable", Ty::Bool),
        ],
    ),
    (
        "Namespace",
        &[
            METADATA,
            ("spec", Ty::Struct(&NAMESPACE_SPEC)),
            ("status", Ty::Object("v1.NamespaceStatus")),
        ],
    ),
    (
        "Node",
        &[
            METADATA,
            ("spec", Ty::Object("v1.NodeSpec")),
            ("status", Ty::Object("v1.NodeStatus")),
        ],
    ),
    (
        "Pod",
        &[
            METADATA,
            ("spec", Ty::Object("v1.PodSpec")),
            ("status", Ty::Object("v1.PodStatus")),
        ],
    ),
    (
        "ServiceAccount",
        &[
            METADATA,
            (
                "secrets",
                Ty::List(&Ty::Object("v1.ObjectReference"), "[]v1.ObjectReference"),
            ),
            (
                "imagePullSecrets",
                Ty::List(
                    &Ty::Object("v1.LocalObjectReference"),
                    "[]v1.LocalObjectReference",
                ),
            ),
            ("automountServiceAccountToken", Ty::Bool),
        ],
    ),
    (
        "Event",
        &[
            METADATA,
            ("involvedObject", Ty::Object("v1.ObjectReference")),
            ("regarding", Ty::Object("v1.ObjectReference")),
            ("count", Ty::Int("int32")),
        ],
    ),
    ("Lease", &[METADATA, ("spec", Ty::Struct(&LEASE_SPEC))]),
    (
        "CustomResourceDefinition",
        &[
            METADATA,
            ("spec", Ty::Struct(&CRD_SPEC)),
            ("status", Ty::Object("v1.CustomResourceDefinitionStatus")),
        ],
    ),
];

/// Every top-level field of each built-in kind's Go type (k8s.io/api at 1.36), by group: what
/// a typed decode keeps. `apiVersion` and `kind` are every kind's.
pub(super) const TOP_LEVEL: &[(&str, &str, &[&str])] = &[
    ("", "ConfigMap", &["metadata", "data", "binaryData", "immutable"]),
    (
        "",
        "Secret",
        &["metadata", "data", "stringData", "type", "immutable"],
    ),
    ("", "Namespace", &["metadata", "spec", "status"]),
    ("", "Node", &["metadata", "spec", "status"]),
    ("", "Pod", &["metadata", "spec", "status"]),
    (
        "",
        "ServiceAccount",
        &[
            "metadata",
            "secrets",
            "imagePullSecrets",
            "automountServiceAccountToken",
        ],
    ),
    (
        "",
        "Event",
        &[
            "metadata",
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        ],
    ),
    (
        "events.k8s.io",
        "Event",
        &[
            "metadata",
            "eventTime",
            "series",
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "regarding",
            "related",
            "note",
            "type",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
        ],
    ),
    ("coordination.k8s.io", "Lease", &["metadata", "spec"]),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        &["metadata", "spec", "status"],
    ),
    (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &["metadata", "spec", "status"],
    ),
];

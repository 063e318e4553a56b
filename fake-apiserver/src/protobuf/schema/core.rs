//! core/v1 (`k8s.io/api/core/v1`): ConfigMap, Secret, Namespace, ServiceAccount, Event, Node.

use super::meta::{METADATA, OBJECT_META};
use super::types::{
    Json::{Always, OmitEmpty, Pointer},
    Message, Ty, field,
};

pub(crate) static CONFIG_MAP: Message = Message {
    go: "ConfigMap",
    fields: &[
        METADATA,
        field(4, "immutable", "Immutable", Ty::Bool, Pointer),
        field(2, "data", "Data", Ty::StringMap, OmitEmpty),
        field(3, "binaryData", "BinaryData", Ty::BytesMap, OmitEmpty),
    ],
};

pub(super) static SECRET: Message = Message {
    go: "Secret",
    fields: &[
        METADATA,
        field(5, "immutable", "Immutable", Ty::Bool, Pointer),
        field(2, "data", "Data", Ty::BytesMap, OmitEmpty),
        field(4, "stringData", "StringData", Ty::StringMap, OmitEmpty),
        field(3, "type", "Type", Ty::String, OmitEmpty),
    ],
};

pub(super) static NAMESPACE: Message = Message {
    go: "Namespace",
    fields: &[
        METADATA,
        field(2, "spec", "Spec", Ty::Message(&NAMESPACE_SPEC), OmitEmpty),
        field(3, "status", "Status", Ty::Message(&NAMESPACE_STATUS), OmitEmpty),
    ],
};

pub(super) static NAMESPACE_SPEC: Message = Message {
    go: "NamespaceSpec",
    fields: &[field(1, "finalizers", "Finalizers", Ty::Strings, OmitEmpty)],
};

pub(super) static NAMESPACE_STATUS: Message = Message {
    go: "NamespaceStatus",
    fields: &[
        field(1, "phase", "Phase", Ty::String, OmitEmpty),
        field(
            2,
            "conditions",
            "Conditions",
            Ty::Messages(&NAMESPACE_CONDITION),
            OmitEmpty,
        ),
    ],
};

pub(super) static NAMESPACE_CONDITION: Message = Message {
    go: "NamespaceCondition",
    fields: &[
        field(1, "type", "Type", Ty::String, Always),
        field(2, "status", "Status", Ty::String, Always),
        field(4, "lastTransitionTime", "LastTransitionTime", Ty::Time, OmitEmpty),
        field(5, "reason", "Reason", Ty::String, OmitEmpty),
        field(6, "message", "Message", Ty::String, OmitEmpty),
    ],
};

pub(super) static SERVICE_ACCOUNT: Message = Message {
    go: "ServiceAccount",
    fields: &[
        METADATA,
        field(
            2,
            "secrets",
            "Secrets",
            Ty::Messages(&OBJECT_REFERENCE),
            OmitEmpty,
        ),
        field(
            3,
            "imagePullSecrets",
            "ImagePullSecrets",
            Ty::Messages(&LOCAL_OBJECT_REFERENCE),
            OmitEmpty,
        ),
        field(
            4,
            "automountServiceAccountToken",
            "AutomountServiceAccountToken",
            Ty::Bool,
            Pointer,
        ),
    ],
};

pub(super) static OBJECT_REFERENCE: Message = Message {
    go: "ObjectReference",
    fields: &[
        field(1, "kind", "Kind", Ty::String, OmitEmpty),
        field(2, "namespace", "Namespace", Ty::String, OmitEmpty),
        field(3, "name", "Name", Ty::String, OmitEmpty),
        field(4, "uid", "UID", Ty::String, OmitEmpty),
        field(5, "apiVersion", "APIVersion", Ty::String, OmitEmpty),
        field(6, "resourceVersion", "ResourceVersion", Ty::String, OmitEmpty),
        field(7, "fieldPath", "FieldPath", Ty::String, OmitEmpty),
    ],
};

pub(super) static LOCAL_OBJECT_REFERENCE: Message = Message {
    go: "LocalObjectReference",
    fields: &[field(1, "name", "Name", Ty::String, OmitEmpty)],
};

pub(super) static EVENT: Message = Message {
    go: "Event",
    fields: &[
        field(1, "metadata", "ObjectMeta", Ty::Message(&OBJECT_META), Always),
        field(
            2,
            "involvedObject",
            "InvolvedObject",
            Ty::Message(&OBJECT_REFERENCE),
            Always,
        ),
        field(3, "reason", "Reason", Ty::String, OmitEmpty),
        field(4, "message", "Message", Ty::String, OmitEmpty),
        field(5, "source", "Source", Ty::Message(&EVENT_SOURCE), OmitEmpty),
        field(6, "firstTimestamp", "FirstTimestamp", Ty::Time, OmitEmpty),
        field(7, "lastTimestamp", "LastTimestamp", Ty::Time, OmitEmpty),
        field(8, "count", "Count", Ty::Int32, OmitEmpty),
        field(9, "type", "Type", Ty::String, OmitEmpty),
        field(10, "eventTime", "EventTime", Ty::MicroTime, OmitEmpty),
        field(11, "series", "Series", Ty::Message(&EVENT_SERIES), Pointer),
        field(12, "action", "Action", Ty::String, OmitEmpty),
        field(13, "related", "Related", Ty::Message(&OBJECT_REFERENCE), Pointer),
        field(
            14,
            "reportingComponent",
            "ReportingController",
            Ty::String,
            Always,
        ),
        field(15, "reportingInstance", "ReportingInstance", Ty::String, Always),
    ],
};

pub(super) static EVENT_SOURCE: Message = Message {
    go: "EventSource",
    fields: &[
        field(1, "component", "Component", Ty::String, OmitEmpty),
        field(2, "host", "Host", Ty::String, OmitEmpty),
    ],
};

pub(super) static EVENT_SERIES: Message = Message {
    go: "EventSeries",
    fields: &[
        field(1, "count", "Count", Ty::Int32, OmitEmpty),
        field(
            2,
            "lastObservedTime",
            "LastObservedTime",
            Ty::MicroTime,
            OmitEmpty,
        ),
    ],
};

/// What a kubelet registers, and what agents that write Nodes whole send.
pub(super) static NODE: Message = Message {
    go: "Node",
    fields: &[
        METADATA,
        field(2, "spec", "Spec", Ty::Message(&NODE_SPEC), OmitEmpty),
        field(3, "status", "Status", Ty::Message(&NODE_STATUS), OmitEmpty),
    ],
};

pub(super) static NODE_SPEC: Message = Message {
    go: "NodeSpec",
    fields: &[
        field(1, "podCIDR", "PodCIDR", Ty::String, OmitEmpty),
        field(7, "podCIDRs", "PodCIDRs", Ty::Strings, OmitEmpty),
        field(3, "providerID", "ProviderID", Ty::String, OmitEmpty),
        field(4, "unschedulable", "Unschedulable", Ty::Bool, OmitEmpty),
        field(5, "taints", "Taints", Ty::Messages(&TAINT), OmitEmpty),
        field(
            6,
            "configSource",
            "ConfigSource",
            Ty::Message(&NODE_CONFIG_SOURCE),
            Pointer,
        ),
        field(2, "externalID", "DoNotUseExternalID", Ty::String, OmitEmpty),
    ],
};

pub(super) static TAINT: Message = Message {
    go: "Taint",
    fields: &[
        field(1, "key", "Key", Ty::String, Always),
        field(2, "value", "Value", Ty::String, OmitEmpty),
        field(3, "effect", "Effect", Ty::String, Always),
        field(4, "timeAdded", "TimeAdded", Ty::Time, Pointer),
    ],
};

pub(super) static NODE_CONFIG_SOURCE: Message = Message {
    go: "NodeConfigSource",
    fields: &[field(
        2,
        "configMap",
        "ConfigMap",
        Ty::Message(&CONFIG_MAP_NODE_CONFIG_SOURCE),
        Pointer,
    )],
};

pub(super) static CONFIG_MAP_NODE_CONFIG_SOURCE: Message = Message {
    go: "ConfigMapNodeConfigSource",
    fields: &[
        field(1, "namespace", "Namespace", Ty::String, Always),
        field(2, "name", "Name", Ty::String, Always),
        field(3, "uid", "UID", Ty::String, OmitEmpty),
        field(4, "resourceVersion", "ResourceVersion", Ty::String, OmitEmpty),
        field(5, "kubeletConfigKey", "KubeletConfigKey", Ty::String, Always),
    ],
};

pub(super) static NODE_STATUS: Message = Message {
    go: "NodeStatus",
    fields: &[
        field(1, "capacity", "Capacity", Ty::QuantityMap, OmitEmpty),
        field(2, "allocatable", "Allocatable", Ty::QuantityMap, OmitEmpty),
        field(3, "phase", "Phase", Ty::String, OmitEmpty),
        field(
            4,
            "conditions",
            "Conditions",
            Ty::Messages(&NODE_CONDITION),
            OmitEmpty,
        ),
        field(
            5,
            "addresses",
            "Addresses",
            Ty::Messages(&NODE_ADDRESS),
            OmitEmpty,
        ),
        field(
            6,
            "daemonEndpoints",
            "DaemonEndpoints",
            Ty::Message(&NODE_DAEMON_ENDPOINTS),
            OmitEmpty,
        ),
        field(
            7,
            "nodeInfo",
            "NodeInfo",
            Ty::Message(&NODE_SYSTEM_INFO),
            OmitEmpty,
        ),
        field(8, "images", "Images", Ty::Messages(&CONTAINER_IMAGE), OmitEmpty),
        field(9, "volumesInUse", "VolumesInUse", Ty::Strings, OmitEmpty),
        field(
            10,
            "volumesAttached",
            "VolumesAttached",
            Ty::Messages(&ATTACHED_VOLUME),
            OmitEmpty,
        ),
        field(11, "config", "Config", Ty::Message(&NODE_CONFIG_STATUS), Pointer),
        field(
            12,
            "runtimeHandlers",
            "RuntimeHandlers",
            Ty::Messages(&NODE_RUNTIME_HANDLER),
            OmitEmpty,
        ),
        field(13, "features", "Features", Ty::Message(&NODE_FEATURES), Pointer),
        field(14, "declaredFeatures", "DeclaredFeatures", Ty::Strings, OmitEmpty),
    ],
};

pub(super) static NODE_CONDITION: Message = Message {
    go: "NodeCondition",
    fields: &[
        field(1, "type", "Type", Ty::String, Always),
        field(2, "status", "Status", Ty::String, Always),
        field(3, "lastHeartbeatTime", "LastHeartbeatTime", Ty::Time, OmitEmpty),
        field(4, "lastTransitionTime", "LastTransitionTime", Ty::Time, OmitEmpty),
        field(5, "reason", "Reason", Ty::String, OmitEmpty),
        field(6, "message", "Message", Ty::String, OmitEmpty),
    ],
};

pub(super) static NODE_ADDRESS: Message = Message {
    go: "NodeAddress",
    fields: &[
        field(1, "type", "Type", Ty::String, Always),
        field(2, "address", "Address", Ty::String, Always),
    ],
};

pub(super) static NODE_DAEMON_ENDPOINTS: Message = Message {
    go: "NodeDaemonEndpoints",
    fields: &[field(
        1,
        "kubeletEndpoint",
        "KubeletEndpoint",
        Ty::Message(&DAEMON_ENDPOINT),
        OmitEmpty,
    )],
};

/// Its JSON name is `Port`, capital P, as upstream spells it.
pub(super) static DAEMON_ENDPOINT: Message = Message {
    go: "DaemonEndpoint",
    fields: &[field(1, "Port", "Port", Ty::Int32, Always)],
};

pub(super) static NODE_SYSTEM_INFO: Message = Message {
    go: "NodeSystemInfo",
    fields: &[
        field(1, "machineID", "MachineID", Ty::String, Always),
        field(2, "systemUUID", "SystemUUID", Ty::String, Always),
        field(3, "bootID", "BootID", Ty::String, Always),
        field(4, "kernelVersion", "KernelVersion", Ty::String, Always),
        field(5, "osImage", "OSImage", Ty::String, Always),
        field(
            6,
            "containerRuntimeVersion",
            "ContainerRuntimeVersion",
            Ty::String,
            Always,
        ),
        field(7, "kubeletVersion", "KubeletVersion", Ty::String, Always),
        field(8, "kubeProxyVersion", "KubeProxyVersion", Ty::String, Always),
        field(9, "operatingSystem", "OperatingSystem", Ty::String, Always),
        field(10, "architecture", "Architecture", Ty::String, Always),
        field(11, "swap", "Swap", Ty::Message(&NODE_SWAP_STATUS), Pointer),
    ],
};

pub(super) static NODE_SWAP_STATUS: Message = Message {
    go: "NodeSwapStatus",
    fields: &[field(1, "capacity", "Capacity", Ty::Int64, Pointer)],
};

pub(super) static CONTAINER_IMAGE: Message = Message {
    go: "ContainerImage",
    fields: &[
        field(1, "names", "Names", Ty::Strings, Always),
        field(2, "sizeBytes", "SizeBytes", Ty::Int64, OmitEmpty),
    ],
};

pub(super) static ATTACHED_VOLUME: Message = Message {
    go: "AttachedVolume",
    fields: &[
        field(1, "name", "Name", Ty::String, Always),
        field(2, "devicePath", "DevicePath", Ty::String, Always),
    ],
};

pub(super) static NODE_CONFIG_STATUS: Message = Message {
    go: "NodeConfigStatus",
    fields: &[
        field(
            1,
            "assigned",
            "Assigned",
            Ty::Message(&NODE_CONFIG_SOURCE),
            Pointer,
        ),
        field(2, "active", "Active", Ty::Message(&NODE_CONFIG_SOURCE), Pointer),
        field(
            3,
            "lastKnownGood",
            "LastKnownGood",
            Ty::Message(&NODE_CONFIG_SOURCE),
            Pointer,
        ),
        field(4, "error", "Error", Ty::String, OmitEmpty),
    ],
};

pub(super) static NODE_RUNTIME_HANDLER: Message = Message {
    go: "NodeRuntimeHandler",
    fields: &[
        field(1, "name", "Name", Ty::String, Always),
        field(
            2,
            "features",
            "Features",
            Ty::Message(&NODE_RUNTIME_HANDLER_FEATURES),
            Pointer,
        ),
    ],
};

pub(super) static NODE_RUNTIME_HANDLER_FEATURES: Message = Message {
    go: "NodeRuntimeHandlerFeatures",
    fields: &[
        field(
            1,
            "recursiveReadOnlyMounts",
            "RecursiveReadOnlyMounts",
            Ty::Bool,
            Pointer,
        ),
        field(2, "userNamespaces", "UserNamespaces", Ty::Bool, Pointer),
    ],
};

pub(super) static NODE_FEATURES: Message = Message {
    go: "NodeFeatures",
    fields: &[field(
        1,
        "supplementalGroupsPolicy",
        "SupplementalGroupsPolicy",
        Ty::Bool,
        Pointer,
    )],
};

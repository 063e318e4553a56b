//! Names of the objects the reference cluster side reads and writes, in one place, each with
//! the upstream owner that defines it (shared/notes/mco-source.md §1–§4).

/// `ca-bundle.crt`: the key every CA bundle ConfigMap uses (library-go `cabundle.go`).
pub const CA_BUNDLE_KEY: &str = "ca-bundle.crt";

/// The union of client CAs the kube-apiserver trusts; the 4.16 kubelet-ca source
/// (KAS-O `targetconfigcontroller.go ManageClientCABundle`, synced by `resourcesynccontroller.go`).
pub const KUBE_APISERVER_CLIENT_CA: (&str, &str) = ("openshift-config-managed", "kube-apiserver-client-ca");

/// What `kube-apiserver-client-ca` is built from, in KAS-O's order (release-4.12
/// targetconfigcontroller.go:282-307, release-4.16 :284-316: `ManageClientCABundle`); a missing
/// one (`user-client-ca` in a default cluster) adds nothing. `csr-controller-ca` is itself the
/// union of `CSR_CONTROLLER_CA_SOURCES` (KCM-O).
pub const CLIENT_CA_SOURCES: &[(&str, &str)] = &[
    ("openshift-config", "admin-kubeconfig-client-ca"),
    ("openshift-config-managed", "csr-controller-ca"),
    (
        "openshift-kube-apiserver-operator",
        "kube-apiserver-to-kubelet-client-ca",
    ),
    (
        "openshift-kube-apiserver-operator",
        "kube-control-plane-signer-ca",
    ),
    ("openshift-kube-apiserver", "user-client-ca"),
    ("openshift-config-managed", "kubelet-bootstrap-kubeconfig"),
    ("openshift-kube-apiserver-operator", "node-system-admin-ca"),
];

pub const CSR_CONTROLLER_CA: (&str, &str) = ("openshift-config-managed", "csr-controller-ca");
pub const CSR_CONTROLLER_CA_SOURCES: &[(&str, &str)] = &[
    ("openshift-kube-controller-manager-operator", "csr-signer-ca"),
    (
        "openshift-kube-controller-manager-operator",
        "csr-controller-signer-ca",
    ),
];

/// The 4.12 kubelet-ca sources (MCO release-4.12 `pkg/operator/sync.go syncRenderConfig`):
/// the installer's initial bundle, merged with the kube-apiserver-to-kubelet signer's bundle.
pub const INITIAL_KUBE_APISERVER_SERVER_CA: (&str, &str) =
    ("openshift-config", "initial-kube-apiserver-server-ca");
pub const KUBE_APISERVER_TO_KUBELET_CLIENT_CA: (&str, &str) = (
    "openshift-kube-apiserver-operator",
    "kube-apiserver-to-kubelet-client-ca",
);

/// The kube-apiserver's serving CA bundle (api, api-int), as KAS-O publishes it, and the copy
/// the 4.16 operator keeps for the nodes' kubeconfigs (MCO release-4.16 `pkg/operator/sync.go
/// syncControllerConfig`; mco-source.md §2).
pub const KUBE_APISERVER_SERVER_CA: (&str, &str) = ("openshift-config-managed", "kube-apiserver-server-ca");
pub const KUBECONFIG_DATA: (&str, &str) = ("openshift-machine-config-operator", "kubeconfig-data");

/// The signer MCO 4.12 replaces inside the initial bundle (`mergeCertWithCABundle`).
pub const KUBE_APISERVER_TO_KUBELET_SIGNER: &str = "kube-apiserver-to-kubelet-signer";

/// Field manager of the reference cluster side's writes.
pub const FIELD_MANAGER: &str = "mco-conformance-cluster";

//! What the machine-config server serves a machine booting into a pool (upstream
//! `pkg/server/cluster_server.go` `GetConfig`): made by the cluster side (`cluster::server`, or
//! upstream's own server), read by the node side when it seeds a node (`node::seed`), so it lives
//! in the model both share.

use super::machine_config::MachineConfigSpec;

/// What a machine booting into a pool is served.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// The rendered config it boots, which its first annotations name.
    pub rendered: String,
    /// That config's spec as served (`/etc/mcs-machine-config-content.json`): the node's
    /// current config on disk once its first boot is done.
    pub config: MachineConfigSpec,
    /// What Ignition writes: the rendered config's files and units with the server's additions.
    pub boot: MachineConfigSpec,
    /// The CA its `/etc/kubernetes/kubeconfig` trusts, where the server took it from the cluster
    /// (`kubeconfig-data`); `None`: the bootstrap token's, the API server's CA as installed.
    pub kubeconfig_ca: Option<String>,
}

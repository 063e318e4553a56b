//! The MCO API as the reference cluster, the reference daemon and the steps reach it: one
//! handle per kind (machineconfiguration.openshift.io/v1) and the singleton ControllerConfig.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

/// The ControllerConfig every profile renders from (a cluster-scoped singleton).
pub const CONTROLLER_CONFIG: &str = "machine-config-controller";

/// Any kind of the group (`MachineConfig`, `MachineConfigPool`, `ControllerConfig`, …).
pub fn mco_api(client: &kube::Client, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", kind);
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

pub fn machine_configs(client: &kube::Client) -> Api<DynamicObject> {
    mco_api(client, "MachineConfig")
}

pub fn machine_config_pools(client: &kube::Client) -> Api<DynamicObject> {
    mco_api(client, "MachineConfigPool")
}

pub fn controller_configs(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &controller_config_resource())
}

/// The ControllerConfig kind (machineconfiguration.openshift.io/v1).
pub fn controller_config_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", "ControllerConfig");
    ApiResource::from_gvk(&gvk)
}

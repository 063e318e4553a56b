//! The reference cluster side: kube-rs controllers that play the OpenShift operators a
//! rotation passes through, each talking to the API server like any client (never into its
//! store), so they run against the fake or a real API server alike.
//!
//! # Layout
//! - `names`: the objects they read and write; `error`: what they fail with.
//! - `signers`: signer rotation, CA bundles and their targets (the kube-apiserver's kubelet
//!   client certificate, KCM-O's `csr-signer`), the kube-apiserver and kube-controller-manager
//!   operators' part; `signers/seed` issues what a starting state holds at install.
//! - `operator`: ControllerConfig's kubelet CA bundle from its sources, per profile.
//! - `install`: what a fresh cluster holds before the operators reconcile.
//! - `render`: templates to `00-<role>`, merging a pool's MachineConfigs, rendered names.
//! - `pools`: the node and drain controllers' decisions (paused, maxUnavailable, status).
//! - `mcc`: the machine-config controller applying `render` and `pools` through the API.
//! - `node_cache`: every Node as a watch shows it, read by the controllers and the scenario.
//! - `lifecycle`: the node lifecycle controller's Ready=Unknown for kubelets gone quiet.
//! - `runner`: all of them running, triggered by watches; settled where the clock stops.
//! - `upstream`: an upstream machine-config-controller in the reference's place, and whether it
//!   has caught up.
//! - `server`: the machine-config server, what a machine booting into a pool is served;
//!   `upstream_server` runs upstream's in the reference's place.

pub mod csr;
mod error;
pub mod install;
pub mod lifecycle;
pub mod mcc;
pub mod metrics;
pub use crate::mco::names;
pub mod node_cache;
pub mod operator;
pub mod pools;
pub mod registry_bundles;
pub mod registry_pull_secret;
pub mod render;
pub mod runner;
pub mod server;
mod signers;
pub mod upstream;
pub mod upstream_bootstrap;
pub mod upstream_server;

pub use error::{ClusterError, retry_transient};
pub use lifecycle::NodeLifecycle;
pub use mcc::MachineConfigController;
pub use node_cache::NodeCache;
pub use operator::{CaSources, Operator, kubelet_ca_bundle};
pub use runner::ClusterSide;
pub use signers::{SignerRotation, force_rotation};

use crate::pki::rfc3339;
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;

/// What the cluster side did, stamped with simulated time; scenarios print it when they fail.
#[derive(Clone, Default)]
pub struct ClusterLog {
    lines: Arc<Mutex<Vec<String>>>,
}

impl ClusterLog {
    pub fn record(&self, at: OffsetDateTime, line: &str) {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{} {line}", rfc3339(at)));
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

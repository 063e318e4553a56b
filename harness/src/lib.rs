//! The mco-conformance harness: everything a scenario needs besides the API server.
//!
//! # Layout
//! - `profile`: the OpenShift releases the suite encodes (`ocp-4.12`, `ocp-4.14`, `ocp-4.16`).
//! - `agent`: the reference daemon, every release's path side by side.
//! - `pki`: the simulated clock, the signer catalogue, signers, rotation rules, CA bundles and
//!   verification at simulated time (no kube, no tokio).
//! - `cluster`: the reference cluster side, kube-rs controllers playing the OpenShift operators.
//! - `mco`: MCO's annotation keys, states and paths, shared by the cluster side and agents.
//! - `node`: the node trait, its journal and service manager, and the embedded backend.
//! - `prometheus`: scrapes the controller's `/metrics` and evaluates the alert rules (an observer).
//! - `pace`: the host's pace, time measured as the CPU the host gave the harness.
//! - `wait`: `eventually`, the one way to wait for convergence, with deadlines in paced time.
//! - `scenario`: one scenario's fake cluster (API server, cluster side, nodes) on one clock.
//! - `runner`: feature lint and the per-profile cucumber runs behind `cargo test` and the CLI.
//! - `world`: the cucumber World around a scenario.
//! - `steps`: the step definitions, registered with cucumber when the library is linked.

// The step definitions name the library as `harness::…`, as a user's own steps would.
extern crate self as harness;

pub mod agent;
pub mod cluster;
pub mod console;
pub mod h2_client;
pub mod interrupt;
pub mod mco;
pub mod node;
pub mod pace;
pub mod pki;
pub mod profile;
pub mod prometheus;
pub mod runner;
pub mod scenario;
pub mod steps;
pub mod wait;
pub mod world;

pub use profile::Profile;

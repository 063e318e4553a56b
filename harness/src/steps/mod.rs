//! Step definitions, grouped by domain concept (cucumber-rs book, "modules"). Each step is a
//! few lines delegating to `harness::scenario::Scenario`.
//!
//! These files are compiled into each binary that runs features (`tests/conformance.rs`, the
//! `mco-conformance` CLI) rather than into the harness library: cucumber registers steps
//! through linker sections, which a library's unreferenced object files would lose.

pub mod cluster;
pub mod kubelet;
pub mod node;
pub mod pool;
pub mod signer;
pub mod time;

/// The step sources, for `mco-conformance steps` (phrases listed from the code itself).
pub const SOURCES: &[(&str, &str)] = &[
    ("harness/src/steps/cluster.rs", include_str!("cluster.rs")),
    ("harness/src/steps/kubelet.rs", include_str!("kubelet.rs")),
    ("harness/src/steps/node.rs", include_str!("node.rs")),
    ("harness/src/steps/pool.rs", include_str!("pool.rs")),
    ("harness/src/steps/signer.rs", include_str!("signer.rs")),
    ("harness/src/steps/time.rs", include_str!("time.rs")),
];

//! Step definitions, grouped by domain concept (cucumber-rs book, "modules"). Each step is a
//! few lines delegating to `harness::scenario::Scenario`.
//!
//! They are part of the harness library: cucumber registers each step through a linker
//! section (`inventory`), and rustc keeps a linked rlib's `#[used]` registrations, so every
//! binary that links the library (the `mco-conformance` CLI, `tests/conformance.rs`, the
//! suite) sees them all. Their catalogue (`mco-conformance steps`, the table of
//! `docs/steps.md`, the nearest phrases an undefined step is offered) is read from these sources by
//! `harness::runner::catalogue`, and a test holds it to exactly the steps cucumber registered
//! (`harness/tests/suite/readme.rs`). Parameters that name something of the fixtures are
//! parameter types of their own (`params`: `{signer}`, `{pool}`).

pub mod bootstrap;
pub mod cluster;
pub mod config;
pub mod crash;
pub mod drift;
pub mod events;
pub mod kubelet;
pub mod node;
pub mod oracle;
pub mod params;
pub mod pool;
pub mod power_loss;
pub mod registry;
pub mod serving;
pub mod signer;
pub mod time;

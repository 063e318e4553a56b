//! The mco-conformance harness: PKI and clock, the reference cluster side, nodes, the
//! reference daemon, cucumber steps and the CLI. Empty until the signer-rotation slice lands;
//! the workspace builds it so `cargo test` covers every crate from the start.

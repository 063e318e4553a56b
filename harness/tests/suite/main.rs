//! The harness's integration tests, as one test binary: each file below was a test binary of
//! its own, and linking thirteen binaries against the harness and its dependencies was most of
//! CI's time. `cargo test -p harness --test suite <module>::` runs one file's tests.

mod common;

mod agent_binary_suite;
mod architecture;
mod cli;
mod cluster_endpoint;
mod container_nodes;
mod docs;
mod faulty_agent;
mod html_report;
mod interrupts;
mod journal_lines;
mod kubelet_loads;
mod machine_config_controller;
mod machine_configs;
mod node_image;
mod node_status;
mod nudge;
mod operator;
mod oracle;
mod profile_skew;
mod qe_input;
mod readme;
mod reference_daemon_binary;
mod rotation_end_to_end;
mod self_test;
mod signer_rotation;
mod upstream_controllers;
mod upstream_daemons;
mod upstream_servers;
mod upstream_start;
mod vocabulary;

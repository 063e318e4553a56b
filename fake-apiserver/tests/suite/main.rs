//! The fake API server's integration tests, as one test binary: each file below was a test
//! binary of its own, and linking each against kube-rs and the server was most of their build
//! time. `cargo test -p fake-apiserver --test suite <module>::` runs one file's tests.

mod common;

mod api_semantics;
mod bad_input;
mod binary;
mod body_shapes;
mod built_in_types;
mod clientgo;
mod connections;
mod crd_rules;
mod crd_schema;
mod csr;
mod faults;
mod fuzz;
mod http_edges;
mod immutability;
mod impersonation;
mod kubectl;
mod namespaces;
mod nesting;
mod node_authorization;
mod object_type;
mod parameters;
mod protobuf;
mod secret_rules;
mod tls;
mod watch;

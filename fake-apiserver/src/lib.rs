//! An in-memory Kubernetes API server that real clients (kube-rs, client-go, kubectl) cannot
//! tell from kube-apiserver for what mco-conformance does: HTTPS with client certificates,
//! monotonic resourceVersions, 409 on stale writes, watches that replay from a version and
//! answer 410 when it is gone, bookmarks and streaming lists, the status subresource, CRDs,
//! discovery and OpenAPI for kubectl, and `Status` bodies for every error.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let server = fake_apiserver::FakeApiServer::builder().start().await?;
//! let client = server.admin_client().await?;
//! let kubeconfig = server.kubeconfig(server.admin_identity());
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - `server`: builder and accept loop; `handle`: what callers hold (identities, kubeconfigs,
//!   rotation, faults, shutdown); `shared`: the state both and the handlers share.
//! - `http`: per-request handling: routing, verbs, watch streams, discovery, OpenAPI, tables.
//! - `store`: objects, resourceVersions, history and the watch feed; all semantics live here.
//! - `resource`: the registry of built-in and CRD-defined resources.
//! - `patch`, `selector`, `typecheck`, `validation`: pure functions the store and handlers use.
//! - `protobuf`: request bodies in Kubernetes' protobuf encoding, read into JSON.
//! - `depth`: the nesting bound, and handling deep documents without recursion on small stacks.
//! - `auth`, `tls`, `pki`: identities, impersonation, authorization (the Node authorizer and a
//!   pluggable RBAC stand-in), NodeRestriction admission, TLS configuration.
//! - `faults`: fault injection.
//! - `error`: every failure as a Kubernetes `Status`.

pub mod auth;
mod conn;
pub mod csr;
mod depth;
mod error;
mod faults;
mod handle;
mod http;
pub mod manifests;
mod patch;
pub mod pki;
mod protobuf;
mod resource;
mod selector;
mod server;
mod shared;
mod store;
pub mod testing;
mod tls;
mod typecheck;
mod validation;

pub use auth::{Authorizer, Identity, RequestAttributes};
pub use depth::MAX_DEPTH;
pub use error::ApiError;
pub use faults::Fault;
pub use handle::{FaultInjector, ServerHandle, client_from_kubeconfig, kubeconfig};
pub use http::IGNORED_PARAMETERS;
pub use pki::{CertificateAuthority, ClientIdentity, DEFAULT_SERVING_HOSTS, ServingCert};
pub use server::{FakeApiServer, FakeApiServerBuilder, StartError};
pub use validation::go_json_syntax_error;

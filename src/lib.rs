//! mco-conformance: the workspace root package. It owns `tests/` (the cucumber runner and the
//! cross-crate integration tests); the code lives in `fake-apiserver/` and `harness/`.

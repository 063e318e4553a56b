//! The step sources: every file under `harness/src/steps` but its `mod.rs`, with its text as
//! this binary was built. The catalogue reads its phrases from them (a file without steps, such
//! as `oracle.rs` or a folder's helpers, gives none), and the suite's checks of the steps' own
//! code read every one (`harness/tests/suite/oracle.rs` fails when a file of `steps/` is
//! missing here). Only the list; reading it is `catalogue`'s.

/// The step sources, for `mco-conformance steps` (phrases listed from the code itself).
pub const SOURCES: &[(&str, &str)] = &[
    (
        "harness/src/steps/bootstrap.rs",
        include_str!("../../steps/bootstrap.rs"),
    ),
    (
        "harness/src/steps/cluster.rs",
        include_str!("../../steps/cluster.rs"),
    ),
    (
        "harness/src/steps/config.rs",
        include_str!("../../steps/config.rs"),
    ),
    ("harness/src/steps/crash.rs", include_str!("../../steps/crash.rs")),
    (
        "harness/src/steps/crash/files.rs",
        include_str!("../../steps/crash/files.rs"),
    ),
    (
        "harness/src/steps/crash/plans.rs",
        include_str!("../../steps/crash/plans.rs"),
    ),
    (
        "harness/src/steps/crash/whole.rs",
        include_str!("../../steps/crash/whole.rs"),
    ),
    ("harness/src/steps/drift.rs", include_str!("../../steps/drift.rs")),
    (
        "harness/src/steps/events.rs",
        include_str!("../../steps/events.rs"),
    ),
    (
        "harness/src/steps/kubelet.rs",
        include_str!("../../steps/kubelet.rs"),
    ),
    (
        "harness/src/steps/node/annotations.rs",
        include_str!("../../steps/node/annotations.rs"),
    ),
    (
        "harness/src/steps/node/files.rs",
        include_str!("../../steps/node/files.rs"),
    ),
    (
        "harness/src/steps/node/journal.rs",
        include_str!("../../steps/node/journal.rs"),
    ),
    (
        "harness/src/steps/node/kubelet_ca.rs",
        include_str!("../../steps/node/kubelet_ca.rs"),
    ),
    (
        "harness/src/steps/node/labels.rs",
        include_str!("../../steps/node/labels.rs"),
    ),
    (
        "harness/src/steps/node/mod.rs",
        include_str!("../../steps/node/mod.rs"),
    ),
    (
        "harness/src/steps/node/services.rs",
        include_str!("../../steps/node/services.rs"),
    ),
    (
        "harness/src/steps/oracle.rs",
        include_str!("../../steps/oracle.rs"),
    ),
    (
        "harness/src/steps/params.rs",
        include_str!("../../steps/params.rs"),
    ),
    ("harness/src/steps/pool.rs", include_str!("../../steps/pool.rs")),
    (
        "harness/src/steps/power_loss.rs",
        include_str!("../../steps/power_loss.rs"),
    ),
    (
        "harness/src/steps/registry/cas.rs",
        include_str!("../../steps/registry/cas.rs"),
    ),
    (
        "harness/src/steps/registry/mod.rs",
        include_str!("../../steps/registry/mod.rs"),
    ),
    (
        "harness/src/steps/registry/pull_secret.rs",
        include_str!("../../steps/registry/pull_secret.rs"),
    ),
    (
        "harness/src/steps/serving.rs",
        include_str!("../../steps/serving.rs"),
    ),
    (
        "harness/src/steps/signer.rs",
        include_str!("../../steps/signer.rs"),
    ),
    ("harness/src/steps/time.rs", include_str!("../../steps/time.rs")),
];

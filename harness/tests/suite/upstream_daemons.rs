//! The upstream machine-config-daemon of each release under the whole suite: the
//! yardstick for a profile is its own release's daemon, unmodified, on container nodes.
//! `fixtures/upstream-daemons.yaml` says, per daemon, which scenarios do not pass and why; every
//! other scenario of its profile must pass. The release daemons may differ only on scenarios
//! whose verdict is reported apart (`@mco-logs`, `@beyond-upstream`); `main`'s differences are
//! its skew from the profile, each with the upstream line that makes it.
//!
//! Opt-in: nobody can fetch and build the upstream source in CI, so each daemon runs only when
//! its environment variable (`MCO_UPSTREAM_MCD_4_12`, `MCO_UPSTREAM_MCD_4_14`,
//! `MCO_UPSTREAM_MCD_4_16`, `MCO_UPSTREAM_MCD_MAIN`) names its binary (`docs/upstream.md` says
//! how to build them). The table of differences in `docs/upstream.md` is checked against the
//! fixture in every run.

use harness::Profile;
use harness::runner::{Nodes, RunConfig, run};
use harness::scenario::AgentKind;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
pub(crate) struct Fixture {
    pub(crate) daemons: Vec<Daemon>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Daemon {
    /// The branch it is built from (`release-4.16`).
    pub(crate) name: String,
    /// The commit it was measured at.
    commit: String,
    /// The variable that names its binary.
    pub(crate) env: String,
    pub(crate) profile: String,
    pub(crate) args: Vec<String>,
    #[serde(default)]
    pub(crate) differences: Vec<Difference>,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// `file.feature: scenario name`
    pub(crate) scenario: String,
    /// `fails`, or `fails apart` for a scenario whose verdict is reported apart.
    pub(crate) outcome: String,
    pub(crate) reason: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub(crate) fn fixture() -> Fixture {
    let path = root().join("fixtures/upstream-daemons.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The table of `docs/upstream.md`: one row per difference, and a row per daemon that has none.
fn table_markdown(fixture: &Fixture) -> String {
    let mut out = String::from("| daemon | profile | scenario | outcome | reason |\n|---|---|---|---|---|\n");
    for d in &fixture.daemons {
        let daemon = format!("{} (`{}`)", d.name, d.commit);
        if d.differences.is_empty() {
            out += &format!("| {daemon} | {} | every scenario | passes | |\n", d.profile);
        }
        for diff in &d.differences {
            out += &format!(
                "| {daemon} | {} | {} | {} | {} |\n",
                d.profile,
                diff.scenario,
                diff.outcome,
                diff.reason.replace('|', "\\|").replace('\n', " ")
            );
        }
    }
    out
}

#[test]
fn the_docs_table_of_upstream_daemons_is_the_fixture() {
    let fixture = fixture();
    let doc = std::fs::read_to_string(root().join("docs/upstream.md")).unwrap();
    let table = doc
        .split("<!-- upstream-daemons:begin -->\n")
        .nth(1)
        .and_then(|rest| rest.split("<!-- upstream-daemons:end -->").next())
        .expect("docs/upstream.md has the upstream-daemons markers");
    assert_eq!(
        table,
        table_markdown(&fixture),
        "the upstream daemon table in docs/upstream.md is stale: it is generated from fixtures/upstream-daemons.yaml"
    );
    for d in &fixture.daemons {
        d.profile.parse::<Profile>().unwrap();
        for diff in &d.differences {
            assert!(
                ["fails", "fails apart"].contains(&diff.outcome.as_str()),
                "{}: {}: outcome {:?}",
                d.name,
                diff.scenario,
                diff.outcome
            );
            assert!(
                !diff.reason.trim().is_empty(),
                "{}: {} has no reason",
                d.name,
                diff.scenario
            );
            // A profile's own release must pass every scenario whose verdict counts.
            if d.name.starts_with("release-") {
                assert_eq!(
                    diff.outcome, "fails apart",
                    "{} must pass {} (a release's daemon passes its profile)",
                    d.name, diff.scenario
                );
            }
        }
    }
}

/// Run the whole suite with `daemon` as every container node's agent: per scenario
/// (`file: name`) whether it passed, and whether its verdict is reported apart.
async fn outcomes(daemon: &Daemon, binary: PathBuf) -> BTreeMap<String, (bool, bool, String)> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let profile: Profile = daemon.profile.parse().unwrap();
    let mut config = RunConfig::new(vec![root().join("features")], dir.path().to_path_buf());
    config.profiles = vec![profile];
    config.nodes = Nodes::Container;
    config.quiet = true;
    // Scenarios wait mostly in wall time (an upstream daemon's first certificate sync comes a
    // minute after it starts), so more run at once than the CPUs alone would allow.
    config.concurrency = 8;
    config.agent_timeout = std::time::Duration::from_secs(180);
    // 4.16's daemon requeues a ControllerConfig that comes before its Node by a minute; the
    // nudge touches the ControllerConfig once each node's daemon has written its Node, so
    // scenarios start in seconds. The fixture's verdicts were also taken without it.
    config.nudge_first_sync = true;
    config.agent = AgentKind::Binary {
        path: binary,
        args: daemon.args.clone(),
        node_tools: PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    };
    run(&config).await.expect("the run itself works");
    crate::common::scenario_outcomes(&dir.path().join(format!("{profile}.cucumber.json")))
}

async fn judge(name: &str) {
    let fixture = fixture();
    let daemon = fixture.daemons.iter().find(|d| d.name == name).unwrap();
    let Ok(binary) = std::env::var(&daemon.env) else {
        eprintln!(
            "SKIP (opt-in): {} is not set; it names a machine-config-daemon built from {} (docs/upstream.md says how to build one)",
            daemon.env, daemon.name
        );
        return;
    };
    if let Some(why) = harness::node::image::docker_unavailable() {
        fake_apiserver::testing::skip(&format!("{}: no Docker engine ({why})", daemon.name));
        return;
    }
    let seen = outcomes(daemon, PathBuf::from(binary)).await;
    assert!(!seen.is_empty(), "the run judged no scenario");
    let expected: BTreeMap<&str, &Difference> = daemon
        .differences
        .iter()
        .map(|d| (d.scenario.as_str(), d))
        .collect();
    let mut wrong = Vec::new();
    for (scenario, (passed, apart, why)) in &seen {
        match (expected.get(scenario.as_str()), passed) {
            (None, true) => {}
            (None, false) => wrong.push(format!("{scenario}: failed, expected to pass: {why}")),
            (Some(d), true) => wrong.push(format!(
                "{scenario}: passed, the fixture says it {} ({})",
                d.outcome, d.reason
            )),
            (Some(d), false) => {
                let outcome = if *apart { "fails apart" } else { "fails" };
                if d.outcome != outcome {
                    wrong.push(format!("{scenario}: {outcome}, the fixture says {}", d.outcome));
                }
            }
        }
    }
    for scenario in expected.keys() {
        if !seen.contains_key(*scenario) {
            wrong.push(format!("{scenario}: listed in the fixture, not run"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} against fixtures/upstream-daemons.yaml:\n{}",
        daemon.name,
        wrong.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_12s_daemon_passes_the_4_12_profile() {
    judge("release-4.12").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_14s_daemon_passes_the_4_14_profile() {
    judge("release-4.14").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_16s_daemon_passes_the_4_16_profile() {
    judge("release-4.16").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mains_daemon_differs_from_4_16_only_as_tabulated() {
    judge("main").await;
}

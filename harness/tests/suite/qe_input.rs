//! What a QE engineer's mistakes get from `mco-conformance run`: never a silent green or a
//! silent skip, and always the file, the line and the reason. Each case runs the CLI on a
//! feature written the way the mistake is made, and asserts the exit code and the message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_mco-conformance");

/// A feature file `name` with `text` in a fresh directory, and that directory.
pub(crate) fn feature(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// `mco-conformance run` from `dir`, as QE runs it from where the features are.
pub(crate) fn run(dir: &Path, args: &[&str], path: &Path) -> (Option<i32>, String, String) {
    run_from(dir, dir, args, path)
}

fn run_from(cwd: &Path, dir: &Path, args: &[&str], path: &Path) -> (Option<i32>, String, String) {
    let out: Output = Command::new(BIN)
        .current_dir(cwd)
        .arg("run")
        .arg("--report-dir")
        .arg(dir.join("report"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_undefined_step_is_named_with_the_nearest_phrase_and_fails_in_every_report() {
    let (dir, path) = feature(
        "typo.feature",
        "Feature: typo\n  Scenario: a misspelt step\n    Given a fresh cluster with 1 worker node\n    When 3 dayz pass\n",
    );
    let report = dir.path().join("report.yaml");
    let junit = dir.path().join("junit.xml");
    let json = dir.path().join("cucumber.json");
    let (code, stdout, _) = run(
        dir.path(),
        &[
            "--profile",
            "ocp-4.16",
            "--report",
            report.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &path,
    );
    assert_eq!(code, Some(1), "{stdout}");
    let place = format!(
        "{}:4: undefined step: When 3 dayz pass; did you mean \"When <duration> pass(es)\"",
        path.display()
    );
    assert!(stdout.contains(&place), "{stdout}");
    assert!(
        stdout.contains("FAIL ocp-4.16 typo.feature:2 a misspelt step"),
        "a line per scenario: {stdout}"
    );
    assert!(
        stdout.contains("undefined: no step definition matches it"),
        "{stdout}"
    );
    assert!(
        !stdout.to_lowercase().contains("skipped: ocp"),
        "not a skip: {stdout}"
    );
    // JUnit: a failure, not a skip.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<failure"), "{xml}");
    assert!(!xml.contains("<skipped"), "{xml}");
    // Cucumber JSON: the step is undefined (its own status there), the scenario failed.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc[0]["elements"][0]["steps"][1];
    assert_eq!(step["result"]["status"].as_str(), Some("undefined"), "{step}");
    // The vendor report: failed, with the step and the suggestion.
    let yaml: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(yaml["verdict"].as_str(), Some("failed"));
    assert_eq!(yaml["undefinedSteps"][0]["line"].as_u64(), Some(4), "{yaml:?}");
    assert_eq!(
        yaml["undefinedSteps"][0]["step"].as_str(),
        Some("When 3 dayz pass")
    );
}

#[test]
fn a_selection_of_nothing_exits_2_unless_allowed() {
    let (dir, path) = feature(
        "one.feature",
        "Feature: one\n  Scenario: s\n    Given a fresh cluster with 1 worker node\n",
    );
    let (code, _, stderr) = run(dir.path(), &["--tags", "@no-such-tag"], &path);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("nothing to run: no scenario of") && stderr.contains("the tags \"@no-such-tag\""),
        "{stderr}"
    );
    let (code, stdout, _) = run(dir.path(), &["--tags", "@no-such-tag", "--allow-empty"], &path);
    assert_eq!(code, Some(0));
    assert_eq!(stdout.lines().last(), Some("0 passed, 0 failed, 0 skipped"));
}

#[test]
fn an_unknown_profile_tag_is_a_lint_error_at_its_line() {
    let (dir, path) = feature(
        "tag.feature",
        "Feature: f\n\n  @ocp-4.13\n  Scenario: for 4.13\n    Given a fresh cluster with 1 worker node\n",
    );
    let (code, _, stderr) = run(dir.path(), &[], &path);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(&format!(
            "{}:3: @ocp-4.13 names no profile of this suite",
            path.display()
        )),
        "{stderr}"
    );
}

#[test]
fn a_refused_run_leaves_no_report_of_an_earlier_one() {
    let (dir, path) = feature(
        "tag.feature",
        "Feature: f\n  @ocp-4.99\n  Scenario: s\n    Given x\n",
    );
    let junit = dir.path().join("junit.xml");
    std::fs::write(&junit, "<testsuites>an earlier run's</testsuites>").unwrap();
    let (code, _, _) = run(
        dir.path(),
        &["--profile", "ocp-4.16", "--junit", junit.to_str().unwrap()],
        &path,
    );
    assert_eq!(code, Some(2));
    assert!(!junit.exists(), "the stale JUnit file was removed");
}

#[test]
fn parse_errors_and_missing_paths_say_where_and_why() {
    let (dir, path) = feature(
        "broken.feature",
        "Feature: a\n\n  Scenario: b\n    Given a fresh cluster with 1 worker node\n  Scenari: oops\n    Given x\n",
    );
    let (code, _, stderr) = run(dir.path(), &[], &path);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(&format!(
            "{}:6: does not parse at column 4: found `Given x`",
            path.display()
        )) && stderr.contains("(line 5, `Scenari: oops`, starts with no Gherkin keyword)"),
        "{stderr}"
    );
    let (dir, path) = feature("nofeature.feature", "Scenario: b\n    Given x\n");
    let (code, _, stderr) = run(dir.path(), &[], &path);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("a feature file starts with `Feature:`"),
        "{stderr}"
    );
    let missing = dir.path().join("nope.feature");
    let (code, _, stderr) = run(dir.path(), &[], &missing);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(&format!("{}: no such file or directory", missing.display())),
        "{stderr}"
    );
}

#[test]
fn stepless_scenarios_and_ragged_examples_are_lint_errors() {
    let (dir, path) = feature(
        "empty.feature",
        "Feature: f\n  Scenario: no steps\n    Gvien a fresh cluster with 1 worker node\n",
    );
    let (code, _, stderr) = run(dir.path(), &[], &path);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(":2: Scenario \"no steps\" has no steps")
            && stderr.contains("`Gvien a fresh cluster with 1 worker node` is description text, not a step"),
        "{stderr}"
    );
    let (dir, path) = feature(
        "ragged.feature",
        "Feature: f\n  Scenario Outline: o <n>\n    Given a fresh cluster with <n> worker node\n    Examples:\n      | n |\n      | 1 | 2 |\n",
    );
    let (code, _, stderr) = run(dir.path(), &[], &path);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(":6: an Examples row with 2 cells under a header of 1"),
        "{stderr}"
    );
}

#[test]
fn a_time_step_beyond_ten_years_is_refused_with_the_bound() {
    let (dir, path) = feature(
        "long.feature",
        "Feature: f\n  Scenario: too long\n    Given a fresh cluster with 1 worker node\n    When 99999 days pass\n",
    );
    let (code, stdout, _) = run(dir.path(), &["--profile", "ocp-4.16"], &path);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("99999 days is more than one step may move the clock: at most 3650 days"),
        "{stdout}"
    );
    assert!(stdout.contains("journals and cluster log: "), "{stdout}");
    // Beside the journals, the objects as the API server held them.
    let evidence = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("journals and cluster log: "))
        .expect("the evidence line");
    let pools: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(std::path::Path::new(evidence).join("machineconfigpools.yaml")).unwrap(),
    )
    .unwrap();
    let names: Vec<_> = pools["items"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["master", "worker"], "{pools:?}");
    for kept in ["machineconfigs.yaml", "controllerconfigs.yaml", "nodes.yaml"] {
        let text = std::fs::read_to_string(std::path::Path::new(evidence).join(kept)).unwrap();
        assert!(text.contains("kind: List"), "{kept}: {text}");
    }
}

#[test]
fn a_passing_scenario_is_one_line_and_verbose_shows_its_steps() {
    let (dir, path) = feature(
        "one.feature",
        "Feature: one\n  Scenario: starts\n    Given a fresh cluster with 1 worker node\n    Then no node has rebooted\n",
    );
    let (code, stdout, _) = run(dir.path(), &["--profile", "ocp-4.12"], &path);
    assert_eq!(code, Some(0), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("PASS "))
        .unwrap_or_default();
    assert!(
        line.starts_with("PASS ocp-4.12 one.feature:2 starts ("),
        "{stdout}"
    );
    assert!(
        !stdout.contains("no node has rebooted"),
        "steps only with -v: {stdout}"
    );
    let (code, stdout, _) = run(dir.path(), &["--profile", "ocp-4.12", "-v"], &path);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("ok   Then no node has rebooted (line 4)"),
        "{stdout}"
    );
}

#[test]
fn an_unknown_signer_or_pool_fails_its_step_with_the_known_names() {
    let (dir, path) = feature(
        "names.feature",
        "Feature: f\n  Scenario: a misspelt pool\n    Given a fresh cluster with 1 worker node\n    Then the wrokers pool has 0 rendered configs\n\n  Scenario: a misspelt signer\n    Given a fresh cluster with 1 worker node\n    Then the kube-apiserver-to-kubelet-singer has not rotated\n\n  Scenario: every signer's bundle\n    Given a fresh cluster with 1 worker node\n    Then the csr-signer-signer bundle holds 1 signer\n\n  Scenario: a target outside the kube-apiserver operator's namespace\n    Given a fresh cluster with 1 worker node\n    Then every node's kubelet-ca.crt lists the current csr-signer\n\n  Scenario: a misspelt pool in a rendered-config step\n    Given a fresh cluster with 1 worker node\n    Then the newest rendered config of the wroker pool lacks the file /etc/x\n",
    );
    let (code, stdout, _) = run(dir.path(), &["--profile", "ocp-4.16"], &path);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("no MachineConfigPool \"wrokers\" in the cluster; pools: master, worker"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\"kube-apiserver-to-kubelet-singer\"")
            && stdout.contains("kube-apiserver-to-kubelet-signer, "),
        "the known signers are listed: {stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("PASS ocp-4.16 names.feature:10 every signer's bundle")),
        "a bundle step works for a signer other than the kubelet client CA's: {stdout}"
    );
}

#[test]
fn a_long_time_step_prints_where_it_is_and_each_profile_gets_a_summary() {
    let (dir, path) = feature(
        "long.feature",
        "Feature: f\n  Scenario: a year\n    Given a fresh cluster with 1 worker node\n    When 365 days pass\n",
    );
    // Every stop reports at once (the default waits 5 s of wall time between reports).
    let out = Command::new(BIN)
        .env("MCO_CONFORMANCE_PROGRESS_EVERY", "0")
        .arg("run")
        .arg("--report-dir")
        .arg(dir.path().join("report"))
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let progress: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  ... ocp-4.16 long.feature:2: 365 days passing: simulated "))
        .collect();
    assert!(progress.len() >= 2, "{stdout}");
    assert!(progress.iter().all(|l| l.contains(" stops so far, ")), "{stdout}");
    for profile in harness::profile::Profile::ALL {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{profile}: 1 passed, 0 failed, 0 skipped in "))),
            "a summary per profile: {stdout}"
        );
    }
    let total = harness::profile::Profile::ALL.len();
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{total} passed, 0 failed, 0 skipped").as_str())
    );
}

#[test]
fn reports_name_a_feature_outside_the_working_directory_by_a_path_that_resolves() {
    let (dir, path) = feature(
        "one.feature",
        "Feature: one\n  Scenario: starts\n    Given a fresh cluster with 1 worker node\n",
    );
    let cwd = dir.path().join("elsewhere");
    std::fs::create_dir(&cwd).unwrap();
    let (code, stdout, _) = run_from(&cwd, dir.path(), &["--profile", "ocp-4.16"], &path);
    assert_eq!(code, Some(0), "{stdout}");
    let json = std::fs::read_to_string(dir.path().join("report/ocp-4.16.cucumber.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let uri = doc[0]["uri"].as_str().unwrap();
    assert_eq!(uri, "../one.feature");
    // Relative to where the run ran, it is the file.
    let resolved = cwd.join(uri);
    assert_eq!(
        std::fs::canonicalize(&resolved).unwrap(),
        std::fs::canonicalize(&path).unwrap(),
        "{uri}"
    );
}

#[test]
fn a_scenario_runs_alone_by_the_file_and_line_its_progress_line_names() {
    let (dir, path) = feature(
        "two.feature",
        "Feature: f\n  Scenario: first\n    Given a fresh cluster with 1 worker node\n\n  Scenario Outline: second\n    Given a fresh cluster with <n> worker nodes\n\n    Examples:\n      | n |\n      | 1 |\n      | 2 |\n",
    );
    let (code, stdout, _) = run(dir.path(), &["--profile", "ocp-4.16"], &path);
    assert_eq!(code, Some(0), "{stdout}");
    let second_row = stdout
        .lines()
        .filter(|l| l.contains(" second"))
        .filter_map(|l| l.split_whitespace().nth(2))
        .find(|place| place.ends_with(":11"))
        .unwrap_or_else(|| panic!("the second row's line names two.feature:11: {stdout}"))
        .to_string();
    // Copied from the progress line, run from the same directory: that row alone.
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "run",
            "--profile",
            "ocp-4.16",
            "--report-dir",
            "report",
            &second_row,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("1 passed, 0 failed, 0 skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("two.feature:11 second"), "{stdout}");
    // A line where no scenario starts names the lines where they do.
    let at = format!("{}:9", path.display());
    let (code, _, stderr) = run(dir.path(), &[], Path::new(&at));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("two.feature:9: no scenario starts at line 9 (scenarios and Examples rows start at lines 2, 10, 11)"),
        "{stderr}"
    );
    // One scenario by line, with other paths beside it, is refused.
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["run", "--report-dir", "report", "two.feature:2", "two.feature"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("FILE:LINE names one scenario: give it as the only path"),
        "{out:?}"
    );
}

/// A skipped Outline row is named by its values, as every table names it, not by its position
/// among its Examples rows (which moves when a row is added above it).
#[test]
fn a_skipped_outline_row_is_named_by_its_values() {
    let (dir, path) = feature(
        "rows.feature",
        "Feature: rows\n  Scenario Outline: a scenario for <n> nodes\n    Given a fresh cluster with <n> worker nodes\n\n    Examples:\n      | n |\n      | 1 |\n\n    @container\n    Examples:\n      | n |\n      | 2 |\n",
    );
    let (code, stdout, stderr) = run(dir.path(), &["--profile", "ocp-4.16"], &path);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("skipped: ocp-4.16: rows: a scenario for 2 nodes (row: n=2): @container"),
        "{stdout}"
    );
    assert!(!stdout.contains("(row 1)"), "{stdout}");
}

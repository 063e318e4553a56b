use super::*;
use assert_fs::prelude::*;

const FRESH: &str = "Given a fresh cluster with 1 worker node";

/// A directory of two feature files: one with a scenario for every profile, one for 4.16 only,
/// an `@slow` one and a `@container` one; another with an Outline whose second row is 4.16's
/// and a step no definition matches.
fn features() -> assert_fs::TempDir {
    let dir = assert_fs::TempDir::new().unwrap();
    dir.child("a.feature")
        .write_str(&format!(
            "Feature: A\n  Scenario: everywhere\n    {FRESH}\n\n  @ocp-4.16\n  Scenario: newest only\n    {FRESH}\n\n  @slow\n  Scenario: long\n    {FRESH}\n\n  @container\n  Scenario: in a container\n    {FRESH}\n"
        ))
        .unwrap();
    dir.child("b.feature")
        .write_str(&format!(
            "Feature: B\n  Scenario Outline: rows\n    {FRESH}\n    Then the moon is made of <what>\n\n    Examples:\n      | what   |\n      | cheese |\n"
        ))
        .unwrap();
    dir
}

fn config(paths: Vec<PathBuf>, profiles: &[Profile]) -> RunConfig {
    let mut config = RunConfig::new(paths, PathBuf::from("unused"));
    config.profiles = profiles.to_vec();
    config
}

#[test]
fn a_plan_reads_every_feature_under_its_paths_and_names_the_undefined_steps() {
    let dir = features();
    let plan = plan(&config(vec![dir.path().to_path_buf()], &Profile::ALL)).unwrap();
    let mut names: Vec<&str> = plan.features.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["A", "B"]);
    assert!(plan.tags.is_none());
    let undefined: Vec<(usize, &str, &str)> = plan
        .undefined
        .iter()
        .map(|u| (u.line, u.step.as_str(), u.problem.as_str()))
        .collect();
    assert_eq!(undefined, [(4, "Then the moon is made of cheese", "undefined")]);
    assert!(
        plan.undefined[0].file.ends_with("b.feature"),
        "{:?}",
        plan.undefined
    );
}

#[test]
fn each_profile_skips_the_opt_in_and_container_scenarios_saying_why() {
    let dir = features();
    let config = config(
        vec![dir.child("a.feature").to_path_buf()],
        &[Profile::Ocp412, Profile::Ocp416],
    );
    let skipped = plan(&config).unwrap().skips(&config, None).unwrap();
    assert_eq!(
        skipped,
        [
            "ocp-4.12: A: long: @slow: left out unless asked for (--tags @slow)",
            "ocp-4.12: A: in a container: @container: needs container nodes (--nodes container)",
            "ocp-4.16: A: long: @slow: left out unless asked for (--tags @slow)",
            "ocp-4.16: A: in a container: @container: needs container nodes (--nodes container)",
        ]
    );
}

/// Without a Docker engine nothing runs and nothing passes: every scenario that would run is
/// a skip with the reason, and a run left with nothing to run is refused, naming the skips.
#[test]
fn without_an_engine_every_scenario_is_skipped_and_the_run_refused() {
    let dir = features();
    let mut config = config(vec![dir.child("a.feature").to_path_buf()], &[Profile::Ocp412]);
    config.tags = Some("not @slow and not @container".into());
    let plan = plan(&config).unwrap();
    assert_eq!(plan.skips(&config, None).unwrap(), Vec::<String>::new());
    let refused = plan
        .skips(&config, Some("docker: not found"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        refused,
        format!(
            "nothing to run: no scenario of {} is selected to run on ocp-4.12 with embedded nodes and the tags \"not @slow and not @container\"; 1 skipped: ocp-4.12: A: everywhere: no Docker engine (docker: not found) (--allow-empty makes this a success)",
            dir.child("a.feature").display()
        )
    );
    config.allow_empty = true;
    assert_eq!(
        plan.skips(&config, Some("docker: not found")).unwrap(),
        ["ocp-4.12: A: everywhere: no Docker engine (docker: not found)"]
    );
}

#[test]
fn bad_paths_tags_and_lines_are_refused_before_anything_runs() {
    let dir = features();
    dir.child("notes.txt").write_str("not gherkin").unwrap();
    dir.child("empty").create_dir_all().unwrap();
    let refused = |config: RunConfig| plan(&config).err().map(|e| e.to_string());
    let missing = dir.child("missing.feature").to_path_buf();
    assert!(matches!(
        plan(&config(vec![missing.clone()], &Profile::ALL)),
        Err(RunError::MissingPath(p)) if p == missing
    ));
    assert!(matches!(
        plan(&config(vec![dir.child("notes.txt").to_path_buf()], &Profile::ALL)),
        Err(RunError::NotAFeature(_))
    ));
    assert!(matches!(
        plan(&config(vec![dir.child("empty").to_path_buf()], &Profile::ALL)),
        Err(RunError::NoFeatures(_))
    ));
    let mut bad_tags = config(vec![dir.path().to_path_buf()], &Profile::ALL);
    bad_tags.tags = Some("((".into());
    assert!(matches!(plan(&bad_tags), Err(RunError::Tags(t, _)) if t == "(("));
    let mut only = config(vec![dir.child("b.feature").to_path_buf()], &Profile::ALL);
    only.only = Some(("b.feature".into(), 3));
    assert_eq!(
        refused(only.clone()).as_deref(),
        Some("b.feature:3: no scenario starts at line 3 (scenarios and Examples rows start at lines 8)")
    );
    only.only = Some(("b.feature".into(), 8));
    assert_eq!(plan(&only).unwrap().features.len(), 1);
}

/// The reports a run would write, and only those, go before it starts: a refused run leaves
/// none of an earlier one.
#[test]
fn stale_reports_are_cleared_and_other_files_left() {
    let dir = assert_fs::TempDir::new().unwrap();
    let mut config = RunConfig::new(Vec::new(), dir.path().to_path_buf());
    config.profiles = vec![Profile::Ocp416];
    config.html = Some(dir.child("page.html").to_path_buf());
    for name in [
        "ocp-4.16.junit.xml",
        "ocp-4.16.cucumber.json",
        "page.html",
        "ocp-4.12.junit.xml",
    ] {
        dir.child(name).write_str("stale").unwrap();
    }
    dir.child("failed/ocp-4.16/a/journal").write_str("stale").unwrap();
    clear_reports(&config).unwrap();
    for gone in [
        "ocp-4.16.junit.xml",
        "ocp-4.16.cucumber.json",
        "page.html",
        "failed/ocp-4.16",
    ] {
        assert!(!dir.child(gone).exists(), "{gone} is left");
    }
    dir.child("ocp-4.12.junit.xml").assert("stale");
}

use super::*;
use assert_fs::prelude::*;
use serde_json::json;

/// One profile's Cucumber JSON: a feature with a passed scenario and a failed one.
fn results(dir: &assert_fs::TempDir) {
    let scenario = |name: &str, line: u64, status: &str| {
        json!({"name": name, "line": line, "tags": [],
               "steps": [{"keyword": "Then ", "name": "every node is Done", "line": line + 1,
                          "result": {"status": status, "error_message": "worker-0 is Degraded"}}]})
    };
    let document = json!([{"uri": "features/f.feature", "name": "F", "tags": [], "elements": [
        scenario("syncs", 3, "passed"),
        scenario("degrades", 6, "failed"),
    ]}]);
    dir.child("ocp-4.16.cucumber.json")
        .write_str(&document.to_string())
        .unwrap();
}

fn summary() -> Summary {
    Summary {
        passed: 1,
        failed: 1,
        skipped: vec!["ocp-4.16: F: later: @slow: left out unless asked for (--tags @slow)".into()],
        failures: vec!["ocp-4.16: f.feature:6: degrades: worker-0 is Degraded".into()],
        ..Summary::default()
    }
}

#[test]
fn the_recap_lists_skips_then_failures_then_what_is_counted_apart() {
    assert_eq!(
        recap(&summary()),
        [
            "skipped: ocp-4.16: F: later: @slow: left out unless asked for (--tags @slow)",
            "failed: ocp-4.16: f.feature:6: degrades: worker-0 is Degraded",
        ]
    );
    let apart = Summary {
        mco_logs_failed: 2,
        beyond_upstream_failed: 1,
        ..Summary::default()
    };
    let lines = recap(&apart);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("2 @mco-logs scenario(s) failed: "),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("1 @beyond-upstream scenario(s) failed: "),
        "{lines:?}"
    );
    assert!(recap(&Summary::default()).is_empty());
}

/// The YAML report and the HTML page go where asked, directories made, both from the run's
/// Cucumber JSON and with the run's one verdict.
#[tokio::test]
async fn the_reports_are_written_where_asked_from_the_results() {
    let dir = assert_fs::TempDir::new().unwrap();
    results(&dir);
    let mut config = RunConfig::new(Vec::new(), dir.path().to_path_buf());
    config.profiles = vec![Profile::Ocp416];
    config.quiet = true;
    config.command = "mco-conformance run features/f.feature".into();
    config.report = Some(dir.child("out/report.yaml").to_path_buf());
    config.html = Some(dir.child("out/page/report.html").to_path_buf());
    publish(&config, &summary()).await.unwrap();
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.child("out/report.yaml")).unwrap()).unwrap();
    assert_eq!(yaml["verdict"].as_str(), Some("failed"));
    assert_eq!(
        yaml["reproduce"].as_str(),
        Some("mco-conformance run features/f.feature")
    );
    let results: Vec<(&str, &str)> = yaml["results"][0]["features"][0]["scenarios"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["result"].as_str().unwrap()))
        .collect();
    assert_eq!(results, [("syncs", "passed"), ("degrades", "failed")]);
    let page = std::fs::read_to_string(dir.child("out/page/report.html")).unwrap();
    for seen in [
        r#"id="verdict">failed<"#,
        "degrades",
        "worker-0 is Degraded",
        "mco-conformance run features/f.feature",
    ] {
        assert!(page.contains(seen), "the page lacks {seen:?}");
    }
}

/// A profile that never ran has no Cucumber JSON: the page leaves it out, the YAML report
/// cannot, and says which file it lacks.
#[tokio::test]
async fn a_missing_results_document_is_named() {
    let dir = assert_fs::TempDir::new().unwrap();
    let mut config = RunConfig::new(Vec::new(), dir.path().to_path_buf());
    config.profiles = vec![Profile::Ocp416];
    config.quiet = true;
    config.html = Some(dir.child("page.html").to_path_buf());
    publish(&config, &Summary::default()).await.unwrap();
    let page = std::fs::read_to_string(dir.child("page.html")).unwrap();
    assert!(page.contains(r#"id="verdict">passed<"#), "{page}");
    config.report = Some(dir.child("report.yaml").to_path_buf());
    let error = publish(&config, &Summary::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("ocp-4.16.cucumber.json"), "{error}");
    assert!(!dir.child("report.yaml").exists());
}

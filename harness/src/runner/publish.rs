//! Publishing a run's summary: the recap on the console (skips, failures, the scenarios
//! counted apart), the YAML conformance report and the HTML page where asked, and the summary
//! line last. JUnit XML and Cucumber JSON are written as each profile runs (`profile_run`);
//! the YAML report and the HTML page read the Cucumber JSON back.

use super::profile_run::report_path;
use super::*;

/// Print the recap, write the YAML report and the HTML page where asked, then the summary line.
pub(super) async fn publish(config: &RunConfig, summary: &Summary) -> Result<(), RunError> {
    if !config.quiet {
        for line in recap(summary) {
            crate::sayln!("{line}");
        }
    }
    if let Some(path) = &config.report {
        write(path, &yaml_report(config, summary).await?)?;
        if !config.quiet {
            crate::sayln!("conformance report: {}", path.display());
        }
    }
    if let Some(path) = &config.html {
        write(path, &html_page(config, summary)?)?;
        if !config.quiet {
            crate::sayln!("HTML report: {}", path.display());
        }
    }
    if !config.quiet {
        crate::sayln!("{}", summary.line());
    }
    Ok(())
}

/// The console lines above the summary line: each skip with its reason, each failure again (as
/// `cargo test` ends with its failures: the FAIL lines are far up a long run), and the
/// scenarios counted apart from the verdict.
pub(super) fn recap(summary: &Summary) -> Vec<String> {
    let mut lines: Vec<String> = summary.skipped.iter().map(|s| format!("skipped: {s}")).collect();
    lines.extend(summary.failures.iter().map(|f| format!("failed: {f}")));
    if summary.mco_logs_failed > 0 {
        lines.push(format!(
            "{} @mco-logs scenario(s) failed: they check upstream MCO log wording and are reported apart from the verdict for this agent",
            summary.mco_logs_failed
        ));
    }
    if summary.beyond_upstream_failed > 0 {
        lines.push(format!(
            "{} @beyond-upstream scenario(s) failed: they ask more than upstream MCO does (hardening) and are reported apart from the verdict for this agent",
            summary.beyond_upstream_failed
        ));
    }
    lines
}

/// The YAML conformance report of the run, from its Cucumber JSON documents.
async fn yaml_report(config: &RunConfig, summary: &Summary) -> Result<String, RunError> {
    let ctx = report::ReportContext {
        agent: &config.agent,
        nodes: config.nodes,
        api_server: config.endpoint.describe(),
        summary,
        results: config
            .profiles
            .iter()
            .map(|&p| (p, report_path(config, config.json.as_ref(), p, "cucumber.json")))
            .collect(),
        command: config.command.clone(),
        agent_timeout: config.agent_timeout,
    };
    report::conformance_report(&ctx).await.map_err(RunError::Report)
}

/// The HTML page of the run, from the Cucumber JSON documents of the profiles that ran.
fn html_page(config: &RunConfig, summary: &Summary) -> Result<String, RunError> {
    let mut results = Vec::new();
    for &p in &config.profiles {
        let json = report_path(config, config.json.as_ref(), p, "cucumber.json");
        if json.exists() {
            results.push((p, report::read_results(&json).map_err(RunError::Report)?));
        }
    }
    Ok(html::render(&html::Page {
        summary,
        results,
        command: &config.command,
        verdict: summary.verdict(),
    }))
}

/// Write `contents` to `path`, making its directory first.
fn write(path: &std::path::Path, contents: &str) -> Result<(), RunError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| RunError::Io(dir.to_path_buf(), e))?;
    }
    std::fs::write(path, contents).map_err(|e| RunError::Io(path.to_path_buf(), e))
}

#[cfg(test)]
mod tests;

//! The run itself, one pipeline: plan (lint and select, refusing a run with nothing to run),
//! execute (the node backend, then every profile), publish (the recap, the reports, the summary
//! line). It only calls the stages in order; what each does is theirs, and what a run is
//! configured with and fails with is `runner`'s.

use super::{RunConfig, RunError, Summary, execute, plan, publish};

/// Plan, execute, publish: lint and select (refusing a run with nothing to run), run every
/// profile, then the recap, the reports asked for and the summary line last.
pub async fn run(config: &RunConfig) -> Result<Summary, RunError> {
    crate::node::raise_open_file_limit();
    plan::clear_reports(config)?;
    let plan = plan::plan(config)?;
    std::fs::create_dir_all(&config.report_dir).map_err(|e| RunError::Io(config.report_dir.clone(), e))?;
    if !config.quiet {
        for u in &plan.undefined {
            crate::sayln!("{u}");
        }
    }
    let backend = execute::prepare_backend(config).await?;
    let skipped = plan.skips(config, backend.as_ref().err().map(String::as_str))?;
    let summary = execute::execute(config, &plan, &backend, skipped).await?;
    publish::publish(config, &summary).await?;
    Ok(summary)
}

//! `cargo test` runs the features: every feature under `features/`, embedded nodes, both
//! profiles, unless told otherwise. This runner owns its command line: libtest's flags
//! (`--nocapture`, name filters) are ignored; it reads `--profile`, `--tags` and `--nodes` (or
//! `MCO_CONFORMANCE_PROFILE`, `MCO_CONFORMANCE_TAGS`, `MCO_CONFORMANCE_NODES`), prints the
//! summary line last, and exits non-zero on any failure. Reports go to
//! `target/conformance/`.

// The step definitions; their catalogue helpers serve the CLI and the README test, not this runner.
#[path = "../harness/src/steps/mod.rs"]
#[allow(dead_code)]
mod steps;

use harness::runner::{Nodes, RunConfig, profiles_named, run};
use std::path::Path;
use std::process::ExitCode;

/// `--flag value` from the command line, else the environment variable.
fn option(args: &[String], flag: &str, env: &str) -> Option<String> {
    args.windows(2)
        .find(|w| w[0] == flag)
        .map(|w| w[1].clone())
        .or_else(|| std::env::var(env).ok())
        .filter(|v| !v.is_empty())
}

/// The run asked for, and whether to follow an embedded run with the `@container` scenarios
/// on container nodes (when no backend was named).
fn config() -> Result<(RunConfig, bool), String> {
    let args: Vec<String> = std::env::args().collect();
    let profile = option(&args, "--profile", "MCO_CONFORMANCE_PROFILE");
    let profiles = profiles_named(profile.as_deref().unwrap_or("all")).map_err(|e| e.to_string())?;
    let named = option(&args, "--nodes", "MCO_CONFORMANCE_NODES");
    let nodes = named.as_deref().unwrap_or("embedded").parse::<Nodes>()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = RunConfig::new(
        vec![root.join("features")],
        root.join("target").join("conformance"),
    );
    config.profiles = profiles;
    config.tags = option(&args, "--tags", "MCO_CONFORMANCE_TAGS");
    config.nodes = nodes;
    config.command = "cargo test --test conformance".into();
    Ok((config, named.is_none()))
}

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (config, then_containers) = match config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let mut result = run(&config).await;
    if then_containers && let Ok(embedded) = result {
        // DESIGN.md: `cargo test` also runs the @container scenarios on container nodes, or
        // lists them skipped with the reason when no Docker engine answers.
        let mut containers = config.clone();
        containers.nodes = Nodes::Container;
        containers.tags = Some(match &config.tags {
            Some(t) => format!("@container and ({t})"),
            None => "@container".into(),
        });
        containers.report_dir = config.report_dir.join("container");
        // Selecting nothing here is no mistake of the user's: the skips say why.
        containers.allow_empty = true;
        println!("the @container scenarios on container nodes:");
        result = run(&containers).await.map(|c| {
            let all = embedded.with_container_run(c);
            println!("both runs together:\n{}", all.line());
            all
        });
    }
    // A skip for want of a Docker engine is no pass under CI, which installs one.
    if let Ok(summary) = &result
        && fake_apiserver::testing::in_ci()
        && let Some(skip) = summary.skipped.iter().find(|s| s.contains("no Docker engine"))
    {
        eprintln!("conformance: cannot run under CI=true: {skip}");
        return ExitCode::FAILURE;
    }
    match result {
        Ok(summary) if summary.passed() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("conformance: {e}");
            println!("0 passed, 1 failed, 0 skipped");
            ExitCode::FAILURE
        }
    }
}

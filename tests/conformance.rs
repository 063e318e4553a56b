//! `cargo test` runs the features: every feature under `features/`, embedded nodes, every
//! profile, unless told otherwise. This runner owns its command line: libtest's flags
//! (`--nocapture`, name filters) are ignored; it reads `--profile`, `--tags` and `--nodes`, and
//! every option of `mco-conformance run` that has an environment variable
//! (`MCO_CONFORMANCE_PROFILE`, `MCO_CONFORMANCE_TAGS`, `MCO_CONFORMANCE_NODES`,
//! `MCO_CONFORMANCE_APISERVER`…), through the same parser (`harness::runner::options`); it
//! prints the summary line last and exits non-zero on any failure. Reports go to
//! `target/conformance/`.

use clap::Parser;
use harness::runner::options::RunOptions;
use harness::runner::{Nodes, RunConfig, run};
use std::path::Path;
use std::process::ExitCode;

/// The run options, as `mco-conformance run` reads them.
#[derive(Parser)]
struct Conformance {
    #[command(flatten)]
    run: RunOptions,
}

/// The flags of `mco-conformance run` this runner takes from its command line (with their
/// values); the rest of its command line is libtest's, and everything else comes from the
/// environment variables the CLI reads too (`MCO_CONFORMANCE_PROFILE`, `_TAGS`, `_NODES`,
/// `_APISERVER`…).
const FLAGS: &[&str] = &["--profile", "--tags", "--nodes"];

/// The run asked for, and whether to follow an embedded run with the `@container` scenarios
/// on container nodes (when no backend was named).
fn config() -> Result<(RunConfig, bool), String> {
    let args: Vec<String> = std::env::args().collect();
    let mut argv = vec!["conformance".to_string()];
    for pair in args.windows(2).filter(|w| FLAGS.contains(&w[0].as_str())) {
        argv.extend(pair.iter().cloned());
    }
    let named = argv.iter().any(|a| a == "--nodes")
        || std::env::var("MCO_CONFORMANCE_NODES").is_ok_and(|v| !v.is_empty());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    argv.extend([
        "--report-dir".to_string(),
        root.join("target").join("conformance").display().to_string(),
        root.join("features").display().to_string(),
    ]);
    let options = Conformance::try_parse_from(argv).map_err(|e| e.to_string())?.run;
    let mut config = options.config()?;
    config.command = "cargo test --test conformance".into();
    Ok((config, !named))
}

fn main() -> ExitCode {
    // Started as the reference daemon or a node tool by an embedded node: that program, so an
    // embedded run needs no other binary built (`cargo mutants` builds only this test).
    if let Some(code) = harness::runner::node_roles::serve_if_asked() {
        return code;
    }
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run_features()),
        Err(e) => {
            eprintln!("conformance: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run_features() -> ExitCode {
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

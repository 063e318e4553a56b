//! `mco-conformance`: run the conformance features, or list the steps they can use.
//!
//! - `mco-conformance run [--profile ocp-4.12|ocp-4.16|all] [--tags EXPR] [--nodes embedded]
//!   [--report-dir DIR] [--junit PATH] [--json PATH] [FEATURE_OR_DIR …]`: lint, run, print the summary line last; exit 1 on
//!   a failure, 2 on bad input (a feature that does not lint, an unknown profile).
//! - `mco-conformance steps [--markdown]`: every step phrase with its description and source.
//! - `mco-conformance features [PATH…]`: the features table of the README, from the files.

#[path = "../steps/mod.rs"]
mod steps;

use clap::{Parser, Subcommand};
use harness::Profile;
use harness::runner::{Nodes, RunConfig, RunError, run};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    version,
    about = "Conformance suite for MCO-like node agents: certificate rotation on a fake cluster"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run features (default: every feature under ./features, both profiles, embedded nodes).
    Run {
        /// ocp-4.12, ocp-4.16, or all.
        #[arg(long, env = "MCO_CONFORMANCE_PROFILE", default_value = "all")]
        profile: String,
        /// A tag expression, added to the profile and @slow/@container rules (e.g. "@slow").
        #[arg(long, env = "MCO_CONFORMANCE_TAGS")]
        tags: Option<String>,
        /// embedded (container nodes come with a later release).
        #[arg(long, env = "MCO_CONFORMANCE_NODES", default_value = "embedded")]
        nodes: String,
        /// Where JUnit XML, Cucumber JSON and failed scenarios' journals go.
        #[arg(long, default_value = "target/conformance")]
        report_dir: PathBuf,
        /// The JUnit XML file (default: <report-dir>/<profile>.junit.xml; with both profiles the
        /// profile goes before the extension).
        #[arg(long)]
        junit: Option<PathBuf>,
        /// The Cucumber JSON file (default: <report-dir>/<profile>.cucumber.json; likewise).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Scenarios run at once.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Feature files or directories.
        #[arg(default_value = "features")]
        features: Vec<PathBuf>,
    },
    /// The features table: per feature file, its scenarios and how many run on each profile,
    /// as Markdown (the README's table is this output).
    Features {
        /// Feature files or directories.
        #[arg(default_value = "features")]
        features: Vec<PathBuf>,
    },
    /// List every step phrase with its description and where it is defined.
    Steps {
        /// As the README's Markdown table.
        #[arg(long)]
        markdown: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match Cli::parse().command {
        Command::Features { features } => match harness::runner::features_markdown(&features) {
            Ok(table) => {
                print!("{table}");
                ExitCode::SUCCESS
            }
            Err(errors) => {
                for e in errors {
                    eprintln!("{e}");
                }
                ExitCode::from(2)
            }
        },
        Command::Steps { markdown } => {
            if markdown {
                print!("{}", steps::catalogue_markdown());
            } else {
                for s in steps::catalogue() {
                    println!(
                        "{} {}\n    {}\n    ({})",
                        s.keyword, s.phrase, s.description, s.location
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Command::Run {
            profile,
            tags,
            nodes,
            report_dir,
            junit,
            json,
            concurrency,
            features,
        } => {
            let profiles = match profile.as_str() {
                "all" => Profile::ALL.to_vec(),
                p => match p.parse::<Profile>() {
                    Ok(p) => vec![p],
                    Err(e) => return bad(e),
                },
            };
            let nodes = match nodes.as_str() {
                "embedded" => Nodes::Embedded,
                "container" => Nodes::Container,
                other => {
                    return bad(format!(
                        "unknown node backend {other:?}: expected embedded or container"
                    ));
                }
            };
            let config = RunConfig {
                profiles,
                tags,
                nodes,
                paths: features,
                report_dir,
                junit,
                json,
                concurrency,
            };
            match run(&config).await {
                Ok(summary) if summary.failed == 0 => ExitCode::SUCCESS,
                Ok(_) => ExitCode::FAILURE,
                Err(e @ (RunError::Lint(_) | RunError::NoFeatures(_) | RunError::Tags(..))) => bad(e),
                Err(e) => {
                    eprintln!("mco-conformance: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn bad(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("mco-conformance: {message}");
    ExitCode::from(2)
}

//! `mco-conformance`: run the conformance features, or list the steps they can use.
//!
//! - `mco-conformance run [--profile ocp-4.12|ocp-4.14|ocp-4.16|all] [--tags EXPR] [--nodes embedded|container]
//!   [--report-dir DIR] [--junit PATH] [--json PATH] [-v] [--allow-empty] [FEATURE_OR_DIR …]`: lint, run, print a
//!   line per scenario and the summary line last; exit 1 on a failure (an undefined step
//!   included), 2 on bad input (a feature that does not lint, a missing path, an unknown
//!   profile, paths and tags that select nothing to run).
//! - `mco-conformance node-image`: build (or reuse) the container node image and tag it for
//!   agent images' `FROM` lines.
//! - `mco-conformance steps [--markdown]`: every step phrase with its description and source.
//! - `mco-conformance features [PATH…]`: the features table of `docs/features.md`, from the files.

use clap::{Parser, Subcommand};
use harness::runner::{RunError, run};
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
// Parsed once per process: the size of the `Run` variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Run features (default: every feature under ./features, every profile, embedded nodes).
    Run(harness::runner::options::RunOptions),
    /// The features table: per feature file, its scenarios and how many run on each profile,
    /// as Markdown (the table of docs/features.md is this output).
    Features {
        /// Feature files or directories.
        #[arg(default_value = "features")]
        features: Vec<PathBuf>,
    },
    /// Build (or reuse) the container node image from the binaries beside this one, and tag it
    /// mco-conformance-node:<version> for agent images' FROM lines.
    NodeImage,
    /// The suite proving its own power: run every mutant of the reference daemon (one
    /// behaviour broken on purpose) over the features on embedded nodes, and print who rejected
    /// each; exit 1 if a mutant survives a profile it breaks.
    SelfTest {
        /// Only these mutants (repeat for more; default: the whole catalogue).
        #[arg(long = "mutant")]
        mutants: Vec<String>,
        /// List the catalogue (name, profiles, broken behaviour) and run nothing.
        #[arg(long)]
        list: bool,
        /// Print the table as Markdown (the table of docs/self-test.md is this output).
        #[arg(long)]
        markdown: bool,
        /// Where each mutant's run reports go.
        #[arg(long, default_value = "target/self-test")]
        report_dir: PathBuf,
        /// A step's deadline in the discovery pass (the whole suite under a mutant).
        #[arg(long, default_value = "5s")]
        agent_timeout: String,
        /// A step's deadline when a failure is confirmed, alone, with the reference daemon and
        /// with the mutant (default: a run's `--agent-timeout` default), so that a rejection is
        /// one a vendor's run makes too.
        #[arg(long)]
        confirm_timeout: Option<String>,
        /// Scenarios run at once.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// Feature files or directories.
        #[arg(default_value = "features")]
        features: Vec<PathBuf>,
    },
    /// List every step phrase with its description and where it is defined.
    Steps {
        /// As a Markdown table (the table of docs/steps.md is this output).
        #[arg(long)]
        markdown: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match Cli::parse().command {
        Command::NodeImage => {
            let built = harness::node::image::harness_binaries()
                .and_then(|binaries| harness::node::image::ensure_node_image(&binaries));
            match built {
                Ok(image) => {
                    harness::sayln!(
                        "{} ({})\n{}",
                        image.reference,
                        image.how(),
                        image.version_reference
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    harness::warnln!("mco-conformance: node image: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::SelfTest {
            mutants,
            list,
            markdown,
            report_dir,
            agent_timeout,
            confirm_timeout,
            concurrency,
            features,
        } => {
            use harness::agent::Mutant;
            use harness::runner::self_test;
            if list {
                for m in Mutant::ALL {
                    let profiles: Vec<&str> = m.profiles().iter().map(|p| p.as_str()).collect();
                    harness::sayln!("{:<30} {:<18} {}", m.name(), profiles.join(","), m.broken());
                }
                return ExitCode::SUCCESS;
            }
            let mut config = self_test::SelfTestConfig::new(features, report_dir);
            if !mutants.is_empty() {
                match mutants.iter().map(|m| m.parse::<Mutant>()).collect() {
                    Ok(m) => config.mutants = m,
                    Err(e) => return bad(e),
                }
            }
            config.concurrency = concurrency;
            config.agent_timeout =
                match harness::runner::options::positive_duration("--agent-timeout", &agent_timeout) {
                    Ok(d) => d,
                    Err(e) => return bad(e),
                };
            if let Some(confirm) = confirm_timeout {
                config.confirm_timeout =
                    match harness::runner::options::positive_duration("--confirm-timeout", &confirm) {
                        Ok(d) => d,
                        Err(e) => return bad(e),
                    };
            }
            let started = std::time::Instant::now();
            if let Err(e) = install_interrupts() {
                return bad(e);
            }
            match self_test::self_test(&config).await {
                Ok(_) | Err(_) if harness::interrupt::interrupted().is_some() => interrupted_exit(),
                Ok(verdicts) => {
                    if markdown {
                        harness::say!("{}", self_test::table_markdown(&verdicts));
                    } else {
                        harness::say!("{}", self_test::table_text(&verdicts));
                        harness::sayln!("self-test took {:.1} s", started.elapsed().as_secs_f64());
                    }
                    if verdicts.iter().all(|v| v.rejected()) {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    }
                }
                Err(
                    e @ (RunError::Lint(_)
                    | RunError::NoFeatures(_)
                    | RunError::MissingPath(_)
                    | RunError::NotAFeature(_)
                    | RunError::Tags(..)),
                ) => bad(e),
                Err(e) => {
                    harness::warnln!("mco-conformance: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Features { features } => match harness::runner::features_markdown(&features) {
            Ok(table) => {
                harness::say!("{table}");
                ExitCode::SUCCESS
            }
            Err(errors) => {
                for e in errors {
                    harness::warnln!("{e}");
                }
                ExitCode::from(2)
            }
        },
        Command::Steps { markdown } => {
            if markdown {
                harness::say!("{}", harness::runner::catalogue::catalogue_markdown());
            } else {
                harness::sayln!("Reading the phrases: {}\n", harness::runner::catalogue::NOTATION);
                for s in harness::runner::catalogue::catalogue() {
                    harness::sayln!(
                        "{} {}\n    {}\n    ({})",
                        s.keyword,
                        harness::runner::catalogue::human(&s.phrase),
                        s.description,
                        s.location
                    );
                }
                harness::sayln!(
                    "\nParameters that name something of the fixtures accept exactly these values:"
                );
                for p in harness::runner::catalogue::parameter_values() {
                    harness::sayln!("{}: {}\n    taken by {}", p.kind, p.values.join(", "), p.used_by);
                }
            }
            ExitCode::SUCCESS
        }
        Command::Run(options) => {
            let mut config = match options.config() {
                Ok(config) => config,
                Err(e) => return bad(e),
            };
            config.command = std::env::args()
                .map(|a| {
                    if a.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,".contains(c))
                    {
                        a
                    } else {
                        format!("'{}'", a.replace('\'', "'\\''"))
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
            if let Err(e) = install_interrupts() {
                return bad(e);
            }
            match run(&config).await {
                Ok(_) | Err(_) if harness::interrupt::interrupted().is_some() => interrupted_exit(),
                Ok(summary) if summary.passed() => ExitCode::SUCCESS,
                Ok(_) => ExitCode::FAILURE,
                Err(
                    e @ (RunError::Lint(_)
                    | RunError::NoFeatures(_)
                    | RunError::MissingPath(_)
                    | RunError::NotAFeature(_)
                    | RunError::NoScenarioAt { .. }
                    | RunError::Empty(_)
                    | RunError::Tags(..)
                    | RunError::Containers(_)),
                ) => bad(e),
                Err(e) => {
                    harness::warnln!("mco-conformance: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// SIGINT or SIGTERM stops the run cleanly; a second one exits at once.
fn install_interrupts() -> Result<(), String> {
    harness::interrupt::install(
        |signal| {
            harness::warnln!(
                "mco-conformance: {signal}: stopping the run; scenarios end now and their nodes, agents and containers are removed (send it again to exit at once)"
            )
        },
        |signal| {
            harness::warnln!(
                "mco-conformance: {signal} again: exiting at once; node containers (docker ps --filter label=mco-conformance.node) and node roots under /dev/shm may be left"
            )
        },
    )
    .map_err(|e| format!("installing the SIGINT/SIGTERM handlers: {e}"))
}

/// The exit status of a run a signal stopped: 128 + the signal's number, as a shell reports it.
fn interrupted_exit() -> ExitCode {
    let signal = harness::interrupt::interrupted().unwrap_or("SIGINT");
    ExitCode::from(harness::interrupt::exit_code(signal) as u8)
}

fn bad(message: impl std::fmt::Display) -> ExitCode {
    harness::warnln!("mco-conformance: {message}");
    ExitCode::from(2)
}

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
    SelfTest(SelfTestArgs),
    /// List every step phrase with its description and where it is defined.
    Steps {
        /// As a Markdown table (the table of docs/steps.md is this output).
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(clap::Args)]
struct SelfTestArgs {
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
}

fn main() -> ExitCode {
    // Started as the reference daemon or a node tool by an embedded node: that program.
    if let Some(code) = harness::runner::node_roles::serve_if_asked() {
        return code;
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            harness::warnln!("mco-conformance: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        match Cli::parse().command {
            Command::NodeImage => node_image(),
            Command::SelfTest(args) => self_test(args).await,
            Command::Features { features } => features_table(&features),
            Command::Steps { markdown } => steps(markdown),
            Command::Run(options) => run_features(options).await,
        }
    })
}

/// `node-image`: build or reuse the node image, and print its references.
fn node_image() -> ExitCode {
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

/// `self-test`: the mutant catalogue, or every mutant run over the features and the table of
/// who rejected each.
async fn self_test(args: SelfTestArgs) -> ExitCode {
    use harness::runner::self_test;
    if args.list {
        for m in harness::agent::Mutant::ALL {
            let profiles: Vec<&str> = m.profiles().iter().map(|p| p.as_str()).collect();
            harness::sayln!("{:<30} {:<18} {}", m.name(), profiles.join(","), m.broken());
        }
        return ExitCode::SUCCESS;
    }
    let markdown = args.markdown;
    let config = match self_test_config(args) {
        Ok(config) => config,
        Err(e) => return bad(e),
    };
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

/// The self-test's configuration from its options; a bad value names its option.
fn self_test_config(args: SelfTestArgs) -> Result<harness::runner::self_test::SelfTestConfig, String> {
    use harness::runner::options::positive_duration;
    let mut config = harness::runner::self_test::SelfTestConfig::new(args.features, args.report_dir);
    if !args.mutants.is_empty() {
        config.mutants = args
            .mutants
            .iter()
            .map(|m| m.parse::<harness::agent::Mutant>())
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
    }
    config.concurrency = args.concurrency;
    config.agent_timeout = positive_duration("--agent-timeout", &args.agent_timeout)?;
    if let Some(confirm) = args.confirm_timeout {
        config.confirm_timeout = positive_duration("--confirm-timeout", &confirm)?;
    }
    Ok(config)
}

/// `features`: the features table of docs/features.md; exit 2 naming each feature file that
/// cannot be read.
fn features_table(features: &[PathBuf]) -> ExitCode {
    match harness::runner::features_markdown(features) {
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
    }
}

/// `steps`: every step phrase with its description and source, then the values each
/// fixture-named parameter accepts; as the Markdown tables of docs/steps.md with `markdown`.
fn steps(markdown: bool) -> ExitCode {
    use harness::runner::catalogue;
    if markdown {
        harness::say!("{}", catalogue::catalogue_markdown());
        return ExitCode::SUCCESS;
    }
    harness::sayln!("Reading the phrases: {}\n", catalogue::NOTATION);
    for s in catalogue::catalogue() {
        harness::sayln!(
            "{} {}\n    {}\n    ({})",
            s.keyword,
            catalogue::human(&s.phrase),
            s.description,
            s.location
        );
    }
    harness::sayln!("\nParameters that name something of the fixtures accept exactly these values:");
    for p in catalogue::parameter_values() {
        harness::sayln!("{}: {}\n    taken by {}", p.kind, p.values.join(", "), p.used_by);
    }
    ExitCode::SUCCESS
}

/// `run`: the features run; exit 0 when the run passed, 1 when it did not, 2 on bad input.
async fn run_features(options: harness::runner::options::RunOptions) -> ExitCode {
    let mut config = match options.config() {
        Ok(config) => config,
        Err(e) => return bad(e),
    };
    config.command = command_line(std::env::args());
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

/// The command line as a shell would take it back: an argument with other characters than
/// letters, digits and `-_./=:@,` in single quotes.
fn command_line(args: impl Iterator<Item = String>) -> String {
    args.map(|a| {
        if a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,".contains(c))
        {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    })
    .collect::<Vec<_>>()
    .join(" ")
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

#[cfg(test)]
mod tests {
    /// The report's command line reads back in a shell: plain words as they are, anything else
    /// in single quotes, a quote inside closed, escaped and reopened.
    #[test]
    fn the_command_line_is_quoted_for_a_shell() {
        let args = [
            "mco-conformance",
            "run",
            "--tags",
            "@slow and not @scale",
            "it's",
            "features/a.feature:12",
        ];
        assert_eq!(
            super::command_line(args.iter().map(|a| a.to_string())),
            r#"mco-conformance run --tags '@slow and not @scale' 'it'\''s' features/a.feature:12"#
        );
    }
}

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
//! - `mco-conformance features [PATH…]`: the features table of the README, from the files.

#[path = "../steps/mod.rs"]
mod steps;

use clap::{Parser, Subcommand};
use harness::runner::{Nodes, RunConfig, RunError, run};
use harness::scenario::AgentKind;
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
    /// Run features (default: every feature under ./features, both profiles, embedded nodes).
    Run {
        /// ocp-4.12, ocp-4.14, ocp-4.16, or all.
        #[arg(long, env = "MCO_CONFORMANCE_PROFILE", default_value = "all")]
        profile: String,
        /// A tag expression, added to the profile and @slow/@scale/@container rules (e.g. "@slow", "@scale").
        #[arg(long, env = "MCO_CONFORMANCE_TAGS")]
        tags: Option<String>,
        /// embedded (temp dirs, services in this process) or container (a container per node,
        /// from an image built here; needs a Docker engine, else every scenario is skipped).
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
        /// Run this binary as the agent on every node, with the agent contract's environment
        /// (KUBECONFIG, NODE_NAME, MCO_NODE_ROOT, MCO_PROFILE, systemctl on PATH). On embedded
        /// nodes it runs as a host process and must honour MCO_NODE_ROOT.
        #[arg(long)]
        agent_binary: Option<PathBuf>,
        /// An argument for the agent binary (repeat for more).
        #[arg(long = "agent-arg", allow_hyphen_values = true)]
        agent_args: Vec<String>,
        /// An image built FROM the node image (mco-conformance-node:<version>) whose entrypoint
        /// is the agent; the node's init stays PID 1 and runs it as the agent service
        /// (container nodes).
        #[arg(long)]
        agent_image: Option<String>,
        /// How long a step waits for the cluster and the agents ("30s", "2m"): an agent whose
        /// first ControllerConfig sync takes a minute needs more than the default.
        #[arg(long, default_value = "30s")]
        agent_timeout: String,
        /// How long any one step may run before it is stopped and fails, naming itself: a
        /// safety net for an await that never answers, far beyond every step's own waits.
        #[arg(long, default_value = "10m")]
        step_limit: String,
        /// Run against the kube-apiserver this kubeconfig names (its current context's server
        /// and certificate authority) instead of a fake API server per scenario: scenarios run
        /// one at a time, each after deleting what the last one made. Needs the CA the server
        /// trusts for client certificates (--apiserver-client-ca, --apiserver-client-ca-key),
        /// from which the nodes' and daemons' certificates are issued.
        #[arg(long, env = "MCO_CONFORMANCE_APISERVER", requires_all = ["apiserver_client_ca", "apiserver_client_ca_key"])]
        apiserver: Option<PathBuf>,
        /// The PEM certificate of the CA the --apiserver server trusts for client certificates
        /// (its --client-ca-file).
        #[arg(long, env = "MCO_CONFORMANCE_APISERVER_CLIENT_CA", requires = "apiserver")]
        apiserver_client_ca: Option<PathBuf>,
        /// That CA's PKCS#8 PEM key.
        #[arg(long, env = "MCO_CONFORMANCE_APISERVER_CLIENT_CA_KEY", requires = "apiserver")]
        apiserver_client_ca_key: Option<PathBuf>,
        /// Once every node's agent has finished its first run (its ConfigDriftMonitorStarted
        /// event, or 20 s after its state annotation when it posts none), touch the
        /// ControllerConfig until each has synced it: upstream's 4.16 daemon otherwise requeues
        /// its first sync by a minute (ccRequeueDelay). Off by default, since it hides an agent
        /// that never syncs at start.
        #[arg(long)]
        nudge_first_sync: bool,
        /// Write a YAML conformance report here (profile, agent and its sha256, every
        /// scenario's result, failures, the command to reproduce).
        #[arg(long)]
        report: Option<PathBuf>,
        /// Write the run as one self-contained HTML page: per scenario its steps, result and
        /// a timeline of signer rotations, node syncs, kubelet-ca.crt changes, reboots and alerts.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Print every step of every scenario (default: one line per scenario).
        #[arg(short, long)]
        verbose: bool,
        /// Succeed when the paths and tags select no scenario to run (default: exit 2).
        #[arg(long)]
        allow_empty: bool,
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
        /// Print the table as the README's Markdown.
        #[arg(long)]
        markdown: bool,
        /// Where each mutant's run reports go.
        #[arg(long, default_value = "target/self-test")]
        report_dir: PathBuf,
        /// A step's deadline under a mutant (a rejection is confirmed against the reference
        /// daemon under the same deadline).
        #[arg(long, default_value = "5s")]
        agent_timeout: String,
        /// Scenarios run at once.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
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
        Command::NodeImage => {
            let built = harness::node::image::harness_binaries()
                .and_then(|binaries| harness::node::image::ensure_node_image(&binaries));
            match built {
                Ok(image) => {
                    harness::sayln!(
                        "{} ({})\n{}",
                        image.reference,
                        if image.reused { "reused" } else { "built" },
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
            config.agent_timeout = match positive_duration("--agent-timeout", &agent_timeout) {
                Ok(d) => d,
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
        Command::Run {
            profile,
            tags,
            nodes,
            report_dir,
            junit,
            json,
            concurrency,
            agent_binary,
            agent_args,
            agent_image,
            agent_timeout,
            step_limit,
            apiserver,
            apiserver_client_ca,
            apiserver_client_ca_key,
            nudge_first_sync,
            report,
            html,
            verbose,
            allow_empty,
            features,
        } => {
            let profiles = match harness::runner::profiles_named(&profile) {
                Ok(profiles) => profiles,
                Err(e) => return bad(e),
            };
            let nodes = match nodes.parse::<Nodes>() {
                Ok(nodes) => nodes,
                Err(e) => return bad(e),
            };
            if agent_image.is_some() && nodes != Nodes::Container {
                return bad("--agent-image needs container nodes (--nodes container)");
            }
            if agent_image.is_some() && agent_binary.is_some() {
                return bad("--agent-image and --agent-binary name two agents: give one");
            }
            let agent_timeout = match positive_duration("--agent-timeout", &agent_timeout) {
                Ok(d) => d,
                Err(e) => return bad(e),
            };
            let step_limit = match positive_duration("--step-limit", &step_limit) {
                Ok(d) => d,
                Err(e) => return bad(e),
            };
            let endpoint = match (apiserver, apiserver_client_ca, apiserver_client_ca_key) {
                (Some(kubeconfig), Some(cert), Some(key)) => {
                    match harness::scenario::KubeconfigEndpoint::load(&kubeconfig, &cert, &key) {
                        Ok(real) => harness::scenario::ClusterEndpoint::Kubeconfig(std::sync::Arc::new(real)),
                        Err(e) => return bad(format!("--apiserver: {e}")),
                    }
                }
                _ => harness::scenario::ClusterEndpoint::InProcess,
            };
            let agent = match agent_binary {
                None if !agent_args.is_empty() => return bad("--agent-arg needs --agent-binary"),
                None => match agent_image {
                    None => AgentKind::Reference,
                    Some(image) => match harness::node::image::agent_image_command(&image) {
                        Ok(command) => AgentKind::Image { image, command },
                        Err(e) => return bad(format!("--agent-image {image}: {e}")),
                    },
                },
                Some(path) => {
                    if !path.is_file() {
                        return bad(format!("--agent-binary {}: no such file", path.display()));
                    }
                    let Some(shim) = std::env::current_exe()
                        .ok()
                        .map(|exe| exe.with_file_name("mco-node-tools"))
                        .filter(|shim| shim.is_file())
                    else {
                        return bad(
                            "mco-node-tools (a node's systemctl, journalctl and logger) is not beside this binary: build the workspace's binaries (cargo build --release)",
                        );
                    };
                    if nodes == Nodes::Embedded {
                        harness::warnln!(
                            "mco-conformance: embedded nodes run {} as a host process: it must keep every node path under MCO_NODE_ROOT (an agent that writes absolute paths needs container nodes)",
                            path.display()
                        );
                    }
                    AgentKind::Binary {
                        path: std::fs::canonicalize(&path).unwrap_or(path),
                        args: agent_args,
                        node_tools: shim,
                    }
                }
            };
            // `file.feature:LINE` (as the progress lines name a scenario) runs that scenario.
            let at: Vec<(PathBuf, u64)> = features
                .iter()
                .filter_map(|p| harness::runner::scenario_at(p))
                .collect();
            let (features, only) = match at.as_slice() {
                [] => (features, None),
                [(file, line)] if features.len() == 1 => {
                    let name = file
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    (vec![file.clone()], Some((name, *line)))
                }
                _ => return bad("FILE:LINE names one scenario: give it as the only path"),
            };
            let mut config = RunConfig::new(features, report_dir);
            config.only = only;
            config.profiles = profiles;
            config.tags = tags;
            config.nodes = nodes;
            config.junit = junit;
            config.json = json;
            config.concurrency = concurrency;
            config.agent = agent;
            config.agent_timeout = agent_timeout;
            config.step_limit = step_limit;
            config.endpoint = endpoint;
            config.nudge_first_sync = nudge_first_sync;
            config.report = report;
            config.verbose = verbose;
            config.html = html;
            config.allow_empty = allow_empty;
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

/// A duration flag's value, whole seconds and at least one: the error names the flag.
fn positive_duration(flag: &str, text: &str) -> Result<std::time::Duration, String> {
    match harness::pki::duration::parse_duration(text) {
        Ok(d) if d.is_positive() => Ok(std::time::Duration::from_secs(d.whole_seconds().max(1) as u64)),
        Ok(_) => Err(format!("{flag} {text:?}: must be positive")),
        Err(e) => Err(format!("{flag} {text:?}: {e}")),
    }
}

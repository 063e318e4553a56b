//! The options of a run, read once for both runners: `mco-conformance run` parses them from
//! its command line, `cargo test --test conformance` from the same environment variables and
//! the few flags it is given (`tests/conformance.rs`). Everything a flag's value can get wrong
//! is refused here, naming the flag.

use super::{Nodes, RunConfig};
use crate::scenario::{AgentKind, ClusterEndpoint, KubeconfigEndpoint};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct RunOptions {
    /// ocp-4.12, ocp-4.14, ocp-4.16, or all.
    #[arg(long, env = "MCO_CONFORMANCE_PROFILE", default_value = "all")]
    pub profile: String,
    /// A tag expression, added to the profile and @slow/@scale/@container rules (e.g. "@slow", "@scale").
    #[arg(long, env = "MCO_CONFORMANCE_TAGS")]
    pub tags: Option<String>,
    /// embedded (temp dirs, services in this process) or container (a container per node,
    /// from an image built here; needs a Docker engine, else every scenario is skipped).
    #[arg(long, env = "MCO_CONFORMANCE_NODES", default_value = "embedded")]
    pub nodes: String,
    /// Where JUnit XML, Cucumber JSON and failed scenarios' journals go.
    #[arg(long, default_value = "target/conformance")]
    pub report_dir: PathBuf,
    /// The JUnit XML file (default: <report-dir>/<profile>.junit.xml; with both profiles the
    /// profile goes before the extension).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// The Cucumber JSON file (default: <report-dir>/<profile>.cucumber.json; likewise).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Scenarios run at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Run this binary as the agent on every node, with the agent contract's environment
    /// (KUBECONFIG, NODE_NAME, MCO_NODE_ROOT, MCO_PROFILE, systemctl on PATH). On embedded
    /// nodes it runs as a host process and must honour MCO_NODE_ROOT.
    #[arg(long)]
    pub agent_binary: Option<PathBuf>,
    /// An argument for the agent binary (repeat for more).
    #[arg(long = "agent-arg", allow_hyphen_values = true)]
    pub agent_args: Vec<String>,
    /// An image built FROM the node image (mco-conformance-node:<version>) whose entrypoint
    /// is the agent; the node's init stays PID 1 and runs it as the agent service
    /// (container nodes).
    #[arg(long)]
    pub agent_image: Option<String>,
    /// How long a step waits for the cluster and the agents ("30s", "2m"): an agent whose
    /// first ControllerConfig sync takes a minute needs more than the default.
    #[arg(long, default_value = "30s")]
    pub agent_timeout: String,
    /// How long a step may go with nothing it awaits answering before it is stopped and fails,
    /// naming itself and what it waited for: a safety net for an await that never answers (a
    /// wait whose looks keep answering runs to its own bound, however long a busy host takes).
    #[arg(long, default_value = "20m")]
    pub step_limit: String,
    /// Run against the kube-apiserver this kubeconfig names (its current context's server
    /// and certificate authority) instead of a fake API server per scenario: scenarios run
    /// one at a time, each after deleting what the last one made. Needs the CA the server
    /// trusts for client certificates (--apiserver-client-ca, --apiserver-client-ca-key),
    /// from which the nodes' and daemons' certificates are issued.
    #[arg(long, env = "MCO_CONFORMANCE_APISERVER", requires_all = ["apiserver_client_ca", "apiserver_client_ca_key"])]
    pub apiserver: Option<PathBuf>,
    /// The PEM certificate of the CA the --apiserver server trusts for client certificates
    /// (its --client-ca-file).
    #[arg(long, env = "MCO_CONFORMANCE_APISERVER_CLIENT_CA", requires = "apiserver")]
    pub apiserver_client_ca: Option<PathBuf>,
    /// That CA's PKCS#8 PEM key.
    #[arg(long, env = "MCO_CONFORMANCE_APISERVER_CLIENT_CA_KEY", requires = "apiserver")]
    pub apiserver_client_ca_key: Option<PathBuf>,
    /// Once every node's agent has finished its first run (its ConfigDriftMonitorStarted
    /// event, or 20 s after its state annotation when it posts none), touch the
    /// ControllerConfig until each has synced it: upstream's 4.16 daemon otherwise requeues
    /// its first sync by a minute (ccRequeueDelay). Off by default, since it hides an agent
    /// that never syncs at start.
    #[arg(long)]
    pub nudge_first_sync: bool,
    /// Run this upstream machine-config-controller (`machine-config-controller`, built from a
    /// release branch) as the cluster's machine-config controller in place of the reference's:
    /// `start --kubeconfig … --resourcelock-namespace openshift-machine-config-operator
    /// --metrics-listen-address …` (and `--payload-version` where it has the flag), then every
    /// --controller-arg; give it its tree's templates with `--controller-arg=--templates=DIR`.
    #[arg(long, env = "MCO_CONFORMANCE_CONTROLLER_BINARY")]
    pub controller_binary: Option<PathBuf>,
    /// An argument for the controller binary (repeat for more).
    #[arg(
        long = "controller-arg",
        allow_hyphen_values = true,
        requires = "controller_binary"
    )]
    pub controller_args: Vec<String>,
    /// Run this upstream machine-config-server (`machine-config-server`, built from a release
    /// branch) as the cluster's machine-config server: every node boots the Ignition it serves
    /// over TLS (`start --apiserver-url … --kubeconfig … --secure-port … --insecure-port …
    /// --cert … --key …`, then every --server-arg). Needs `unshare` (util-linux) and user
    /// namespaces: it reads its bootstrap token from `/etc/mcs/bootstrap-token`, given it in a
    /// private mount namespace.
    #[arg(long, env = "MCO_CONFORMANCE_SERVER_BINARY")]
    pub server_binary: Option<PathBuf>,
    /// An argument for the server binary (repeat for more).
    #[arg(long = "server-arg", allow_hyphen_values = true, requires = "server_binary")]
    pub server_args: Vec<String>,
    /// Write a YAML conformance report here (profile, agent and its sha256, every
    /// scenario's result, failures, the command to reproduce).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write the run as one self-contained HTML page: per scenario its steps, result and
    /// a timeline of signer rotations, node syncs, kubelet-ca.crt changes, reboots and alerts.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Print every step of every scenario (default: one line per scenario).
    #[arg(short, long)]
    pub verbose: bool,
    /// Succeed when the paths and tags select no scenario to run (default: exit 2).
    #[arg(long)]
    pub allow_empty: bool,
    /// Feature files or directories.
    #[arg(default_value = "features")]
    pub features: Vec<PathBuf>,
}

impl RunOptions {
    /// The run these options ask for, or why they cannot be one (naming the flag).
    pub fn config(self) -> Result<RunConfig, String> {
        let RunOptions {
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
            controller_binary,
            controller_args,
            server_binary,
            server_args,
            report,
            html,
            verbose,
            allow_empty,
            features,
        } = self;
        let profiles = super::profiles_named(&profile).map_err(|e| e.to_string())?;
        let nodes = nodes.parse::<Nodes>()?;
        if agent_image.is_some() && nodes != Nodes::Container {
            return Err("--agent-image needs container nodes (--nodes container)".into());
        }
        if agent_image.is_some() && agent_binary.is_some() {
            return Err("--agent-image and --agent-binary name two agents: give one".into());
        }
        let agent_timeout = positive_duration("--agent-timeout", &agent_timeout)?;
        let step_limit = positive_duration("--step-limit", &step_limit)?;
        let endpoint = match (apiserver, apiserver_client_ca, apiserver_client_ca_key) {
            (Some(kubeconfig), Some(cert), Some(key)) => ClusterEndpoint::Kubeconfig(std::sync::Arc::new(
                KubeconfigEndpoint::load(&kubeconfig, &cert, &key)
                    .map_err(|e| format!("--apiserver: {e}"))?,
            )),
            _ => ClusterEndpoint::InProcess,
        };
        let agent = agent(agent_binary, agent_args, agent_image, nodes)?;
        let (features, only) = scenario_at_line(features)?;
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
        config.controller = controller_binary.map(|binary| crate::cluster::upstream::UpstreamController {
            binary,
            args: controller_args,
        });
        config.server = server_binary.map(|binary| crate::cluster::upstream_server::UpstreamServer {
            binary,
            args: server_args,
        });
        config.report = report;
        config.verbose = verbose;
        config.html = html;
        config.allow_empty = allow_empty;
        Ok(config)
    }
}

/// The agent every node runs: the reference daemon, a binary (with the node tools beside this
/// one) or an image; a bad combination names its flags.
fn agent(
    agent_binary: Option<PathBuf>,
    agent_args: Vec<String>,
    agent_image: Option<String>,
    nodes: Nodes,
) -> Result<AgentKind, String> {
    Ok(match agent_binary {
        None if !agent_args.is_empty() => return Err("--agent-arg needs --agent-binary".into()),
        None => match agent_image {
            None => AgentKind::Reference,
            Some(image) => match crate::node::image::agent_image_command(&image) {
                Ok(command) => AgentKind::Image { image, command },
                Err(e) => return Err(format!("--agent-image {image}: {e}")),
            },
        },
        Some(path) => {
            if !path.is_file() {
                return Err(format!("--agent-binary {}: no such file", path.display()));
            }
            let shim = crate::node::programs::node_tools().map_err(|e| {
                format!("the node tools (a node's systemctl, journalctl and logger) for --agent-binary: {e}")
            })?;
            if nodes == Nodes::Embedded {
                crate::warnln!(
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
    })
}

/// A run's feature paths, and the one scenario (file name, line) it is narrowed to, if any.
type Paths = (Vec<PathBuf>, Option<(String, u64)>);

/// The paths, and the one scenario a `file.feature:LINE` path names, if it does.
fn scenario_at_line(features: Vec<PathBuf>) -> Result<Paths, String> {
    // `file.feature:LINE` (as the progress lines name a scenario) runs that scenario.
    let at: Vec<(PathBuf, u64)> = features.iter().filter_map(|p| super::scenario_at(p)).collect();
    let (features, only) = match at.as_slice() {
        [] => (features, None),
        [(file, line)] if features.len() == 1 => {
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (vec![file.clone()], Some((name, *line)))
        }
        _ => return Err("FILE:LINE names one scenario: give it as the only path".into()),
    };
    Ok((features, only))
}

/// A duration flag's value, whole seconds and at least one: the error names the flag.
pub fn positive_duration(flag: &str, text: &str) -> Result<std::time::Duration, String> {
    match crate::pki::duration::parse_duration(text) {
        Ok(d) if d.is_positive() => Ok(std::time::Duration::from_secs(d.whole_seconds().max(1) as u64)),
        Ok(_) => Err(format!("{flag} {text:?}: must be positive")),
        Err(e) => Err(format!("{flag} {text:?}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunOptions,
    }

    fn config(args: &[&str]) -> Result<RunConfig, String> {
        let argv = std::iter::once("run").chain(args.iter().copied());
        Cli::try_parse_from(argv).map_err(|e| e.to_string())?.run.config()
    }

    #[test]
    fn every_option_reaches_the_run_config() {
        let c = config(&[
            "--profile",
            "ocp-4.14",
            "--tags",
            "@slow",
            "--nodes",
            "container",
            "--agent-timeout",
            "2m",
            "--step-limit",
            "90s",
            "--concurrency",
            "2",
            "--nudge-first-sync",
            "-v",
            "--allow-empty",
            "features/a.feature",
            "features/b.feature",
        ])
        .unwrap();
        assert_eq!(c.profiles, vec![crate::Profile::Ocp414]);
        assert_eq!(c.tags.as_deref(), Some("@slow"));
        assert_eq!(c.nodes, Nodes::Container);
        assert_eq!(c.agent_timeout, std::time::Duration::from_secs(120));
        assert_eq!(c.step_limit, std::time::Duration::from_secs(90));
        assert_eq!(c.concurrency, 2);
        assert!(c.nudge_first_sync && c.verbose && c.allow_empty);
        assert_eq!(c.paths.len(), 2);
        assert!(matches!(c.agent, AgentKind::Reference));
        assert!(!c.real_apiserver());
        let defaults = config(&[]).unwrap();
        assert_eq!(defaults.profiles, crate::Profile::ALL.to_vec());
        assert_eq!(defaults.step_limit, crate::world::DEFAULT_STEP_LIMIT);
        assert_eq!(defaults.agent_timeout, std::time::Duration::from_secs(30));
    }

    #[test]
    fn a_bad_value_is_refused_naming_its_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["--profile", "4.16"], "ocp-4.16"),
            (&["--nodes", "kind"], "expected embedded or container"),
            (&["--agent-timeout", "soon"], "--agent-timeout \"soon\""),
            (&["--step-limit", "0s"], "--step-limit \"0s\": must be positive"),
            (&["--agent-arg", "-v"], "--agent-arg needs --agent-binary"),
            (&["--agent-image", "x:1"], "--agent-image needs container nodes"),
            (&["--apiserver", "/no/such"], "--apiserver-client-ca"),
        ];
        for (args, expected) in cases {
            let e = config(args).unwrap_err();
            assert!(e.contains(expected), "{args:?}: {e}");
        }
    }
}

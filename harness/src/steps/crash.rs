//! Crash consistency: the agent killed with SIGKILL at each file-changing system call of a sync
//! (`harness::scenario::crash`, under strace), and the judgement of what each crash left. What a
//! file should hold after the sync is computed here from the API objects each run read (the
//! ControllerConfig's fields as release-4.16 `writeToDisk` writes them, or the rendered
//! MachineConfig's Ignition files on 4.12), never with the reference daemon's code; the paths
//! are upstream's, written out again.
//!
//! Upstream writes each file whole or not at all (release-4.16 `pkg/daemon/file_writers.go`
//! `writeFileAtomically`: a temporary file in the same directory, chmod, write, fsync, close,
//! rename), so after any crash a reader finds the old file or the new one, never a part.

use super::oracle;
use super::params::SignerName;
use anyhow::{Context, bail, ensure};
use base64::Engine;
use cucumber::{then, when};
use harness::mco::machine_config::MachineConfigSpec;
use harness::scenario::{AgentKind, CrashPlan, CrashReport, CrashRun, FileState, Files};
use harness::world::ConformanceWorld;
use std::collections::BTreeMap;

/// The files the kubelet reads whatever the config: its client CA, and the kubeconfigs of the
/// node and of the kubelet (MCO `pkg/daemon/constants`, the kubelet's `--kubeconfig`).
const KUBELET_CA: &str = "/etc/kubernetes/kubelet-ca.crt";
const KUBECONFIGS: &[&str] = &["/etc/kubernetes/kubeconfig", "/var/lib/kubelet/kubeconfig"];
/// The cloud provider CA (release-4.16 `certificate_writer.go`, `caBundleFilePath` of the
/// cloud config).
const CLOUD_CA: &str = "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";
/// Registry CAs CRI-O reads (release-4.16 `certificate_writer.go`: `/etc/docker/certs.d/<file>/ca.crt`,
/// `..` in the file name standing for `:`).
const REGISTRY_CA_DIR: &str = "/etc/docker/certs.d";

const ANNOTATION: &str = "machineconfiguration.openshift.io/";

/// The agent is killed with SIGKILL at each of its file-changing system calls in turn, each
/// time in the sync of a new forced rotation of the signer (counted first with a traced run),
/// and started again as its service is; what each crash left is recorded for the steps after.
/// Needs `strace` and embedded nodes; the reference daemon runs as its binary for this.
#[when(
    expr = "the agent is killed at each of its file-changing system calls as it syncs a forced rotation of the {signer}"
)]
async fn killed_at_each_call(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for plan in plans(world, &signer).await? {
        let report = world.cluster()?.crash_each_file_change(plan).await?;
        progress(world, &report.node, &summary(&report));
        reports.push(report);
    }
    world.crashes = reports;
    Ok(())
}

/// One plan per node for a run of the agent's sync of a forced rotation of `signer`: the files
/// the node's kubelet and CRI-O read, and what each may hold (`expected_files`, from the API
/// objects the run read). Shared by the process-kill and the power-loss steps.
pub(super) async fn plans(world: &ConformanceWorld, signer: &SignerName) -> anyhow::Result<Vec<CrashPlan>> {
    let process = agent_process(world)?;
    let root = root_owner(world).await?;
    let expect: harness::scenario::Expectation =
        std::sync::Arc::new(move |run: &CrashRun| expected_files(run, root).map_err(|e| format!("{e:#}")));
    let c = world.cluster()?;
    let name = c.certificate_name(signer)?;
    let mut plans = Vec::new();
    for node in &c.nodes {
        plans.push(CrashPlan {
            node: node.name().to_string(),
            watched: watched_files(c, node.name()).await?,
            signer: (name.namespace.clone(), name.name.clone()),
            process: process.clone(),
            expect: expect.clone(),
        });
    }
    Ok(plans)
}

/// A progress line for a node's crash run, when the run prints them.
pub(super) fn progress(world: &ConformanceWorld, node: &str, summary: &str) {
    if world.progress {
        println!("  ... {} {}: {node}: {summary}", world.profile, world.place);
    }
}

/// Every file the kubelet or CRI-O reads held, at every crash, the old contents or the new ones,
/// whole, with the mode and owner that go with them.
#[then("every file the kubelet and CRI-O read was whole after every crash")]
async fn whole_after_every_crash(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in crashes(world)? {
        for (i, run) in crash_runs(report) {
            let Some((at_crash, _)) = &run.at_crash else {
                continue;
            };
            let expected = expected_files(run, root)?;
            for (path, seen) in at_crash {
                let old = run.before.get(path).cloned().flatten();
                let new = expected.get(path).cloned().flatten();
                if let Some(why) = not_whole(seen.as_ref(), old.as_ref(), new.as_ref()) {
                    bail!("{}: {path} {why}\n{}", report.node, where_(report, i, run));
                }
            }
        }
    }
    Ok(())
}

/// After every crash the node converged within one sync of its restarted agent: the new files
/// with their modes and owners, `Done` on the config it was given, and no MCO annotation lost.
#[then("the node converged after every crash")]
async fn converged_after_every_crash(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in crashes(world)? {
        for (i, run) in report.runs.iter().enumerate() {
            let (files, annotations) = run
                .after
                .as_ref()
                .map_err(|e| anyhow::anyhow!("{}: {e}\n{}", report.node, where_(report, i, run)))?;
            let expected = expected_files(run, root)?;
            for (path, want) in &expected {
                let seen = files.get(path).cloned().flatten();
                ensure!(
                    seen == *want,
                    "{}: after the restart {path} is {}, expected {}\n{}",
                    report.node,
                    describe(seen.as_ref()),
                    describe(want.as_ref()),
                    where_(report, i, run)
                );
            }
            if let Some(why) = not_synced(run, annotations) {
                bail!(
                    "{}: after the restart {why}\n{}",
                    report.node,
                    where_(report, i, run)
                );
            }
        }
    }
    Ok(())
}

/// No crash found the node reported synced (`Done` on the new config, or the new
/// ControllerConfig's resourceVersion) while a file was not yet what the new config says.
#[then("no crash found the node reported synced before its files were written")]
async fn no_false_done(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in crashes(world)? {
        for (i, run) in crash_runs(report) {
            let Some((files, annotations)) = &run.at_crash else {
                continue;
            };
            if not_synced(run, annotations).is_some() {
                continue;
            }
            for (path, want) in expected_files(run, root)? {
                let seen = files.get(&path).cloned().flatten();
                ensure!(
                    seen == want,
                    "{}: the node was reported synced ({}) while {path} was {}, not the new {}\n{}",
                    report.node,
                    synced_marks(annotations),
                    describe(seen.as_ref()),
                    describe(want.as_ref()),
                    where_(report, i, run)
                );
            }
        }
    }
    Ok(())
}

/// Every crash point the counting runs found was reached: the agent was killed there, in one of
/// the syncs it was tried in, and there was at least one.
#[then("every crash point was reached")]
async fn every_point_reached(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for report in crashes(world)? {
        ensure!(
            !report.points.is_empty(),
            "{}: the sync changed no file the kubelet or CRI-O reads ({} file-changing calls in all): nothing to crash at",
            report.node,
            report.file_changes.len()
        );
        for point in &report.points {
            let reached = report
                .runs
                .iter()
                .any(|r| r.point.as_ref() == Some(point) && r.at_crash.is_some());
            ensure!(
                reached,
                "{}: the agent was never killed at {}#{} ({}), counted as `{}`; {}",
                report.node,
                point.syscall,
                point.nth,
                if point.path_filtered {
                    "among calls naming a watched file"
                } else {
                    "among all calls of that name"
                },
                point.counted,
                summary(report)
            );
        }
    }
    Ok(())
}

/// The reference daemon runs in the harness's process, where no tracer reaches it: for the crash
/// runs it runs as its binary (a mutant too); a binary agent runs as it is.
pub(super) fn agent_process(
    world: &ConformanceWorld,
) -> anyhow::Result<Option<harness::node::agent_service::AgentProcess>> {
    let mutant = match &world.agent {
        AgentKind::Reference => None,
        AgentKind::Mutant(m) => Some(*m),
        AgentKind::Binary { .. } => return Ok(None),
        AgentKind::Image { image, .. } => {
            bail!(
                "the agent image {image} runs on container nodes, where crash injection is not supported yet"
            )
        }
    };
    let binaries = harness::node::image::harness_binaries()?;
    let find = |name: &str| {
        binaries
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == name))
            .cloned()
            .with_context(|| format!("{name} is not beside this binary: cargo build --bins"))
    };
    Ok(Some(harness::node::agent_service::AgentProcess {
        binary: find("mco-reference-daemon")?,
        args: mutant
            .map(|m| vec!["--mutant".to_string(), m.name().to_string()])
            .unwrap_or_default(),
        profile: world.profile,
        node_tools: find(harness::node::agent_service::NODE_TOOLS)?,
    }))
}

/// The files the kubelet and CRI-O read on the node, from what its config writes: on a release
/// whose rendered config carries kubelet-ca.crt (4.12), every file of the node's rendered
/// config; otherwise the files the ControllerConfig's fields give (kubelet-ca.crt, the cloud CA
/// when there is one, the registry CAs). The kubeconfigs on both.
pub(super) async fn watched_files(
    c: &harness::scenario::Scenario,
    node: &str,
) -> anyhow::Result<Vec<String>> {
    let annotations = c.node_annotations(node).await?;
    let current = annotations
        .get(&format!("{ANNOTATION}currentConfig"))
        .with_context(|| format!("{node} has no currentConfig"))?;
    let rendered = c.machine_config_spec(current).await?;
    let mut out: Vec<String> = KUBECONFIGS.iter().map(|s| s.to_string()).collect();
    if carries_kubelet_ca(&rendered) {
        for file in rendered.files() {
            out.push(file.path.clone());
        }
    } else {
        let spec = c.controller_config_spec().await?;
        out.push(KUBELET_CA.into());
        if !oracle::spec_bytes(&spec, "cloudProviderCAData")
            .unwrap_or_default()
            .is_empty()
        {
            out.push(CLOUD_CA.into());
        }
        for entry in spec
            .image_registry_bundle_data
            .iter()
            .chain(&spec.image_registry_bundle_user_data)
        {
            out.push(format!(
                "{REGISTRY_CA_DIR}/{}/ca.crt",
                entry.file.replace("..", ":")
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn carries_kubelet_ca(spec: &MachineConfigSpec) -> bool {
    spec.files().iter().any(|f| f.path == KUBELET_CA)
}

/// What each watched file should be once the run's sync is done: from the rendered config it
/// was given (4.12) or the ControllerConfig (`writeToDisk`: the field's bytes and a newline;
/// an existing file's mode kept, a new one 0644); a file the change does not write, as it was.
/// Owners: as before, a new file the node's root user's.
pub(super) fn expected_files(run: &CrashRun, root: (u32, u32)) -> anyhow::Result<Files> {
    let mut out = run.before.clone();
    let owner = |path: &str| {
        run.before
            .get(path)
            .cloned()
            .flatten()
            .map(|f| (f.uid, f.gid))
            .unwrap_or(root)
    };
    match &run.desired {
        Some((_, spec)) if carries_kubelet_ca(spec) => {
            for file in spec.files() {
                if !out.contains_key(&file.path) {
                    continue;
                }
                let (path, contents, mode) = oracle::ignition_file(file)?;
                let (uid, gid) = owner(&path);
                out.insert(
                    path,
                    Some(FileState {
                        contents,
                        mode,
                        uid,
                        gid,
                    }),
                );
            }
        }
        _ => {
            let spec = &run.controller_config.0;
            let mut fields = vec![(KUBELET_CA.to_string(), "kubeAPIServerServingCAData")];
            fields.push((CLOUD_CA.to_string(), "cloudProviderCAData"));
            for entry in spec
                .image_registry_bundle_data
                .iter()
                .chain(&spec.image_registry_bundle_user_data)
            {
                let path = format!("{REGISTRY_CA_DIR}/{}/ca.crt", entry.file.replace("..", ":"));
                if !out.contains_key(&path) {
                    continue;
                }
                let data = base64::engine::general_purpose::STANDARD
                    .decode(&entry.data)
                    .with_context(|| {
                        format!(
                            "the ControllerConfig's registry CA {:?} is not base64",
                            entry.file
                        )
                    })?;
                let old = run.before.get(&path).cloned().flatten();
                let (uid, gid) = owner(&path);
                out.insert(
                    path,
                    Some(FileState {
                        contents: oracle::written_by_4_16(&data),
                        mode: old.map(|f| f.mode).unwrap_or(0o644),
                        uid,
                        gid,
                    }),
                );
            }
            for (path, field) in fields {
                if !out.contains_key(&path) {
                    continue;
                }
                let data = oracle::spec_bytes(spec, field)?;
                let old = run.before.get(&path).cloned().flatten();
                let (uid, gid) = owner(&path);
                out.insert(
                    path,
                    Some(FileState {
                        contents: oracle::written_by_4_16(&data),
                        mode: old.map(|f| f.mode).unwrap_or(0o644),
                        uid,
                        gid,
                    }),
                );
            }
        }
    }
    Ok(out)
}

/// Why a file a reader found at a crash is not whole (`None`: it is the old file or the new one,
/// with its mode and owner).
pub(super) fn not_whole(
    seen: Option<&FileState>,
    old: Option<&FileState>,
    new: Option<&FileState>,
) -> Option<String> {
    if seen == old || seen == new {
        return None;
    }
    let Some(seen) = seen else {
        return Some(format!(
            "was gone at the crash: neither the old file ({}) nor the new one ({})",
            describe(old),
            describe(new)
        ));
    };
    let same = |other: Option<&FileState>| other.is_some_and(|o| o.contents == seen.contents);
    Some(if same(old) || same(new) {
        format!(
            "had whole contents but mode {:04o} and owner {}:{} at the crash, expected {} or {}",
            seen.mode,
            seen.uid,
            seen.gid,
            describe(old),
            describe(new)
        )
    } else {
        format!(
            "was {} at the crash: neither the old contents ({}) nor the new ({}); {}",
            describe(Some(seen)),
            describe(old),
            describe(new),
            prefix_of(seen, old, new)
        )
    })
}

/// Whether what was seen is the start of the old or the new contents (a torn write).
fn prefix_of(seen: &FileState, old: Option<&FileState>, new: Option<&FileState>) -> &'static str {
    let starts = |f: Option<&FileState>| f.is_some_and(|f| f.contents.starts_with(&seen.contents));
    match (seen.contents.is_empty(), starts(new), starts(old)) {
        (true, _, _) => "an empty file",
        (false, true, _) => "the first part of the new contents",
        (false, false, true) => "the first part of the old contents",
        _ => "another file altogether",
    }
}

pub(super) fn describe(file: Option<&FileState>) -> String {
    match file {
        None => "absent".into(),
        Some(f) => format!(
            "{} bytes (sha256 {}…), mode {:04o}, owner {}:{}",
            f.contents.len(),
            &hex_digest(&f.contents)[..12],
            f.mode,
            f.uid,
            f.gid
        ),
    }
}

fn hex_digest(data: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Why the annotations do not say the node synced this run's change (`None`: they do): Done,
/// on the config it was given (4.12), or with the ControllerConfig's resourceVersion synced.
fn not_synced(run: &CrashRun, annotations: &BTreeMap<String, String>) -> Option<String> {
    let get = |key: &str| annotations.get(&format!("{ANNOTATION}{key}")).map(String::as_str);
    if get("state") != Some("Done") {
        return Some(format!("the node is not Done ({})", synced_marks(annotations)));
    }
    match &run.desired {
        Some((name, spec)) if carries_kubelet_ca(spec) => (get("currentConfig") != Some(name.as_str())
            || get("desiredConfig") != Some(name.as_str()))
        .then(|| {
            format!(
                "the node does not run its new config {name} ({})",
                synced_marks(annotations)
            )
        }),
        _ => {
            let rv = &run.controller_config.1;
            (get("lastSyncedControllerConfigResourceVersion") != Some(rv.as_str())
                || get("currentConfig").is_none()
                || get("desiredConfig").is_none())
            .then(|| {
                format!(
                    "the node has not synced ControllerConfig resourceVersion {rv} ({})",
                    synced_marks(annotations)
                )
            })
        }
    }
}

fn synced_marks(annotations: &BTreeMap<String, String>) -> String {
    [
        "state",
        "currentConfig",
        "desiredConfig",
        "lastSyncedControllerConfigResourceVersion",
    ]
    .iter()
    .map(|k| {
        format!(
            "{k}={}",
            annotations
                .get(&format!("{ANNOTATION}{k}"))
                .map(String::as_str)
                .unwrap_or("<none>")
        )
    })
    .collect::<Vec<_>>()
    .join(" ")
}

/// The runs that tried a crash point, numbered from 1 (after the two counting runs).
fn crash_runs(report: &CrashReport) -> impl Iterator<Item = (usize, &CrashRun)> {
    report.runs.iter().enumerate().filter(|(_, r)| r.point.is_some())
}

/// Which run it was, what it was killed at, and the tally.
fn where_(report: &CrashReport, index: usize, run: &CrashRun) -> String {
    let which = match &run.point {
        None => format!("in counting run {} of 2 (no crash)", index + 1),
        Some(p) => format!(
            "after the crash at {}#{} ({}), killed at `{}`",
            p.syscall,
            p.nth,
            if p.path_filtered {
                "among calls naming a watched file"
            } else {
                "among all calls of that name"
            },
            run.killed
                .as_deref()
                .unwrap_or("no call: the crash point was not reached")
        ),
    };
    format!("{which}; {}", summary(report))
}

fn summary(report: &CrashReport) -> String {
    let tried = report.runs.iter().filter(|r| r.point.is_some()).count();
    let reached = report.runs.iter().filter(|r| r.at_crash.is_some()).count();
    format!(
        "{} crash point(s) from {} file-changing calls in the sync; {tried} crash run(s), {reached} killed at their point",
        report.points.len(),
        report.file_changes.len()
    )
}

fn crashes(world: &ConformanceWorld) -> anyhow::Result<&[CrashReport]> {
    ensure!(
        !world.crashes.is_empty(),
        "no crash runs to judge: put `When the agent is killed at each of its file-changing system calls …` first"
    );
    Ok(&world.crashes)
}

/// The owner of the node's `/` (the node's root user).
pub(super) async fn root_owner(world: &ConformanceWorld) -> anyhow::Result<(u32, u32)> {
    let c = world.cluster()?;
    let node = c.nodes.first().context("the cluster has no node")?;
    let root = node
        .stat("/")
        .await?
        .with_context(|| format!("{}: no /", node.name()))?;
    Ok((root.uid, root.gid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(contents: &str, mode: u32) -> FileState {
        FileState {
            contents: contents.as_bytes().to_vec(),
            mode,
            uid: 0,
            gid: 0,
        }
    }

    #[test]
    fn only_the_old_or_the_new_file_is_whole() {
        let (old, new) = (file("old bundle\n", 0o644), file("new bundle\n", 0o644));
        assert_eq!(not_whole(Some(&old), Some(&old), Some(&new)), None);
        assert_eq!(not_whole(Some(&new), Some(&old), Some(&new)), None);
        let empty = not_whole(Some(&file("", 0o644)), Some(&old), Some(&new)).unwrap();
        assert!(empty.contains("an empty file"), "{empty}");
        let torn = not_whole(Some(&file("new b", 0o644)), Some(&old), Some(&new)).unwrap();
        assert!(torn.contains("the first part of the new contents"), "{torn}");
        let mode = not_whole(Some(&file("new bundle\n", 0o600)), Some(&old), Some(&new)).unwrap();
        assert!(mode.contains("mode 0600"), "{mode}");
        let gone = not_whole(None, Some(&old), Some(&new)).unwrap();
        assert!(gone.contains("gone"), "{gone}");
        assert_eq!(
            not_whole(None, None, Some(&new)),
            None,
            "not there yet is the old state"
        );
    }
}

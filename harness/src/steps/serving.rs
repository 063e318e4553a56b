//! The kube-apiserver's serving CA: publishing a new one, serving from it, and what nodes
//! trust; the order of what a node's journal shows.

use anyhow::Context;
use base64::Engine;
use cucumber::{then, when};
use harness::scenario::ServingCaChange;
use harness::wait::eventually;
use harness::world::ConformanceWorld;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

/// A new CA joins `openshift-config-managed/kube-apiserver-server-ca` beside the current one,
/// as the kube-apiserver operator publishes it before serving from it: "a new CA" (the one the
/// API server will serve from); a signer KAS-O rotated, named as library-go names it
/// (`openshift-kube-apiserver-operator_<secret>@<unix>`): "a rotated localhost serving signer",
/// "a rotated load-balancer serving signer", "a new localhost-recovery serving signer"; or the
/// installer's own "kube-apiserver-localhost-signer" / "kube-apiserver-lb-signer". The step ends
/// when the nodes followed.
#[when(
    regex = r"^the kube-apiserver's serving CA bundle gains (a new CA|a rotated localhost serving signer|a rotated load-balancer serving signer|a new localhost-recovery serving signer|the installer's kube-apiserver-localhost-signer|the installer's kube-apiserver-lb-signer)$"
)]
async fn bundle_gains(world: &mut ConformanceWorld, what: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let added = c.publish_serving_ca(serving_ca_change(c, &what)).await?;
    world.added_serving_ca = Some(added);
    Ok(())
}

/// The change a step names (see `bundle_gains`).
fn serving_ca_change(c: &harness::scenario::Scenario, what: &str) -> ServingCaChange {
    let rotated = |secret: &str| {
        format!(
            "openshift-kube-apiserver-operator_{secret}@{}",
            harness::pki::Clock::now(&c.clock).unix_timestamp()
        )
    };
    match what {
        "a new CA" => ServingCaChange::Next,
        "a rotated localhost serving signer" => ServingCaChange::Signer {
            common_name: rotated("localhost-serving-signer"),
        },
        "a rotated load-balancer serving signer" => ServingCaChange::Signer {
            common_name: rotated("loadbalancer-serving-signer"),
        },
        "a new localhost-recovery serving signer" => ServingCaChange::Signer {
            common_name: rotated("localhost-recovery-serving-signer"),
        },
        installer => ServingCaChange::Signer {
            common_name: installer.trim_start_matches("the installer's ").to_string(),
        },
    }
}

/// Two CAs join the bundle some seconds apart (each as `bundle_gains` names them): the first,
/// then the clock moves on by the seconds given, then the second. The step ends once the
/// cluster side reacted to the second, the clock where it was added (a 4.16 operator may still
/// be waiting for the bundle to settle: later steps move the clock through it); "the added CA"
/// is the second.
#[when(
    regex = r"^the kube-apiserver's serving CA bundle gains (a new CA|a rotated localhost serving signer|a rotated load-balancer serving signer|a new localhost-recovery serving signer|the installer's kube-apiserver-localhost-signer|the installer's kube-apiserver-lb-signer), and (\d+) seconds later (a new CA|a rotated localhost serving signer|a rotated load-balancer serving signer|a new localhost-recovery serving signer|the installer's kube-apiserver-localhost-signer|the installer's kube-apiserver-lb-signer)$"
)]
async fn bundle_gains_two(
    world: &mut ConformanceWorld,
    first: String,
    seconds: u32,
    second: String,
) -> anyhow::Result<()> {
    anyhow::ensure!(first != second, "the two CAs must differ: both are {first}");
    let c = world.cluster()?;
    c.publish_serving_ca_now(serving_ca_change(c, &first)).await?;
    c.advance(time::Duration::seconds(seconds.into())).await?;
    let added = c.publish_serving_ca_now(serving_ca_change(c, &second)).await?;
    world.added_serving_ca = Some(added);
    Ok(())
}

/// The CA the last step added leaves `openshift-config-managed/kube-apiserver-server-ca` again
/// (a removal-only change); the step ends when the nodes followed.
#[when("the kube-apiserver's serving CA bundle loses the added CA")]
async fn bundle_loses(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let added = world
        .added_serving_ca
        .clone()
        .context("no step added a CA to the serving CA bundle before")?;
    world.cluster()?.remove_serving_ca(&added).await?;
    Ok(())
}

/// The API server's serving certificate is replaced by one from the CA the last serving-CA step
/// added by name (a signer), and every connection is dropped: a client whose kubeconfig does not
/// list that CA can no longer reach the API server (the cluster's own clients trust it).
#[when("the kube-apiserver serves a certificate from the added CA")]
async fn serves_from_added_ca(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let added = world
        .added_serving_ca
        .clone()
        .context("no step added a CA to the serving CA bundle before")?;
    world.cluster()?.serve_from_added_ca(&added)?;
    Ok(())
}

/// The API server's serving certificate is replaced by one from the new CA and every
/// connection is dropped, so each client handshakes again.
#[when("the kube-apiserver serves a certificate from its new CA")]
async fn serves_from_new_ca(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    world.cluster()?.rotate_api_serving_cert()?;
    Ok(())
}

/// Whether every node's kubeconfig (`/etc/kubernetes/kubeconfig` or
/// `/var/lib/kubelet/kubeconfig`) lists, in `certificate-authority-data`, the API server's new
/// serving CA or the CA the last serving-CA step added. "trusts" waits until it does (upstream
/// annotates the node before it restarts the kubelet and rewrites its kubeconfig); "does not
/// trust" is judged at once.
#[then(
    regex = r"^every node's (/\S+kubeconfig) (trusts|does not trust) (the kube-apiserver's new CA|the added CA)$"
)]
async fn kubeconfig_trusts(
    world: &mut ConformanceWorld,
    path: String,
    verdict: String,
    what: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let want = verdict == "trusts";
    let wanted = if what == "the added CA" {
        world
            .added_serving_ca
            .clone()
            .context("no step added a CA to the serving CA bundle before")?
    } else {
        c.next_serving_ca()
            .context("the API server already serves from its new CA; check trust before that step")?
    };
    let next_certs = super::oracle::certs(wanted.as_bytes())?;
    for node in &c.nodes {
        let judge = || async {
            let text = node.read(&path).await.map_err(|e| e.to_string())?;
            let ca =
                super::oracle::kubeconfig_ca(&text).map_err(|e| format!("{}: {path}: {e:#}", node.name()))?;
            let certs = super::oracle::certs(&ca).map_err(|e| format!("{}: {path}: {e:#}", node.name()))?;
            let names: Vec<&str> = certs.iter().map(|c| c.name.as_str()).collect();
            let trusts = if what == "a kube-apiserver-localhost-signer" {
                names
                    .iter()
                    .any(|n| n.contains("kube-apiserver-localhost-signer"))
            } else {
                next_certs.iter().all(|n| certs.iter().any(|c| c.der == n.der))
            };
            if trusts == want {
                Ok(())
            } else {
                Err(format!(
                    "{}: {path} {} {what}; its CAs: {names:?}",
                    node.name(),
                    if trusts { "trusts" } else { "does not trust" },
                ))
            }
        };
        if want {
            eventually(world.deadline, judge)
                .await
                .map_err(anyhow::Error::msg)?;
        } else {
            judge().await.map_err(anyhow::Error::msg)?;
        }
    }
    Ok(())
}

/// These texts appear in every node's journal since the cluster started, each on a line after
/// the previous one's (a table with one text per row).
#[then("every node's journal shows, in this order:")]
async fn journal_in_order(
    world: &mut ConformanceWorld,
    step: &cucumber::gherkin::Step,
) -> anyhow::Result<()> {
    let table = step
        .table
        .as_ref()
        .context("the step needs a table, one text per row")?;
    let texts: Vec<&str> = table
        .rows
        .iter()
        .filter_map(|r| r.first().map(String::as_str))
        .collect();
    // Upstream writes some of these after it reports the sync (the annotation comes before the
    // kubelet restart): wait until the whole sequence is there.
    for node in &world.cluster()?.nodes {
        let mark = world.mark(node.name())?;
        eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            let mut from = 0;
            for text in &texts {
                let Some(at) = lines[from..].iter().position(|l| l.contains(text)) else {
                    return Err(format!(
                        "{}: no line with {text:?} after the previous text; the journal from there:\n{}",
                        node.name(),
                        lines[from..]
                            .iter()
                            .take(30)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join("\n")
                    ));
                };
                from += at + 1;
            }
            Ok(())
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// A line containing the text came to every node's journal through `logger` as upstream's
/// `logSystem` sends it: under logger's tag (the user's name, `root[<pid>]`) with the message
/// `machine-config-daemon[<pid>]: …`, told apart from the daemon's own log line
/// (`machine-config-daemon[<pid>]: …` as the journal's own tag). Waited for.
#[then(regex = r#"^every node's journal shows "(.+)" through logger$"#)]
async fn journal_through_logger(world: &mut ConformanceWorld, text: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let mark = world.mark(node.name())?;
        eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            let routed = |l: &&String| {
                l.split_once(" root[")
                    .and_then(|(_, rest)| rest.split_once("]: machine-config-daemon["))
                    .is_some_and(|(_, message)| message.contains(&text))
            };
            if lines.iter().any(|l| routed(&l)) {
                return Ok(());
            }
            let near: Vec<&String> = lines.iter().filter(|l| l.contains(&text)).take(5).collect();
            Err(format!(
                "{}: no line with {text:?} came through logger (root[…]: machine-config-daemon[…]: …); lines with it: {near:?}",
                node.name()
            ))
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// No line containing the text appears in any node's journal since the cluster started./// No line containing the text appears in any node's journal since the cluster started. Judged
/// at once, as the journal is: put it after a step that waits for the agents to have acted.
#[then(regex = r#"^no node's journal shows "(.+)"$"#)]
async fn journal_lacks(world: &mut ConformanceWorld, text: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let lines = node.journal_since(world.mark(node.name())?).await?;
        if let Some(line) = lines.iter().find(|l| l.contains(&text)) {
            anyhow::bail!("{}: its journal shows {line:?}", node.name());
        }
    }
    Ok(())
}

/// Where the 4.16 operator copies the serving CA bundle for the daemons, and its key.
const KUBECONFIG_DATA: (&str, &str) = ("openshift-machine-config-operator", "kubeconfig-data");
const SERVER_CA: (&str, &str) = ("openshift-config-managed", "kube-apiserver-server-ca");
const BUNDLE_KEY: &str = "ca-bundle.crt";

fn config_maps(world: &ConformanceWorld, namespace: &str) -> anyhow::Result<Api<ConfigMap>> {
    Ok(Api::namespaced(world.cluster()?.admin.clone(), namespace))
}

/// `kubeconfig-data` is replaced by one that holds the same bundle in `data` instead of
/// `binaryData`: base64-encoded, or as it is. The step ends when the cluster and nodes settled.
#[when(regex = r"^kubeconfig-data is rewritten with its bundle as (base64 data|raw data)$")]
async fn kubeconfig_data_rewritten(world: &mut ConformanceWorld, form: String) -> anyhow::Result<()> {
    let (ns, name) = KUBECONFIG_DATA;
    let api = config_maps(world, ns)?;
    let mut cm = api
        .get(name)
        .await
        .with_context(|| format!("reading configmap {ns}/{name}"))?;
    let bundle = cm
        .binary_data
        .take()
        .and_then(|mut b| b.remove(BUNDLE_KEY))
        .with_context(|| format!("configmap {ns}/{name} holds no binaryData {BUNDLE_KEY} to rewrite"))?;
    let value = if form == "base64 data" {
        base64::engine::general_purpose::STANDARD.encode(&bundle.0)
    } else {
        String::from_utf8(bundle.0).context("the bundle is not UTF-8")?
    };
    cm.data = Some([(BUNDLE_KEY.to_string(), value)].into());
    api.replace(name, &PostParams::default(), &cm)
        .await
        .with_context(|| format!("replacing configmap {ns}/{name}"))?;
    world.cluster()?.advance(time::Duration::ZERO).await?;
    Ok(())
}

/// `kubeconfig-data` holds exactly what `openshift-config-managed/kube-apiserver-server-ca`
/// holds, in the named form and only there: `binaryData`, or `data` base64-encoded or as it is.
#[then(
    regex = r"^kubeconfig-data holds the kube-apiserver's serving CA bundle as (binaryData|base64 data|raw data)$"
)]
async fn kubeconfig_data_holds(world: &mut ConformanceWorld, form: String) -> anyhow::Result<()> {
    let (ns, name) = SERVER_CA;
    let source = config_maps(world, ns)?
        .get(name)
        .await
        .with_context(|| format!("reading configmap {ns}/{name}"))?;
    let bundle = source
        .data
        .as_ref()
        .and_then(|d| d.get(BUNDLE_KEY))
        .with_context(|| format!("configmap {ns}/{name} has no data {BUNDLE_KEY}"))?
        .clone();
    let (ns, name) = KUBECONFIG_DATA;
    let cm = config_maps(world, ns)?
        .get(name)
        .await
        .with_context(|| format!("reading configmap {ns}/{name}"))?;
    let data = cm.data.as_ref().and_then(|d| d.get(BUNDLE_KEY));
    let binary = cm.binary_data.as_ref().and_then(|b| b.get(BUNDLE_KEY));
    let holds = match form.as_str() {
        "binaryData" => data.is_none() && binary.is_some_and(|b| b.0 == bundle.as_bytes()),
        "base64 data" => {
            binary.is_none()
                && data.is_some_and(|d| *d == base64::engine::general_purpose::STANDARD.encode(&bundle))
        }
        _ => binary.is_none() && data == Some(&bundle),
    };
    anyhow::ensure!(
        holds,
        "configmap {ns}/{name} does not hold the serving CA bundle as {form}: data {:?}, binaryData {:?}",
        data.map(|d| d.chars().take(80).collect::<String>()),
        binary.map(|b| String::from_utf8_lossy(&b.0).chars().take(80).collect::<String>()),
    );
    Ok(())
}

/// `openshift-machine-config-operator/kubeconfig-data`'s bundle (read as upstream's cmToData)
/// holds the CA the last step added, or not.
#[then(regex = r"^kubeconfig-data (holds|lacks) the added CA$")]
async fn kubeconfig_data_has_added(world: &mut ConformanceWorld, holds: String) -> anyhow::Result<()> {
    let added = world
        .added_serving_ca
        .clone()
        .context("no step has added a serving CA")?;
    let c = world.cluster()?;
    let cm = Api::<ConfigMap>::namespaced(c.admin.clone(), "openshift-machine-config-operator")
        .get("kubeconfig-data")
        .await
        .context("configmap openshift-machine-config-operator/kubeconfig-data")?;
    let bundle = harness::mco::config_map_bytes(&cm, "ca-bundle.crt")
        .context("kubeconfig-data has no ca-bundle.crt")?;
    let has = String::from_utf8_lossy(&bundle).contains(added.trim());
    anyhow::ensure!(
        has == (holds == "holds"),
        "kubeconfig-data's ca-bundle.crt {} the added CA",
        if has { "holds" } else { "lacks" }
    );
    Ok(())
}

/// An annotation of the ControllerConfig `machine-config-controller` has the value ("" for one
/// it lacks).
#[then(regex = r#"^the ControllerConfig's annotation (\S+) is "(.*)"$"#)]
async fn controller_config_annotation(
    world: &mut ConformanceWorld,
    key: String,
    value: String,
) -> anyhow::Result<()> {
    let annotations = world.cluster()?.controller_config_annotations().await?;
    let seen = annotations.get(&key).cloned().unwrap_or_default();
    anyhow::ensure!(
        seen == value,
        "the ControllerConfig's annotation {key} is {seen:?}, expected {value:?}"
    );
    Ok(())
}

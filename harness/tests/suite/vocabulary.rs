//! The words a QE engineer writes from the seeds and the step list mean what they mean in
//! OpenShift: the names certificates go by, and each positive Then step's negation. Each case
//! runs the CLI on a feature written that way, as `qe_input.rs` does for mistakes.

use crate::qe_input::feature;
use std::path::Path;

/// `mco-conformance run` from `dir` on `path`: exit code and stdout.
fn run(dir: &Path, args: &[&str], path: &Path) -> (Option<i32>, String) {
    let (code, stdout, _) = crate::qe_input::run(dir, args, path);
    (code, stdout)
}

/// The names the seeds and OpenShift give certificates work as they mean there: a CN names the
/// Secret it lives in (`kubelet-signer` is the installer's first csr-signer-signer, rotated
/// 19.2 h after install; `kube-csr-signer` is KCM-O's csr-signer), and a target has rotated
/// when it was re-issued (the first csr-signer, capped at its one-day issuer's expiry, at its
/// own 80 % point, 19.2 h after install). A client certificate asked for a
/// bundle is refused with the sentence that names its signer.
#[test]
fn names_from_the_seeds_mean_what_openshift_means() {
    let (dir, path) = feature(
        "names.feature",
        "Feature: f\n  Scenario: names as the seeds write them\n    Given a fresh cluster with 1 worker node\n    Then the kubelet-signer has not rotated\n    And the csr-signer has not rotated\n    And the kube-csr-signer has not rotated\n    When 20 hours pass\n    Then the kubelet-signer has rotated\n    And the openshift-kube-controller-manager-operator_csr-signer-signer has rotated\n    And the csr-signer has rotated\n    And the kube-csr-signer_@1767600000 has rotated\n\n  Scenario: a client certificate has no bundle\n    Given a fresh cluster with 1 worker node\n    Then the kubelet-client bundle holds 1 signer\n",
    );
    let (code, stdout) = run(dir.path(), &["--profile", "ocp-4.16"], &path);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("PASS ocp-4.16 names.feature:2 names as the seeds write them")),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "kubelet-client is a client certificate, not a CA: it has no bundle; its signer's is \"the kube-apiserver-to-kubelet-signer bundle\""
        ),
        "{stdout}"
    );
}

/// Each negation added beside its positive step holds where the positive does not, and fails,
/// saying what it saw, where the positive holds.
#[test]
fn each_positive_then_step_has_its_negation() {
    let (dir, path) = feature(
        "negations.feature",
        "Feature: f
  Scenario: the negations hold
    Given a fresh cluster with 1 worker node
    When the internal registry pull secret holds credentials for \"registry.example.com\"
    Then every node lacks the file /etc/mco-conformance/never-written
    And every node has the path /etc/kubernetes
    And every node has the annotation machineconfiguration.openshift.io/state
    And no kubelet accepts a client certificate from the current loadbalancer-serving-signer
    And every node's /etc/kubernetes/kubelet-ca.crt is not empty
    And every node's internal registry pull secret has no credentials for \"quay.example.com\"

  Scenario: lacks the file
    Given a fresh cluster with 1 worker node
    Then every node lacks the file /etc/kubernetes/kubelet-ca.crt

  Scenario: has the path
    Given a fresh cluster with 1 worker node
    Then every node has the path /etc/mco-conformance/never-written

  Scenario: has the annotation
    Given a fresh cluster with 1 worker node
    Then every node has the annotation example.com/never

  Scenario: no kubelet accepts
    Given a fresh cluster with 1 worker node
    Then no kubelet accepts a client certificate from the current kube-apiserver-to-kubelet-signer

  Scenario: not empty
    Given a fresh cluster with 1 worker node
    Then every node's /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt is not empty

  Scenario: no credentials
    Given a fresh cluster with 1 worker node
    When the internal registry pull secret holds credentials for \"registry.example.com\"
    Then every node's internal registry pull secret has no credentials for \"registry.example.com\"
",
    );
    let (code, stdout) = run(
        dir.path(),
        &["--profile", "ocp-4.16", "--agent-timeout", "2s"],
        &path,
    );
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("PASS ocp-4.16 negations.feature:2 the negations hold")),
        "{stdout}"
    );
    for (scenario, said) in [
        ("lacks the file", "worker-0: has /etc/kubernetes/kubelet-ca.crt"),
        (
            "has the path",
            "worker-0 has no /etc/mco-conformance/never-written",
        ),
        ("has the annotation", "worker-0: no example.com/never"),
        (
            "no kubelet accepts",
            "worker-0 accepts a client certificate from the current kube-apiserver-to-kubelet-signer",
        ),
        (
            "not empty",
            "worker-0: /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt is empty",
        ),
        (
            "no credentials",
            "/etc/mco/internal-registry-pull-secret.json has {\"auth\"",
        ),
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("FAIL ocp-4.16") && l.contains(&format!(" {scenario} (")))
                && stdout.contains(said),
            "{scenario}: {said:?} in {stdout}"
        );
    }
}

/// The catalogue's phrase `phrase` as a scenario writes it, with `value` in its first `slot`
/// and every other parameter filled in: a choice by its alternative holding the slot (else its
/// first), optional text left out, another `<signer>` or `<pool>` as the fixtures' first.
fn written(phrase: &str, slot: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = phrase;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with('[') {
            let end = rest.find(']').expect("a choice closes");
            let choices: Vec<&str> = rest[1..end].split('|').collect();
            let chosen = choices.iter().find(|c| c.contains(slot)).unwrap_or(&choices[0]);
            out.push_str(chosen);
            rest = &rest[end + 1..];
        } else if rest.starts_with('(') {
            // An optional ending or text: left out.
            rest = &rest[rest.find(')').expect("an optional part closes") + 1..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    let out = out.replacen(slot, value, 1);
    let text = if out.contains("changes <text>") {
        "the file /etc/mco-conformance/walk"
    } else {
        "walk"
    };
    out.replace("<signer>", "kube-apiserver-to-kubelet-signer")
        .replace("<pool>", "worker")
        .replace("<n>", "1")
        .replace("<path>", "/etc/mco-conformance/walk")
        .replace("<mode>", "0644")
        .replace("<duration>", "1 minute")
        .replace("<name>", "Updated")
        .replace("<text>", text)
}

/// What `mco-conformance steps` says each parameter accepts, it accepts: every step whose
/// phrase has a `<signer>` or a `<pool>`, and the starting-state step, runs with each value
/// listed for it, and none refuses the name or matches no step. (A step may still fail for
/// what it judges; only a refusal of the name fails this test, but the one the catalogue
/// documents: `kubelet-client`, a client certificate, has no bundle and signs nothing.)
#[test]
fn every_step_accepts_each_value_the_catalogue_lists() {
    use harness::runner::catalogue::{STARTING_STATE_STEP, catalogue, human, parameter_values};
    let values = |kinds: &[&str]| -> Vec<String> {
        parameter_values()
            .into_iter()
            .filter(|p| kinds.iter().any(|k| p.kind.starts_with(k)))
            .flat_map(|p| p.values)
            .collect()
    };
    let slots = [
        ("<signer>", values(&["signer", "target", "certificate name"])),
        ("<pool>", values(&["pool"])),
    ];
    let mut cases: Vec<(String, String, String)> = Vec::new();
    for step in catalogue() {
        let phrase = human(&step.phrase);
        for (slot, listed) in &slots {
            if phrase.contains(slot) {
                for value in listed {
                    let text = format!("{} {}", step.keyword, written(&phrase, slot, value));
                    cases.push((
                        phrase.clone(),
                        value.clone(),
                        format!("    Given a fresh cluster with 1 worker node\n    {text}\n"),
                    ));
                }
            }
        }
    }
    assert!(
        cases.iter().any(|(p, ..)| p.contains("<signer>"))
            && cases.iter().any(|(p, ..)| p.contains("<pool>")),
        "the catalogue shows its slots: {cases:?}"
    );
    for state in values(&["starting state"]) {
        cases.push((
            STARTING_STATE_STEP.to_string(),
            state.clone(),
            format!("    Given a cluster in the starting state \"{state}\" with 1 worker node\n"),
        ));
    }
    let mut text = String::from("Feature: the catalogue walked\n");
    for (i, (_, _, steps)) in cases.iter().enumerate() {
        text.push_str(&format!("\n  Scenario: walk {i}\n{steps}"));
    }
    let (dir, path) = feature("walk.feature", &text);
    let (_, stdout) = run(
        dir.path(),
        &["--profile", "ocp-4.16", "--agent-timeout", "2s"],
        &path,
    );
    assert!(!stdout.contains("undefined step"), "{stdout}");
    let documented_refusal = |phrase: &str, value: &str| {
        value == "kubelet-client"
            && (phrase.starts_with("the <signer> bundle holds")
                || phrase.ends_with("kubelet accepts a client certificate from the current <signer>"))
    };
    let mut refused = Vec::new();
    for line in stdout
        .lines()
        .filter(|l| l.starts_with("failed: ocp-4.16: walk.feature:"))
    {
        let Some((i, message)) = line
            .split_once(": walk ")
            .and_then(|(_, rest)| rest.split_once(": "))
            .and_then(|(i, m)| Some((i.parse::<usize>().ok()?, m)))
        else {
            panic!("a failure line names its scenario: {line}");
        };
        let (phrase, value, _) = &cases[i];
        // What a step says when it does not take a name: an unknown name (each names its
        // fixture file, or for a pool the pools there are), a name it takes for something else
        // ("not a signer", "not a CA"), or one it knows but has nothing recorded for.
        let refusal = [
            "fixtures/",
            "pools: ",
            "not a signer",
            "not a CA",
            "recorded when the cluster started",
        ]
        .iter()
        .any(|r| message.contains(r));
        if refusal && !(message.contains("not a CA") && documented_refusal(phrase, value)) {
            refused.push(format!("{phrase} with {value}: {message}"));
        }
    }
    assert!(
        stdout.lines().last().is_some_and(|l| l.ends_with("skipped")),
        "the run ended with its summary: {stdout}"
    );
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

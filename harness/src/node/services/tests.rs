//! `services`'s unit tests.

use super::*;

fn node() -> ServiceManager {
    let mut m = ServiceManager::new(&["kubelet", "crio", "machine-config-daemon"]);
    m.boot();
    m
}

#[test]
fn verbs_give_systemd_journal_lines_and_effects() {
    let mut m = node();
    let (kubelet, crio) = ("kubelet.service".to_string(), "crio.service".to_string());
    let cases: Vec<(&[&str], &[&str], Vec<Effect>)> = vec![
        (&["daemon-reload"], &["Reloading."], vec![]),
        (&["enable", "kubelet.service"], &["Reloading."], vec![]),
        (
            &["stop", "kubelet"],
            &["Stopping kubelet.service...", "Stopped kubelet.service."],
            vec![Effect::Stop(kubelet.clone())],
        ),
        (
            &["start", "kubelet"],
            &["Starting kubelet.service...", "Started kubelet.service."],
            vec![Effect::Start(kubelet.clone())],
        ),
        (&["start", "kubelet"], &[], vec![]),
        (
            &["reload", "crio"],
            &["Reloading crio.service...", "Reloaded crio.service."],
            vec![Effect::Reload(crio)],
        ),
    ];
    for (args, journal, effects) in cases {
        let out = m.systemctl(args);
        assert_eq!(out.exit_code, 0, "{args:?}: {}", out.stderr);
        assert_eq!(out.journal, journal, "{args:?}");
        assert_eq!(out.effects, effects, "{args:?}");
    }
    let restart = m.systemctl(&["restart", "kubelet"]);
    assert_eq!(
        restart.journal,
        [
            "Stopping kubelet.service...",
            "Stopped kubelet.service.",
            "Starting kubelet.service...",
            "Started kubelet.service."
        ]
    );
    assert_eq!(
        restart.effects,
        [
            Effect::Stop("kubelet.service".into()),
            Effect::Start("kubelet.service".into())
        ]
    );
}

#[test]
fn a_unit_whose_process_exits_is_failed_until_started_again() {
    let mut m = ServiceManager::new(&["agent"]);
    assert!(
        m.main_process_exited("agent", false).is_empty(),
        "not active: nothing to fail"
    );
    m.boot();
    assert_eq!(
        m.main_process_exited("agent", false),
        ["agent.service: Failed with result 'exit-code'."]
    );
    let out = m.systemctl(&["is-active", "agent"]);
    assert_eq!((out.stdout.as_str(), out.exit_code), ("failed\n", 3));
    m.systemctl(&["start", "agent"]);
    let out = m.systemctl(&["is-active", "agent"]);
    assert_eq!((out.stdout.as_str(), out.exit_code), ("active\n", 0));
    assert_eq!(
        m.main_process_exited("agent", true),
        ["agent.service: Deactivated successfully."]
    );
    assert_eq!(
        m.systemctl(&["is-active", "agent"]).stdout,
        "inactive\n",
        "status 0 is no failure"
    );
    m.systemctl(&["start", "agent"]);
    m.systemctl(&["stop", "agent"]);
    assert!(
        m.main_process_exited("agent", false).is_empty(),
        "stopped, not failed"
    );
    assert_eq!(m.systemctl(&["is-active", "agent"]).stdout, "inactive\n");
}

#[test]
fn is_active_unknown_units_and_bad_usage() {
    let mut m = node();
    assert_eq!(
        (
            m.systemctl(&["is-active", "kubelet"]).stdout.as_str(),
            m.systemctl(&["is-active", "kubelet"]).exit_code
        ),
        ("active\n", 0)
    );
    m.systemctl(&["stop", "kubelet"]);
    assert_eq!(m.systemctl(&["is-active", "kubelet"]).exit_code, 3);
    let missing = m.systemctl(&["start", "nope"]);
    assert_eq!(
        (missing.exit_code, missing.stderr.as_str()),
        (5, "Failed to start nope.service: Unit nope.service not found.\n")
    );
    assert_eq!(m.systemctl(&[]).exit_code, 1);
    assert_eq!(m.systemctl(&["frobnicate"]).exit_code, 1);
    assert_eq!(
        m.systemctl(&["reload", "kubelet"]).exit_code,
        1,
        "cannot reload a stopped unit"
    );
    assert_eq!(m.systemctl(&["--no-block", "reboot"]).effects, [Effect::Reboot]);
    m.systemctl(&["start", "kubelet"]);
    for args in [
        &["kill", "-s", "KILL", "kubelet"][..],
        &["kill", "--signal=SIGKILL", "kubelet.service"][..],
    ] {
        assert_eq!(
            m.systemctl(args).effects,
            [Effect::Kill("kubelet.service".into(), "KILL".into())],
            "{args:?}"
        );
    }
    assert_eq!(
        m.systemctl(&["kill", "crio"]).effects,
        [Effect::Kill("crio.service".into(), "TERM".into())]
    );
}

#[test]
fn is_enabled_and_list_units_answer_as_systemctl_does() {
    let mut m = node();
    m.systemctl(&["disable", "crio"]);
    let out = m.systemctl(&["is-enabled", "kubelet"]);
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, "enabled\n"));
    let out = m.systemctl(&["is-enabled", "crio.service", "kubelet"]);
    assert_eq!((out.exit_code, out.stdout.as_str()), (1, "disabled\nenabled\n"));
    let out = m.systemctl(&["is-enabled", "nope"]);
    assert_eq!(
        (out.exit_code, out.stderr.as_str()),
        (
            1,
            "Failed to get unit file state for nope.service: No such file or directory\n"
        )
    );
    let out = m.systemctl(&["list-units", "--state=failed", "--no-legend"]);
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, ""));
    m.systemctl(&["stop", "crio"]);
    let out = m.systemctl(&["list-units", "--no-legend"]);
    assert_eq!(
        out.stdout,
        "kubelet.service loaded active running kubelet.service\n\
         machine-config-daemon.service loaded active running machine-config-daemon.service\n"
    );
    let out = m.systemctl(&["list-units", "--state", "inactive"]);
    assert_eq!(
        out.stdout,
        "UNIT LOAD ACTIVE SUB DESCRIPTION\ncrio.service loaded inactive dead crio.service\n\n1 loaded units listed.\n"
    );
}

#[test]
fn boot_starts_enabled_units_only() {
    let mut m = ServiceManager::new(&["kubelet", "crio"]);
    m.systemctl(&["disable", "crio"]);
    let out = m.boot();
    assert_eq!(out.effects, [Effect::Start("kubelet.service".into())]);
    assert!(!m.state("crio").unwrap().active);
}

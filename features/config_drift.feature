# Encodes: MCO pkg/daemon/config_drift_monitor.go (fsnotify on the directories of the current
# config's files and units), pkg/daemon/on_disk_validation.go (checkV3Files,
# checkFileContentsAndMode: "content mismatch for file %q", "mode mismatch for file: %q;
# expected: …; received: …"), pkg/daemon/daemon.go (onConfigDrift, getFilesToIgnore on
# release-4.12 and release-4.16; release-4.14 skips kubelet-ca.crt and the cloud CA inline in
# on_disk_validation.go:167-173) and e2e-shared-tests/mcd_config_drift.go (reason text,
# recovery with the force file). See shared/notes/mco-source.md §6.
@config-drift
Feature: A node whose files drift from its config
  While a node is Done, its daemon watches the files of the config it runs. A file edited on
  the node degrades the node with the file named in the reason. On 4.12 kubelet-ca.crt is an
  ordinary MachineConfig file and is watched like any other; from 4.13 the daemon leaves it to
  the certificate writer and ignores it. Restoring the file, or creating the force file,
  brings the node back.

  # The MachineConfig puts kubelet-ca.crt into the rendered config on every profile (on 4.14 and
  # 4.16 the daemon leaves writing it to the certificate writer, so the file on disk is not the
  # config's: only the ignore list keeps that from being drift). The validation checks the
  # config's files in order and reports the first mismatch; kubelet-ca.crt comes before ca.crt.
  # The edit of ca.crt, in the same directory and after the edit of kubelet-ca.crt, is the
  # witness that the monitor ran after both.
  Scenario Outline: An edited kubelet-ca.crt is drift only where the daemon does not leave it to the certificate writer
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/kubernetes/kubelet-ca.crt
    And the file /etc/kubernetes/kubelet-ca.crt is edited on every node
    And the file /etc/kubernetes/ca.crt is edited on every node
    Then every node is Degraded with the reason "content mismatch for file "<first mismatch>""

    @ocp-4.12
    Examples:
      | first mismatch                  |
      | /etc/kubernetes/kubelet-ca.crt  |

    @ocp-4.14 @ocp-4.16
    Examples:
      | first mismatch                  |
      | /etc/kubernetes/ca.crt          |

  # A MachineConfig that carries kubelet-ca.crt on 4.14 and 4.16: the daemon skips that one file
  # when it applies a config from the cluster (release-4.16 file_writers.go:226-232
  # `skipCertificateWrite`, set for every such update, daemon.go:2454; release-4.14
  # file_writers.go:157-163, daemon.go:2139-2193), so the file stays what the certificate writer
  # wrote from the ControllerConfig, and the change reboots nothing.
  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 a MachineConfig carrying kubelet-ca.crt neither overwrites nor, when deleted, removes the certificate writer's file
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/kubernetes/kubelet-ca.crt
    Then every node's kubelet-ca.crt equals "kube-apiserver-client-ca"
    And no node has rebooted
    # Deleting it: the new rendered config lacks kubelet-ca.crt, as after an upgrade from the
    # 4.12 path, and deleteStaleData keeps the file (release-4.16 update.go:1869-1885,
    # release-4.14 update.go:1278-1283).
    When the newest MachineConfig for the worker pool is deleted
    Then the newest rendered config of the worker pool lacks the file /etc/kubernetes/kubelet-ca.crt
    And every node's kubelet-ca.crt equals "kube-apiserver-client-ca"
    And no node has rebooted

  Scenario: An edited MachineConfig file degrades the node until it is restored
    Given a fresh cluster with 1 worker node
    When the file /etc/kubernetes/ca.crt is edited on every node
    Then every node is Degraded with the reason "content mismatch for file "/etc/kubernetes/ca.crt""
    When the file /etc/kubernetes/ca.crt is restored on every node
    Then every node is Done
    And no node has rebooted

  Scenario: A changed mode is drift too
    Given a fresh cluster with 1 worker node
    When the mode of /etc/kubernetes/ca.crt is changed to 0600 on every node
    Then every node is Degraded with the reason "mode mismatch for file: "/etc/kubernetes/ca.crt"; expected: -rw-r--r--/420/0644; received: -rw-------/384/0600"
    When the file /etc/kubernetes/ca.crt is restored on every node
    Then every node is Done

  # A unit is checked as a file is: the monitor watches the unit files the config writes under
  # /etc/systemd/system, and the validation compares a unit that has contents (and each drop-in)
  # with the config, reporting it by its path in the same words as a file (checkV3Unit and
  # checkFileContentsAndMode: release-4.12 on_disk_validation.go:48-90 and :194-208, release-4.16
  # :67-115 and :237-253; the watched paths: config_drift_monitor.go:320-332 and :322-334).
  Scenario: An edited unit file is drift too
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the unit mco-conformance-example.service
    And the file /etc/systemd/system/mco-conformance-example.service is edited on every node
    Then every node is Degraded with the reason "content mismatch for file "/etc/systemd/system/mco-conformance-example.service""
    When the file /etc/systemd/system/mco-conformance-example.service is restored on every node
    Then every node is Done

  # A daemon that starts on files that differ from its config fails its start check: the node is
  # Degraded with the check's error, which names the config it validated against, and a Warning
  # event OnDiskStateValidationFailed says the same (checkStateOnFirstRun: release-4.12
  # daemon.go:1571-1577, release-4.16 :2135-2138 and :2586). Each retry runs the start check
  # again; once the file is restored one passes and the node is Done.
  Scenario: A daemon that starts on an edited file fails its start check until the file is restored
    Given a fresh cluster with 1 worker node
    When the file /etc/kubernetes/ca.crt is edited on every node
    Then every node is Degraded with the reason "content mismatch for file "/etc/kubernetes/ca.crt""
    When the agent restarts on every node
    Then every node is Degraded with the reason "unexpected on-disk state validating against rendered-worker-"
    And every node shows these Node events, where <config> is the worker pool's newest rendered config:
      | type    | reason                      | message                                                                                                  |
      | Warning | OnDiskStateValidationFailed | unexpected on-disk state validating against <config>: content mismatch for file "/etc/kubernetes/ca.crt" |
    When the file /etc/kubernetes/ca.crt is restored on every node
    Then every node is Done
    And no node has rebooted

  # The force file skips the drift check; the update to the same config rewrites every file
  # and reboots, because calculatePostConfigChangeAction reboots when the force file exists.
  Scenario: The force file recovers a drifted node with a reboot
    Given a fresh cluster with 1 worker node
    When the file /etc/kubernetes/ca.crt is edited on every node
    Then every node is Degraded with the reason "content mismatch for file "/etc/kubernetes/ca.crt""
    When the force file is created on every node
    Then every node is Done
    And every node has rebooted
    And every node's /etc/kubernetes/ca.crt matches its config
    And no node has the force file

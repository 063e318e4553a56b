# Encodes: the daemon's Node events, posted by its node writer's event recorder (release-4.12,
# 4.14 and 4.16 pkg/daemon/writer.go newNodeWriter: source machineconfigdaemon, the Node as the
# involved object, with the kubelet's kubeconfig). Where each comes from:
# - Cordon "Cordoned node to apply update" and Drain "Draining node to update config." before the
#   drain a reboot needs (drain.go performDrain: release-4.12 :65-66, release-4.16 :80-81);
# - PendingConfig "Written pending config <config>", 4.12 only (update.go:171-193
#   finalizeBeforeReboot, on every update; release-4.14 dropped the pending state);
# - SkipReboot "Config changes do not require reboot." for no action, "… Service crio was
#   reloaded." for a CRI-O reload, none for a CRI-O restart (performPostConfigChangeAction:
#   release-4.12 update.go:126-145, release-4.14 :92-111, release-4.16 :259-303);
# - Reboot "Node will reboot into config <config>" (reboot(): release-4.12 update.go:2209,
#   release-4.16 :2676);
# - Uncordon "Update completed for config <config> and node has been uncordoned" and then NodeDone
#   "Setting node <node>, currentConfig <config> to Done" once the node is in its desired config
#   (completeUpdate and updateConfigAndState: release-4.12 daemon.go:1793, :1626; release-4.16
#   daemon.go:2441, :2229), after a rebootless update and after the boot alike.
# - At a start on the config the node runs, release-4.14 and 4.16 complete it again, so every start
#   of the daemon raises Uncordon and NodeDone (checkStateOnFirstRun → updateConfigAndState: in its
#   desired config, completeUpdate; release-4.14 daemon.go:1923-1948, release-4.16
#   daemon.go:2205-2246, "In desired state <config>"); release-4.12 completes only a pending
#   config there and logs "In desired config <config>" (daemon.go:1613-1646).
# The review that listed these said "none on 4.16"; release-4.16 raises all but PendingConfig:
# what 4.14 and 4.16 lack for a rotation is the update itself (the certificate writer writes
# kubelet-ca.crt), not the events.
@node-events
Feature: The daemon's Node events
  An MCO developer or QE engineer follows an update with `oc get events` or `oc describe node`:
  the daemon tells, on the Node, that it cordoned and drained it, skipped or made a reboot, and
  uncordoned it and set it Done on the new config.

  @ocp-4.12
  Scenario: On 4.12 a rotation's update shows PendingConfig, SkipReboot, Uncordon and NodeDone
    Given a fresh cluster with 2 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node shows these Node events, where <config> is the worker pool's newest rendered config:
      | type   | reason        | message                                                            |
      | Normal | PendingConfig | Written pending config <config>                                    |
      | Normal | SkipReboot    | Config changes do not require reboot.                              |
      | Normal | Uncordon      | Update completed for config <config> and node has been uncordoned |
      | Normal | NodeDone      | Setting node <node>, currentConfig <config> to Done                |
    And no node shows the Node event Cordon
    And no node shows the Node event Reboot

  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 a rotation shows no update on any node
    Given a fresh cluster with 2 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the kube-apiserver-to-kubelet-signer has rotated
    And every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And no node shows the Node event SkipReboot
    And no node shows the Node event PendingConfig
    And no node shows the Node event Cordon

  Scenario: A registry change shows the CRI-O reload as SkipReboot, then Uncordon and NodeDone
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/containers/registries.conf
    Then every node applied it with a crio reload
    And every node shows these Node events, where <config> is the worker pool's newest rendered config:
      | type   | reason     | message                                                            |
      | Normal | SkipReboot | Config changes do not require reboot. Service crio was reloaded.   |
      | Normal | Uncordon   | Update completed for config <config> and node has been uncordoned |
      | Normal | NodeDone   | Setting node <node>, currentConfig <config> to Done                |
    And no node shows the Node event Reboot

  Scenario: A change that reboots shows Cordon, Drain and Reboot, then Uncordon and NodeDone after the boot
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/mco-conformance/example.conf
    Then every node applied it with a reboot
    And every node shows these Node events, where <config> is the worker pool's newest rendered config:
      | type   | reason   | message                                                            |
      | Normal | Cordon   | Cordoned node to apply update                                      |
      | Normal | Drain    | Draining node to update config.                                    |
      | Normal | Reboot   | Node will reboot into config <config>                              |
      | Normal | Uncordon | Update completed for config <config> and node has been uncordoned |
      | Normal | NodeDone | Setting node <node>, currentConfig <config> to Done                |
    And no node shows the Node event SkipReboot

  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 every start of the daemon completes the config the node runs again
    Given a fresh cluster with 1 worker node
    Then every node shows the Node event NodeDone once
    When the agent restarts on every node
    Then every node shows these Node events, where <config> is the worker pool's newest rendered config:
      | type   | reason   | message                                                            |
      | Normal | Uncordon | Update completed for config <config> and node has been uncordoned |
      | Normal | NodeDone | Setting node <node>, currentConfig <config> to Done                |
    And every node shows the Node event Uncordon twice
    And every node shows the Node event NodeDone twice
    And every node's journal shows "In desired state" since the agent restarted
    And no node has rebooted

  # Once its start check passed, the daemon starts its config drift monitor and says so; it stops
  # the monitor before an update and starts it again once a rebootless update is done
  # (startConfigDriftMonitor: release-4.12 daemon.go:524-533 and :1105, update.go:163; release-4.14
  # daemon.go:693-702 and :1217; release-4.16 daemon.go:778-802 and :1492, update.go:115;
  # stopConfigDriftMonitor before every update, the monitor's goroutine posting the stop:
  # release-4.12 daemon.go:1110-1115 and :1825, release-4.16 :1497-1502 and :2502). A restarted
  # daemon has a new event recorder, so its start is a second event.
  Scenario: The daemon's config drift monitor says when it watches and when it stops
    Given a fresh cluster with 1 worker node
    Then every node shows the Node event ConfigDriftMonitorStarted once
    When the agent restarts on every node
    Then every node shows the Node event ConfigDriftMonitorStarted twice
    When a MachineConfig for the worker pool changes the file /etc/containers/registries.conf
    Then every node applied it with a crio reload
    And every node shows these Node events, where <config> is the worker pool's newest rendered config:
      | type   | reason                    | message                                                 |
      | Normal | ConfigDriftMonitorStopped | Config Drift Monitor stopped                            |
      | Normal | ConfigDriftMonitorStarted | Config Drift Monitor started, watching against <config> |

  @ocp-4.12
  Scenario: On 4.12 a start of the daemon on the config the node runs completes nothing
    Given a fresh cluster with 1 worker node
    When the agent restarts on every node
    Then every node's journal shows "In desired config" since the agent restarted
    And no node shows the Node event Uncordon
    And no node shows the Node event NodeDone

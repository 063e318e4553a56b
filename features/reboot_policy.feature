# Encodes: MCO release-4.12 pkg/daemon/update.go (calculatePostConfigChangeAction,
# calculatePostConfigChangeActionFromFileDiffs, performPostConfigChangeAction) and release-4.16
# pkg/daemon/update.go (calculatePostConfigChangeActionFromMCDiffs: its file and directory
# lists, restart crio for the user CA bundle); pkg/daemon/drain.go isDrainRequired. See
# shared/notes/mco-source.md §1–§2. Release-4.14 update.go:343-371 (docs/ocp-4.14.md §5):
# 4.12's lists plus a CRI-O restart for the user CA bundle (6e9755884), no directory lists, and
# no "Don't override a restart" guard.
@reboot-policy
Feature: What a node does to apply a new config
  The daemon picks the least disruptive action that covers everything a new rendered config
  changes: nothing for the kubelet CA bundle and the pull secret, a CRI-O reload for registry
  configuration, a CRI-O restart for the user CA bundle on 4.14 and 4.16, and a reboot for anything else
  (other files, units, kernel arguments, the OS image). SSH keys never reboot.

  # Each row is one change on its own, so the row's action is the whole decision: the file
  # lists of calculatePostConfigChangeActionFromFileDiffs (4.12) and ...FromMCDiffs (4.16);
  # a unit, kernel argument or OS image change reboots before any file is looked at; passwd
  # (SSH keys) is never a reason to reboot. 4.14 and 4.16 know the user CA bundle (restart
  # crio); only 4.16 knows the registries.d directory (reload crio) and the
  # /etc/nmstate/openshift directory (nothing: release-4.16 update.go:569-605,
  # directoriesPostConfigChangeActionNone); 4.12 reboots for all three, 4.14 for the two
  # directories. A kernel type or an extension is an OS change and reboots on both (upstream applies
  # it with rpm-ostree on CoreOS; on a node that is not, it skips the OS part and still reboots).
  Scenario Outline: A change to <change> is applied with <action>
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes <change>
    Then every node applied it with <action>

    @ocp-4.12
    Examples:
      | change                                                                      | action        |
      | the file /etc/kubernetes/kubelet-ca.crt                                     | no reboot     |
      | the file /var/lib/kubelet/config.json                                       | no reboot     |
      | the SSH keys                                                                | no reboot     |
      | the file /etc/containers/registries.conf                                    | a crio reload |
      | the file /etc/containers/policy.json                                        | a crio reload |
      | the file /etc/machine-config-daemon/no-reboot/containers-gpg.pub            | a crio reload |
      | the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | a reboot    |
      | the file /etc/containers/registries.d/example.yaml                          | a reboot      |
      | the file /etc/mco-conformance/example.conf                                  | a reboot      |
      | the unit mco-conformance-example.service                                    | a reboot      |
      | the kernel argument nosmt                                                   | a reboot      |
      | the OS image                                                                | a reboot      |
      | the file /etc/nmstate/openshift/worker-0.yml                                | a reboot      |
      | the kernel type realtime                                                    | a reboot      |
      | the extension usbguard                                                      | a reboot      |

    @ocp-4.14
    Examples:
      | change                                                                      | action          |
      | the file /etc/kubernetes/kubelet-ca.crt                                     | no reboot       |
      | the file /var/lib/kubelet/config.json                                       | no reboot       |
      | the SSH keys                                                                | no reboot       |
      | the file /etc/containers/registries.conf                                    | a crio reload   |
      | the file /etc/containers/policy.json                                        | a crio reload   |
      | the file /etc/machine-config-daemon/no-reboot/containers-gpg.pub            | a crio reload   |
      | the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | a crio restart |
      | the file /etc/containers/registries.d/example.yaml                          | a reboot        |
      | the file /etc/mco-conformance/example.conf                                  | a reboot        |
      | the unit mco-conformance-example.service                                    | a reboot        |
      | the kernel argument nosmt                                                   | a reboot        |
      | the OS image                                                                | a reboot        |
      | the file /etc/nmstate/openshift/worker-0.yml                                | a reboot        |
      | the kernel type realtime                                                    | a reboot        |
      | the extension usbguard                                                      | a reboot        |
      | the file /etc/mco/internal-registry-pull-secret.json                        | no reboot       |

    @ocp-4.16
    Examples:
      | change                                                                      | action          |
      | the file /etc/kubernetes/kubelet-ca.crt                                     | no reboot       |
      | the file /var/lib/kubelet/config.json                                       | no reboot       |
      | the SSH keys                                                                | no reboot       |
      | the file /etc/containers/registries.conf                                    | a crio reload   |
      | the file /etc/containers/policy.json                                        | a crio reload   |
      | the file /etc/machine-config-daemon/no-reboot/containers-gpg.pub            | a crio reload   |
      | the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | a crio restart |
      | the file /etc/containers/registries.d/example.yaml                          | a crio reload   |
      | the file /etc/mco-conformance/example.conf                                  | a reboot        |
      | the unit mco-conformance-example.service                                    | a reboot        |
      | the kernel argument nosmt                                                   | a reboot        |
      | the OS image                                                                | a reboot        |
      | the file /etc/nmstate/openshift/worker-0.yml                                | no reboot       |
      | the kernel type realtime                                                    | a reboot        |
      | the extension usbguard                                                      | a reboot        |

  # Two changes in one MachineConfig: the most disruptive action wins, whatever the order.
  # Any file outside the tables reboots at once; on 4.16 a CRI-O restart (the user CA bundle)
  # is never lowered to a reload ("Don't override a restart CRIO action", release-4.16
  # update.go:569-605). On 4.14 it can be: there the file seen last decides between a reload
  # and a restart (update.go:362-365), and upstream walks the changed files in Go map order
  # (common/helpers.go:956-992 CalculateConfigFileDiffs), so a config that changes the user CA
  # bundle and registries.conf gets either at random — no row for it on 4.14, since upstream
  # itself has no one answer. On 4.12 the user CA bundle is outside the tables and reboots
  # (release-4.12 update.go calculatePostConfigChangeActionFromFileDiffs); a kernel argument
  # reboots before any file is looked at (update.go:483 / :716); SSH keys add nothing. As
  # upstream's TestCalculatePostConfigChangeAction, whose mixed cases these follow.
  Scenario Outline: A config that changes <first> and <second> is applied with <action>
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes <first> and <second>
    Then every node applied it with <action>

    @ocp-4.12
    Examples:
      | first                                                                       | second                                                                      | action        |
      | the file /etc/kubernetes/kubelet-ca.crt                                     | the file /etc/mco-conformance/example.conf                                  | a reboot      |
      | the file /etc/kubernetes/kubelet-ca.crt                                     | the file /etc/containers/registries.conf                                    | a crio reload |
      | the SSH keys                                                                | the file /etc/containers/policy.json                                        | a crio reload |
      | the file /etc/containers/registries.conf                                    | the kernel argument nosmt                                                   | a reboot      |
      | the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | the file /etc/containers/registries.conf                                  | a reboot      |

    @ocp-4.14
    Examples:
      | first                                                                       | second                                                                      | action          |
      | the file /etc/kubernetes/kubelet-ca.crt                                     | the file /etc/mco-conformance/example.conf                                  | a reboot        |
      | the file /var/lib/kubelet/config.json                                       | the file /etc/containers/registries.conf                                    | a crio reload   |
      | the SSH keys                                                                | the file /etc/containers/policy.json                                        | a crio reload   |
      | the file /etc/containers/registries.conf                                    | the kernel argument nosmt                                                   | a reboot        |
      | the file /etc/nmstate/openshift/worker-0.yml                                | the file /etc/containers/registries.d/example.yaml                          | a reboot        |

    @ocp-4.16
    Examples:
      | first                                                                       | second                                                                      | action          |
      | the file /etc/kubernetes/kubelet-ca.crt                                     | the file /etc/mco-conformance/example.conf                                  | a reboot        |
      | the file /var/lib/kubelet/config.json                                       | the file /etc/containers/registries.conf                                    | a crio reload   |
      | the SSH keys                                                                | the file /etc/containers/policy.json                                        | a crio reload   |
      | the file /etc/containers/registries.conf                                    | the kernel argument nosmt                                                   | a reboot        |
      | the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | the file /etc/containers/registries.conf                                  | a crio restart  |
      | the file /etc/containers/registries.conf                                    | the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | a crio restart |
      | the file /etc/nmstate/openshift/worker-0.yml                                | the file /etc/containers/registries.d/example.yaml                          | a crio reload   |

  # FIPS is chosen at install. The daemon compares a new config's `fips` with the kernel's
  # switch (/proc/sys/crypto/fips_enabled) and refuses a difference before it writes or drains
  # anything: release-4.12 update.go:901 reconcilable → checkFIPS:942 ("detected change to FIPS
  # flag; refusing to modify FIPS on a running cluster"), wrapped as "can't reconcile config %s
  # with %s: %w" (:533) in an unreconcilableErr, which daemon.go:421 updateErrorState turns
  # into the Unreconcilable state. The nodes run without FIPS. (4.16: at the end of this file.)
  @ocp-4.12 @ocp-4.14
  Scenario: A config that turns FIPS on is refused as unreconcilable
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool turns FIPS on
    Then every node is Unreconcilable with the reason "detected change to FIPS flag; refusing to modify FIPS on a running cluster"
    And every node is Ready
    And no node has rebooted

  # Withdrawing the config brings the node back. The node controller gives a node whose daemon
  # gave up (current ≠ desired, Unreconcilable) the pool's new target like any other, and does
  # not count it unavailable (release-4.12 node_controller.go:957-985 getAllCandidateMachines,
  # status.go:178-185 isNodeMCDFailing, :243-258 isNodeUnavailable): deleting the MachineConfig
  # makes the pool target the config the node runs again. The daemon, given the config it runs
  # in a state other than Done, logs "current+desiredConfig is … but state is Unreconcilable"
  # and runs the update again (daemon.go:1752-1760 prepUpdateFromCluster), which finds nothing
  # to change and ends Done with no reboot.
  # The pool's messages name the config by its name on 4.12 and as "MachineConfig <name>" from
  # 4.14 (release-4.14 node/status.go:153-158 getPoolUpdateLine).
  Scenario Outline: Deleting the refused FIPS config brings the node back to Done
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool turns FIPS on
    Then every node is Unreconcilable with the reason "detected change to FIPS flag; refusing to modify FIPS on a running cluster"
    When the newest MachineConfig for the worker pool is deleted
    Then every node runs the rendered config it started with
    And every node is Done
    And the worker pool went from Updating to Updated on its newest rendered config, named <naming>
    And every node is Ready
    And no node has rebooted

    @ocp-4.12
    Examples:
      | naming  |
      | by name |

    @ocp-4.14
    Examples:
      | naming                        |
      | as MachineConfig and its name |

  # Every update writes the config's units again, and a unit that is enabled is disabled before
  # it is rewritten, its WantedBy= may have changed, then enabled again as the config says
  # (OCPBUGS-33694: release-4.12 update.go:1600-1612, release-4.14 file_writers.go:233-241,
  # release-4.16 :302-310): systemd reloads for each. The first MachineConfig brings the unit
  # (new, so nothing to disable; a unit change reboots); the second rewrites it.
  Scenario: An update disables each enabled unit before rewriting it and enables it again
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the unit mco-conformance-example.service
    And a MachineConfig for the worker pool changes the file /var/lib/kubelet/config.json
    Then every node's journal shows, in this order:
      | Disabling systemd unit mco-conformance-example.service before re-writing it |
      | Reloading.                                                                   |
      | Reloading.                                                                   |
      | Node has Desired Config                                                      |
    And every node's unit mco-conformance-example.service is enabled

  # The daemon's own log (the journal shows it under machine-config-daemon) as an update checks
  # the change and writes the config's units: "Checking Reconcilable for config A to B"
  # (release-4.12 update.go:527, release-4.16 :845), "Writing systemd unit %q" for a unit with
  # contents (release-4.12 update.go:1595, release-4.14 file_writers.go:224, release-4.16 :293)
  # and "Enabled systemd units: %v", every unit the config enables in Go's form of a list, names
  # bare between brackets (release-4.12 update.go:1505, release-4.16 :2095), before the reboot
  # the unit needs.
  @mco-logs
  Scenario: The daemon's log names the unit it writes and enables, in upstream's words
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the unit mco-conformance-example.service
    Then every node's journal shows, in this order:
      | Checking Reconcilable for config                       |
      | Writing systemd unit "mco-conformance-example.service" |
      | Enabled systemd units: [                               |
      | Rebooting node                                         |
    And no node's journal shows "Enabled systemd units: [""

  # calculatePostConfigChangeAction looks at /run/machine-config-daemon-force first: it removes
  # the file and reboots, even for a change that needs nothing.
  Scenario: The force file makes any change reboot
    Given a fresh cluster with 1 worker node
    And every node has the force file
    When a MachineConfig for the worker pool changes the file /var/lib/kubelet/config.json
    Then every node applied it with a reboot
    And no node has the force file

  # A reboot keeps the node's files (only /run is emptied), and the daemon completes the
  # pending config after it: currentConfig is the new rendered config and state is Done, which
  # the When step waits for.
  Scenario: A node that reboots comes back with its files and finishes the update
    Given a fresh cluster with 2 worker nodes
    When a MachineConfig for the worker pool changes the file /etc/mco-conformance/example.conf
    Then every node applied it with a reboot
    And every node has the file /etc/mco-conformance/example.conf
    And every node is Ready

  # The daemon writes every file of the new config, changed or not (release-4.12 update.go:1233
  # updateFiles → writeFiles:1673, "Writing file %q" for each; release-4.16 update.go:1799 →
  # file_writers.go:226, which skips only kubelet-ca.crt, the certificate writer's file), each
  # through a temporary file renamed over the old one, so a new inode. Only the diff set picks
  # the action (calculatePostConfigChangeAction, release-4.12 update.go:471, release-4.16
  # update.go:704). So /etc/kubernetes/ca.crt (root-ca.yaml, in the rendered config on both),
  # which no change here touches, is written again with the same contents, and the action stays
  # what the change alone asks for.
  Scenario: An update writes every file of the config again, changed or not, and reboots for none
    Given a fresh cluster with 1 worker node
    And every node's /etc/kubernetes/ca.crt is noted
    When a MachineConfig for the worker pool changes the file /var/lib/kubelet/config.json
    Then every node applied it with no reboot
    And every node's /etc/kubernetes/ca.crt was written again with the same contents

  # On 4.12 a signer rotation reaches the node as a new rendered config (kubelet-ca.crt is in
  # it), so the same holds: ca.crt is written again and nothing reboots or restarts.
  @ocp-4.12
  Scenario: On 4.12 a rotation's update writes the unchanged ca.crt again and reboots for none
    Given a fresh cluster with 1 worker node
    And every node's /etc/kubernetes/ca.crt is noted
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's /etc/kubernetes/ca.crt was written again with the same contents
    And no node has rebooted
    And no node's journal shows "Stopping kubelet.service"

  # On 4.14 and 4.16 a rotation changes no rendered config: the certificate writer replaces
  # kubelet-ca.crt alone (certificate_writer.go syncControllerConfigHandler), and the config's
  # other files stay as they are.
  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 a rotation writes kubelet-ca.crt alone
    Given a fresh cluster with 1 worker node
    And every node's /etc/kubernetes/ca.crt is noted
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And every node's /etc/kubernetes/ca.crt was not written again
    And no node has rebooted

  # The CRI-O restart for the user CA bundle comes after update-ca-trust, whose failure fails the
  # update (release-4.14 update.go:116-121, release-4.16 update.go:307-313: exec
  # `update-ca-trust`, then restartService(crio)). The node's update-ca-trust is recorded, a
  # journal line under its own name per run.
  @ocp-4.14 @ocp-4.16
  Scenario: A user CA bundle change runs update-ca-trust before CRI-O restarts
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
    Then every node applied it with a crio restart
    And every node's journal shows, in this order:
      | update-ca-trust[         |
      | Stopping crio.service... |
      | Started crio.service.    |

  # From 4.16 the render controller refuses the same config before any node sees it: it checks
  # the generated config against the pool's current one with the daemon's rules
  # (render_controller.go:667-694, IsRenderedConfigReconcilable; reconcile.go:125-131 for FIPS)
  # and fails the render, RenderDegraded, so no rendered config is made and the nodes stay where
  # they are. Found by running release-4.16's own controller under this scenario; the daemon
  # keeps its own check (release-4.16 update.go:1493, :1530), unreached here.
  @ocp-4.16
  Scenario: On 4.16 a config that turns FIPS on is refused by the render controller
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool turns FIPS on
    Then the worker pool's RenderDegraded condition is True with a message that begins "Failed to render configuration for pool worker: could not generate rendered MachineConfig: render reconciliation error: new machineconfig "
    And the worker pool's Degraded condition is True
    And the worker pool has 1 rendered config
    And every node runs the rendered config it started with
    And every node is Done
    And no node has rebooted

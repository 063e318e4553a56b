# Encodes: MCO release-4.12 pkg/daemon/update.go (calculatePostConfigChangeAction,
# calculatePostConfigChangeActionFromFileDiffs, performPostConfigChangeAction) and release-4.16
# pkg/daemon/update.go (calculatePostConfigChangeActionFromMCDiffs: its file and directory
# lists, restart crio for the user CA bundle); pkg/daemon/drain.go isDrainRequired. See
# shared/notes/mco-source.md §1–§2.
@reboot-policy
Feature: What a node does to apply a new config
  The daemon picks the least disruptive action that covers everything a new rendered config
  changes: nothing for the kubelet CA bundle and the pull secret, a CRI-O reload for registry
  configuration, a CRI-O restart for the user CA bundle on 4.16, and a reboot for anything else
  (other files, units, kernel arguments, the OS image). SSH keys never reboot.

  # Each row is one change on its own, so the row's action is the whole decision: the file
  # lists of calculatePostConfigChangeActionFromFileDiffs (4.12) and ...FromMCDiffs (4.16);
  # a unit, kernel argument or OS image change reboots before any file is looked at; passwd
  # (SSH keys) is never a reason to reboot. Only 4.16 knows the user CA bundle (restart crio),
  # the registries.d directory (reload crio) and the /etc/nmstate/openshift directory (nothing:
  # release-4.16 update.go:569-605, directoriesPostConfigChangeActionNone); 4.12 reboots for all
  # three. A kernel type or an extension is an OS change and reboots on both (upstream applies
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

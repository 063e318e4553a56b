# Encodes: MCO deleteStaleData. release-4.12 pkg/daemon/update.go:1299: every file the old
# rendered config had and the new one lacks is removed from the node (or the original it
# replaced is restored). release-4.16 pkg/daemon/update.go:1862-1893: the same, except for
# `certsToSkip` (the user CA bundle, kubelet-ca.crt, the cloud CA) and any file whose directory
# contains /etc/docker/certs.d, which stay; release-4.14 update.go:1278-1283, 1295-1297 alike.
@stale-files
Feature: What happens to a file when the config that delivered it goes
  When a MachineConfig is deleted, the pool's next rendered config lacks its files, and the
  daemon deletes them from the node. From 4.14 on it keeps the certificate files. That rule is
  what keeps kubelet-ca.crt when a cluster upgrades from the 4.12 path, where kubelet-ca.crt came
  in the rendered config, to the 4.16 path, whose templates no longer carry it: upstream's
  comment reads "need to skip these on upgrade if they are in a MC, or else we will remove all
  certs!" (release-4.16 update.go:1869). These scenarios take that same code path with a
  MachineConfig of their own; the harness does not change a cluster's profile mid-scenario.

  # The plain file is the control: removed on every profile.
  Scenario Outline: <path> is removed when the MachineConfig that delivered it is deleted
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file <path>
    Then every node has the file <path>
    When the newest MachineConfig for the worker pool is deleted
    Then the newest rendered config of the worker pool lacks the file <path>
    And no node has the path <path>

    Examples:
      | path                              |
      | /etc/mco-conformance/example.conf |

  # The user CA bundle is never a stale file: upstream's template renders it on every release,
  # empty while the ControllerConfig's additionalTrustBundle is unset (templates/common/_base/
  # files/additional-trust-bundle.yaml writes `inline: |` around `{{if .AdditionalTrustBundle}}`,
  # and render.go:168-171 skips only a template that renders to nothing). Deleting the
  # MachineConfig that replaced it brings back the template's empty file, mode 0600, as a change
  # like any other: 4.12 reboots for it (it is in no list of
  # calculatePostConfigChangeActionFromFileDiffs), 4.14 and 4.16 run update-ca-trust and restart
  # CRI-O (release-4.14 update.go:116-121, release-4.16 update.go:307-313). The certsToSkip list
  # of 4.14/4.16 never comes into play: the file is in both rendered configs.
  Scenario Outline: The user CA bundle goes back to the template's empty file when the MachineConfig that replaced it is deleted
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
    Then every node has the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
    When the newest MachineConfig for the worker pool is deleted
    Then the newest rendered config of the worker pool has the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
    And every node's /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt matches its config
    And every node's /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt is empty
    And every node's /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt is owned by root with mode 0600
    And every node's journal shows, in this order:
      | <first change>  |
      | <second change> |

    @ocp-4.12
    Examples:
      | first change  | second change |
      | -- Boot       | -- Boot       |

    @ocp-4.14 @ocp-4.16
    Examples:
      | first change             | second change            |
      | Stopping crio.service... | Stopping crio.service... |

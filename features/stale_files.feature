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

  # The plain file is the control: removed on every profile. The user CA bundle (mode 0644 here,
  # as any file the step adds) is removed on 4.12, which has no skip list.
  Scenario Outline: <path> is removed when the MachineConfig that delivered it is deleted
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file <path>
    Then every node has the file <path>
    When the newest MachineConfig for the worker pool is deleted
    Then the newest rendered config of the worker pool lacks the file <path>
    And no node has the path <path>

    @ocp-4.12
    Examples:
      | path                                                                  |
      | /etc/mco-conformance/example.conf                                     |
      | /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt |

    @ocp-4.14 @ocp-4.16
    Examples:
      | path                              |
      | /etc/mco-conformance/example.conf |

  # On 4.14 and 4.16 the user CA bundle is in certsToSkip: the new rendered config lacks it, the node
  # keeps the file as the deleted MachineConfig wrote it. (A file under /etc/docker/certs.d is
  # kept by the same rule, but the certificate writer removes registry directories the
  # ControllerConfig does not name at its next sync, so its fate depends on when that comes.)
  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 the user CA bundle stays when the MachineConfig that delivered it is deleted
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
    Then every node has the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
    When the newest MachineConfig for the worker pool is deleted
    Then the newest rendered config of the worker pool lacks the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
    And every node has the file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt

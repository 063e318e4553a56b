# Encodes: the daemon's `updateSSHKeys` and `atomicallyWriteSSHKey` (release-4.12 update.go:581,
# :1800-1915; release-4.14 update.go:532, :1600-1760; release-4.16 update.go:1206, :2180-2360).
# The daemon writes every key of every user of the config for `core` only, each key on a line of
# its own, atomically, mode 0600 and owned by core, in a /home/core/.ssh that core made 0700
# (`runuser -u core -- mkdir -m 0700 -p`). The file is /home/core/.ssh/authorized_keys on a node
# whose /etc/os-release is neither RHEL 9 nor Fedora or CentOS Stream CoreOS (the suite's nodes;
# RHCOS 9 keeps them in authorized_keys.d/ignition, `useNewSSHKeyPath`). 4.12 writes them on
# every update of a config that has users; 4.14 and 4.16 only when `passwd` changed. SSH keys
# never reboot (reboot_policy.feature).
@ssh-keys
Feature: The core user's SSH keys
  A cluster admin adds an SSH key with a MachineConfig (`99-worker-ssh`); the daemon puts it in
  the core user's authorized keys without a reboot.

  Scenario: An SSH key change writes the core user's authorized_keys with no reboot
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the SSH keys
    Then every node applied it with no reboot
    And every node's /home/core/.ssh/authorized_keys holds the SSH keys of the worker pool's newest rendered config
    And every node's /home/core/.ssh/authorized_keys is owned by 1000:1000 with mode 0600
    And every node's /home/core/.ssh is owned by 1000:1000 with mode 0700

  Scenario Outline: A later update that leaves the SSH keys alone <what>
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the SSH keys
    Then every node's /home/core/.ssh/authorized_keys holds the SSH keys of the worker pool's newest rendered config
    Given every node's /home/core/.ssh/authorized_keys is noted
    When a MachineConfig for the worker pool changes the file /var/lib/kubelet/config.json
    Then every node applied it with no reboot
    And every node's /home/core/.ssh/authorized_keys <written>

    @ocp-4.12
    Examples:
      | what                                 | written                                   |
      | writes them again on 4.12            | was written again with the same contents |

    @ocp-4.14 @ocp-4.16
    Examples:
      | what                                 | written               |
      | does not write them on 4.14 and 4.16 | was not written again |

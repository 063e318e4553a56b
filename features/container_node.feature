# What only a real container shows (DESIGN.md, "The node, as steps see it"). On a
# container node the node's own kernel decides files, modes and owners, and the agent runs there
# as root, as the machine-config-daemon does with --root-mount=/. A reboot is the node's PID 1
# (mco-node-init) stopping every service, emptying /run, writing a boot marker and starting the
# enabled units again, while every other file stays, as on a real node.
#
# These scenarios run on container nodes: `mco-conformance run --nodes container`, and
# `cargo test`, which follows its embedded run with them when a Docker engine answers. An
# embedded run lists them skipped, saying why.
@container
Feature: Container nodes: reboots, owners and modes as a real node's kernel keeps them

  Scenario: A reboot keeps the node's files, empties /run and starts every service again
    Given a fresh cluster with 1 worker node
    When the file /etc/mco-conformance-kept is written on every node
    And the file /run/mco-conformance-gone is written on every node
    And every node reboots
    Then every node has rebooted
    And every node still has the file /etc/mco-conformance-kept as written
    And no node has the path /run/mco-conformance-gone
    And every node is Ready
    And every node is Done

  Scenario: The agent writes a config's files as root with the mode the config gives
    Given a fresh cluster with 1 worker node
    When a MachineConfig for the worker pool changes the file /etc/mco-conformance-secret with mode 0600
    Then every node's /etc/mco-conformance-secret is owned by 0:0 with mode 0600
    And every node's /etc/mco-conformance-secret matches its config
    And every node's /etc/kubernetes/kubelet-ca.crt is owned by 0:0 with mode 0644

  Scenario: PID 1 restarts a kubelet that crashed, and it serves and posts its status again
    Given a fresh cluster with 1 worker node
    When the kubelet is killed with SIGKILL on every node
    Then every node's journal shows "kubelet.service: Main process exited, code=killed, status=9/KILL"
    And every node's journal shows "kubelet.service: Scheduled restart job, restart counter is at 1."
    When 1 minute passes
    Then every node is Ready
    And every kubelet accepts the kube-apiserver's kubelet client certificate
    And no node has rebooted

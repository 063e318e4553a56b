# Encodes: how one kubelet CA rotation reaches a large pool on each path.
# - 4.12: the new bundle travels in a new rendered config (release-4.12 sync.go:250-261 puts
#   kubelet-ca.crt into the ControllerConfig the templates render), and the node controller moves
#   at most maxUnavailable of the pool's nodes at a time (node_controller.go `maxUnavailable`:
#   apimachinery's GetScaledValueFromIntOrPercent(spec.maxUnavailable, len(nodes), false), so
#   10% of 1,000 nodes is 100, rounded down, and 0 becomes 1; `updateCandidateMachines` gives
#   that many nodes the new desiredConfig, and more as they finish). At most 100 of the 1,000
#   nodes update at once, so the rollout takes at least ceil(1000 / 100) = 10 steps.
# - 4.16: the bundle is in no rendered config (the kubelet-ca.crt template went in 4.14, PR
#   #3787); every daemon's certificate writer writes the file from the one ControllerConfig update
#   it watches (release-4.16 certificate_writer.go), so all 1,000 nodes follow at once and the
#   pool keeps its one rendered config. 4.14 is the same path (release-4.14
#   certificate_writer.go; docs/ocp-4.14.md §1).
# Both: a kubelet CA change is no reboot on either path.
# Run with `--tags @scale`, best from a release build (`cargo run --release -p harness --bin
# mco-conformance -- run --tags @scale features/scale.feature`): the 1,000-node scenarios run
# embedded nodes, the 10,000-node ones light nodes (the reference daemon and each node's files
# in this process, sharing connections; docs/scale.md says what they cannot show). The
# scale benchmark's times and memory are in docs/benchmarks.md.
@scale
Feature: A rotation across thousands of nodes
  An MCO developer sees the two paths' difference at scale: on 4.12 a rotation rolls out as a
  rendered config, maxUnavailable nodes at a time; on 4.16 every node's daemon writes the new
  bundle at once, with no new rendered config.

  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 a forced rotation reaches 1,000 nodes with no new rendered config
    Given a fresh cluster with 1000 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And the worker pool has 1 rendered config
    And no node has rebooted

  @ocp-4.12
  Scenario: On 4.12 a forced rotation rolls out to 1,000 nodes at most maxUnavailable at a time
    Given a fresh cluster with 1000 worker nodes
    And the worker pool's maxUnavailable is 10%
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And the worker pool has 2 rendered configs
    And the worker pool updated at most 100 nodes at once
    And every node is Done
    And no node has rebooted

  # 10% of 10,000 nodes is 1,000 at a time: at least ceil(10000 / 1000) = 10 steps.
  @ocp-4.12
  @light
  Scenario: On 4.12 a forced rotation rolls out to 10,000 light nodes at most maxUnavailable at a time
    Given a fresh cluster with 10000 light worker nodes
    And the worker pool's maxUnavailable is 10%
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And the worker pool has 2 rendered configs
    And the worker pool updated at most 1000 nodes at once
    And every node is Done
    And no node has rebooted

  @ocp-4.14 @ocp-4.16
  @light
  Scenario: On 4.14 and 4.16 a forced rotation reaches 10,000 light nodes with no new rendered config
    Given a fresh cluster with 10000 light worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And the worker pool has 1 rendered config
    And no node has rebooted

# Encodes: MCO release-4.12 pkg/controller/node/node_controller.go (a paused pool's nodes keep
# their desiredConfig; setPendingFileMetrics), pkg/controller/render (renders whatever
# `paused` says), pkg/controller/common/metrics.go (machine_config_controller_paused_pool_kubelet_ca),
# install/0000_90_machine-config-operator_01_prometheus-rules.yaml (group
# mcc-paused-pool-kubelet-ca), e2e TestMCCPausedKubeletCAAlert; release-4.16
# pkg/daemon/certificate_writer.go (never reads `paused`) and pkg/controller/node/status.go
# (certExpirys), e2e TestMCDRotatesCertsOnPausedPool; library-go certrotation target.go (when the
# kube-apiserver's kubelet client certificate is re-issued). See shared/notes/mco-source.md §1–§3.
# Release-4.14 has the certificate writer (certificate_writer.go never reads `paused` either) and
# no gauge (removed by 28343237e in 4.13); its certExpirys carry no expiry (1b2393504 took the
# dates out; types.go:338-346). docs/ocp-4.14.md §1, §3.
@paused-pools
Feature: A paused pool during a signer rotation
  Pausing a pool stops its nodes from moving to new rendered configs. On 4.12 the kubelet CA
  bundle travels in a rendered config, so a paused pool holds it back: the controller's metric
  and alert say so, and once the kube-apiserver presents a client certificate from the new
  signer, the paused kubelets refuse it (oc logs, exec and attach break) until the pool is
  unpaused. From 4.13 the daemon writes the bundle itself, through the pause, and the metric and
  alert are gone.

  # The forced rotation comes a minute after install (the step lets a minute pass first). The
  # paused pool gets the new rendered config but its node stays on the old one, so the gauge is
  # the expiry of the newest kubelet signer in the old config: the one the cluster started with.
  # The warning rule (gauge > 0, for 60m) fires 60 minutes after that. The kube-apiserver's
  # kubelet client certificate (refresh 15 days, library-go target rule) was issued at install
  # by the old signer, which stays in the bundle; it is re-issued, by the new signer, 15 days
  # = 360 hours after install: at hour 359 (plus the minutes above) the kubelet still accepts
  # it, at hour 360 it refuses it. Unpausing brings the bundle and the gauge back to 0. The pool
  # says why it holds back (release-4.12 node/status.go:96-98), and once unpaused it goes
  # through Updating to Updated (:84-101) as any rollout.
  @ocp-4.12
  Scenario: On 4.12 a paused pool holds the new bundle back until oc logs breaks at hour 360
    Given a fresh cluster with 1 worker node
    And the worker pool is paused
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the worker pool has 2 rendered configs
    And every node runs the rendered config it started with
    And every node's kubelet-ca.crt lacks the current kube-apiserver-to-kubelet-signer
    And the worker pool says it is paused and will not update to its newest rendered config, named by name
    And the controller's paused-pool kubelet CA metric for the worker pool is the expiry of the kube-apiserver-to-kubelet-signer the cluster started with
    And the warning alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is pending
    When 59 minutes pass
    Then the warning alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is pending
    When 1 minute passes
    Then the warning alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is firing
    And the critical alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is inactive
    When 358 hours pass
    Then every kubelet accepts the kube-apiserver's kubelet client certificate
    When 1 hour passes
    Then the kube-apiserver's kubelet client certificate is issued by the current kube-apiserver-to-kubelet-signer
    And no kubelet accepts the kube-apiserver's kubelet client certificate
    And no node has rebooted
    When the worker pool is unpaused
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And every kubelet accepts the kube-apiserver's kubelet client certificate
    And the worker pool went from Updating to Updated on its newest rendered config, named by name
    And the controller's paused-pool kubelet CA metric for the worker pool is 0
    And the warning alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is inactive

  # The signer is 290 days old: the 80 % rule rotates it 2 days in, and the old one expires at
  # day 75 (365 - 290). The critical rule holds once under 14 days remain, after day 61, and
  # fires 60 minutes later: inactive at day 60, pending at day 61 plus 30 minutes, firing at
  # day 61 plus 90 minutes.
  @ocp-4.12
  Scenario: On 4.12 the critical alert fires an hour into the paused pool's last 14 days
    Given a cluster in the starting state "signer-290-days-old" with 1 worker node
    And the worker pool is paused
    When 3 days pass
    Then the kube-apiserver-to-kubelet-signer has rotated
    And the controller's paused-pool kubelet CA metric for the worker pool is the expiry of the kube-apiserver-to-kubelet-signer the cluster started with
    And the warning alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is firing
    When 57 days pass
    Then the critical alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is inactive
    When 1470 minutes pass
    Then the critical alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is pending
    When 1 hour passes
    Then the critical alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is firing

  # Past the old signer's expiry (day 75 for a signer 290 days old): the signer's CA bundle drops
  # the expired certificate (library-go cabundle.go keeps only unexpired ones), the operator puts
  # the smaller bundle into the ControllerConfig and the controller renders a third config for
  # the pool (release-4.12 sync.go:250-261, template and render controllers), which the paused
  # node does not get. Its kubelet-ca.crt still has the old signer, now expired, and not the
  # new one. The gauge is the old signer's expiry, in the past now, so the critical rule
  # (gauge - time() < 14 days AND gauge > 0) stays true and keeps firing.
  @ocp-4.12
  Scenario: On 4.12 a paused pool past the old signer's expiry keeps only the expired signer
    Given a cluster in the starting state "signer-290-days-old" with 1 worker node
    And the worker pool is paused
    When 76 days pass
    Then the worker pool has 3 rendered configs
    And every node runs the rendered config it started with
    And every node's kubelet-ca.crt lists an expired kube-apiserver-to-kubelet-signer
    And every node's kubelet-ca.crt lacks the current kube-apiserver-to-kubelet-signer
    And the controller's paused-pool kubelet CA metric for the worker pool is the expiry of the kube-apiserver-to-kubelet-signer the cluster started with
    And the critical alert MachineConfigControllerPausedPoolKubeletCA for the worker pool is firing
    And no node has rebooted

  # The certificate writer ignores `paused`: the bundle is on disk with no new rendered config
  # and no reboot, and when the kube-apiserver's client certificate is re-issued by the new
  # signer (day 15) the kubelet accepts it. The pool's certExpirys name the new signer, with its
  # notAfter on 4.16 (status.go:88-98) and without one on 4.14 (status.go:46-58). With no new
  # rendered config the paused pool never leaves Updated.
  Scenario Outline: On 4.14 and 4.16 the bundle reaches a paused pool's nodes with no new rendered config
    Given a fresh cluster with 1 worker node
    And the worker pool is paused
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And every node's kubelet-ca.crt equals "kube-apiserver-client-ca"
    And the worker pool has 1 rendered config
    And every node runs the rendered config it started with
    And the worker pool's certExpirys list the current kube-apiserver-to-kubelet-signer <expiry>
    And the worker pool stayed Updated throughout
    And the controller's metrics have no paused-pool kubelet CA gauge
    When 15 days pass
    Then the kube-apiserver's kubelet client certificate is issued by the current kube-apiserver-to-kubelet-signer
    And every kubelet accepts the kube-apiserver's kubelet client certificate
    And no node has rebooted

    @ocp-4.14
    Examples:
      | expiry            |
      | without an expiry |

    @ocp-4.16
    Examples:
      | expiry          |
      | with its expiry |

  # The KubeletDown symptom MCO-499 names, on 4.14 and 4.16: the certificate writer ignores `paused`, so
  # a paused pool's nodes get kube-apiserver-client-ca with every new kube-csr-signer (through
  # csr-controller-ca; KCM-O targetconfigcontroller.go:694-710, KAS-O ManageClientCABundle).
  # In 40 days csr-signer (30 d, refresh 15 d) is re-issued twice and csr-signer-signer (60 d,
  # refresh 30 d) once (KCM-O certrotationcontroller.go:84-128), and a client certificate the
  # CSR API signs with the current one still reaches every kubelet.
  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 a paused pool's kubelets accept the current kube-csr-signer across its rotations
    Given a fresh cluster with 1 worker node
    And the worker pool is paused
    When 40 days pass
    Then the csr-signer-signer has rotated
    And every kubelet accepts a client certificate from the current csr-signer
    And the worker pool has 1 rendered config
    And every node runs the rendered config it started with
    And no node has rebooted

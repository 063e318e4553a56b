# Encodes: MCO release-4.16 pkg/daemon/certificate_writer.go (the kubeconfig CA block:
# kubeconfig-data, the localhost and load-balancer signers that defer the restart, "restarting
# kubelet due to server-ca rotation", systemctl stop, the CA in /var/lib/kubelet/kubeconfig,
# daemon-reload, start) and pkg/operator/sync.go syncControllerConfig (service-ca-rotate),
# PRs #4106 (OCPBUGS-25821) and #4276 (OCPBUGS-31067); release-4.12
# templates/<role>/01-<role>-kubelet (kubelet-ca.crt is the kubelet's clientCAFile, which it
# reloads from disk). See shared/notes/mco-source.md §1, §2.
@kubelet-restart
Feature: When the kubelet restarts
  The kubelet reloads kubelet-ca.crt (its clientCAFile) from disk, so a rotation of
  kube-apiserver-to-kubelet-signer never restarts it. What it does not reload is the CA it
  trusts the API server with, in /var/lib/kubelet/kubeconfig. On 4.16, when the kube-apiserver's
  serving CA bundle gains a CA, the operator copies the bundle into kubeconfig-data and sets
  service-ca-rotate, and each daemon stops the kubelet, rewrites that CA, reloads systemd and
  starts the kubelet again. On 4.12 nothing rewrites it: once the API server serves from the new
  CA, the kubelet can no longer post its status and the node goes NotReady.

  Scenario: A new kubelet CA bundle never restarts the kubelet
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then no node's journal shows "Stopping kubelet.service"
    And every kubelet loaded a new kubelet-ca.crt 1 time

  # The one difference between the profiles: whether anything puts the new serving CA into the
  # kubelet's kubeconfig before the API server serves from it. The node lifecycle controller
  # marks a node whose kubelet stopped posting status for 40 s Unknown (NotReady).
  Scenario Outline: A new kube-apiserver serving CA and the kubelet's kubeconfig
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains a new CA
    Then every node's /var/lib/kubelet/kubeconfig <trust> the kube-apiserver's new CA
    When the kube-apiserver serves a certificate from its new CA
    And 1 minute passes
    Then every node is <readiness>
    And no node has rebooted

    @ocp-4.12
    Examples:
      | trust           | readiness |
      | does not trust  | NotReady  |

    @ocp-4.16
    Examples:
      | trust           | readiness |
      | trusts          | Ready     |

  # The kubeconfig is rewritten between the stop and the start; a kubelet reads it only as it
  # starts, so what shows the rewrite took is the kubelet being Ready once the API server serves
  # from the new CA (the Outline above).
  @ocp-4.16 @mco-logs
  Scenario: On 4.16 a new serving CA restarts the kubelet with the CA in its kubeconfig
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains a new CA
    Then every node's journal shows, in this order:
      | restarting kubelet due to server-ca rotation |
      | Stopping kubelet.service...                  |
      | Stopped kubelet.service.                     |
      | Reloading.                                   |
      | Starting kubelet.service...                  |
      | Started kubelet.service.                     |
    And every node's /var/lib/kubelet/kubeconfig trusts the kube-apiserver's new CA
    And every node's /etc/kubernetes/kubeconfig trusts the kube-apiserver's new CA

  # No node reaches the API through the localhost or load-balancer signers' certificates, so
  # upstream only writes /etc/kubernetes/kubeconfig and defers the kubelet restart.
  @ocp-4.16
  Scenario: On 4.16 a new localhost serving signer does not restart the kubelet
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains a new kube-apiserver-localhost-signer
    Then every node's /etc/kubernetes/kubeconfig trusts a kube-apiserver-localhost-signer
    And every node's /var/lib/kubelet/kubeconfig does not trust a kube-apiserver-localhost-signer
    And no node's journal shows "restarting kubelet due to server-ca rotation"
    And no node's journal shows "Stopping kubelet.service"

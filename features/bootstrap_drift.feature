# Encodes: MCO pkg/operator/bootstrap.go (the bootstrap render), pkg/operator/sync.go
# syncRenderConfig with PR #3458 (kube-apiserver-client-ca as the source, 4.13+) gated by
# PR #3513 (OCPBUGS-5888: only once kube-system/bootstrap exists and in-cluster bring-up is
# over, so the first in-cluster render equals the bootstrap one); installer
# pkg/asset/tls/kubelet.go (kubelet-signer, valid one day); MCO-499 (bundle churn in a new
# cluster's first day); e2e-bootstrap (bootstrap name == in-cluster name). See
# shared/notes/mco-source.md §4, §5.
@bootstrap-drift
Feature: From the bootstrap bundle to the in-cluster bundle
  Nodes boot with the configs the bootstrap MCO rendered. The in-cluster controller must render
  the same names, or the daemons look for a config that does not exist and the pools wedge.
  Then the cluster moves to its in-cluster kubelet CA bundle over its first day: on 4.16 to
  kube-apiserver-client-ca once the bootstrap node hands over, which also drops the installer's
  one-day kubelet-signer when it expires.

  # MCO-499 counted 5 rendered configs in a new cluster's first day on the path that put
  # kube-apiserver-client-ca inside rendered configs (4.13): bootstrap, in-cluster, and one per
  # later bundle change. Neither profile here does that:
  # - 4.12 renders the installer's initial bundle (its five client signers: admin-kubeconfig,
  #   kubelet-signer, kube-control-plane, kube-apiserver-to-kubelet, kubelet-bootstrap-kubeconfig;
  #   openshift/api tls/docs, release-4.12 bootstrap.go) merged with the kubelet signer's bundle.
  #   Nothing prunes it, so no first-day event touches it, not even the kubelet-signer's expiry:
  #   one rendered config, kubelet-ca.crt never changes.
  # - 4.16 keeps the bundle out of rendered configs: one rendered config, and kubelet-ca.crt
  #   changes twice, at the hand-over (initial bundle -> kube-apiserver-client-ca) and when the
  #   kubelet-signer expires at hour 24 and leaves csr-signer-ca (checked at hour 25).
  Scenario Outline: The first day after install moves to the in-cluster bundle without a reboot
    Given a cluster installed from its bootstrap node with 2 worker nodes
    Then every node runs the bootstrap rendered config
    When the bootstrap node hands over
    And 25 hours pass
    Then every node runs the bootstrap rendered config
    And the worker pool has 1 rendered config
    And every kubelet loaded a new kubelet-ca.crt <changes> time(s)
    And every node is Done
    And no node has rebooted

    @ocp-4.12
    Examples:
      | changes |
      | 0       |

    @ocp-4.16
    Examples:
      | changes |
      | 2       |

  # The installer's one-day kubelet-signer expires at hour 24. 4.12's bundle is frozen (release-4.12
  # sync.go merges only the kube-apiserver-to-kubelet signer's bundle into the installer's), so
  # every 4.12 node keeps the expired certificate in kubelet-ca.crt for the life of the cluster:
  # harmless to the kubelet (an expired CA vouches for nothing), and what `openssl` shows on day 2.
  # 4.16 writes kube-apiserver-client-ca, from which library-go's bundle management drops
  # expired certificates (cabundle.go), so it is gone there. The file holds 5 certificates on
  # 4.12 (the installer's five, the kube-apiserver-to-kubelet signer replaced by its one-signer
  # bundle).
  Scenario Outline: The installer's one-day kubelet-signer after it expires
    Given a fresh cluster with 1 worker node
    When 2 days pass
    Then every node's kubelet-ca.crt <verdict> an expired kubelet-signer
    And every kubelet accepts the kube-apiserver's kubelet client certificate
    And no node has rebooted

    @ocp-4.12
    Examples:
      | verdict |
      | lists   |

    @ocp-4.16
    Examples:
      | verdict |
      | lacks   |

  @ocp-4.12
  Scenario: On 4.12 kubelet-ca.crt holds the installer's five client signers
    Given a fresh cluster with 1 worker node
    Then every node's kubelet-ca.crt holds 5 certificates
    And every node's kubelet-ca.crt equals "the initial bundle with the kubelet signer's bundle merged in"

  Scenario Outline: After the hand-over the kubelet CA bundle comes from its in-cluster source
    Given a cluster installed from its bootstrap node with 1 worker node
    When the bootstrap node hands over
    Then every node's kubelet-ca.crt equals "<bundle>"

    @ocp-4.12
    Examples:
      | bundle                                                        |
      | the initial bundle with the kubelet signer's bundle merged in |

    @ocp-4.16
    Examples:
      | bundle                   |
      | kube-apiserver-client-ca |

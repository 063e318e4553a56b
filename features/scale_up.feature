# Encodes: a machine scaled into a pool boots the Ignition the machine-config server serves it
# (MCO pkg/server/cluster_server.go GetConfig): the pool's current rendered config
# (spec.configuration). On 4.14 and 4.16 the server appends kubelet-ca.crt and the cloud provider
# CA from the ControllerConfig (release-4.14 cluster_server.go:137-138, release-4.16 :164-165 →
# server.go:235 addDataAndMaybeAppendToIgnition), since the rendered config holds no
# kubelet-ca.crt there (the template went in 4.14, PR #3787); release-4.12's server appends
# nothing, as its rendered config carries the file. Either way the new node's daemon finds it
# up to date at its first sync: no update, no reboot.
@scale-up
Feature: A node that joins the cluster
  A machine scaled into the worker pool boots what the machine-config server serves it now.
  Its kubelet trusts the current signer from its first boot, and its daemon's first sync finds
  nothing to do.

  Scenario: A node that joins after a rotation boots with the current kubelet CA bundle
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    And a worker node joins the cluster
    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And every kubelet accepts a client certificate from the current kube-apiserver-to-kubelet-signer
    And every node is Done
    And no node has rebooted

  # 4.12: the rotation made a second rendered config holding the new bundle, and the new node
  # boots that one.
  @ocp-4.12
  Scenario: On 4.12 a joining node's kubelet-ca.crt comes with the pool's newest rendered config
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    And a worker node joins the cluster
    Then every node's kubelet-ca.crt equals "the initial bundle with the kubelet signer's bundle merged in"
    And the worker pool has 2 rendered configs
    And the newest rendered config of the worker pool has the file /etc/kubernetes/kubelet-ca.crt

  # 4.14 and 4.16: no new rendered config; the bundle the new node boots with is the
  # ControllerConfig's, which is kube-apiserver-client-ca.
  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 a joining node's kubelet-ca.crt comes from the ControllerConfig, outside the rendered config
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    And a worker node joins the cluster
    Then every node's kubelet-ca.crt equals "kube-apiserver-client-ca"
    And the worker pool has 1 rendered config
    And the newest rendered config of the worker pool lacks the file /etc/kubernetes/kubelet-ca.crt

  # A machine scaled into a paused pool after a rotation. Every release's server serves the
  # pool's newest rendered config only once one of its nodes has it (status.updatedMachineCount
  # > 0), the pool's status config before that (release-4.12/4.14/4.16 cluster_server.go
  # GetConfig): the paused pool's nodes are held back, so none has the new config and the machine
  # boots the one they run. On 4.12 that config's kubelet-ca.crt is the bundle from before the
  # rotation, and the paused pool keeps the node on it. On 4.14 and 4.16 the server overwrites
  # kubelet-ca.crt from the ControllerConfig "in case the pool was paused" (release-4.14
  # cluster_server.go:137, release-4.16 :164), so the machine boots with the current signer.
  Scenario Outline: A node that joins a paused pool after a rotation boots the config the pool's nodes run
    Given a fresh cluster with 1 worker node
    And the worker pool is paused
    When the kube-apiserver-to-kubelet-signer is rotated by force
    And a worker node joins the cluster
    Then every node runs the rendered config it started with
    And every node's kubelet-ca.crt <has> the current kube-apiserver-to-kubelet-signer
    And the worker pool has <configs> rendered configs

    @ocp-4.12
    Examples: the bundle travels in the rendered config
      | has   | configs |
      | lacks | 2       |

    @ocp-4.14 @ocp-4.16
    Examples: the server writes the bundle from the ControllerConfig
      | has   | configs |
      | lists | 1       |

  # What a joining node's kubeconfig trusts: release-4.16's server builds its CA from
  # kubeconfig-data's binaryData when that ConfigMap exists (cluster_server.go:144-155), else from
  # the bootstrap token's ca.crt; release-4.12's and 4.14's always from the token (the harness's
  # token holds the installed serving CA). A serving CA added to the bundle reaches
  # kubeconfig-data once the 4.16 operator has seen it unchanged for a minute (sync.go:1020-1087),
  # so a node that joins after that trusts it from its first boot, as the nodes whose kubeconfig
  # the daemon rewrote do. On 4.12 and 4.14 nothing copies the serving CA to the nodes.
  Scenario Outline: A node that joins after a serving CA is added <verdict> it in its kubeconfig
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains a new CA
    And 60 seconds pass
    And a worker node joins the cluster
    Then every node's /etc/kubernetes/kubeconfig <verdict> the added CA
    And every node is Done

    @ocp-4.16
    Examples:
      | verdict |
      | trusts  |

    @ocp-4.12 @ocp-4.14
    Examples:
      | verdict        |
      | does not trust |

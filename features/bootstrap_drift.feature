# Encodes: MCO pkg/operator/bootstrap.go (the bootstrap render), pkg/operator/sync.go
# syncRenderConfig with PR #3458 (kube-apiserver-client-ca as the source, 4.13+) gated by
# PR #3513 (OCPBUGS-5888: only once kube-system/bootstrap exists and in-cluster bring-up is
# over, so the first in-cluster render equals the bootstrap one); installer
# pkg/asset/tls/kubelet.go (kubelet-signer, valid one day), which KCM-O's bootkube manifest
# loads as its first csr-signer-signer; library-go pkg/operator/certrotation (signer.go,
# target.go, cabundle.go) as KCM-O runs it; MCO-499 (bundle churn in a new cluster's first
# day); e2e-bootstrap (bootstrap name == in-cluster name). See shared/notes/mco-source.md §4, §5.
# 4.14 takes its kubelet CA bundle as 4.16 does (release-4.14 sync.go:432-491: the same bootstrap
# gate and source; docs/ocp-4.14.md §2), so every 4.16 row below holds for it too.
@bootstrap-drift
Feature: From the bootstrap bundle to the in-cluster bundle
  Nodes boot with the configs the bootstrap MCO rendered. The in-cluster controller must render
  the same names, or the daemons look for a config that does not exist and the pools wedge.
  Then the cluster moves to its in-cluster kubelet CA bundle over its first day: on 4.16 to
  kube-apiserver-client-ca once the bootstrap node hands over, which then follows the installer's
  one-day kubelet-signer (KCM-O's first csr-signer-signer) through its replacement and expiry.

  # MCO-499 counted 5 rendered configs in a new cluster's first day on the path that put
  # kube-apiserver-client-ca inside rendered configs (4.13): bootstrap, in-cluster, "+1 new",
  # "+2 new", "+2 new -2 old". The bootstrap-hand-over starting state dates the installer's
  # certificates L = 850 s before the operators' first ones (the openshift-docs example that
  # fixtures/starting-states.yaml cites); hours below count from the scenario's start, when the
  # installer's certificates are L old.
  # - 4.12 renders the installer's initial bundle (its five client signers: admin-kubeconfig,
  #   kubelet-signer, kube-control-plane, kube-apiserver-to-kubelet, kubelet-bootstrap-kubeconfig;
  #   openshift/api tls/docs, release-4.12 bootstrap.go) merged with the
  #   kube-apiserver-to-kubelet signer's bundle only (release-4.12 sync.go:250-261), which does
  #   not change on day one. Nothing prunes it, so even the kubelet-signer stays once expired:
  #   one rendered config, kubelet-ca.crt never changes: 0.
  # - 4.14 and 4.16 keep the bundle out of rendered configs (one rendered config) and writes
  #   kube-apiserver-client-ca, KAS-O's union of client CA bundles (targetconfigcontroller.go
  #   ManageClientCABundle:284-316), csr-controller-ca among them, itself KCM-O's union of
  #   csr-signer-ca and csr-controller-signer-ca (KCM-O targetconfigcontroller.go:694-710). Each
  #   union drops expired certificates (library-go resourcesynccontroller/core.go:40 at
  #   f5bf38712dca). kubelet-ca.crt changes 4 times:
  #   1. hour 0, the hand-over: the initial bundle gives way to kube-apiserver-client-ca.
  #   2. hour 19.2 - L (18 h 57 min 50 s): csr-signer-signer is the installer's kubelet-signer
  #      (24 h, not backdated; KCM-O bindata/bootkube/manifests/secret-csr-signer-signer.yaml).
  #      KCM-O's controller (validity 60 d, refresh 30 d, RefreshOnlyWhenExpired false;
  #      certrotationcontroller.go:84-99, starter.go:259) replaces it once now > notAfter - 24 h/5
  #      (library-go signer.go:149-153) with csr-signer-signer@<unix>; csr-controller-signer-ca
  #      keeps both (cabundle.go:106-150): +1. The kube-csr-signer is not re-issued then: its
  #      issuer is still in that bundle and its refresh is 15 d away (target.go:154-165, 209-217).
  #   3. 170 s later: the first kube-csr-signer, issued by the kubelet-signer at hour 0 and capped
  #      at its notAfter (target.go:233-237: notBefore 0 - 1 s, notAfter 24 h - L), passes its own
  #      80 % point, notAfter - (24 h - L + 1 s)/5 = 19.2 h - 0.8 L - 0.2 s (target.go:202-207,
  #      no wait for the signer), and is re-issued from the new csr-signer-signer (30 d);
  #      csr-signer-ca appends it (ManageCSRIntermediateCABundle, :796-868): +1. The controller
  #      resyncs every minute (client_cert_rotation_controller.go:91), so 0.2 L - 0.2 s = 170 s
  #      is a resync of its own; with L under about 5 min the two would land in one resync and
  #      this count would be 3.
  #   4. hour 24 - L (23 h 45 min 50 s): the kubelet-signer and the first kube-csr-signer expire
  #      together and leave their bundles and the unions (crypto/rotation.go FilterExpiredCerts):
  #      -2.
  #   Nothing else in the union changes within 25 h (admin-kubeconfig and
  #   kubelet-bootstrap-kubeconfig 10 y, kube-apiserver-to-kubelet 365 d, kube-control-plane 365 d
  #   refreshed at 30 d, node-system-admin 365 d).
  # The kubelet reloads kubelet-ca.crt, its clientCAFile, on its own (dynamic_cafile_content.go),
  # and the daemon stops it only for a new serving CA (release-4.16 certificate_writer.go:305-341;
  # release-4.12 and 4.14 never), so no kubelet stops on day one. That is checked, after the
  # reboot, before the count: a kubelet started again loads the file at its start, so a restart
  # that comes before the kubelet's own reload would hide in the count.
  Scenario Outline: The first day after install moves to the in-cluster bundle without a reboot
    Given a cluster installed from its bootstrap node with 2 worker nodes
    Then every node runs the bootstrap rendered config
    When the bootstrap node hands over
    And 25 hours pass
    Then every node runs the bootstrap rendered config
    And the worker pool has 1 rendered config
    And no node has rebooted
    And no node's journal shows "Stopping kubelet.service"
    And every kubelet loaded a new kubelet-ca.crt <changes> time(s)
    And every node is Done

    @ocp-4.12
    Examples:
      | changes |
      | 0       |

    @ocp-4.14 @ocp-4.16
    Examples:
      | changes |
      | 4       |

  # The installer's one-day kubelet-signer expires at hour 24. 4.12's bundle is frozen (release-4.12
  # sync.go merges only the kube-apiserver-to-kubelet signer's bundle into the installer's), so
  # every 4.12 node keeps the expired certificate in kubelet-ca.crt for the life of the cluster:
  # harmless to the kubelet (an expired CA vouches for nothing), and what `openssl` shows on day 2.
  # 4.14 and 4.16 write kube-apiserver-client-ca, from which library-go's bundle management drops
  # expired certificates (cabundle.go, resourcesynccontroller/core.go:40), so it is gone there.
  # The file holds 5 certificates on 4.12 (the installer's five, the kube-apiserver-to-kubelet
  # signer replaced by its one-signer bundle).
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

    @ocp-4.14 @ocp-4.16
    Examples:
      | verdict |
      | lacks   |

  @ocp-4.12
  Scenario: On 4.12 kubelet-ca.crt holds the installer's five client signers
    Given a fresh cluster with 1 worker node
    Then every node's kubelet-ca.crt holds 5 certificates
    And every node's kubelet-ca.crt equals "the initial bundle with the kubelet signer's bundle merged in"

  # Seed 002 (MCO-499): kubelet-ca.crt "is a bundle of 5 (now 7) certs"; right after install,
  # with the correct bundle, "admin-kubeconfig-signer, kube-csr-signer_@…, kubelet-signer,
  # kube-apiserver-to-kubelet-signer, kube-control-plane-signer, kubelet-bootstrap-kubeconfig-signer,
  # openshift-kube-apiserver-operator_node-system-admin-signer@…". On 4.14 and 4.16 that is
  # kube-apiserver-client-ca after the hand-over: the installer's five plus KCM-O's first
  # kube-csr-signer (csr-signer-ca, issued by the kubelet-signer) and KAS-O's node-system-admin
  # signer (node-system-admin-ca, certrotationcontroller.go:781-796), one union
  # (targetconfigcontroller.go ManageClientCABundle:284-316). Nothing has rotated or expired at
  # the hand-over, so each is there once: 7.
  @ocp-4.14 @ocp-4.16
  Scenario: After the hand-over kubelet-ca.crt holds the seven client signers MCO-499 names
    Given a cluster installed from its bootstrap node with 1 worker node
    When the bootstrap node hands over
    Then every node's kubelet-ca.crt holds 7 certificates
    And every node's kubelet-ca.crt lists the current admin-kubeconfig-signer
    And every node's kubelet-ca.crt lists the current kube-csr-signer
    And every node's kubelet-ca.crt lists the current kubelet-signer
    And every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And every node's kubelet-ca.crt lists the current kube-control-plane-signer
    And every node's kubelet-ca.crt lists the current kubelet-bootstrap-kubeconfig-signer
    And every node's kubelet-ca.crt lists the current node-system-admin-signer

  Scenario Outline: After the hand-over the kubelet CA bundle comes from its in-cluster source
    Given a cluster installed from its bootstrap node with 1 worker node
    When the bootstrap node hands over
    Then every node's kubelet-ca.crt equals "<bundle>"

    @ocp-4.12
    Examples:
      | bundle                                                        |
      | the initial bundle with the kubelet signer's bundle merged in |

    @ocp-4.14 @ocp-4.16
    Examples:
      | bundle                   |
      | kube-apiserver-client-ca |

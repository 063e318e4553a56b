# Encodes: library-go pkg/operator/certrotation (signer.go needNewSigningCertKeyPair,
# cabundle.go), cluster-kube-apiserver-operator certrotationcontroller.go (release-4.12/4.14/4.16),
# MCO release-4.12 pkg/operator/sync.go (mergeCertWithCABundle), release-4.14 and release-4.16
# pkg/daemon/certificate_writer.go; MCO e2e TestMCDRotatesCerts. See shared/notes/mco-source.md
# and, for 4.14, docs/ocp-4.14.md.
@signer-rotation
Feature: kube-apiserver-to-kubelet-signer rotation
  The kube-apiserver reaches kubelets (oc logs, exec, attach) with a client certificate from
  kube-apiserver-to-kubelet-signer; each kubelet trusts the CA bundle in
  /etc/kubernetes/kubelet-ca.crt. When the signer rotates, every node must get a bundle with
  the new signer before the kube-apiserver starts presenting a certificate from it.

  # A forced rotation (MCO e2e: null certificate-not-after) reaches every node. On 4.14 and 4.16
  # the daemon writes kube-apiserver-client-ca as it is (release-4.14 sync.go:452-467, the same
  # source as release-4.16's); on 4.12 the file is the installer's
  # initial bundle with its kube-apiserver-to-kubelet signer replaced by that signer's whole
  # bundle (mco-source.md §1), delivered through a rendered MachineConfig.
  Scenario Outline: A forced rotation reaches every node and every kubelet trusts the new signer
    Given a fresh cluster with 2 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the kube-apiserver-to-kubelet-signer has rotated
    And the kube-apiserver-to-kubelet-signer bundle holds 2 signers
    And every node's kubelet-ca.crt equals "<bundle>"
    And every node's /etc/kubernetes/kubelet-ca.crt is owned by root with mode 0644
    And every kubelet accepts a client certificate from the current kube-apiserver-to-kubelet-signer
    And every kubelet accepts the kube-apiserver's kubelet client certificate
    And every node is Ready
    And no node has rebooted

    @ocp-4.12
    Examples:
      | bundle                                                      |
      | the initial bundle with the kubelet signer's bundle merged in |

    @ocp-4.14 @ocp-4.16
    Examples:
      | bundle                   |
      | kube-apiserver-client-ca |

  # The certificate writer writes every certificate field of the ControllerConfig on each
  # sync (release-4.16 certificate_writer.go:131, writeToDisk at :402; release-4.14 :106-135):
  # the cloud provider CA to
  # /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem, a newline added
  # when the field lacks one, the file's mode kept (0644 as installed, or for a new file), owned
  # by root, with no reboot.
  @ocp-4.14 @ocp-4.16
  Scenario: On 4.14 and 4.16 the cloud provider CA is written from ControllerConfig
    Given a fresh cluster with 2 worker nodes
    When the cloud provider CA is published
    Then every node's /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem holds the ControllerConfig's cloudProviderCAData
    And every node's /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem is owned by root with mode 0644
    And every node's /etc/kubernetes/kubelet-ca.crt holds the ControllerConfig's kubeAPIServerServingCAData
    And no node has rebooted

  # 4.12 renders a new MachineConfig for the new bundle (one more than the install's);
  # 4.14 and 4.16 render none: the bundle is not in any MachineConfig (release-4.14 has no
  # kubelet-ca.yaml template; PR #3787 deleted it).
  Scenario Outline: Rendered configs after a rotation
    Given a fresh cluster with 2 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the worker pool has <rendered> rendered configs

    @ocp-4.12
    Examples:
      | rendered |
      | 2        |

    @ocp-4.14 @ocp-4.16
    Examples:
      | rendered |
      | 1        |

  # The pool as `oc get mcp` shows it through the rotation (the node controller's
  # calculateStatus, release-4.12 node/status.go:77-101, release-4.16 :253-278): on 4.12 the
  # new rendered config takes the pool to Updating ("All nodes are updating to rendered-…") and,
  # once both nodes run it, back to Updated ("All nodes are updated with rendered-…", the config
  # by its name; from 4.14 "MachineConfig rendered-…", getPoolUpdateLine); 4.14 and
  # 4.16 render no config for a rotation, so the pool never leaves Updated.
  Scenario Outline: The worker pool's conditions through a rotation
    Given a fresh cluster with 2 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the worker pool <conditions>

    @ocp-4.12
    Examples:
      | conditions                                                                    |
      | went from Updating to Updated on its newest rendered config, named by name |

    @ocp-4.14 @ocp-4.16
    Examples:
      | conditions                |
      | stayed Updated throughout |

  # Each profile's daemon logs its own path. The kubelet's lines are the seeds' 4.12 node log: a
  # kubelet-ca.crt renamed over the old one (upstream writes files atomically) takes the kubelet's
  # watch with it before the kubelet loads the new bundle (Kubernetes dynamic_cafile_content.go).
  @mco-logs
  Scenario Outline: The journal shows each profile's log lines
    Given a fresh cluster with 2 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's journal shows "<line>"

    @ocp-4.12
    Examples:
      | line                                                                                                         |
      | files:true units:false kernelType:false extensions:false}                                                    |
      | skipping reboot                                                                                              |
      | "Failed to remove file watch, it may have been deleted" file="/etc/kubernetes/kubelet-ca.crt"                |
      | "Loaded a new CA Bundle and Verifier" name="client-ca-bundle::/etc/kubernetes/kubelet-ca.crt"                |

    # release-4.14 certificate_writer.go:186 and release-4.16 :303 log the same words.
    @ocp-4.14 @ocp-4.16
    Examples:
      | line                                                                                          |
      | Certificate was synced from controllerconfig resourceVersion                                  |
      | "Failed to remove file watch, it may have been deleted" file="/etc/kubernetes/kubelet-ca.crt" |
      | "Loaded a new CA Bundle and Verifier" name="client-ca-bundle::/etc/kubernetes/kubelet-ca.crt" |

  # The 80 % rule: the signer is valid 365 days; library-go replaces it once now is past
  # notAfter − 365/5 = day 292 (signer.go:149-153; on 4.12 the 8-year refresh never fires first;
  # on 4.16 the 292-day refresh coincides). A fresh cluster's signer is the installer's, made at
  # the start and not backdated (KAS-O's bootkube manifest loads it), and rules compare strictly,
  # so at day 292 exactly it stays. (A signer KAS-O made would be backdated 1 s and due at day
  # 292 − 1 s; crypto.go:1009.)
  Scenario: The 80 % rule rotates the signer just after day 292 and not before
    Given a fresh cluster with 2 worker nodes
    When 292 days pass
    Then the kube-apiserver-to-kubelet-signer has not rotated
    When 1 minute passes
    Then the kube-apiserver-to-kubelet-signer has rotated
    And the kube-apiserver-to-kubelet-signer bundle holds 2 signers
    And no node has rebooted

  # The installer's signer is not backdated (openshift-install pkg/asset/tls/tls.go
  # SelfSignedCertificate: NotBefore is the instant it is made; apiserver.go ValidityOneYear), so
  # it lives exactly 365 days; what KAS-O issues next is library-go's, backdated one second
  # before the instant its name records (`<namespace>_<name>@<unix seconds>`; crypto.go:1009 at
  # f5bf38712dca, :1002 at d932feccfc56). The simulated KAS-O reads its clock once for both; a
  # real one reads it again after making the key (certrotation signer.go:190, crypto.go:662), so
  # its NotBefore can fall later by the time that takes.
  Scenario: The installer's signer is not backdated; the one KAS-O issues is backdated one second
    Given a fresh cluster with 1 worker node
    Then the kube-apiserver-to-kubelet-signer the cluster started with is valid for exactly 365 days
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the kube-apiserver-to-kubelet-signer has rotated
    And the current kube-apiserver-to-kubelet-signer is valid from one second before the instant in its name

  # The old signer stays in the bundle until it expires (library-go cabundle.go:106-150): the
  # installer's, made at day 0 with 365 days of validity, it leaves at its notAfter, day 365
  # (crypto/rotation.go FilterExpiredCerts keeps a certificate while notAfter is after now).
  Scenario: The old signer leaves the bundle once it expires
    Given a fresh cluster with 2 worker nodes
    When 293 days pass
    Then the kube-apiserver-to-kubelet-signer bundle holds 2 signers
    When 73 days pass
    Then the kube-apiserver-to-kubelet-signer bundle holds 1 signer

  # The kube-apiserver's kubelet client certificate (30 d, refresh 15 d) is not re-issued when
  # the signer rotates: its issuer stays in the bundle. Issued at day 0 and backdated a second,
  # its refresh falls due at day 15 − 1 s (target.go:209-217; the new signer, made a minute in,
  # is by then older than 15 d / 10 = 36 h), so the first certificate from the new signer comes
  # at day 15 — and every kubelet already trusts it, because the bundle reached them first.
  Scenario: The kube-apiserver's client certificate follows the new signer on its own refresh
    Given a fresh cluster with 2 worker nodes
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the kube-apiserver's kubelet client certificate is still issued by the previous kube-apiserver-to-kubelet-signer
    When 14 days pass
    Then the kube-apiserver's kubelet client certificate is still issued by the previous kube-apiserver-to-kubelet-signer
    When 1 day passes
    Then the kube-apiserver's kubelet client certificate is issued by the current kube-apiserver-to-kubelet-signer
    And every kubelet accepts the kube-apiserver's kubelet client certificate
    And no node has rebooted

  # The churn MCO-499 is about: 90 simulated days of a cluster 250 days old, every signer of the
  # catalogue on its own cadence (fixtures/starting-states.yaml signer-250-days-old). A signer
  # is replaced once now > notBefore + refresh or past 80 % of its life (library-go signer.go
  # needNewSigningCertKeyPair:135-161 at f5bf38712dca); its predecessor stays in the bundle
  # until it expires, and leaves at its notAfter (cabundle.go:106-150, crypto/rotation.go
  # FilterExpiredCerts). The operators' certificates are backdated 1 s (crypto.go:1009), so a
  # successor is due at exactly its predecessor's issue time + refresh, the instant the
  # generation before that expires: each rotation below is one bundle change.
  #   kube-apiserver-to-kubelet-signer: the installer's (365 d, not backdated), 250 d old. 80 %
  #     is day 292 of its life: window day 42 (on 4.16 the 292-day refresh coincides). It leaves
  #     at day 115, after the window.
  #   kube-control-plane-signer (KAS-O, 60 d, refresh 30 d), 20 d old: days 10, 40, 70, each with
  #     the generation issued 60 d earlier expiring then. The installer's 365-day one leaves at
  #     day 115.
  #   csr-signer-signer (KCM-O, 60 d, refresh 30 d), 10 d old: days 20, 50, 80, likewise.
  #   csr-signer, KCM-O's kube-csr-signer_@<unix> (a target of csr-signer-signer, 30 d, refresh
  #     15 d; KCM-O certrotationcontroller.go:111-128), 5 d old: re-issued at notBefore + 15 d
  #     once the current csr-signer-signer is 15 d / 10 = 36 h old (target.go:209-217), which it
  #     always is here (each signer rotation comes 5 d before a refresh): days 10, 25, 40, 55, 70,
  #     85, each with the kube-csr-signer from 30 d earlier leaving csr-signer-ca (KCM-O
  #     ManageCSRIntermediateCABundle). None is capped or re-issued for a departed issuer: a
  #     kube-csr-signer is issued within 30 d of its signer's 60-day life, so it expires first.
  #   node-system-admin-signer (KAS-O, 365 d) is new at the start; the installer's kubelet-signer
  #     (24 h) expired 249 days before the window opens.
  # The counts below belong to this fixture, not to every cluster 250 days old: KAS-O makes
  # node-system-admin-signer at install (release-4.16 certrotationcontroller.go:785-796, 365 d,
  # refresh 292 d), so on a real cluster of that age it would rotate near window day 42 in a sync
  # of its own (an eleventh change); and days 10, 40 and 70 are one change each only because the
  # fixture makes KAS-O's and KCM-O's rotations due in the same second.
  # 4.14 and 4.16 write kube-apiserver-client-ca, the union of all of these bundles (KAS-O
  # targetconfigcontroller.go ManageClientCABundle:284-316; csr-controller-ca is KCM-O's union of
  # csr-signer-ca and csr-controller-signer-ca, :694-710), so kubelet-ca.crt changes on days 10,
  # 20, 25, 40, 42, 50, 55, 70, 80 and 85: 10 times (days 10, 40 and 70 change two bundles in one
  # resync), with no new rendered config. 4.12's kubelet-ca.crt is the initial bundle merged with
  # kube-apiserver-to-kubelet-client-ca only (release-4.12 sync.go:250-261): one change, on day
  # 42, through one new rendered config. 4.14's operators keep each signer bundle newest first
  # (library-go 840298df1eee, not sorted as on 4.16): other bytes, the same ten changes.
  Scenario Outline: 90 days of signer churn reach the kubelets per profile
    Given a cluster in the starting state "signer-250-days-old" with 2 worker nodes
    When 90 days pass
    Then every kubelet loaded a new kubelet-ca.crt <changes> time(s)
    And the worker pool has <rendered> rendered configs
    And every kubelet accepts the kube-apiserver's kubelet client certificate
    And no node has rebooted

    @ocp-4.12
    Examples:
      | changes | rendered |
      | 1       | 2        |

    @ocp-4.14 @ocp-4.16
    Examples:
      | changes | rendered |
      | 10      | 1        |

  # From 4.14 the template controller lists every certificate of the ControllerConfig's bundles
  # in status.controllerCertificates, subject and signer as whole names (release-4.16
  # template_controller.go:440-507, with notBefore/notAfter; release-4.14 without dates): the
  # list openshift-docs' checking-mco-status-certs tells QE to read. The kubelet CA bundle keeps
  # the old signer beside the new one until it expires (library-go's union drops a certificate
  # once it is past its notAfter), so the list follows: both after the rotation, the old one gone
  # a year later. Upstream's own list matches the reference's (the opt-in upstream controller test).
  @ocp-4.14 @ocp-4.16
  Scenario: The ControllerConfig's certificate status follows a kubelet signer rotation
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then the ControllerConfig's status lists the current kube-apiserver-to-kubelet-signer
    And the ControllerConfig's status lists the kube-apiserver-to-kubelet-signer it started with
    When 366 days pass
    Then the ControllerConfig's status lists the current kube-apiserver-to-kubelet-signer
    And the ControllerConfig's status lacks the kube-apiserver-to-kubelet-signer it started with

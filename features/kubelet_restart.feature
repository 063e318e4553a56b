# Encodes: MCO release-4.16 pkg/daemon/certificate_writer.go (the kubeconfig CA block:
# kubeconfig-data, the installer's localhost and load-balancer signers and the recovery signer
# that defer the restart, KAS-O's rotated ones that do not, "restarting
# kubelet due to server-ca rotation", systemctl stop, the CA in /var/lib/kubelet/kubeconfig,
# daemon-reload, start) and pkg/operator/sync.go syncControllerConfig (service-ca-rotate),
# PRs #4106 (OCPBUGS-25821) and #4276 (OCPBUGS-31067); release-4.12
# templates/<role>/01-<role>-kubelet (kubelet-ca.crt is the kubelet's clientCAFile, which it
# reloads from disk). See shared/notes/mco-source.md §1, §2. Release-4.14 has a certificate
# writer without any of the kubeconfig block (no service-ca-rotate, kubeconfig-data or
# lastObservedServerCAAnnotation anywhere in its pkg/ and cmd/; docs/ocp-4.14.md §1, §2):
# for a new kubelet CA it is 4.16, for a new serving CA it is 4.12.
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

  # What the service manager shows for a new kubelet CA bundle. On 4.12 it comes in a rendered
  # config, and applying it enables the config's units (release-4.12 update.go writeUnits,
  # enableUnits: `systemctl enable kubelet.service crio.service`), which reloads systemd
  # ("systemd[1]: Reloading."). On 4.14 and 4.16 the certificate writer only writes the file: it
  # calls systemctl for a serving-CA rotation alone (release-4.16 certificate_writer.go:305-341;
  # release-4.14's calls it never), so the service manager does nothing at all. Neither stops or
  # starts a unit.
  Scenario Outline: A new kubelet CA bundle and the service manager
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then <systemd reload>
    And no node's journal shows "systemd[1]: Stopping"
    And no node's journal shows "systemd[1]: Starting"

    @ocp-4.12
    Examples:
      | systemd reload                                       |
      | every node's journal shows "systemd[1]: Reloading."  |

    @ocp-4.14 @ocp-4.16
    Examples:
      | systemd reload                                       |
      | no node's journal shows "systemd[1]: Reloading."     |

  # The one difference between the profiles: whether anything puts the new serving CA into the
  # kubelet's kubeconfig before the API server serves from it (4.16 only: 4.14's operator sets no
  # kubeconfig-data and its writer reads none). The node lifecycle controller
  # marks a node whose kubelet stopped posting status for 40 s Unknown (NotReady).
  # The first minute is the operator's next sync, which sets service-ca-rotate back to "false"
  # (release-4.16 pkg/operator/sync.go:1083-1087), a ControllerConfig change every daemon syncs.
  # It comes before the API server serves from the new CA, as on a cluster, where the new
  # signer is published long before it signs a serving certificate: upstream's daemon keeps the
  # credentials it started with (writer.go:87, "NodeWriter initialized with credentials from
  # /var/lib/kubelet/kubeconfig"), so once the API server serves from a CA it did not trust at
  # start it cannot write to its Node until its pod restarts. What this scenario judges is the
  # kubelet, which the daemon restarted with the new CA in its kubeconfig.
  @in-process-apiserver
  Scenario Outline: A new kube-apiserver serving CA and the kubelet's kubeconfig
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains a new CA
    Then every node's /var/lib/kubelet/kubeconfig <trust> the kube-apiserver's new CA
    When 1 minute passes
    And the kube-apiserver serves a certificate from its new CA
    And 1 minute passes
    Then every node is <readiness>
    And no node has rebooted

    @ocp-4.12 @ocp-4.14
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
      | Need to restart kubelet                      |
      | restarting kubelet due to server-ca rotation |
      | Stopping kubelet.service...                  |
      | Stopped kubelet.service.                     |
      | Reloading.                                   |
      | Starting kubelet.service...                  |
      | Started kubelet.service.                     |
    And every node's /var/lib/kubelet/kubeconfig trusts the kube-apiserver's new CA
    And every node's /etc/kubernetes/kubeconfig trusts the kube-apiserver's new CA

  # The node annotations the 4.16 certificate writer keeps (release-4.16
  # certificate_writer.go:290-300): the ControllerConfig resourceVersion it last wrote the
  # certificates from, and the service-ca-rotate value it last acted on: "true" once it has
  # handled a serving-CA rotation, "false" again after the operator's next sync resets the
  # ControllerConfig's annotation (pkg/operator/sync.go:1083-1087).
  @ocp-4.16
  Scenario: On 4.16 each node records the ControllerConfig and the serving-CA rotation it synced
    Given a fresh cluster with 1 worker node
    Then every node's annotation machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion is the ControllerConfig's resourceVersion
    When the kube-apiserver's serving CA bundle gains a new CA
    Then every node's annotation machineconfiguration.openshift.io/lastObservedServerCAAnnotation is "true"
    And every node's annotation machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion is the ControllerConfig's resourceVersion
    When 1 minute passes
    Then every node's annotation machineconfiguration.openshift.io/lastObservedServerCAAnnotation is "false"
    And every node's annotation machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion is the ControllerConfig's resourceVersion

  # Release-4.14's writer keeps the first annotation only (certificate_writer.go:181-187, written
  # when the ControllerConfig's resourceVersion differs from it); a new serving CA is nothing to
  # it, and nothing in release-4.14 writes lastObservedServerCAAnnotation.
  @ocp-4.14
  Scenario: On 4.14 each node records the ControllerConfig it synced and nothing of a serving-CA rotation
    Given a fresh cluster with 1 worker node
    Then every node's annotation machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion is the ControllerConfig's resourceVersion
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's annotation machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion is the ControllerConfig's resourceVersion
    When the kube-apiserver's serving CA bundle gains a new CA
    And 1 minute passes
    Then no node has the annotation machineconfiguration.openshift.io/lastObservedServerCAAnnotation
    And the ControllerConfig's annotation machineconfiguration.openshift.io/service-ca-rotate is ""

  # Which added serving CA restarts the kubelet (release-4.16 certificate_writer.go:195-216):
  # for every certificate kubeconfig-data adds, upstream logs "Cert not found in kubeconfig …
  # Subject is: <CN>", then "Skipping kubelet restart" when the CN contains
  # kube-apiserver-localhost-signer, openshift-kube-apiserver-operator_localhost-recovery-serving-signer
  # or kube-apiserver-lb-signer, and "Need to restart kubelet" otherwise. A signer KAS-O rotates is
  # named by library-go as openshift-kube-apiserver-operator_<secret>@<unix> (signer.go:186):
  # localhost-serving-signer and loadbalancer-serving-signer match none of those names, so upstream
  # restarts the kubelet for them, whatever the seeds' intent ("they rotate randomly during
  # upgrades"). Only the installer's own two signers and the recovery signer defer.
  @ocp-4.16
  Scenario Outline: On 4.16 <signer> restarts the kubelet
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains <signer>
    Then every node's journal shows, in this order:
      | Cert not found in kubeconfig. This means we need to write to disk. Subject is: openshift-kube-apiserver-operator_<secret>@ |
      | Need to restart kubelet                                                                                                  |
      | Stopping kubelet.service...                                                                                              |
      | Started kubelet.service.                                                                                                 |
    And every node's /var/lib/kubelet/kubeconfig trusts the added CA
    And every node's /etc/kubernetes/kubeconfig trusts the added CA
    And no node has rebooted

    Examples:
      | signer                                 | secret                      |
      | a rotated localhost serving signer     | localhost-serving-signer    |
      | a rotated load-balancer serving signer | loadbalancer-serving-signer |

  # The deferred ones: /etc/kubernetes/kubeconfig gets the CA (the bundle differs and a
  # certificate is missing), the kubelet and its kubeconfig are left alone.
  @ocp-4.16
  Scenario Outline: On 4.16 <signer> does not restart the kubelet
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains <signer>
    Then every node's /etc/kubernetes/kubeconfig trusts the added CA
    And every node's journal shows "Skipping kubelet restart"
    And every node's /var/lib/kubelet/kubeconfig does not trust the added CA
    And no node's journal shows "Need to restart kubelet"
    And no node's journal shows "Stopping kubelet.service"

    Examples:
      | signer                                          |
      | a new localhost-recovery serving signer         |
      | the installer's kube-apiserver-localhost-signer |
      | the installer's kube-apiserver-lb-signer        |

  # A change that only removes a CA: every certificate of kubeconfig-data is already on disk
  # (allCertsThere), so upstream writes no kubeconfig and restarts nothing; the removed CA stays
  # in /etc/kubernetes/kubeconfig.
  @ocp-4.16
  Scenario: On 4.16 a serving CA that leaves the bundle restarts nothing
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains a new localhost-recovery serving signer
    And the kube-apiserver's serving CA bundle loses the added CA
    Then every node's /etc/kubernetes/kubeconfig trusts the added CA
    And no node's journal shows "Need to restart kubelet"
    And no node's journal shows "Stopping kubelet.service"
    And no node has rebooted

  # An upgrade into 4.16: kubeconfig-data does not exist yet, and the operator's first sync
  # creates it from kube-apiserver-server-ca at once, as binaryData, and sets service-ca-rotate
  # "true" (release-4.16 pkg/operator/sync.go:1069-1077, no settle wait for a creation). The
  # bundle holds the localhost-recovery serving signer KAS-O made in the cluster since install
  # (certrotationcontroller.go:494), which the nodes' kubeconfigs, made at install, lack: the
  # daemon logs "Cert not found in kubeconfig … Subject is: <its CN>", skips the kubelet restart
  # for it (certificate_writer.go:197-217: it rotates on its own during upgrades) and rewrites
  # /etc/kubernetes/kubeconfig with the whole bundle, deferring the restart.
  @ocp-4.16
  Scenario: On 4.16 the operator's first kubeconfig-data after an upgrade reaches the kubeconfig without a kubelet restart
    Given a cluster upgraded into this release with 1 worker node, before its operator wrote kubeconfig-data
    Then kubeconfig-data holds the kube-apiserver's serving CA bundle as binaryData
    And every node's /etc/kubernetes/kubeconfig trusts the added CA
    And every node's journal shows "Subject is: openshift-kube-apiserver-operator_localhost-recovery-serving-signer@"
    And every node's journal shows "Skipping kubelet restart"
    And no node's journal shows "Need to restart kubelet"
    And no node's journal shows "Stopping kubelet.service"

  # The operator copies a serving-CA change only once the bundle settled (release-4.16
  # pkg/operator/sync.go:1020-1043): it polls kube-apiserver-server-ca every 15 s, a change it
  # sees starts its one-minute wait again from that poll, and only after a quiet minute does it
  # write kubeconfig-data and service-ca-rotate "true" (:1045-1087), once. The second CA, added
  # 20 s after the first, is seen at the 30 s poll, so the copy comes a minute later, 90 s after
  # the first change (70 s after the second), holding both: each kubelet restarts once. (Two CAs copied one after the
  # other would instead meet the daemon's window in which service-ca-rotate is still "true"
  # from the first: whether it writes the second then depends on how fresh its Node cache is,
  # certificate_writer.go:143; the operator's wait keeps a burst of changes out of that window.)
  @ocp-4.16
  Scenario: On 4.16 two serving CAs added 20 seconds apart restart each kubelet once, after the bundle settled
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains a rotated localhost serving signer, and 20 seconds later a rotated load-balancer serving signer
    And 69 seconds pass
    Then kubeconfig-data lacks the added CA
    And no node's journal shows "restarting kubelet due to server-ca rotation"
    When 1 second passes
    Then kubeconfig-data holds the added CA
    And every node's journal shows, in this order:
      | Subject is: openshift-kube-apiserver-operator_localhost-serving-signer@    |
      | Subject is: openshift-kube-apiserver-operator_loadbalancer-serving-signer@ |
      | restarting kubelet due to server-ca rotation                                |
    And every node's journal shows "Stopping kubelet.service" once
    And every node's /var/lib/kubelet/kubeconfig trusts the added CA

  # The operator and the daemon read kubeconfig-data as upstream's cmToData reads a ConfigMap
  # (release-4.16 sync.go:2005-2018, certificate_writer.go:388-400): binaryData first, otherwise
  # data, base64-decoded if it decodes and as it is if not. The operator writes kubeconfig-data
  # only when that bundle differs from kube-apiserver-server-ca's, and then as binaryData alone:
  # a merge patch from the object it read to one holding only binaryData, which drops data
  # (sync.go:1011-1066). So the same bundle given in data is no change — the operator leaves it
  # and service-ca-rotate stays "false", so no daemon reads it — and the next new CA turns it
  # back into binaryData, which every daemon reads.
  @ocp-4.16
  Scenario Outline: On 4.16 kubeconfig-data holding its bundle as <form> is no change
    Given a fresh cluster with 1 worker node
    When kubeconfig-data is rewritten with its bundle as <form>
    Then kubeconfig-data holds the kube-apiserver's serving CA bundle as <form>
    And the ControllerConfig's annotation machineconfiguration.openshift.io/service-ca-rotate is "false"
    When the kube-apiserver's serving CA bundle gains a new CA
    Then kubeconfig-data holds the kube-apiserver's serving CA bundle as binaryData
    And every node's /var/lib/kubelet/kubeconfig trusts the kube-apiserver's new CA

    Examples:
      | form        |
      | base64 data |
      | raw data    |

  # The deferred restart, and what ends it (release-4.16 daemon.go:1358-1429). Reading
  # kubeconfig-data sets the daemon's deferKubeletRestart unless an added CA is one it does not
  # skip; then any informer error that mentions x509 (utilruntime.HandleError, piped to the main
  # loop) makes it re-bootstrap the kubelet: it removes /var/lib/kubelet/kubeconfig, runs
  # `systemctl restart kubelet`, waits up to two minutes for the kubelet to write a new one, and
  # exits (ErrAuxiliary) so its pod restarts. The x509 error comes once the API server serves
  # from the added CA, which the daemon's pod did not trust when it started. The kubelet
  # bootstraps from /etc/kubernetes/kubeconfig, which already trusts the added CA, with a
  # CertificateSigningRequest for system:node:<name>; cluster-machine-approver does not approve
  # a request for a node that already exists (csr_check.go authorizeNodeClientCSR, "node …
  # already exists, cannot approve"), so the kubelet posts no status until an administrator
  # approves it (`oc adm certificate approve`). Until then the daemon waits for the kubeconfig
  # and cannot sync (it no longer trusts the API server); once the kubelet has its certificate
  # the daemon exits, and its pod restarts trusting the added CA (the service account's ca.crt
  # follows the serving CA bundle). Its first certificate sync then waits out upstream's
  # one-minute ccRequeueDelay (release-4.16 certificate_writer.go:30, 115: the daemon has no
  # Node yet), so nothing here asks it to sync again.
  # Upstream's other trigger, daemon stop, never fires: its stopCh is closed only after Run
  # returns, and a SIGTERM returns without re-bootstrapping.
  @ocp-4.16 @in-process-apiserver
  Scenario: On 4.16 an x509 error after a deferred serving CA re-bootstraps the kubelet
    Given a fresh cluster with 1 worker node
    When the kube-apiserver's serving CA bundle gains the installer's kube-apiserver-lb-signer
    Then every node's /var/lib/kubelet/kubeconfig does not trust the added CA
    When the kube-apiserver serves a certificate from the added CA
    Then every node's journal shows, in this order:
      | Stopping kubelet.service... |
      | Started kubelet.service.    |
    And every node's kubelet waits for approval of its client certificate request
    When every pending certificate signing request is approved
    Then every node's kubelet uses the client certificate its approved request was issued
    And every node's /var/lib/kubelet/kubeconfig trusts the added CA
    And every node is Ready
    And every node's journal shows, in this order:
      | Restarting failed container machine-config-daemon |
    And no node has rebooted

  # The kubelet loads kubelet-ca.crt once before it serves, and that load is part of its start:
  # Kubernetes' NewDynamicCAContentFromFile reads the file and returns its error (an empty file:
  # `missing content for CA bundle "client-ca-bundle::/etc/kubernetes/kubelet-ca.crt"`), which
  # the kubelet's BuildAuthn and run pass up unwrapped until Run says "failed to run Kubelet: …"
  # and the process exits 1 (k8s.io/apiserver dynamic_cafile_content.go loadCABundle,
  # cmd/kubelet/app/auth.go BuildAuthn, server.go Run). kubelet.service has Restart=always
  # (templates/<role>/01-<role>-kubelet/_base/units/kubelet.service.yaml), so it tries again
  # until the file is whole, and serves then. An agent that leaves kubelet-ca.crt empty leaves a
  # node whose kubelet does not come back from its next restart.
  Scenario: A kubelet does not start while kubelet-ca.crt is empty, and starts once it is whole
    Given a fresh cluster with 1 worker node
    When the file /etc/kubernetes/kubelet-ca.crt is emptied on every node
    And the kubelet restarts on every node
    Then every node's journal shows ""command failed" err="failed to run Kubelet: missing content for CA bundle"
    And every node's journal shows "kubelet.service: Scheduled restart job, restart counter is at 1."
    And no node's kubelet serves
    When the file /etc/kubernetes/kubelet-ca.crt is restored on every node
    Then every node's kubelet serves
    And every kubelet accepts the kube-apiserver's kubelet client certificate

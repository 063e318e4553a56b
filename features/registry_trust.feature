# Encodes: MCO release-4.16 pkg/daemon/certificate_writer.go (the registry CA block under
# /etc/docker/certs.d: "does not exist yet", stale directories removed, ".." read as ":";
# syncOSImagePullSecrets: /etc/mco/internal-registry-pull-secret.json merged with
# /run/secrets/os-image-pull-secrets/<role>, the mounted secret winning, an error for a node
# with no role), unit test TestImagePullSecretReconciliation, e2e TestImageRegistryMergedCM and
# TestInternalImageRegistryPullSecret. See shared/notes/mco-source.md §2. Release-4.14's writer
# (certificate_writer.go:137-179) has the same registry CA block but for a missing
# /etc/docker/certs.d, and no pull secret: on 4.14 that file is a template of the rendered config
# (docs/ocp-4.14.md §1, §12).
@registry-trust
Feature: Registry trust written from ControllerConfig
  On 4.14 and 4.16 the daemon's certificate writer also writes what the container runtime trusts
  for image registries: each registry CA of the ControllerConfig in its own directory under
  /etc/docker/certs.d, and on 4.16 the internal registry's pull secret. Neither needs a rendered
  config or a reboot.

  # The directory name is the ControllerConfig's file name with ".." read as ":" (a ConfigMap
  # key cannot hold ":"), so "image-registry.svc..5000" serves host image-registry.svc:5000.
  # Publishing a list without a CA removes that CA's directory.
  @ocp-4.14 @ocp-4.16
  Scenario: Registry CAs land under /etc/docker/certs.d and stale ones leave
    Given a fresh cluster with 1 worker node
    When the image registry CAs "registry.example.com" and "image-registry.svc..5000" are published
    Then every node has the registry CA "registry.example.com" in /etc/docker/certs.d/registry.example.com/ca.crt
    And every node has the registry CA "image-registry.svc..5000" in /etc/docker/certs.d/image-registry.svc:5000/ca.crt
    When the image registry CA "registry.example.com" is published
    Then no node has the path /etc/docker/certs.d/image-registry.svc:5000
    And every node has the registry CA "registry.example.com" in /etc/docker/certs.d/registry.example.com/ca.crt
    And every node is Done
    And no node has rebooted

  # Only the directories that no CA names leave (os.ReadDir's entries that are directories:
  # release-4.14 certificate_writer.go:144-159, release-4.16 :251-266); a named host's directory
  # stays as it is while its ca.crt is written again, so what else a registry needs beside it
  # stays too, such as a client certificate and key for a registry that asks for one (CRI-O
  # reads certs.d/<host>/*.cert and *.key, containers-certs.d(5)).
  @ocp-4.14 @ocp-4.16
  Scenario: A registry's client certificate beside its CA stays when the CAs are written again
    Given a fresh cluster with 1 worker node
    When the image registry CA "registry.example.com" is published
    And the file /etc/docker/certs.d/registry.example.com/client.cert is written on every node
    And the image registry CAs "registry.example.com" and "mirror.example.com" are published
    Then every node has the path /etc/docker/certs.d/registry.example.com/client.cert
    And every node has the registry CA "registry.example.com" in /etc/docker/certs.d/registry.example.com/ca.crt
    And every node has the registry CA "mirror.example.com" in /etc/docker/certs.d/mirror.example.com/ca.crt

  # The template controller lists the registry CAs in ControllerConfig status.controllerCertificates
  # after the four CA fields, each under its file name as bundleFile, and drops one whose entry
  # left the spec (release-4.14 and 4.16 template_controller.go updateControllerConfigCerts; 4.12
  # has no controllerCertificates).
  @ocp-4.14 @ocp-4.16
  Scenario: The ControllerConfig's status lists the registry CAs under their file names
    Given a fresh cluster with 1 worker node
    When the image registry CAs "registry.example.com" and "image-registry.svc..5000" are published
    Then the ControllerConfig's status lists the registry CA "registry.example.com"
    And the ControllerConfig's status lists the registry CA "image-registry.svc..5000"
    When the image registry CA "registry.example.com" is published
    Then the ControllerConfig's status lists the registry CA "registry.example.com"
    And the ControllerConfig's status lacks the registry CA "image-registry.svc..5000"

  # The user's registry CAs (image.config.openshift.io/cluster spec.additionalTrustedCA, which the
  # operator copies into imageRegistryBundleUserData: release-4.16 sync.go:293-322) are written
  # after the cluster's (certificate_writer.go:245-286 walks imageRegistryBundleData, then
  # imageRegistryBundleUserData; release-4.14 :137-179), so for a host in both the user's CA is
  # the one on disk; a directory stays while either list names it, and leaves with the last.
  # None of it needs a rendered config or a reboot.
  @ocp-4.14 @ocp-4.16
  Scenario: The user's registry CAs are written after the cluster's and win for a shared host
    Given a fresh cluster with 1 worker node
    When the image registry CAs "registry.example.com" and "image-registry.svc..5000" are published
    And the user's registry CAs "registry.example.com" and "mirror.example.com..8443" are published
    Then every node has the user's registry CA "registry.example.com" in /etc/docker/certs.d/registry.example.com/ca.crt
    And every node has the user's registry CA "mirror.example.com..8443" in /etc/docker/certs.d/mirror.example.com:8443/ca.crt
    And every node has the registry CA "image-registry.svc..5000" in /etc/docker/certs.d/image-registry.svc:5000/ca.crt
    And the ControllerConfig's status lists the registry CA "registry.example.com"
    And the ControllerConfig's status lists the user's registry CA "registry.example.com"
    When the user's registry CA "registry.example.com" is published
    Then no node has the path /etc/docker/certs.d/mirror.example.com:8443
    And every node has the user's registry CA "registry.example.com" in /etc/docker/certs.d/registry.example.com/ca.crt
    And every node is Done
    And no node has rebooted

  # release-4.16 certificate_writer.go:247-249 logs "/etc/docker/certs.d does not exist yet" and
  # writes no registry CA.
  @ocp-4.16
  Scenario: On 4.16 without /etc/docker/certs.d no registry CA is written
    Given a fresh cluster with 1 worker node
    When /etc/docker/certs.d is removed from every node
    And the image registry CA "registry.example.com" is published
    Then no node has the path /etc/docker/certs.d
    And every node is Done

  # release-4.14 certificate_writer.go:139-142 ignores the ReadDir error for a missing directory
  # and MkdirAll (:163, :173) makes it: the CA is written (7b4adcdb7, "Don't error if the certs.d
  # dir doesn't exist yet", merged 2024-05-27; an early 4.14.z did otherwise).
  @ocp-4.14
  Scenario: On 4.14 without /etc/docker/certs.d the registry CA is written and the directory made
    Given a fresh cluster with 1 worker node
    When /etc/docker/certs.d is removed from every node
    And the image registry CA "registry.example.com" is published
    Then every node has the registry CA "registry.example.com" in /etc/docker/certs.d/registry.example.com/ca.crt
    And every node is Done
    And no node has rebooted

  # Release-4.14 certificate_writer.go:139-142 lets only a missing directory pass: any other
  # error reading /etc/docker/certs.d (here a file stands there, so reading it as a directory
  # fails) is returned, and handleControllerConfigErr (:63-75) marks the node Degraded with it
  # (updateErrorState) and retries. The change need not touch a registry CA: the directory is read
  # on every sync of a new ControllerConfig.
  @ocp-4.14
  Scenario: On 4.14 an /etc/docker/certs.d that cannot be read as a directory degrades the node
    Given a fresh cluster with 1 worker node
    When /etc/docker/certs.d is removed from every node
    And the file /etc/docker/certs.d is written on every node
    And the cloud provider CA is published
    Then every node is Degraded with the reason "/etc/docker/certs.d"
    And no node has rebooted

  # Release-4.16 certificate_writer.go:247-249 treats every error reading the directory as its
  # absence: "does not exist yet" in the log, no registry CA written, the sync goes on.
  @ocp-4.16
  Scenario: On 4.16 an /etc/docker/certs.d that cannot be read as a directory is passed over
    Given a fresh cluster with 1 worker node
    When /etc/docker/certs.d is removed from every node
    And the file /etc/docker/certs.d is written on every node
    And the image registry CA "registry.example.com" is published
    Then every node is Done
    And every node has the path /etc/docker/certs.d

  # A ControllerConfig is input from outside the node: a file name with a "/" would put the CA
  # outside /etc/docker/certs.d (or anywhere, if absolute), so the reference daemon refuses it
  # and still writes the others. Upstream does not: release-4.16 certificate_writer.go joins the
  # name under the directory (filepath.Join("/etc/docker/certs.d", "/etc/x") is
  # /etc/docker/certs.d/etc/x), so its daemon writes /etc/docker/certs.d/etc/mco-conformance-escape/ca.crt
  # and fails this scenario on purpose (release-4.14 :163-166 likewise). Hence @beyond-upstream:
  # judged for the reference daemon, reported apart for any other agent. No ConfigMap key can
  # hold a "/", so such a name reaches a node only through a hand edit of the ControllerConfig,
  # which stays only while the operator is scaled down (a running one copies its own list back).
  # The name "." is refused too: upstream would write /etc/docker/certs.d/ca.crt, in no host's
  # directory, which CRI-O never reads (no ConfigMap key can be "." either).
  @beyond-upstream @ocp-4.14 @ocp-4.16
  Scenario: A registry CA whose file name would leave the directory is refused
    Given a fresh cluster with 1 worker node
    When the image registry CA "registry.example.com" is published
    And the machine-config operator is scaled down
    And the ControllerConfig's image registry CAs are edited to add "/etc/mco-conformance-escape" and "."
    Then no node has the path /etc/mco-conformance-escape
    And no node has the path /etc/docker/certs.d/etc
    And no node has the path /etc/docker/certs.d/ca.crt
    And every node has the registry CA "registry.example.com" in /etc/docker/certs.d/registry.example.com/ca.crt

  # The operator assembles ControllerConfig internalRegistryPullSecret once the bootstrap node
  # handed over (release-4.14 sync.go:1560-1650, release-4.16 sync.go:1910-2002
  # getImageRegistryPullSecrets): with ClusterOperator image-registry present, every host of the
  # machine-os-puller service account's image pull secrets, then the cluster pull secret's hosts
  # over them (the fixture's openshift-config/pull-secret has quay.io), then the in-cluster
  # registry's entry again under default-route-openshift-image-registry.apps.<base domain>
  # (the fixture's DNS config: test.example).
  @ocp-4.14 @ocp-4.16
  Scenario: The operator merges the machine-os-puller's pull secrets with the cluster pull secret and adds the registry's default route
    Given a fresh cluster with 1 worker node
    When the internal registry pull secret holds credentials for "image-registry.openshift-image-registry.svc:5000"
    Then the ControllerConfig's internal registry pull secret is the machine-os-puller's pull secrets merged with the cluster pull secret

  # On 4.16 the certificate writer writes what the operator assembled to the node's
  # /etc/mco/internal-registry-pull-secret.json (certificate_writer.go:362-379
  # syncOSImagePullSecrets; the ControllerConfig's bytes as they are when no secret is mounted, :452).
  @ocp-4.16
  Scenario: On 4.16 every node gets the cluster pull secret's hosts and the registry's default route in its internal registry pull secret
    Given a fresh cluster with 1 worker node
    When the internal registry pull secret holds credentials for "image-registry.openshift-image-registry.svc:5000"
    Then every node's internal registry pull secret has credentials for "image-registry.openshift-image-registry.svc:5000" from the ControllerConfig
    And every node's internal registry pull secret has credentials for "default-route-openshift-image-registry.apps.test.example" from the ControllerConfig
    And every node's internal registry pull secret has credentials for "quay.io" from the ControllerConfig

  # 4.16 only: release-4.14 has no syncOSImagePullSecrets.
  @ocp-4.16
  Scenario: On 4.16 the internal registry pull secret is merged with the role's mounted one
    Given a fresh cluster with 1 worker node
    And every node has a mounted worker pull secret with credentials for "quay.io" and "registry.example.com"
    When the internal registry pull secret holds credentials for "image-registry.openshift-image-registry.svc:5000" and "registry.example.com"
    Then every node's internal registry pull secret has credentials for "image-registry.openshift-image-registry.svc:5000" from the ControllerConfig
    And every node's internal registry pull secret has credentials for "registry.example.com" from the mounted secret
    And every node's internal registry pull secret has credentials for "quay.io" from the mounted secret
    And no node has rebooted

  # The reason in upstream's words (release-4.16 certificate_writer.go:439). Nothing is judged
  # of the file: upstream writes it on every sync (the ControllerConfig's bytes as they are when
  # no secret is mounted, certificate_writer.go:374-380, 452). Its certificate writer reads the
  # Node its Node worker last saw, which may still have the label when the ControllerConfig
  # change comes first; the order does not matter, as the Node worker runs the same role check
  # on every sync of the Node (daemon.go:759) and marks the node Degraded itself.
  @ocp-4.16
  Scenario: On 4.16 a node with no role label gets an error, not a silent skip
    Given a fresh cluster with 1 worker node
    When every node loses its node-role label
    And the internal registry pull secret holds credentials for "image-registry.openshift-image-registry.svc:5000"
    Then every node is Degraded with the reason "has no node-role.kubernetes.io label"

  # The Node worker's role check (release-4.16 daemon.go:759, certificate_writer.go:435-440)
  # needs no ControllerConfig change: the last one was synced while the node had its role.
  @ocp-4.16
  Scenario: On 4.16 a node that loses its role label after the last sync goes Degraded too
    Given a fresh cluster with 1 worker node
    When the internal registry pull secret holds credentials for "image-registry.openshift-image-registry.svc:5000"
    Then every node's internal registry pull secret has credentials for "image-registry.openshift-image-registry.svc:5000" from the ControllerConfig
    When every node loses its node-role label
    Then every node is Degraded with the reason "has no node-role.kubernetes.io label"

  # When the role comes back, upstream's Node worker passes the role check, finds the node
  # Degraded on the config it already runs ("current+desiredConfig is … but state is Degraded",
  # release-4.16 daemon.go prepUpdateFromCluster) and runs that update again, which ends Done.
  # No ControllerConfig change is needed.
  @ocp-4.16
  Scenario: On 4.16 a node whose role label comes back is Done again
    Given a fresh cluster with 1 worker node
    When the internal registry pull secret holds credentials for "image-registry.openshift-image-registry.svc:5000"
    And every node loses its node-role label
    Then every node is Degraded with the reason "has no node-role.kubernetes.io label"
    When every node is labelled node-role.kubernetes.io/worker
    Then every node is Done

  # The certificate writer syncs the OS image pull secrets first and returns on the missing role
  # before it writes anything (release-4.16 certificate_writer.go:138-142 syncOSImagePullSecrets,
  # :435-440): kubelet-ca.crt, the cloud CA and the kubeconfig keep what they held, and the node
  # misses the rotation, not only goes Degraded. The writer's queue retries the ControllerConfig
  # with backoff (handleControllerConfigErr: AddRateLimited, no retry limit), so the rotation
  # lands once the role label is back, on the writer's next try: every failure and every event
  # about the ControllerConfig doubles the wait (client-go DefaultControllerRateLimiter, 5 ms up
  # to 1000 s), so that try may come minutes after the label, and the last step waits that long.
  # The rotation comes once the node is Degraded for the label: the writer reads the node from its informer (`dn.node`), so a rotation right after the
  # label change can meet a daemon that has not seen it yet and writes (release-4.16's daemon did,
  # on container nodes).
  @ocp-4.16
  Scenario: On 4.16 a node with no role label misses a rotation until its label comes back
    Given a fresh cluster with 1 worker node
    When every node loses its node-role label
    Then every node is Degraded with the reason "has no node-role.kubernetes.io label"
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node is Degraded with the reason "has no node-role.kubernetes.io label"
    And every node's kubelet-ca.crt lacks the current kube-apiserver-to-kubelet-signer
    When every node is labelled node-role.kubernetes.io/worker
    Then every node is Done
    And on its certificate writer's next try every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer

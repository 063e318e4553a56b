# Encodes: library-go pkg/operator/certrotation/signer.go `needNewSigningCertKeyPair` and
# `getValidityFromAnnotations` (KAS-O release-4.12 vendors d932feccfc56, release-4.16
# f5bf38712dca): a signer whose `auth.openshift.io/certificate-not-after` or
# `certificate-not-before` annotation is missing is "missing notAfter/notBefore" and replaced at
# the controller's next sync; `certificate-issuer` is not read for a signer (only a target's
# issuer is checked against its CA bundle, target.go). The seeds' slide points at "the
# annotation" on openshift-kube-apiserver-operator/kube-apiserver-to-kubelet-signer; MCO's e2e
# nulls certificate-not-after (signer_rotation.feature uses that).
@signer-rotation
Feature: Forcing a signer rotation by removing an annotation
  A QE engineer forces kube-apiserver-to-kubelet-signer to rotate by removing an annotation
  from its Secret. Either validity annotation does it, and the new signer reaches every node's
  kubelet-ca.crt as any rotation does; the issuer annotation does not.

  Scenario Outline: Removing <annotation> rotates the signer
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer's <annotation> annotation is removed
    Then the kube-apiserver-to-kubelet-signer has rotated
    And every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer
    And no node has rebooted

    Examples:
      | annotation             |
      | certificate-not-after  |
      | certificate-not-before |

  Scenario: Removing certificate-issuer does not rotate the signer
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer's certificate-issuer annotation is removed
    Then the kube-apiserver-to-kubelet-signer has not rotated
    And no node has rebooted

  # What a 4.12 daemon writes to the journal as it applies the rendered config a rotation brings
  # (release-4.12 update.go and daemon.go `logSystem`, update.go:2158-2173: each line goes to
  # its own log and, through `logger`, to the journal as
  # `root[<pid>]: machine-config-daemon[<pid>]: <message>`; release-4.16 quotes the message):
  # the update starts, systemd reloads as the config's units are enabled, the action is none
  # ("skipping reboot"), and the uncordon completes it. Around the action the daemon keeps its
  # pending state in the journal (update.go:2125-2138 `storePendingState`, `logger --journald`:
  # MESSAGE is the config's name, PENDING 1 before the action, 0 once the node is Done,
  # daemon.go:1626-1634): the seed's `logger[<pid>]: rendered-worker-…` lines, the journal's
  # `]: rendered-worker-` below.
  @ocp-4.12 @mco-logs
  Scenario: On 4.12 the daemon's update for a rotation, in upstream's words and order
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's journal shows, in this order:
      | Starting update from           |
      | systemd[1]: Reloading.         |
      | ]: rendered-worker-            |
      | Node has Desired Config        |
      | Update completed for config    |
      | ]: rendered-worker-            |
    And every node's journal shows "Starting update from" through logger
    And every node's journal shows "Update completed for config" through logger

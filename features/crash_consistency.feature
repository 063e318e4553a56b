# Encodes: MCO release-4.12 and release-4.16 pkg/daemon/file_writers.go `writeFileAtomically`
# (renameio's pattern: a temporary file in the file's own directory, chmod, write, fsync, close,
# rename; no fsync of the directory), which both the 4.12 update path (`writeFiles`) and the
# 4.14/4.16 certificate writer (`writeToDisk`) use for kubelet-ca.crt. After a crash a reader
# finds the old file or the new one, whole, never a part of one and never an empty file; the
# daemon that starts again finishes the sync (4.16: lastSyncedControllerConfigResourceVersion
# still differs; 4.12: currentConfig still differs from desiredConfig).
#
# How the agent is crashed (strace, SIGKILL at a system call) and where the crash points are:
# docs/crash-consistency.md. strace wraps the agent where it runs: on this host for an embedded
# node, inside the container (the node image carries this host's strace) for a container node.
@crash-consistency
Feature: A crashed agent leaves every file the kubelet reads whole
  Agents in the field are killed in the middle of a write (the OOM killer, a node drained with
  `kill -9`, a pod evicted). The kubelet reads its client CA bundle and its kubeconfig whenever
  they change, and CRI-O its registry CAs: a file caught half written is a kubelet that refuses
  the kube-apiserver (`oc logs` fails) until something rewrites it.

  # The agent is killed at each file-changing system call of a sync that names a file the
  # kubelet or CRI-O reads (or puts one in place), counted first with a traced run; after each
  # crash its service starts it again and the node must converge. On 4.12 the bundle comes in
  # a rendered config (the installer's bundle with the signer's merged in, mco-source.md §1);
  # on 4.14 and 4.16 from ControllerConfig's kube-apiserver-client-ca.
  Scenario Outline: A crash at any file change of a rotation's sync leaves every file whole
    Given a fresh cluster with 1 worker node
    When the agent is killed at each of its file-changing system calls as it syncs a forced rotation of the kube-apiserver-to-kubelet-signer
    Then every file the kubelet and CRI-O read was whole after every crash
    And no crash found the node reported synced before its files were written
    And the node converged after every crash
    And every crash point was reached
    And every node's kubelet-ca.crt equals "<bundle>"
    And every node's /etc/kubernetes/kubelet-ca.crt is owned by root with mode 0644
    And every kubelet accepts a client certificate from the current kube-apiserver-to-kubelet-signer

    @ocp-4.12
    Examples:
      | bundle                                                      |
      | the initial bundle with the kubelet signer's bundle merged in |

    @ocp-4.14 @ocp-4.16
    Examples:
      | bundle                   |
      | kube-apiserver-client-ca |

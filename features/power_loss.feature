# Encodes: MCO release-4.12 and release-4.16 pkg/daemon/file_writers.go `writeFileAtomically`
# (renameio's pattern: a temporary file in the file's own directory, chmod, write, fsync, close,
# rename), used for kubelet-ca.crt by the 4.12 update path (`writeFiles`) and the 4.14/4.16
# certificate writer (`writeToDisk`). It fsyncs the temporary file before the rename and never
# the directory: after a power loss the rename may be lost (the old file, stale but whole, until
# the next sync writes it again) or kept (the new file, whole, its data synced before its name).
# Never a part of a file, never an empty one.
#
# How the states are made (strace's record of the sync, the persistence model after ALICE and
# CrashMonkey) and what the model can and cannot find: docs/crash-consistency.md. strace records
# the agent where it runs: on this host for an embedded node, inside a container node.
@crash-consistency
Feature: A power loss leaves every file the kubelet reads whole
  A node loses power (a host reset, a hypervisor's hard stop) whenever it likes: what the agent
  wrote and did not fsync may be gone, a rename not followed by an fsync of its directory may be
  undone. The kubelet reads its client CA bundle and its kubeconfigs when it starts again, and
  CRI-O its registry CAs: a file left empty is a kubelet that refuses the kube-apiserver until
  something rewrites it.

  # Every state a power loss at any point of the sync can leave, each materialised on a copy of
  # the node's files: on 4.12 the bundle comes in a rendered config (every file of it watched),
  # on 4.14 and 4.16 from ControllerConfig's kube-apiserver-client-ca. The count is the floor of
  # any writer that puts a new kubelet-ca.crt in place (create, write, fsync, rename: 7 states);
  # fewer means the record saw no such write and judged nothing. The reference daemon's syncs
  # leave 37 on 4.12 and 13 on 4.14 and 4.16.
  Scenario Outline: A power loss at any point of a rotation's sync leaves every file whole
    Given a fresh cluster with 1 worker node
    When the node loses power at each point of the agent's sync of a forced rotation of the kube-apiserver-to-kubelet-signer
    Then every file the kubelet and CRI-O read is whole in every state a power loss can leave
    And at least 7 crash states were judged
    And every node's kubelet-ca.crt equals "<bundle>"

    @ocp-4.12
    Examples:
      | bundle                                                      |
      | the initial bundle with the kubelet signer's bundle merged in |

    @ocp-4.14 @ocp-4.16
    Examples:
      | bundle                   |
      | kube-apiserver-client-ca |

  # One record over several syncs a minute apart: the first synced as the agent starts, each
  # later one as the running agent sees its change. Upstream fsyncs no directory, so a power
  # loss late in the record may undo any number of the renames before it, latest first: the
  # file goes back to an older version, whole (stale until the next sync). Any version the syncs
  # left counts as whole; a part of one, or an empty file, does not. Each sync has at least the
  # seven states of one alone (above). On 4.12 a sync is a rendered config's update, which
  # writes every file of the config (release-4.12 update.go:1233 updateFiles), each renamed into
  # place with no directory fsync to make the rename durable, so the states grow faster with the
  # syncs there: release-4.12's own daemon leaves more over twelve than the model judges in one
  # record (20,000), and six of its syncs leave 9,275. The reference daemon's counts per profile
  # are in docs/crash-consistency.md.
  Scenario Outline: A power loss at any point of several syncs leaves every file a version it had whole
    Given a fresh cluster with 1 worker node
    When the node loses power at each point of the agent's syncs of <syncs> forced rotations of the kube-apiserver-to-kubelet-signer
    Then every file the kubelet and CRI-O read is whole in every state a power loss can leave
    And at least <floor> crash states were judged

    @ocp-4.12
    Examples:
      | syncs | floor |
      | 6     | 42    |

    @ocp-4.14 @ocp-4.16
    Examples:
      | syncs | floor |
      | 12    | 84    |

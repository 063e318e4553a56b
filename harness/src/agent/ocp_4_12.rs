//! The 4.12 path (MCO release-4.12): the kubelet CA bundle is an ordinary file of the rendered
//! MachineConfig (`00-<role>`), so it reaches the node only through a config update — which a
//! paused pool holds back. The update flow writes every file of the new config, including
//! `/etc/kubernetes/kubelet-ca.crt`; its post-config action is "none" and the kubelet reloads
//! the file itself. There is no certificate writer.

use super::Behaviour;

pub const BEHAVIOUR: Behaviour = Behaviour {
    not_written_on_update: &[],
    // release-4.12 update.go:1299 deleteStaleData has no certificate skip list: a file the new
    // config drops is removed (or its original restored), certificates included.
    kept_when_stale: &[],
    kept_when_stale_under: &[],
    certificate_writer: false,
};

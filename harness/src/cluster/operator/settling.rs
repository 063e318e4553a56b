//! The 4.16 operator's wait for `kube-apiserver-server-ca` to settle (release-4.16
//! `pkg/operator/sync.go` 1020-1043): how long and how often it polls, the wait's state, and what
//! one pass of the serving-CA sync decides. Plain data; reading and writing the cluster is
//! `serving_ca`'s, and nothing here reaches for the operator.

/// How often the 4.16 operator polls `kube-apiserver-server-ca` while it waits (sync.go:1025).
pub const SETTLE_POLL: time::Duration = time::Duration::seconds(15);
/// How long the bundle must stay unchanged before the operator copies it (sync.go:1025).
pub const SETTLE_WAIT: time::Duration = time::Duration::minutes(1);

/// The wait of the 4.16 operator for `kube-apiserver-server-ca` to settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Settling {
    /// When its current minute began: the change that started the wait, or the poll that saw
    /// the last change.
    pub(super) since: time::OffsetDateTime,
    /// The last poll, or `since`.
    pub(super) polled: time::OffsetDateTime,
    /// The bundle as last seen: what it copies.
    pub(super) bundle: Vec<u8>,
}

/// What the 4.16 operator's serving-CA sync does in one pass (`Operator::serving_ca`).
#[derive(Debug, PartialEq)]
pub(super) enum ServingCa {
    /// It waits for the bundle to settle: the whole sync is blocked.
    Waiting,
    /// `kubeconfig-data` holds the bundle (or there is none to copy).
    InStep,
    /// Copy `bundle` into `kubeconfig-data` (`create`: there is none yet); `ended_wait`: the
    /// copy ends a wait.
    Copy {
        bundle: Vec<u8>,
        create: bool,
        ended_wait: bool,
    },
}

impl Settling {
    /// The next instant the wait acts at: its next poll, or the end of its minute.
    pub(super) fn next(&self) -> time::OffsetDateTime {
        (self.polled + SETTLE_POLL).min(self.since + SETTLE_WAIT)
    }
}

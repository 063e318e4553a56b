//! What a scenario's timeline holds (`timeline` records it): each change seen, in simulated
//! time, and the last value seen of each thing looked at, so that only changes are recorded.

use std::collections::BTreeMap;

/// One change, in simulated time.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEvent {
    /// When it was seen (RFC 3339, simulated).
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    /// What it happened to: a signer's name, a node's name, or `alerts`.
    pub lane: String,
    /// `issued`, `config`, `state`, `controllerconfig`, `kubelet-ca`, `reboot`, `alert`, and
    /// the kubelet's TLS verdict: `kubelet-accepts`, `kubelet-refuses`, `kubelet-down`.
    pub kind: &'static str,
    pub text: String,
    /// For `issued`: the certificate's validity window.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub not_before: Option<time::OffsetDateTime>,
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub not_after: Option<time::OffsetDateTime>,
}

#[derive(Debug, Default)]
pub struct Timeline {
    pub events: Vec<TimelineEvent>,
    /// When the scenario's cluster was up.
    pub started: Option<time::OffsetDateTime>,
    /// The last look (the scenario's clock when it ended, or near it).
    pub last_look: Option<time::OffsetDateTime>,
    last: BTreeMap<(String, &'static str), String>,
}

impl Timeline {
    /// The last value seen for `(lane, key)`.
    pub(super) fn last_seen(&self, lane: &str, key: &'static str) -> Option<&String> {
        self.last.get(&(lane.to_string(), key))
    }

    /// Record `value` for `(lane, kind)` if it differs from the last one seen.
    pub(super) fn saw(
        &mut self,
        at: time::OffsetDateTime,
        lane: &str,
        kind: &'static str,
        value: String,
        text: String,
    ) -> bool {
        self.saw_as(at, lane, kind, kind, value, text)
    }

    /// Record `value` for `(lane, key)` if it differs from the last one seen, as an event of
    /// `kind` (one key, several kinds: a kubelet's verdict is one thing that changes).
    pub(super) fn saw_as(
        &mut self,
        at: time::OffsetDateTime,
        lane: &str,
        key: &'static str,
        kind: &'static str,
        value: String,
        text: String,
    ) -> bool {
        let key = (lane.to_string(), key);
        if self.last.get(&key) == Some(&value) {
            return false;
        }
        self.last.insert(key, value);
        self.events.push(TimelineEvent {
            at,
            lane: lane.to_string(),
            kind,
            text,
            not_before: None,
            not_after: None,
        });
        true
    }
}

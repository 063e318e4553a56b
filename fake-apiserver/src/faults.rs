//! Fault injection: what a test can make the server do wrong, from Rust
//! (`ServerHandle::inject`) or over HTTP (`POST /_fake/v1/faults`, `system:masters` only).
//!
//! Request faults (failing the next N matching requests, adding latency) live here; faults that
//! act on the whole server (closing watches, dropping history, restarting) are carried out by
//! the server, which owns the connections and the store.

use crate::error::ApiError;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Duration;

/// One fault, as Rust callers build it and the admin endpoint takes it as JSON
/// (`{"action": "failNext", "verb": "get", "resource": "configmaps", "code": 503, "count": 2}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "action",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Fault {
    /// Answer the next `count` requests matching `verb` and `resource` (either may be left out
    /// to match any) with a Status of `code`.
    FailNext {
        #[serde(default)]
        verb: Option<String>,
        #[serde(default)]
        resource: Option<String>,
        code: u16,
        #[serde(default = "one")]
        count: u32,
    },
    /// Delay every matching request by `millis` before it is handled.
    Latency {
        #[serde(default)]
        verb: Option<String>,
        #[serde(default)]
        resource: Option<String>,
        millis: u64,
    },
    /// End every open watch stream; clients resume from their last resourceVersion.
    CloseWatches,
    /// Drop the watch history: resuming from any earlier resourceVersion gets 410 Expired.
    Compact,
    /// Drop every connection, as a restarted API server would; with `keep_store: false` the
    /// objects are lost too (back to the built-in namespaces).
    Restart {
        #[serde(default)]
        keep_store: bool,
    },
    /// Remove every pending request fault.
    Clear,
}

fn one() -> u32 {
    1
}

#[derive(Debug)]
struct Rule {
    verb: Option<String>,
    resource: Option<String>,
    kind: RuleKind,
}

#[derive(Debug)]
enum RuleKind {
    Fail { code: u16, remaining: u32 },
    Delay(Duration),
}

impl Rule {
    fn matches(&self, verb: &str, resource: &str) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// The pending request faults.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    rules: Mutex<Vec<Rule>>,
}

impl Faults {
    /// Record a request fault; server-wide faults are not handled here.
    pub(crate) fn add(&self, fault: &Fault) -> Result<(), ApiError> {
        let rule = match fault {
            Fault::FailNext {
                verb,
                resource,
                code,
                count,
            } => {
                if !(400..=599).contains(code) {
                    return Err(ApiError::BadRequest(format!(
                        "fault code {code} is not an HTTP error (400-599)"
                    )));
                }
                Rule {
                    verb: verb.clone(),
                    resource: resource.clone(),
                    kind: RuleKind::Fail {
                        code: *code,
                        remaining: *count,
                    },
                }
            }
            Fault::Latency {
                verb,
                resource,
                millis,
            } => Rule {
                verb: verb.clone(),
                resource: resource.clone(),
                kind: RuleKind::Delay(Duration::from_millis(*millis)),
            },
            Fault::Clear => {
                self.lock().clear();
                return Ok(());
            }
            _ => return Ok(()),
        };
        self.lock().push(rule);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.rules.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What happens to a request: a delay to wait first, and an error to answer with.
    pub(crate) fn on_request(&self, verb: &str, resource: &str) -> (Duration, Option<ApiError>) {
        let mut rules = self.lock();
        let mut delay = Duration::ZERO;
        let mut failure = None;
        for rule in rules.iter_mut().filter(|r| r.matches(verb, resource)) {
            match &mut rule.kind {
                RuleKind::Delay(d) => delay += *d,
                RuleKind::Fail { code, remaining } if failure.is_none() && *remaining > 0 => {
                    *remaining -= 1;
                    failure = Some(ApiError::Injected {
                        code: *code,
                        message: format!("injected fault: {verb} {resource} answered {code}"),
                    });
                }
                RuleKind::Fail { .. } => {}
            }
        }
        rules.retain(|r| !matches!(r.kind, RuleKind::Fail { remaining: 0, .. }));
        (delay, failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_next_counts_down_and_matches_by_verb_and_resource() {
        let faults = Faults::default();
        let fault: Fault = serde_json::from_str(
            r#"{"action":"failNext","verb":"get","resource":"configmaps","code":503,"count":2}"#,
        )
        .unwrap();
        faults.add(&fault).unwrap();
        assert!(faults.on_request("list", "configmaps").1.is_none());
        assert!(faults.on_request("get", "secrets").1.is_none());
        assert_eq!(faults.on_request("get", "configmaps").1.unwrap().code(), 503);
        assert_eq!(
            faults.on_request("get", "configmaps").1.unwrap().reason(),
            "ServiceUnavailable"
        );
        assert!(faults.on_request("get", "configmaps").1.is_none());
    }

    #[test]
    fn bad_faults_are_refused() {
        assert!(
            Faults::default()
                .add(&Fault::FailNext {
                    verb: None,
                    resource: None,
                    code: 200,
                    count: 1
                })
                .is_err()
        );
        assert!(serde_json::from_str::<Fault>(r#"{"action":"explode"}"#).is_err());
        let restart: Fault = serde_json::from_str(r#"{"action":"restart","keepStore":true}"#).unwrap();
        assert_eq!(restart, Fault::Restart { keep_store: true });
    }
}

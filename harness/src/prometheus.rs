//! Prometheus, as far as scenarios need it: it scrapes the machine-config controller's
//! `/metrics` page over HTTP at each instant the simulated clock stops at, and evaluates the two
//! `MachineConfigControllerPausedPoolKubeletCA` rules over those samples at simulated time
//! (release-4.12 `install/0000_90_machine-config-operator_01_prometheus-rules.yaml`).
//!
//! It is an observer: it knows the metric only by the name the rules use, never through the
//! controller's code, so a controller that exports the wrong thing is caught.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use time::OffsetDateTime;

/// The gauge the rules read, by the name the rules file uses.
pub const PAUSED_POOL_KUBELET_CA: &str = "machine_config_controller_paused_pool_kubelet_ca";
/// The alert both rules raise.
pub const PAUSED_POOL_ALERT: &str = "MachineConfigControllerPausedPoolKubeletCA";

/// GET `http://<addr>/metrics`; the page, or why not.
pub async fn scrape(addr: SocketAddr) -> Result<String, String> {
    // The controller answers at once; one that does not must not hold the step forever.
    const SCRAPE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
    tokio::time::timeout(SCRAPE_TIMEOUT, scrape_once(addr))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "GET http://{addr}/metrics: no answer within {SCRAPE_TIMEOUT:?}"
            ))
        })
}

async fn scrape_once(addr: SocketAddr) -> Result<String, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
    tokio::spawn(connection);
    let request = hyper::Request::get("/metrics")
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("{addr}: {e}"))?
        .to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    if !status.is_success() {
        return Err(format!("GET http://{addr}/metrics: {status}: {text}"));
    }
    Ok(text)
}

/// The value of `name{label="value"}` in a Prometheus text page.
pub fn sample(page: &str, name: &str, label: (&str, &str)) -> Option<f64> {
    let series = format!("{name}{{{}=\"{}\"}}", label.0, label.1);
    page.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(&series)?.trim().parse().ok())
}

/// Where an alert stands at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertState {
    Inactive,
    Pending,
    Firing,
}

impl std::fmt::Display for AlertState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AlertState::Inactive => "inactive",
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
        })
    }
}

/// The two rules of group `mcc-paused-pool-kubelet-ca`, both `for: 60m`:
/// - warning: `max by (namespace,pool) (last_over_time(machine_config_controller_paused_pool_kubelet_ca[5m])) > 0`
/// - critical: `max by (namespace,pool) (last_over_time(…[5m]) - time()) < (86400 * 14) AND … > 0`
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Warning,
    Critical,
}

/// How long a rule's expression holds before it fires (`for: 60m`).
pub const FOR: time::Duration = time::Duration::minutes(60);
const CRITICAL_WITHIN: time::Duration = time::Duration::days(14);

/// Scraped samples per pool at simulated instants, and the rules over them. Between scrapes a
/// gauge keeps its value: the controller changes it only in passes, which happen where the clock
/// stops, and every stop is scraped. (`last_over_time(…[5m])` only bridges gaps between
/// scrapes, so the step function is exact.)
#[derive(Debug, Default, Clone)]
pub struct Prometheus {
    series: BTreeMap<String, Vec<(OffsetDateTime, f64)>>,
}

impl Prometheus {
    /// Record a scraped page at `at`.
    pub fn record(&mut self, at: OffsetDateTime, page: &str) {
        let prefix = format!("{PAUSED_POOL_KUBELET_CA}{{pool=\"");
        for line in page.lines().filter(|l| !l.starts_with('#')) {
            let Some(rest) = line.strip_prefix(&prefix) else {
                continue;
            };
            let Some((pool, value)) = rest.split_once("\"}") else {
                continue;
            };
            let Ok(value) = value.trim().parse::<f64>() else {
                continue;
            };
            let series = self.series.entry(pool.to_string()).or_default();
            if series.last().is_none_or(|(_, v)| *v != value) {
                series.push((at, value));
            }
        }
    }

    /// The rule's state for `pool` at `now`: inactive while its expression is false, pending
    /// until it has held for 60 minutes, then firing.
    pub fn alert(&self, severity: Severity, pool: &str, now: OffsetDateTime) -> AlertState {
        self.alert_since(severity, pool, now).0
    }

    /// The rule's state for `pool` at `now`, and since when its expression has held (pending
    /// from then, firing 60 minutes later); `None` while inactive.
    pub fn alert_since(
        &self,
        severity: Severity,
        pool: &str,
        now: OffsetDateTime,
    ) -> (AlertState, Option<OffsetDateTime>) {
        let inactive = (AlertState::Inactive, None);
        let Some(series) = self.series.get(pool) else {
            return inactive;
        };
        let segments: Vec<(OffsetDateTime, OffsetDateTime, f64)> = series
            .iter()
            .enumerate()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(i, (at, v))| {
                let end = series.get(i + 1).map_or(now, |(next, _)| (*next).min(now));
                (*at, end, *v)
            })
            .collect();
        // Where, within a segment, the expression is true: from `start` to the segment's end.
        let true_from = |(from, _, value): (OffsetDateTime, OffsetDateTime, f64)| -> Option<OffsetDateTime> {
            if value <= 0.0 {
                return None;
            }
            match severity {
                Severity::Warning => Some(from),
                Severity::Critical => {
                    let expiry = OffsetDateTime::from_unix_timestamp(value as i64).ok()?;
                    Some(from.max(expiry - CRITICAL_WITHIN + time::Duration::SECOND))
                }
            }
        };
        let Some(&last) = segments.last() else {
            return inactive;
        };
        let Some(mut since) = true_from(last).filter(|s| *s <= now) else {
            return inactive;
        };
        for &segment in segments.iter().rev().skip(1) {
            if since > segment.1 {
                break; // a gap: the expression started holding within the later segment
            }
            match true_from(segment) {
                Some(start) if start < segment.1 => since = start,
                _ => break,
            }
        }
        let state = if now - since >= FOR {
            AlertState::Firing
        } else {
            AlertState::Pending
        };
        (state, Some(since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::SIMULATION_EPOCH;
    use time::Duration;

    fn go_float(v: f64) -> String {
        crate::cluster::metrics::go_float(v)
    }

    #[test]
    fn warning_fires_after_an_hour_critical_an_hour_into_the_last_14_days() {
        let t0 = SIMULATION_EPOCH;
        let expiry = t0 + Duration::days(75);
        let mut p = Prometheus::default();
        p.record(
            t0,
            "machine_config_controller_paused_pool_kubelet_ca{pool=\"worker\"} 0\n",
        );
        let paused = t0 + Duration::days(2);
        p.record(
            paused,
            &format!(
                "machine_config_controller_paused_pool_kubelet_ca{{pool=\"worker\"}} {}\n",
                go_float(expiry.unix_timestamp() as f64)
            ),
        );
        use AlertState::*;
        assert_eq!(
            p.alert(Severity::Warning, "worker", t0 + Duration::days(1)),
            Inactive
        );
        assert_eq!(
            p.alert(Severity::Warning, "worker", paused + Duration::minutes(59)),
            Pending
        );
        assert_eq!(
            p.alert(Severity::Warning, "worker", paused + Duration::minutes(60)),
            Firing
        );
        // Since when: the scrape that first saw the gauge above 0 (warning), and the first
        // second of the last 14 days (critical).
        assert_eq!(
            p.alert_since(Severity::Warning, "worker", paused + Duration::days(3)),
            (Firing, Some(paused))
        );
        assert_eq!(
            p.alert_since(Severity::Critical, "worker", expiry - Duration::days(1)),
            (Firing, Some(expiry - Duration::days(14) + Duration::SECOND))
        );
        assert_eq!(
            p.alert_since(Severity::Warning, "worker", t0 + Duration::days(1)),
            (Inactive, None)
        );
        assert_eq!(
            p.alert(Severity::Critical, "worker", paused + Duration::days(10)),
            Inactive
        );
        let last_14 = expiry - Duration::days(14);
        assert_eq!(
            p.alert(Severity::Critical, "worker", last_14),
            Inactive,
            "14 days left is not < 14 days"
        );
        assert_eq!(
            p.alert(Severity::Critical, "worker", last_14 + Duration::minutes(59)),
            Pending
        );
        assert_eq!(
            p.alert(Severity::Critical, "worker", last_14 + Duration::minutes(61)),
            Firing
        );
        // Unpaused: back to 0, both inactive.
        let unpaused = last_14 + Duration::hours(2);
        p.record(
            unpaused,
            "machine_config_controller_paused_pool_kubelet_ca{pool=\"worker\"} 0\n",
        );
        assert_eq!(p.alert(Severity::Warning, "worker", unpaused), Inactive);
        assert_eq!(p.alert(Severity::Critical, "worker", unpaused), Inactive);
        assert_eq!(p.alert(Severity::Warning, "master", unpaused), Inactive);
    }
}

//! The machine-config controller's Prometheus endpoint and what scrapes it (MCO
//! `pkg/controller/common/metrics.go`, `node_controller.go setPendingFileMetrics`,
//! `install/0000_90_machine-config-operator_01_prometheus-rules.yaml`; mco-source.md §3).
//!
//! - `ControllerMetrics`: the gauges, served as Prometheus text on `http://127.0.0.1:<port>/metrics`.
//! - `scrape`: a plain HTTP GET of that page, as Prometheus makes it.
//! - `Prometheus`: the samples scraped at each instant the simulated clock stops at, and the two
//!   `MachineConfigControllerPausedPoolKubeletCA` rules evaluated over them at simulated time.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// The 4.11–4.12 gauge: NotAfter (unix seconds) of the newest kube-apiserver-to-kubelet signer
/// in a paused pool's current config while a new bundle waits behind the pause; 0 otherwise.
pub const PAUSED_POOL_KUBELET_CA: &str = "machine_config_controller_paused_pool_kubelet_ca";
pub const PAUSED_POOL_KUBELET_CA_HELP: &str = "Set to the unix timestamp in utc of the current certificate expiry date if a certificate rotation is pending in specified paused pool";
/// The alert both rules raise.
pub const PAUSED_POOL_ALERT: &str = "MachineConfigControllerPausedPoolKubeletCA";

/// The controller's gauges, shared by the controller (writer) and its HTTP endpoint.
#[derive(Clone, Default)]
pub struct ControllerMetrics {
    paused_pool_kubelet_ca: Arc<Mutex<BTreeMap<String, f64>>>,
}

impl ControllerMetrics {
    pub fn set_paused_pool_kubelet_ca(&self, pool: &str, value: f64) {
        self.paused_pool_kubelet_ca
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(pool.to_string(), value);
    }

    pub fn paused_pool_kubelet_ca(&self, pool: &str) -> Option<f64> {
        self.paused_pool_kubelet_ca
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(pool)
            .copied()
    }

    /// The Prometheus text exposition of every gauge set so far.
    pub fn render(&self) -> String {
        let gauges = self
            .paused_pool_kubelet_ca
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if gauges.is_empty() {
            return String::new();
        }
        let mut out = format!(
            "# HELP {PAUSED_POOL_KUBELET_CA} {PAUSED_POOL_KUBELET_CA_HELP}\n# TYPE {PAUSED_POOL_KUBELET_CA} gauge\n"
        );
        for (pool, value) in gauges.iter() {
            out.push_str(&format!(
                "{PAUSED_POOL_KUBELET_CA}{{pool=\"{pool}\"}} {}\n",
                go_float(*value)
            ));
        }
        out
    }

    /// Serve `/metrics` on 127.0.0.1 (an ephemeral port) until `stop`.
    pub async fn serve(&self, stop: CancellationToken) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let metrics = self.clone();
        tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    _ = stop.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => continue,
                    },
                };
                let metrics = metrics.clone();
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let metrics = metrics.clone();
                            async move {
                                let (status, body) = if req.uri().path() == "/metrics" {
                                    (hyper::StatusCode::OK, metrics.render())
                                } else {
                                    (hyper::StatusCode::NOT_FOUND, "404 page not found\n".to_string())
                                };
                                hyper::Response::builder()
                                    .status(status)
                                    .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                                    .body(Full::new(Bytes::from(body)))
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(addr)
    }
}

/// Go's `strconv.FormatFloat(v, 'g', -1, 64)`, which client_golang writes values with:
/// exponent form from 1e21 and below 1e-4 … and, for the shortest form, from 1e6 (`1.7990136e+09`).
pub fn go_float(value: f64) -> String {
    if value == 0.0 {
        return "0".into();
    }
    let exponent = value.abs().log10().floor() as i32;
    if (-4..6).contains(&exponent) {
        return format!("{value}");
    }
    let text = format!("{value:e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// GET `http://<addr>/metrics`; the page, or why not.
pub async fn scrape(addr: SocketAddr) -> Result<String, String> {
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

const FOR: time::Duration = time::Duration::minutes(60);
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
        let Some(series) = self.series.get(pool) else {
            return AlertState::Inactive;
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
            return AlertState::Inactive;
        };
        let Some(mut since) = true_from(last).filter(|s| *s <= now) else {
            return AlertState::Inactive;
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
        if now - since >= FOR {
            AlertState::Firing
        } else {
            AlertState::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::SIMULATION_EPOCH;
    use time::Duration;

    #[test]
    fn values_print_as_client_golang_prints_them() {
        assert_eq!(go_float(0.0), "0");
        assert_eq!(go_float(1_799_013_600.0), "1.7990136e+09");
        assert_eq!(go_float(1_700_000_000.0), "1.7e+09");
        assert_eq!(go_float(42.0), "42");
    }

    #[test]
    fn the_page_and_a_sample() {
        let m = ControllerMetrics::default();
        m.set_paused_pool_kubelet_ca("worker", 1_799_013_600.0);
        m.set_paused_pool_kubelet_ca("master", 0.0);
        let page = m.render();
        assert!(page.contains("# TYPE machine_config_controller_paused_pool_kubelet_ca gauge\n"));
        assert!(
            page.contains(
                "machine_config_controller_paused_pool_kubelet_ca{pool=\"worker\"} 1.7990136e+09\n"
            )
        );
        assert_eq!(
            sample(&page, PAUSED_POOL_KUBELET_CA, ("pool", "worker")),
            Some(1_799_013_600.0)
        );
        assert_eq!(
            sample(&page, PAUSED_POOL_KUBELET_CA, ("pool", "master")),
            Some(0.0)
        );
        assert_eq!(sample(&page, PAUSED_POOL_KUBELET_CA, ("pool", "infra")), None);
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

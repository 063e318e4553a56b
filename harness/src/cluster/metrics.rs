//! The machine-config controller's Prometheus endpoint and what scrapes it (MCO
//! `pkg/controller/common/metrics.go`, `node_controller.go setPendingFileMetrics`,
//! `install/0000_90_machine-config-operator_01_prometheus-rules.yaml`; mco-source.md §3).
//!
//! `ControllerMetrics`: the gauges, served as Prometheus text on `http://127.0.0.1:<port>/metrics`.
//! What scrapes the page and evaluates the alert rules over it is the observer's, not the
//! controller's: `crate::prometheus`.

use bytes::Bytes;
use http_body_util::Full;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The 4.11–4.12 gauge: NotAfter (unix seconds) of the newest kube-apiserver-to-kubelet signer
/// in a paused pool's current config while a new bundle waits behind the pause; 0 otherwise.
pub const PAUSED_POOL_KUBELET_CA: &str = "machine_config_controller_paused_pool_kubelet_ca";
pub const PAUSED_POOL_KUBELET_CA_HELP: &str = "Set to the unix timestamp in utc of the current certificate expiry date if a certificate rotation is pending in specified paused pool";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::sample;

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
}

//! What upstream's `Daemon.Run` does with errors from its informers (release-4.16
//! daemon.go:1358-1429): every `utilruntime.HandleError` (a reflector's "Failed to watch …",
//! among others) is piped to the main loop, which logs "Got an error from auxiliary tools". If
//! the certificate writer deferred a kubelet restart (`deferKubeletRestart`: a serving-CA change
//! whose added CAs are all ones it skips, or that added none) and the error mentions x509, the
//! daemon re-bootstraps the kubelet — "Re-bootstrapping kubelet in response to deferred
//! kubeconfig changes and <error>", removes `/var/lib/kubelet/kubeconfig`, `systemctl restart
//! kubelet`, waits (polling every 10 s, up to 2 minutes) for the kubelet to write a new one through its
//! TLS bootstrap — and then ends with `ErrAuxiliary`, so its pod restarts.
//!
//! Upstream's other trigger, `stopCh`, is the context its `start` cancels only once `Run` has
//! returned, so it never fires while the daemon runs; a SIGTERM returns without re-bootstrapping.
//! A Go client's x509 failure is a rustls `invalid peer certificate` here.

use super::AgentEnv;
use crate::node::seed::KUBELET_KUBECONFIG;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Upstream's `ErrAuxiliary`.
pub const ERR_AUXILIARY: &str = "Error from auxiliary packages";

/// How often and how long the daemon waits for the kubelet's new kubeconfig. Upstream polls
/// every 10 s, logging each miss; the reference logs at the same pace but wakes as soon as the
/// kubeconfig's directory changes (`node::dir_watch`).
const REBOOTSTRAP_POLL: Duration = Duration::from_secs(10);
const REBOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(120);

/// The daemon's shared state for its main loop: the deferred restart and the error pipe.
#[derive(Default)]
pub struct Auxiliary {
    /// Upstream `deferKubeletRestart`.
    defer_kubelet_restart: AtomicBool,
    errors: Mutex<VecDeque<String>>,
    arrived: tokio::sync::Notify,
}

impl Auxiliary {
    /// The certificate writer read kubeconfig-data again: whether the kubelet's restart waits.
    pub fn set_deferred(&self, deferred: bool) {
        self.defer_kubelet_restart.store(deferred, Ordering::SeqCst);
    }

    /// An error from a watch or list, as `utilruntime.HandleError` hands it on.
    pub fn report(&self, error: &str) {
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(error.to_string());
        self.arrived.notify_one();
    }

    async fn next(&self) -> String {
        loop {
            if let Some(e) = self.errors.lock().unwrap_or_else(|p| p.into_inner()).pop_front() {
                return e;
            }
            self.arrived.notified().await;
        }
    }
}

/// An error with its causes, as a Go error's text carries what it wraps (`a: b: c`).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Whether an error is one upstream's `strings.Contains(…, "x509")` would match: a certificate
/// the client could not verify.
pub fn is_x509(error: &str) -> bool {
    let error = error.to_lowercase();
    error.contains("x509") || error.contains("invalid peer certificate")
}

/// The main loop's error handling: returns the error the daemon ends with.
pub async fn until_fatal(env: &AgentEnv) -> String {
    loop {
        let error = env.aux.next().await;
        env.log(&format!("Got an error from auxiliary tools: {error}"));
        let deferred = env.aux.defer_kubelet_restart.load(Ordering::SeqCst);
        if deferred && is_x509(&error) && env.faults().rebootstraps_kubelet() {
            env.log_system(&format!(
                "Re-bootstrapping kubelet in response to deferred kubeconfig changes and {error}"
            ));
            return match kubelet_rebootstrap(env).await {
                Ok(()) => ERR_AUXILIARY.to_string(),
                Err(e) => e,
            };
        }
    }
}

/// Upstream `kubeletRebootstrap`.
async fn kubelet_rebootstrap(env: &AgentEnv) -> Result<(), String> {
    env.aux.set_deferred(false);
    std::fs::remove_file(env.path(KUBELET_KUBECONFIG))
        .map_err(|e| format!("could not remove kubelet's kubeconfig file: {e}"))?;
    // Watched before the restart, so the kubelet's new kubeconfig cannot come unseen.
    let changed = std::sync::Arc::new(tokio::sync::Notify::new());
    let on_change = changed.clone();
    let dir = env
        .path(KUBELET_KUBECONFIG)
        .parent()
        .map(|d| d.to_path_buf())
        .unwrap_or_default();
    let watch =
        crate::node::dir_watch::watch_dirs(std::slice::from_ref(&dir), move |_| on_change.notify_one());
    if let Err(e) = &watch {
        env.log(&format!(
            "not watching {} ({e}): checking every {} s",
            dir.display(),
            REBOOTSTRAP_POLL.as_secs()
        ));
    }
    let out = env.host.systemctl(&["restart", "kubelet"]).await?;
    if out.exit_code != 0 {
        return Err(format!(
            "systemctl restart kubelet: exit {}: {}",
            out.exit_code,
            out.stderr.trim()
        ));
    }
    let deadline = tokio::time::Instant::now() + REBOOTSTRAP_TIMEOUT;
    let mut next_poll = tokio::time::Instant::now() + REBOOTSTRAP_POLL;
    loop {
        // Wake on a change in the kubeconfig's directory, or at upstream's poll, which logs.
        tokio::select! {
            () = changed.notified() => {}
            () = tokio::time::sleep_until(next_poll.min(deadline)) => {}
        }
        let polled = tokio::time::Instant::now() >= next_poll;
        match std::fs::metadata(env.path(KUBELET_KUBECONFIG)) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if polled {
                    env.log(&format!("Failed to get kubeconfig file: {e}"));
                    next_poll += REBOOTSTRAP_POLL;
                }
            }
            Err(e) => {
                return Err(format!(
                    "something went wrong while waiting for kubeconfig file to generate: unexpected error reading kubeconfig file, {e}"
                ));
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(
                "something went wrong while waiting for kubeconfig file to generate: context deadline exceeded"
                    .into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_failures_read_as_upstream_s_x509_errors() {
        assert!(is_x509(
            "Get \"https://api-int:6443/api/v1/nodes\": tls: failed to verify certificate: x509: certificate signed by unknown authority"
        ));
        assert!(is_x509(
            "failed to perform initial object list: HyperError: error trying to connect: invalid peer certificate: UnknownIssuer"
        ));
        assert!(!is_x509("connection refused"));
    }

    #[tokio::test]
    async fn errors_reach_the_loop_in_order_whenever_they_come() {
        let aux = Auxiliary::default();
        aux.report("first");
        aux.report("second");
        assert_eq!(aux.next().await, "first");
        assert_eq!(aux.next().await, "second");
        let waiting = aux.next();
        tokio::pin!(waiting);
        assert!(futures::poll!(&mut waiting).is_pending());
        aux.report("third");
        assert_eq!(waiting.await, "third");
    }
}

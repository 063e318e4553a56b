//! What the cluster side's controllers fail with, and whether a failure is worth another try.
//! Every controller returns it; it must not reach for any of them.

use crate::pki::PkiError;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Pki(#[from] PkiError),
    #[error("{0} does not exist")]
    Missing(String),
    #[error("fixture: {0}")]
    Fixture(String),
    /// What the operator model could not do with the cluster's objects, in upstream's words.
    #[error("operator: {0}")]
    Operator(String),
    /// A cache that did not catch up with the API server in time.
    #[error("{0}")]
    Stale(String),
}

impl ClusterError {
    pub fn kube(what: String, source: kube::Error) -> Self {
        ClusterError::Kube { what, source }
    }

    /// A request that never got an answer (a connection closed under it, as when the API server
    /// restarts): worth trying again, as client-go's controllers requeue.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ClusterError::Kube {
                source: kube::Error::Service(_) | kube::Error::HyperError(_),
                ..
            }
        )
    }
}

/// Run `attempt` again after a transient error, backing off from 10 ms, at most five times.
pub async fn retry_transient<T, F, Fut>(mut attempt: F) -> Result<T, ClusterError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ClusterError>>,
{
    let mut pause = std::time::Duration::from_millis(10);
    for _ in 0..5 {
        match attempt().await {
            Err(e) if e.is_transient() => {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            done => return done,
        }
    }
    attempt().await
}

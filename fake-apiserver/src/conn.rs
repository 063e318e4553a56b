//! One connection's life after its TLS handshake, as kube-apiserver's Go server leads it
//! (`net/http` with the timeouts apiserver `pkg/server/secure_serving.go` sets):
//!
//! - **Read-header timeout** (32 s): a new connection must deliver a whole request header
//!   within it, and so must a kept-alive one once the first bytes of its next request arrive.
//!   Go also bounds the TLS handshake by it.
//! - **Idle timeout** (90 s, HTTP/1.1 and h2): a connection with no request in flight and no
//!   byte of a next one is closed after it (h2 with a GOAWAY).
//! - No bound while a request is in flight: a watch or a slow body runs as long as it runs.
//! - **Lingering close**: when the connection ends, the server stops writing (TLS
//!   `close_notify`, TCP FIN) and reads and drops whatever the client still sends, for a
//!   little while or until the client closes, before it lets the socket go. A socket closed
//!   with unread bytes answers the client with a reset, and the reset takes the answer the
//!   client had not yet read with it (Go: `closeWriteAndWait`).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The connection timeouts; the defaults are kube-apiserver's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub read_header: Duration,
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            // secure_serving.go: `ReadHeaderTimeout: 32 * time.Second`, `IdleTimeout: 90 *
            // time.Second` (and the same idle timeout for h2).
            read_header: Duration::from_secs(32),
            idle: Duration::from_secs(90),
        }
    }
}

/// How long a closing connection reads what its client still sends.
const LINGER: Duration = Duration::from_secs(2);

#[derive(Debug)]
struct State {
    in_flight: usize,
    /// Whether any request has come yet.
    served: bool,
    /// When the connection began or its last request ended.
    idle_since: Instant,
    /// When the first byte of the next request came, while none is in flight.
    first_byte: Option<Instant>,
}

/// What the connection's watchdog watches: requests in flight and bytes between them.
#[derive(Debug)]
pub(crate) struct Activity {
    state: Mutex<State>,
    changed: Notify,
}

impl Activity {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Activity {
            state: Mutex::new(State {
                in_flight: 0,
                served: false,
                idle_since: Instant::now(),
                first_byte: None,
            }),
            changed: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request arrived; it is in flight until the guard (kept by its response body) drops.
    pub(crate) fn begin(self: &Arc<Self>) -> InFlight {
        {
            let mut state = self.state();
            state.in_flight += 1;
            state.served = true;
            state.first_byte = None;
        }
        self.changed.notify_waiters();
        InFlight(self.clone())
    }

    fn bytes_arrived(&self) {
        let mut state = self.state();
        if state.in_flight == 0 && state.served && state.first_byte.is_none() {
            state.first_byte = Some(Instant::now());
            drop(state);
            self.changed.notify_waiters();
        }
    }

    /// When the connection is to be closed as things stand, if at all.
    fn deadline(&self, timeouts: Timeouts, h2: bool) -> Option<Instant> {
        let state = self.state();
        if state.in_flight > 0 {
            return None;
        }
        let (from, after) = if h2 {
            (state.idle_since, timeouts.idle)
        } else if !state.served {
            (state.idle_since, timeouts.read_header)
        } else if let Some(first) = state.first_byte {
            (first, timeouts.read_header)
        } else {
            (state.idle_since, timeouts.idle)
        };
        bound(after).map(|after| from + after)
    }

    /// Resolves when the connection has outstayed its timeouts.
    pub(crate) async fn expired(&self, timeouts: Timeouts, h2: bool) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.deadline(timeouts, h2) {
                None => changed.await,
                Some(at) if at <= Instant::now() => return,
                Some(at) => {
                    tokio::select! {
                        _ = changed => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
            }
        }
    }
}

/// A bound past any test's life, so that no timeout overflows the clock.
const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);

/// A timeout as Go's server takes it: zero is none.
pub(crate) fn bound(timeout: Duration) -> Option<Duration> {
    (!timeout.is_zero()).then(|| timeout.min(FAR))
}

/// A request in flight; dropping it ends the request.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut state = self.0.state();
            state.in_flight = state.in_flight.saturating_sub(1);
            if state.in_flight == 0 {
                state.idle_since = Instant::now();
                state.first_byte = None;
            }
        }
        self.0.changed.notify_waiters();
    }
}

/// A response body that keeps its request in flight until it is sent or dropped.
pub(crate) struct Held {
    body: crate::http::Body,
    _in_flight: InFlight,
}

impl Held {
    pub(crate) fn new(body: crate::http::Body, in_flight: InFlight) -> Self {
        Held {
            body,
            _in_flight: in_flight,
        }
    }
}

impl hyper::body::Body for Held {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The connection's stream: tells `Activity` of bytes between requests, and lingers when
/// dropped.
pub(crate) struct ConnIo<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> {
    inner: Option<T>,
    activity: Arc<Activity>,
}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> ConnIo<T> {
    pub(crate) fn new(inner: T, activity: Arc<Activity>) -> Self {
        ConnIo {
            inner: Some(inner),
            activity,
        }
    }

    fn inner(&mut self) -> io::Result<&mut T> {
        self.inner
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncRead for ConnIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let inner = match self.inner() {
            Ok(inner) => inner,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let polled = Pin::new(inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_arrived();
        }
        polled
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncWrite for ConnIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.inner() {
            Ok(inner) => Pin::new(inner).poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.inner() {
            Ok(inner) => Pin::new(inner).poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.is_write_vectored())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.inner() {
            Ok(inner) => Pin::new(inner).poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.inner() {
            Ok(inner) => Pin::new(inner).poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Drop for ConnIo<T> {
    fn drop(&mut self) {
        let Some(io) = self.inner.take() else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(linger(io));
        }
    }
}

/// Stop writing, then read and drop what the client still sends until it closes or `LINGER`
/// is up; then the socket closes with nothing unread, so the client sees an end, not a reset.
async fn linger<T: AsyncRead + AsyncWrite + Unpin>(mut io: T) {
    let _ = tokio::time::timeout(LINGER, async {
        let _ = io.shutdown().await;
        let mut sink = vec![0u8; 64 * 1024];
        while let Ok(n) = io.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timeouts = Timeouts {
        read_header: Duration::from_secs(32),
        idle: Duration::from_secs(90),
    };

    /// `deadline` lies `after` past a moment between `from` and now.
    fn within(deadline: Option<Instant>, from: Instant, after: Duration) -> bool {
        deadline.is_some_and(|d| d >= from + after && d <= Instant::now() + after)
    }

    #[test]
    fn deadlines_follow_the_go_server() {
        let from = Instant::now();
        let activity = Activity::new();
        assert!(
            within(activity.deadline(T, false), from, T.read_header),
            "a new connection"
        );
        assert!(
            within(activity.deadline(T, true), from, T.idle),
            "a new h2 connection"
        );
        let request = activity.begin();
        assert_eq!(activity.deadline(T, false), None, "a request in flight");
        assert_eq!(activity.deadline(T, true), None, "an h2 stream in flight");
        let ended = Instant::now();
        drop(request);
        assert!(within(activity.deadline(T, false), ended, T.idle), "idle");
        let arrived = Instant::now();
        activity.bytes_arrived();
        assert!(
            within(activity.deadline(T, false), arrived, T.read_header),
            "the next request's first bytes"
        );
        assert!(
            within(activity.deadline(T, true), ended, T.idle),
            "h2 has no read-header bound"
        );
        let none = Timeouts {
            read_header: Duration::ZERO,
            idle: Duration::ZERO,
        };
        assert_eq!(activity.deadline(none, false), None, "zero is no timeout");
        assert_eq!(activity.deadline(none, true), None, "zero is no timeout");
    }
}

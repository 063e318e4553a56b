//! The request body: read whole, under the size limit, by the handlers that take one; what no
//! handler read is settled after the reply is decided, as Go's `net/http` server settles it for
//! kube-apiserver: up to 256 KiB left unread is drained so the connection stays usable, more (or
//! a body the client holds back behind `Expect: 100-continue`, or one that broke, or one whose
//! declared length left to read is 256 KiB or more) closes the connection with `Connection:
//! close`, so a client never sends its next request down a connection the server is about to
//! drop; the close lingers (`crate::conn`) so the client reads the answer before it sees the
//! end.

use crate::error::ApiError;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Request, header};
use http_body_util::BodyExt;
use hyper::body::{Body as _, Incoming};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Go's `maxPostHandlerReadBytes`: how much an unread body may hold for the connection to be
/// kept (`net/http/server.go`).
const DRAIN_LIMIT: usize = 256 * 1024;

/// How long a client may take to send a body no handler wanted before the connection is
/// given up.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

enum State {
    Unread(Incoming),
    Read,
    /// Reading failed part way: what is left on the wire cannot be trusted.
    Broken,
}

/// A request's body, until a handler reads it or the reply settles it.
#[derive(Clone)]
pub(crate) struct PendingBody(Arc<Mutex<State>>);

impl PendingBody {
    pub(crate) fn new(body: Incoming) -> Self {
        PendingBody(Arc::new(Mutex::new(State::Unread(body))))
    }

    fn replace(&self, state: State) -> State {
        std::mem::replace(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()), state)
    }
}

/// A request body, read whole under the size limit.
pub(crate) struct RequestBody {
    pub content_type: Option<String>,
    pub bytes: Bytes,
}

pub(crate) async fn read_body(req: Request<PendingBody>, limit: usize) -> Result<RequestBody, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        // Left unread: the reply settles it.
        return Err(ApiError::TooLarge(format!("limit is {limit}")));
    }
    let pending = req.into_body();
    let State::Unread(mut body) = pending.replace(State::Read) else {
        return Ok(RequestBody {
            content_type,
            bytes: Bytes::new(),
        });
    };
    let mut bytes = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => {
                pending.replace(State::Broken);
                return Err(ApiError::BadRequest(format!("reading the request body: {e}")));
            }
        };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > limit {
                pending.replace(State::Unread(body));
                return Err(ApiError::TooLarge(format!("limit is {limit}")));
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(RequestBody {
        content_type,
        bytes: bytes.freeze(),
    })
}

/// Settle what no handler read; `false` when the connection must close after the reply.
pub(crate) async fn settle(pending: &PendingBody, headers: &HeaderMap) -> bool {
    let mut body = match pending.replace(State::Read) {
        State::Read => return true,
        State::Broken => return false,
        State::Unread(body) => body,
    };
    if body.is_end_stream() {
        return true;
    }
    let expects_continue = headers
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    if expects_continue {
        // The client waits for a 100 Continue it will not get; its body never comes.
        return false;
    }
    if body.size_hint().lower() >= DRAIN_LIMIT as u64 {
        // Declared too large to be worth reading: Go does not start (`unreadDataSizeLocked() >=
        // maxPostHandlerReadBytes`); the connection's lingering close reads it instead.
        return false;
    }
    let drain = async {
        let mut drained = 0usize;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return false };
            if let Ok(data) = frame.into_data() {
                drained += data.len();
                if drained > DRAIN_LIMIT {
                    return false;
                }
            }
        }
        true
    };
    tokio::time::timeout(DRAIN_TIMEOUT, drain).await.unwrap_or(false)
}

//! Watch streams: HTTP 200, chunked, one JSON event per line.
//!
//! Order of a stream: synthetic ADDED events (resourceVersion unset or "0", or a streaming
//! list), the BOOKMARK annotated `k8s.io/initial-events-end` for a streaming list, the replay
//! of every change after the requested resourceVersion, then live events. Other bookmarks, when
//! allowed, come as kube-apiserver's watch cache sends them: 2 s before the watch's deadline and
//! every minute, and only once the watched resource has changed since the watch began (the
//! cache drops a bookmark whose resourceVersion is not past the watch's). A bookmark carries
//! the resourceVersion of the last change to the resource this stream has seen, so a client
//! that resumes from one cannot skip an event. A watch from a
//! resourceVersion older than the history answers 200 with one `ERROR` event holding a 410
//! `Expired` Status, which is what makes kube's watcher relist. The stream ends at
//! `timeoutSeconds`, when the client goes, when the store's feed overruns it (the client
//! resumes from its last resourceVersion), or when the server closes every watch.

use super::Body;
use super::query::Query;
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::server::Shared;
use crate::store::{Event, EventType, Filter, StoredObject, WatchFrom};
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// kube-apiserver's default when a client sets no timeout (its `--min-request-timeout`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

pub fn start(
    shared: &Arc<Shared>,
    info: &ResourceInfo,
    filter: Filter,
    query: &Query,
    table: bool,
) -> Result<Response<Body>, ApiError> {
    let from = if query.send_initial_events {
        if query.resource_version_match.as_deref() != Some("NotOlderThan") {
            return Err(ApiError::invalid_options(
                "ListOptions",
                "FieldValueInvalid",
                "resourceVersionMatch",
                "Invalid value: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
                    .into(),
            ));
        }
        if !query.allow_watch_bookmarks {
            return Err(ApiError::invalid_options(
                "ListOptions",
                "FieldValueForbidden",
                "allowWatchBookmarks",
                "Forbidden: allowWatchBookmarks must be true when sendInitialEvents is set".into(),
            ));
        }
        WatchFrom::InitialEvents
    } else {
        match query.resource_version_number()? {
            None => WatchFrom::Current,
            Some(rv) => WatchFrom::After(rv),
        }
    };
    let started = match shared.store.watch(info, &filter, from) {
        Ok(s) => s,
        Err(gone @ ApiError::Gone(_)) => {
            let line = event_line("ERROR", &gone.status());
            return Ok(stream_response(futures::stream::once(async move { line })));
        }
        Err(e) => return Err(e),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let stream = Stream {
        info: info.clone(),
        filter,
        bookmarks: query.allow_watch_bookmarks,
        table,
        first_table: true,
        tx,
    };
    let timeout = query
        .timeout_seconds
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    let closing = shared.watches_closing();
    let bookmark_every = shared.bookmark_interval;
    tokio::spawn(stream.run(started, from, timeout, bookmark_every, closing));
    Ok(stream_response(futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|line| (line, rx)) },
    )))
}

fn stream_response(lines: impl futures::Stream<Item = Bytes> + Send + Sync + 'static) -> Response<Body> {
    use futures::StreamExt;
    let body = StreamBody::new(lines.map(|b| Ok::<_, Infallible>(Frame::data(b))));
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(BodyExt::boxed(body))
        .expect("static headers are valid")
}

fn event_line(type_: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": type_, "object": object})).expect("serialises");
    line.push(b'\n');
    Bytes::from(line)
}

/// The line for a stored object, reusing its serialised bytes.
fn object_line(type_: &str, object: &StoredObject) -> Bytes {
    let mut line = Vec::with_capacity(object.json.len() + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(type_.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(&object.json);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

struct Stream {
    info: ResourceInfo,
    filter: Filter,
    bookmarks: bool,
    table: bool,
    first_table: bool,
    tx: mpsc::Sender<Bytes>,
}

impl Stream {
    async fn run(
        mut self,
        started: crate::store::WatchStart,
        from: WatchFrom,
        timeout: Duration,
        bookmark_every: Duration,
        closing: tokio_util::sync::CancellationToken,
    ) {
        let mut live = started.live;
        let mut seen = started.start_rv;
        // The version the watch began at, and the last change to its resource since: a
        // bookmark goes out only once the second has passed the first.
        let began = match from {
            WatchFrom::After(rv) => rv.min(seen),
            WatchFrom::Current | WatchFrom::InitialEvents => seen,
        };
        let mut changed = began;
        for (type_, object) in &started.initial {
            if !self.send_object(*type_, object).await {
                return;
            }
        }
        if from == WatchFrom::InitialEvents && !self.send_bookmark(seen, true).await {
            return;
        }
        for event in &started.replay {
            changed = changed.max(event.rv);
            if !self.send_event(event).await {
                return;
            }
        }
        let start = tokio::time::Instant::now();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut next = next_bookmark(Duration::ZERO, timeout, bookmark_every).filter(|_| self.bookmarks);
        loop {
            let bookmark_due = async move {
                match next {
                    Some(at) => tokio::time::sleep_until(start + at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut deadline => return,
                _ = closing.cancelled() => return,
                _ = self.tx.closed() => return,
                _ = bookmark_due => {
                    if changed > began && !self.send_bookmark(changed, false).await {
                        return;
                    }
                    next = next_bookmark(start.elapsed(), timeout, bookmark_every);
                }
                received = live.recv() => match received {
                    Ok(event) => {
                        if event.rv <= seen {
                            continue;
                        }
                        seen = event.rv;
                        if event.resource == self.info.group_resource() {
                            changed = event.rv;
                        }
                        if !self.send_event(&event).await {
                            return;
                        }
                    }
                    // Overrun or shut down: end the stream; the client resumes from the last
                    // resourceVersion it saw and the history replays the rest.
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    }

    /// Send an event as this watch's filter sees it; false once the client has gone.
    async fn send_event(&mut self, event: &Event) -> bool {
        if event.resource != self.info.group_resource() {
            return true;
        }
        let now = self.filter.matches(&event.object);
        let before = event.previous.as_ref().is_some_and(|p| self.filter.matches(p));
        let type_ = match (event.type_, before, now) {
            (EventType::Added, _, true) => EventType::Added,
            (EventType::Deleted, _, true) => EventType::Deleted,
            (EventType::Modified, true, true) => EventType::Modified,
            (EventType::Modified, false, true) => EventType::Added,
            (EventType::Modified, true, false) => EventType::Deleted,
            _ => return true,
        };
        self.send_object(type_, &event.object).await
    }

    async fn send_object(&mut self, type_: EventType, object: &StoredObject) -> bool {
        let line = if self.table {
            let table = super::table::render_event(&self.info, object, self.first_table);
            self.first_table = false;
            event_line(type_.as_str(), &table)
        } else {
            object_line(type_.as_str(), object)
        };
        self.tx.send(line).await.is_ok()
    }

    async fn send_bookmark(&mut self, rv: u64, initial_events_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object =
            json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": metadata});
        self.tx.send(event_line("BOOKMARK", &object)).await.is_ok()
    }
}

/// When a watch that began `elapsed` ago next gets a bookmark, as kube-apiserver's watch cache
/// schedules it (apiserver `storage/cacher/cache_watcher.go`, `nextBookmarkTime`): a minute on
/// (`every`), or 2 s before the deadline if that comes first; never once that moment is past, so
/// a watch of 2 s or less gets none.
fn next_bookmark(elapsed: Duration, timeout: Duration, every: Duration) -> Option<Duration> {
    let before_deadline = timeout.checked_sub(BOOKMARK_BEFORE_DEADLINE)?;
    let next = (elapsed + every).min(before_deadline);
    (next > elapsed).then_some(next)
}

const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::next_bookmark;
    use std::time::Duration;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn bookmarks_come_every_minute_and_two_seconds_before_the_deadline() {
        let minute = s(60);
        let table = [
            // (elapsed, timeout, next)
            (s(0), s(1), None),
            (s(0), s(2), None),
            (s(0), s(4), Some(s(2))),
            (s(2), s(4), None),
            (s(0), s(290), Some(s(60))),
            (s(60), s(290), Some(s(120))),
            (s(240), s(290), Some(s(288))),
            (s(288), s(290), None),
            (s(300), s(290), None),
        ];
        for (elapsed, timeout, next) in table {
            assert_eq!(
                next_bookmark(elapsed, timeout, minute),
                next,
                "{elapsed:?} into a {timeout:?} watch"
            );
        }
    }
}

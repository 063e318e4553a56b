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
use crate::shared::Shared;
use crate::store::{Event, EventType, Filter, StoredObject, WatchFrom};
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// kube-apiserver's default when a client sets no timeout (its `--min-request-timeout`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// A watch on `info`'s objects that `filter` selects, from where `query` asks, written as a
/// stream of JSON events (Table rows when `table`).
pub(super) fn start(
    shared: &Arc<Shared>,
    info: &ResourceInfo,
    filter: Filter,
    query: &Query,
    table: bool,
) -> Result<Response<Body>, ApiError> {
    let from = watch_from(query)?;
    let timeout = timeout(query.timeout_seconds);
    if timeout.is_zero() {
        // Its deadline passed before it began: 1.36's handler times it out before the first
        // event.
        return Ok(stream_response(futures::stream::empty()));
    }
    let started = match shared.store.watch(info, &filter, from) {
        Ok(s) => s,
        Err(gone @ ApiError::Gone(_)) => {
            let line = event_line("ERROR", &gone.status());
            return Ok(stream_response(futures::stream::once(async move { line })));
        }
        Err(e) => return Err(e),
    };
    let start = tokio::time::Instant::now();
    let bookmark_every = shared.bookmark_interval;
    let first_bookmark =
        next_bookmark(Duration::ZERO, timeout, bookmark_every).filter(|_| query.allow_watch_bookmarks);
    let mut stream = Stream {
        info: info.clone(),
        resource: info.group_resource(),
        filter,
        table,
        first_table: true,
        queue: VecDeque::new(),
        live: started.live,
        seen: started.start_rv,
        began: 0,
        changed: 0,
        start,
        deadline: Box::pin(tokio::time::sleep_until(later(start, timeout))),
        next_bookmark: first_bookmark,
        // With no bookmark to come it is never polled; its instant is then the deadline's.
        bookmark_timer: Box::pin(tokio::time::sleep_until(later(
            start,
            first_bookmark.unwrap_or(timeout),
        ))),
        timeout,
        bookmark_every,
        closing: Box::pin(shared.watches_closing().cancelled_owned()),
    };
    stream.queue_backlog(from, &started.initial, &started.replay);
    // The stream is the response body itself, polled by the connection's own task: no task
    // and no channel per watch between the store's feed and the socket.
    Ok(stream_response(futures::stream::unfold(
        stream,
        |mut stream| async move {
            let line = stream.next_line().await?;
            Some((line, stream))
        },
    )))
}

/// Where a watch begins: a streaming list (`sendInitialEvents`, which needs
/// `resourceVersionMatch=NotOlderThan` and bookmarks), after the resourceVersion asked for,
/// or now.
fn watch_from(query: &Query) -> Result<WatchFrom, ApiError> {
    Ok(if query.send_initial_events {
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
    })
}

/// How long a watch runs, as 1.36's `handleWatch` reckons it: `timeoutSeconds` times
/// `time.Second` in Go's int64 nanoseconds (a product past its range wraps as Go's does; 1.36
/// answers `timeoutSeconds=9223372036854775807` with a watch of -1 s), the server's default when
/// that is zero, and zero (a deadline already past) when it is negative.
pub(crate) fn timeout(seconds: Option<i64>) -> Duration {
    match seconds.unwrap_or(0).wrapping_mul(1_000_000_000) {
        0 => DEFAULT_TIMEOUT,
        nanos => u64::try_from(nanos).map_or(Duration::ZERO, Duration::from_nanos),
    }
}

/// `start + after`, or a moment no test outlives when that is past the clock's range.
fn later(start: tokio::time::Instant, after: Duration) -> tokio::time::Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);
    start.checked_add(after.min(FAR)).unwrap_or(start)
}

fn stream_response(lines: impl futures::Stream<Item = Bytes> + Send + 'static) -> Response<Body> {
    use futures::StreamExt;
    let body = StreamBody::new(lines.map(|b| Ok::<_, Infallible>(Frame::data(b))));
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(BodyExt::boxed_unsync(body))
        .expect("static headers are valid")
}

fn event_line(type_: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": type_, "object": object})).expect("serialises");
    line.push(b'\n');
    Bytes::from(line)
}

/// One watch: what it still has to send from before it went live, and its live state.
struct Stream {
    info: ResourceInfo,
    /// The watched resource, made once (each event is compared with it).
    resource: crate::resource::GroupResource,
    filter: Filter,
    table: bool,
    first_table: bool,
    /// The initial events, the initial-events-end bookmark and the replay, in order.
    queue: VecDeque<Bytes>,
    live: broadcast::Receiver<Arc<Event>>,
    /// The last resourceVersion this stream has taken from the feed.
    seen: u64,
    began: u64,
    /// The last change to the watched resource this stream has seen.
    changed: u64,
    start: tokio::time::Instant,
    // The futures a stream waits on besides its feed are made once and kept (not made anew
    // for every event: with thousands of watches, each registration is a lock on a shared
    // list or the timer wheel).
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    next_bookmark: Option<Duration>,
    /// Armed at `start + next_bookmark` while there is one.
    bookmark_timer: std::pin::Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
    bookmark_every: Duration,
    closing: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl Stream {
    /// Sets the version the watch began at and the last change to its resource since (a
    /// bookmark goes out only once the second has passed the first), and queues what the
    /// stream sends before it goes live: the initial events, a streaming list's
    /// initial-events-end bookmark, then the replay of the changes after the version asked for.
    fn queue_backlog(
        &mut self,
        from: WatchFrom,
        initial: &[(EventType, Arc<StoredObject>)],
        replay: &[Arc<Event>],
    ) {
        self.began = match from {
            WatchFrom::After(rv) => rv.min(self.seen),
            WatchFrom::Current | WatchFrom::InitialEvents => self.seen,
        };
        self.changed = self.began;
        for (type_, object) in initial {
            let line = self.object_line(*type_, object);
            self.queue.push_back(line);
        }
        if from == WatchFrom::InitialEvents {
            let line = self.bookmark_line(self.seen, true);
            self.queue.push_back(line);
        }
        for event in replay {
            self.changed = self.changed.max(event.rv);
            if let Some(line) = self.event_line(event) {
                self.queue.push_back(line);
            }
        }
    }

    /// The next line to send, or `None` when the stream ends: at its deadline, when the server
    /// closes every watch, or when the store's feed overruns it (the client resumes from the
    /// last resourceVersion it saw and the history replays the rest). A client that goes drops
    /// the body, and this with it.
    async fn next_line(&mut self) -> Option<Bytes> {
        if let Some(line) = self.queue.pop_front() {
            return Some(line);
        }
        loop {
            let armed = self.next_bookmark.is_some();
            tokio::select! {
                _ = self.deadline.as_mut() => return None,
                _ = self.closing.as_mut() => return None,
                _ = self.bookmark_timer.as_mut(), if armed => {
                    self.next_bookmark = next_bookmark(self.start.elapsed(), self.timeout, self.bookmark_every);
                    if let Some(at) = self.next_bookmark {
                        self.bookmark_timer.as_mut().reset(later(self.start, at));
                    }
                    if self.changed > self.began {
                        return Some(self.bookmark_line(self.changed, false));
                    }
                }
                received = self.live.recv() => match received {
                    Ok(event) => {
                        if event.rv <= self.seen {
                            continue;
                        }
                        self.seen = event.rv;
                        if event.resource == self.resource {
                            self.changed = event.rv;
                        }
                        if let Some(line) = self.event_line(&event) {
                            return Some(line);
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return None,
                },
            }
        }
    }

    /// An event as this watch's filter sees it, if it sees it.
    fn event_line(&mut self, event: &Event) -> Option<Bytes> {
        if event.resource != self.resource {
            return None;
        }
        let now = self.filter.matches(&event.object);
        let before = event.previous.as_ref().is_some_and(|p| self.filter.matches(p));
        let type_ = match (event.type_, before, now) {
            (EventType::Added, _, true) => EventType::Added,
            (EventType::Deleted, _, true) => EventType::Deleted,
            (EventType::Modified, true, true) => EventType::Modified,
            (EventType::Modified, false, true) => EventType::Added,
            (EventType::Modified, true, false) => EventType::Deleted,
            _ => return None,
        };
        if self.table {
            return Some(self.object_line(type_, &event.object));
        }
        Some(event.line(type_))
    }

    fn object_line(&mut self, type_: EventType, object: &StoredObject) -> Bytes {
        if self.table {
            let table = super::table::render_event(&self.info, object, self.first_table);
            self.first_table = false;
            event_line(type_.as_str(), &table)
        } else {
            object.event_line(type_)
        }
    }

    fn bookmark_line(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object =
            json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": metadata});
        event_line("BOOKMARK", &object)
    }
}

/// When a watch that began `elapsed` ago next gets a bookmark, as kube-apiserver's watch cache
/// schedules it (apiserver `storage/cacher/cache_watcher.go`, `nextBookmarkTime`): a minute on
/// (`every`), or 2 s before the deadline if that comes first; never once that moment is past, so
/// a watch of 2 s or less gets none.
fn next_bookmark(elapsed: Duration, timeout: Duration, every: Duration) -> Option<Duration> {
    let before_deadline = timeout.checked_sub(BOOKMARK_BEFORE_DEADLINE)?;
    let next = elapsed.saturating_add(every).min(before_deadline);
    (next > elapsed).then_some(next)
}

const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::{DEFAULT_TIMEOUT, next_bookmark, timeout};
    use std::time::Duration;

    #[test]
    fn a_timeout_is_go_nanoseconds_wrapping_as_go_does() {
        let table = [
            (None, DEFAULT_TIMEOUT),
            (Some(0), DEFAULT_TIMEOUT),
            (Some(290), Duration::from_secs(290)),
            (Some(-1), Duration::ZERO),
            // i64::MAX s is -1 s in Go's int64 nanoseconds; i64::MIN s is 0 (the default).
            (Some(i64::MAX), Duration::ZERO),
            (Some(i64::MIN), DEFAULT_TIMEOUT),
            (Some(9_223_372_036), Duration::from_secs(9_223_372_036)),
            (Some(9_223_372_037), Duration::ZERO),
            (Some(-9_223_372_036_854_775_807), Duration::from_secs(1)),
        ];
        for (seconds, expected) in table {
            assert_eq!(timeout(seconds), expected, "{seconds:?}");
        }
    }

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

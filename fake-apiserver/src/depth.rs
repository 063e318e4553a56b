//! How deeply a JSON document may nest, and how this server handles documents up to that bound
//! without overflowing a stack.
//!
//! kube-apiserver decodes every body with Go's JSON scanner (through `sigs.k8s.io/json`), which
//! refuses the 10,001st nested container with `invalid character '{' exceeded max depth`
//! (`maxNestingDepth` in Go's `encoding/json/scanner.go`). This server honours the same bound.
//! serde_json's `Value` is recursive: parsing, cloning, comparing, merging and dropping a document
//! 10,000 levels deep recurses 10,000 times, more than a 2 MiB async worker's stack holds. So:
//!
//! - a request's work on a document (decode, patch, store) runs on a thread of its own with a
//!   deep stack ([`on_deep_stack`]);
//! - what outlives that thread (a stored object, its serialised bytes) is serialised and dropped
//!   by loops, not recursion ([`to_vec`], [`dismantle`]), so a watch or a read on a worker thread
//!   never recurses over untrusted depth.
//!
//! This module knows nothing of HTTP or the store.

use serde::Deserialize;
use serde_json::Value;

/// The deepest nesting kube-apiserver's JSON decoder accepts.
pub const MAX_DEPTH: usize = 10_000;

/// Stack for work on a document near [`MAX_DEPTH`]. The deepest any document gets is a JSON
/// patch's midway result, which `patch::json_patch` refuses once past twice the bound: at most
/// about four times `MAX_DEPTH` levels, with over a kilobyte per level to spare. Only the pages
/// used are committed.
const DEEP_STACK: usize = 64 * 1024 * 1024;

/// The opening character of the first container nested deeper than [`MAX_DEPTH`] in a JSON
/// text, as Go's scanner reports it; `None` when the text stays within the bound. Brackets
/// inside strings do not count; the text need not be valid JSON.
pub(crate) fn too_deep(text: &[u8]) -> Option<u8> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &c in text {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(c);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Go's wording for a document nested too deeply (`SyntaxError` from `encoding/json`).
pub(crate) fn too_deep_message(opening: u8) -> String {
    format!("invalid character '{}' exceeded max depth", opening as char)
}

/// How many containers nest along the deepest path of `value` (a scalar is 0, `{}` is 1).
pub(crate) fn value_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, above)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(above + 1);
        stack.extend(children.map(|c| (c, above + 1)));
    }
    deepest
}

/// Parse JSON with no recursion limit of the parser's own. Callers bound the depth with
/// [`too_deep`] first and call this on a deep stack.
pub(crate) fn parse(text: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Drop a value with a loop: containers are emptied onto a heap stack before they go, so no
/// drop recurses.
pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(mut v) = stack.pop() {
        match &mut v {
            Value::Array(items) => stack.append(items),
            Value::Object(map) => stack.extend(std::mem::take(map).into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// A value that may nest to the bound and outlive the deep stack it was built on: compared,
/// and dropped, by loops.
#[derive(Debug)]
pub struct DeepValue(pub Value);

impl std::ops::Deref for DeepValue {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl PartialEq for DeepValue {
    fn eq(&self, other: &Self) -> bool {
        to_vec(&self.0) == to_vec(&other.0)
    }
}

impl Drop for DeepValue {
    fn drop(&mut self) {
        dismantle(std::mem::take(&mut self.0));
    }
}

/// The compact JSON of `value`, byte for byte what `serde_json::to_vec` writes, written by a
/// loop.
pub(crate) fn to_vec(value: &Value) -> Vec<u8> {
    enum Step<'a> {
        Value(&'a Value),
        Key(&'a str),
        Raw(&'static [u8]),
    }
    let mut out = Vec::new();
    let mut stack = vec![Step::Value(value)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Raw(bytes) => out.extend_from_slice(bytes),
            Step::Key(key) => {
                serde_json::to_writer(&mut out, key).expect("a string serialises");
                out.push(b':');
            }
            Step::Value(Value::Array(items)) => {
                out.push(b'[');
                stack.push(Step::Raw(b"]"));
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if i > 0 {
                        stack.push(Step::Raw(b","));
                    }
                }
            }
            Step::Value(Value::Object(map)) => {
                out.push(b'{');
                stack.push(Step::Raw(b"}"));
                let entries: Vec<_> = map.iter().collect();
                for (i, (key, item)) in entries.into_iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    stack.push(Step::Key(key));
                    if i > 0 {
                        stack.push(Step::Raw(b","));
                    }
                }
            }
            Step::Value(scalar) => serde_json::to_writer(&mut out, scalar).expect("a scalar serialises"),
        }
    }
    out
}

/// Threads with a deep stack that run work for every server in the process: made once and
/// kept. A thread started per write cost a thread start (and a 64 MiB mapping) per request:
/// 10,000 ConfigMap creates took 1.2–1.5 s that way and 0.5–0.7 s with the pool. A job that
/// waits for a free thread waits behind at most a few others' parse and store.
const DEEP_STACK_THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

fn deep_stack_pool() -> Result<&'static std::sync::Mutex<std::sync::mpsc::Sender<Job>>, String> {
    static POOL: std::sync::OnceLock<Result<std::sync::Mutex<std::sync::mpsc::Sender<Job>>, String>> =
        std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        for _ in 0..DEEP_STACK_THREADS {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name("deep-stack".into())
                .stack_size(DEEP_STACK)
                .spawn(move || {
                    loop {
                        // The lock is held only to take the next job, not while it runs.
                        let job = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                })
                .map_err(|e| format!("starting a worker thread: {e}"))?;
        }
        Ok(std::sync::Mutex::new(tx))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Run `work` on a thread with a deep stack and wait for it without blocking the async worker.
/// A panic in `work` comes back as `Err` with its message.
pub(crate) async fn on_deep_stack<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        let _ = tx.send(outcome.map_err(|p| panic_message(p.as_ref())));
    });
    deep_stack_pool()?
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(job)
        .map_err(|_| "the worker threads are gone".to_string())?;
    rx.await
        .map_err(|_| "the worker thread ended without an answer".to_string())?
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
    }

    #[test]
    fn the_bound_is_go_s() {
        assert_eq!(too_deep(nested(MAX_DEPTH).as_bytes()), None);
        assert_eq!(too_deep(nested(MAX_DEPTH + 1).as_bytes()), Some(b'{'));
        let arrays = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(too_deep(arrays.as_bytes()), Some(b'['));
        let in_strings = format!("{{\"k\":\"{}\\\"{}\"}}", "[".repeat(MAX_DEPTH * 2), "{".repeat(3));
        assert_eq!(too_deep(in_strings.as_bytes()), None);
        assert_eq!(too_deep_message(b'{'), "invalid character '{' exceeded max depth");
    }

    #[test]
    fn deep_values_are_measured_serialised_and_dropped_without_recursion() {
        // Far deeper than any test thread's stack survives recursively.
        let levels = 50_000;
        let text = nested(levels);
        let value = std::thread::Builder::new()
            .stack_size(DEEP_STACK)
            .spawn(move || {
                let v = parse(text.as_bytes()).unwrap();
                assert_eq!(to_vec(&v), text.as_bytes());
                v
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(value_depth(&value), levels);
        dismantle(value);
    }

    #[test]
    fn serialisation_matches_serde_json() {
        let v = json!({"a": [1, 2.5, "x\"y", null, true, {}, []], "b": {"c": {"d": "é\n"}}, "": -3});
        assert_eq!(to_vec(&v), serde_json::to_vec(&v).unwrap());
        assert_eq!(value_depth(&v), 3);
        assert_eq!(value_depth(&json!(1)), 0);
    }

    #[tokio::test]
    async fn deep_work_runs_and_panics_come_back() {
        assert_eq!(on_deep_stack(|| 2 + 2).await, Ok(4));
        let err = on_deep_stack(|| -> u8 { panic!("boom") }).await.unwrap_err();
        assert_eq!(err, "boom");
    }
}

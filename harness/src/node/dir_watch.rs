//! Directory watches for every node of the process over one inotify instance.
//!
//! Each embedded node's kubelet watches `/etc/kubernetes` and each daemon's config drift monitor
//! the directories of its config's files. A watcher of their own each (`notify`'s, one inotify
//! instance and one thread apiece) stopped a cluster between 100 and 300 nodes: Linux allows a
//! user 128 inotify instances (`fs.inotify.max_user_instances`), and `inotify_init` then fails
//! with "Too many open files". Here the process has one instance and one thread; a watch is one
//! inotify watch on that instance (`fs.inotify.max_user_watches`, about 190,000 here), and each
//! event goes to the subscribers of the directory it happened in.

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

type Callback = Arc<dyn Fn(&Event) + Send + Sync>;

#[derive(Default)]
struct Subscribers {
    next_id: u64,
    by_dir: HashMap<PathBuf, Vec<(u64, Callback)>>,
}

struct Shared {
    /// Held across a change to `subscribers` and the inotify call it leads to, so watches and
    /// unwatches of one directory happen in the order the subscribers changed.
    watcher: Mutex<RecommendedWatcher>,
    /// Taken alone by the event thread: never held while the watcher is called (`notify` waits
    /// for its event thread to add a watch).
    subscribers: Arc<Mutex<Subscribers>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn shared() -> Result<&'static Shared, String> {
    static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let subscribers: Arc<Mutex<Subscribers>> = Arc::default();
            let dispatch = subscribers.clone();
            let watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
                let Ok(event) = event else { return };
                // Reads raise access events; no subscriber acts on one, and a kubelet that
                // reloaded on its own read would never stop.
                if matches!(event.kind, EventKind::Access(_)) {
                    return;
                }
                let callbacks: Vec<Callback> = {
                    let subs = lock(&dispatch);
                    let mut dirs: Vec<&Path> = Vec::new();
                    for path in &event.paths {
                        for dir in [Some(path.as_path()), path.parent()].into_iter().flatten() {
                            if !dirs.contains(&dir) {
                                dirs.push(dir);
                            }
                        }
                    }
                    dirs.iter()
                        .filter_map(|d| subs.by_dir.get(*d))
                        .flatten()
                        .map(|(_, cb)| cb.clone())
                        .collect()
                };
                for callback in callbacks {
                    callback(&event);
                }
            })
            .map_err(|e| format!("starting the file watcher: {e}"))?;
            Ok(Shared {
                watcher: Mutex::new(watcher),
                subscribers,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A subscription to changes in some directories; dropping it ends it.
pub struct DirWatch {
    id: u64,
    dirs: Vec<PathBuf>,
}

impl std::fmt::Debug for DirWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirWatch").field("dirs", &self.dirs).finish()
    }
}

/// Call `on_change` with every event (other than an access) in any of `dirs`, until the
/// returned watch is dropped. The directories must exist.
pub fn watch_dirs(
    dirs: &[PathBuf],
    on_change: impl Fn(&Event) + Send + Sync + 'static,
) -> Result<DirWatch, String> {
    let shared = shared()?;
    let callback: Callback = Arc::new(on_change);
    let mut watcher = lock(&shared.watcher);
    let id = {
        let mut subs = lock(&shared.subscribers);
        subs.next_id += 1;
        subs.next_id
    };
    let mut watch = DirWatch { id, dirs: Vec::new() };
    for dir in dirs {
        if watch.dirs.contains(dir) {
            continue;
        }
        let first = {
            let mut subs = lock(&shared.subscribers);
            let list = subs.by_dir.entry(dir.clone()).or_default();
            list.push((id, callback.clone()));
            list.len() == 1
        };
        watch.dirs.push(dir.clone());
        if first && let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            drop(watcher);
            // Dropping `watch` takes back what was subscribed so far.
            drop(watch);
            return Err(format!("watching {}: {e}", dir.display()));
        }
    }
    Ok(watch)
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        let Ok(shared) = shared() else { return };
        let mut watcher = lock(&shared.watcher);
        for dir in std::mem::take(&mut self.dirs) {
            let last = {
                let mut subs = lock(&shared.subscribers);
                let Some(list) = subs.by_dir.get_mut(&dir) else {
                    continue;
                };
                list.retain(|(id, _)| *id != self.id);
                let last = list.is_empty();
                if last {
                    subs.by_dir.remove(&dir);
                }
                last
            };
            if last {
                // The directory may be gone already (a node's root removed), and its watch
                // with it.
                let _ = watcher.unwatch(&dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    async fn changed(rx: &mut tokio::sync::mpsc::UnboundedReceiver<PathBuf>) -> PathBuf {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an event within 10 s")
            .expect("the watch is alive")
    }

    #[tokio::test]
    async fn many_subscribers_share_one_instance_and_hear_only_their_directories() {
        let root = tempfile::tempdir().unwrap();
        // More subscribers than a user may have inotify instances (128).
        let mut watches = Vec::new();
        let mut receivers = Vec::new();
        for i in 0..300 {
            let dir = root.path().join(format!("n{i}"));
            std::fs::create_dir(&dir).unwrap();
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            watches.push(
                watch_dirs(std::slice::from_ref(&dir), move |e| {
                    for p in &e.paths {
                        let _ = tx.send(p.clone());
                    }
                })
                .unwrap(),
            );
            receivers.push(rx);
        }
        std::fs::write(root.path().join("n7/kubelet-ca.crt"), b"x").unwrap();
        assert_eq!(
            changed(&mut receivers[7]).await,
            root.path().join("n7/kubelet-ca.crt")
        );
        std::fs::write(root.path().join("n299/f"), b"x").unwrap();
        assert_eq!(changed(&mut receivers[299]).await, root.path().join("n299/f"));
        // n7's only events were its own.
        while let Ok(p) = receivers[7].try_recv() {
            assert!(p.starts_with(root.path().join("n7")), "{p:?}");
        }
        assert!(receivers[8].try_recv().is_err());
    }

    #[tokio::test]
    async fn two_subscribers_of_one_directory_and_a_dropped_one() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().to_path_buf();
        let heard = Arc::new(AtomicUsize::new(0));
        let counter = heard.clone();
        let first = watch_dirs(std::slice::from_ref(&dir), move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let second = watch_dirs(std::slice::from_ref(&dir), move |e| {
            let _ = tx.send(e.paths.first().cloned().unwrap_or_default());
        })
        .unwrap();
        drop(first);
        let before = heard.load(Ordering::SeqCst);
        std::fs::write(dir.join("a"), b"x").unwrap();
        assert_eq!(changed(&mut rx).await, dir.join("a"));
        // The dropped subscriber heard nothing more, and the directory is still watched for
        // the other.
        assert_eq!(heard.load(Ordering::SeqCst), before);
        drop(second);
        assert!(watch_dirs(&[root.path().join("missing")], |_| {}).is_err());
    }
}

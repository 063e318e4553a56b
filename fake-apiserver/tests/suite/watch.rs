//! Watch semantics as kube-rs sees them: replay from a resourceVersion, 410 Expired, bookmarks,
//! streaming lists, selector transitions, and `kube::runtime::watcher` in both list modes
//! surviving dropped streams and a forced 410 with no event lost or duplicated.

use crate::common::{cluster, configmap};
use fake_apiserver::Fault;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(20);

fn version_of(cm: &ConfigMap) -> u32 {
    cm.data
        .as_ref()
        .and_then(|d| d.get("v"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn watch_replays_changes_after_a_version() {
    let c = cluster().await;
    let cms = c.configmaps();
    let list = cms.list(&Default::default()).await.unwrap();
    let from = list.metadata.resource_version.unwrap();
    cms.create(&PostParams::default(), &configmap("r", &[("v", "1")]))
        .await
        .unwrap();
    cms.patch(
        "r",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    cms.delete("r", &Default::default()).await.unwrap();
    // The writes happened before the watch started: all three come from the replay.
    let mut stream = cms
        .watch(&WatchParams::default().timeout(5), &from)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(DEADLINE, stream.try_next())
            .await
            .expect("event in time")
            .unwrap()
            .unwrap();
        match event {
            WatchEvent::Added(cm) => seen.push(("ADDED", version_of(&cm))),
            WatchEvent::Modified(cm) => seen.push(("MODIFIED", version_of(&cm))),
            WatchEvent::Deleted(cm) => seen.push(("DELETED", version_of(&cm))),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("unexpected error event {e:?}"),
        }
    }
    assert_eq!(seen, [("ADDED", 1), ("MODIFIED", 2), ("DELETED", 2)]);
    c.cleanup().await;
}

#[tokio::test]
async fn an_expired_version_gets_an_error_event_with_410() {
    let c = cluster().await;
    let Some(server) = c.fake("forcing history loss") else {
        return c.cleanup().await;
    };
    let cms = c.configmaps();
    let first = cms
        .create(&PostParams::default(), &configmap("old", &[]))
        .await
        .unwrap();
    cms.patch(
        "old",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "1"}})),
    )
    .await
    .unwrap();
    server.inject(fake_apiserver::Fault::Compact).unwrap();
    let rv = first.metadata.resource_version.unwrap();
    let mut stream = cms.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(
                status.message.starts_with("too old resource version"),
                "{}",
                status.message
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    assert!(
        stream.try_next().await.unwrap().is_none(),
        "the stream ends after the error"
    );
    c.cleanup().await;
}

#[tokio::test]
async fn streaming_lists_end_initial_events_with_a_bookmark() {
    let c = cluster().await;
    let cms = c.configmaps();
    for name in ["s1", "s2"] {
        cms.create(&PostParams::default(), &configmap(name, &[]))
            .await
            .unwrap();
    }
    let mut stream = cms
        .watch(&WatchParams::streaming_lists(), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = Vec::new();
    loop {
        match tokio::time::timeout(DEADLINE, stream.try_next())
            .await
            .expect("event in time")
            .unwrap()
            .unwrap()
        {
            WatchEvent::Added(cm) => added.push(cm.metadata.name.unwrap()),
            WatchEvent::Bookmark(b) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    added.sort();
    assert_eq!(added, ["s1", "s2"]);
    c.cleanup().await;
}

/// Events of a watch of `cms` from `rv`, each with when it came after the watch began, and
/// when the stream ended; `during` runs once the watch has begun.
async fn timed_watch(
    cms: &kube::Api<ConfigMap>,
    params: &WatchParams,
    rv: &str,
    during: impl std::future::Future<Output = ()>,
) -> (Vec<(Duration, WatchEvent<ConfigMap>)>, Duration) {
    let began = std::time::Instant::now();
    let mut stream = cms.watch(params, rv).await.unwrap().boxed();
    during.await;
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(DEADLINE, stream.try_next())
        .await
        .expect("the stream ends at timeoutSeconds")
        .unwrap()
    {
        events.push((began.elapsed(), event));
    }
    (events, began.elapsed())
}

/// kube-apiserver's watch cache sends a bookmark about 2 s before a watch's deadline (and every
/// minute), and only once the resource has changed since the watch began (apiserver
/// `storage/cacher/cache_watcher.go`); none for a watch of 2 s or less; the stream itself ends
/// at `timeoutSeconds`.
#[tokio::test]
async fn bookmarks_and_timeouts() {
    let c = cluster().await;
    let cms = c.configmaps();
    let rv = cms
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for params in [
        WatchParams::default().timeout(1).disable_bookmarks(),
        WatchParams::default().timeout(1),
    ] {
        let (events, ended) = timed_watch(&cms, &params, &rv, async {}).await;
        assert!(
            events.is_empty(),
            "no writes and no time 2 s before the deadline, no events: {events:?}"
        );
        assert!(
            ended < Duration::from_secs(10),
            "the stream ends at timeoutSeconds"
        );
    }

    let write = async {
        cms.create(&PostParams::default(), &configmap("moved", &[]))
            .await
            .unwrap();
    };
    let (events, ended) = timed_watch(&cms, &WatchParams::default().timeout(4), &rv, write).await;
    assert!(ended >= Duration::from_millis(3500), "ended after {ended:?}");
    let (added_rv, bookmarks) = match events.as_slice() {
        [(_, WatchEvent::Added(cm)), bookmarks @ ..] => (
            cm.metadata
                .resource_version
                .as_deref()
                .unwrap()
                .parse::<u64>()
                .unwrap(),
            bookmarks,
        ),
        other => panic!("expected ADDED, then a bookmark: {other:?}"),
    };
    // The watch cache files a watch under the whole second its bookmark falls due in, and
    // looks about once a second: a real server may send one a second early, and then once more.
    assert!(!bookmarks.is_empty(), "a bookmark before the deadline");
    for (at, event) in bookmarks {
        let WatchEvent::Bookmark(b) = event else {
            panic!("only bookmarks after the write: {bookmarks:?}");
        };
        assert!(
            b.metadata.resource_version.parse::<u64>().unwrap() >= added_rv,
            "the bookmark is at or past the write: {}",
            b.metadata.resource_version
        );
        assert!(
            ended.saturating_sub(*at) >= Duration::from_millis(500),
            "bookmarks come before the deadline, not with it: at {at:?}, ended {ended:?}"
        );
    }

    let shared = "on a shared API server other clients' writes move the resource's version too";
    if c.fake_because("a watch that no write moves gets no bookmark", shared)
        .is_some()
    {
        let rv = cms
            .list(&Default::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let (events, _) = timed_watch(&cms, &WatchParams::default().timeout(4), &rv, async {}).await;
        assert!(events.is_empty(), "nothing moved, no bookmark: {events:?}");
    }
    c.cleanup().await;
}

#[tokio::test]
async fn objects_entering_and_leaving_a_selector() {
    let c = cluster().await;
    let cms = c.configmaps();
    cms.create(&PostParams::default(), &configmap("sel", &[]))
        .await
        .unwrap();
    let rv = cms
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = cms
        .watch(&WatchParams::default().labels("pick=me").timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    let pp = PatchParams::default();
    for labels in [
        json!({"pick": "me"}),
        json!({"pick": "me", "x": "y"}),
        json!({"pick": null}),
    ] {
        cms.patch("sel", &pp, &Patch::Merge(json!({"metadata": {"labels": labels}})))
            .await
            .unwrap();
    }
    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        match tokio::time::timeout(DEADLINE, stream.try_next())
            .await
            .expect("event in time")
            .unwrap()
            .unwrap()
        {
            WatchEvent::Added(_) => kinds.push("ADDED"),
            WatchEvent::Modified(_) => kinds.push("MODIFIED"),
            WatchEvent::Deleted(_) => kinds.push("DELETED"),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    c.cleanup().await;
}

/// What a watcher saw of each object: `(resourceVersion, v)` for every event, in order.
type Seen = BTreeMap<String, Vec<(u64, u32)>>;

const ROUNDS: u32 = 12;

/// Run kube's watcher while a writer updates three objects `ROUNDS` times, injecting `faults`
/// every third round; return what the watcher saw once it has seen the last write, and how
/// many times it (re)started from a list.
async fn watch_through_faults(config: watcher::Config, faults: &[Fault]) -> Option<(Seen, usize)> {
    let c = cluster().await;
    let Some(server) = c.fake("injecting watch faults") else {
        c.cleanup().await;
        return None;
    };
    let injector = server.fault_injector();
    let cms = c.configmaps();
    let names = ["w0", "w1", "w2"];
    for name in names {
        cms.create(&PostParams::default(), &configmap(name, &[("v", "0")]))
            .await
            .unwrap();
    }
    let mut stream = watcher::watcher(cms.clone(), config).boxed();
    let mut seen: Seen = BTreeMap::new();
    let mut inits = 0;
    let record = |seen: &mut Seen, cm: ConfigMap| {
        let values = seen.entry(cm.metadata.name.clone().unwrap()).or_default();
        let rv = cm
            .metadata
            .resource_version
            .as_deref()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        values.push((rv, version_of(&cm)));
    };
    // Take the initial state before writing, so every write happens during the watch.
    loop {
        match stream.try_next().await.unwrap().unwrap() {
            Event::Init => inits += 1,
            Event::InitApply(cm) | Event::Apply(cm) => record(&mut seen, cm),
            Event::InitDone => break,
            Event::Delete(_) => {}
        }
    }
    let writer = {
        let (cms, faults) = (cms.clone(), faults.to_vec());
        tokio::spawn(async move {
            for round in 1..=ROUNDS {
                for name in names {
                    let patch = Patch::Merge(json!({"data": {"v": round.to_string()}}));
                    // A restart cuts pooled connections; like any client, retry those.
                    let mut attempts = 0;
                    while let Err(e) = cms.patch(name, &PatchParams::default(), &patch).await {
                        attempts += 1;
                        assert!(
                            !matches!(e, kube::Error::Api(_)) && attempts < 5,
                            "patch failed: {e}"
                        );
                    }
                }
                if round % 3 == 0 {
                    for fault in &faults {
                        injector.inject(fault.clone()).unwrap();
                    }
                }
            }
        })
    };
    let done = |seen: &Seen| {
        names
            .iter()
            .all(|n| seen.get(*n).and_then(|v| v.last()).map(|(_, v)| *v) == Some(ROUNDS))
    };
    let watched = tokio::time::timeout(DEADLINE, async {
        while !done(&seen) {
            match stream.try_next().await {
                Ok(Some(Event::InitApply(cm) | Event::Apply(cm))) => record(&mut seen, cm),
                Ok(Some(Event::Init)) => inits += 1,
                Ok(_) => {}
                // The watcher reports a failed (re)connect and retries; that is its job.
                Err(_) => {}
            }
        }
    })
    .await;
    assert!(
        watched.is_ok(),
        "the watcher did not see the last writes in time; saw {seen:?}"
    );
    writer.await.unwrap();
    c.cleanup().await;
    Some((seen, inits))
}

fn modes() -> [(&'static str, watcher::Config); 2] {
    [
        ("list-watch", watcher::Config::default()),
        ("streaming-list", watcher::Config::default().streaming_lists()),
    ]
}

#[tokio::test]
async fn watcher_resumes_dropped_streams_without_losing_or_repeating_events() {
    for (mode, config) in modes() {
        let faults = [Fault::CloseWatches, Fault::Restart { keep_store: true }];
        let Some((seen, inits)) = watch_through_faults(config, &faults).await else {
            return;
        };
        let every_write: Vec<u32> = (0..=ROUNDS).collect();
        for (name, events) in &seen {
            let values: Vec<u32> = events.iter().map(|(_, v)| *v).collect();
            assert_eq!(
                values, every_write,
                "{mode}: {name} saw each write exactly once, in order"
            );
        }
        assert_eq!(
            inits, 1,
            "{mode}: resumed from its resourceVersion, never relisted"
        );
    }
}

#[tokio::test]
async fn watcher_relists_after_410_and_converges() {
    for (mode, config) in modes() {
        let faults = [Fault::Compact, Fault::CloseWatches];
        let Some((seen, inits)) = watch_through_faults(config, &faults).await else {
            return;
        };
        for (name, events) in &seen {
            // A relist re-delivers the current state, so the same version may come twice; an
            // older one never may.
            assert!(
                events
                    .windows(2)
                    .all(|w| (w[0].0 < w[1].0 && w[0].1 < w[1].1) || w[0] == w[1]),
                "{mode}: {name} never went back: {events:?}"
            );
            assert_eq!(
                events.last().map(|(_, v)| v),
                Some(&ROUNDS),
                "{mode}: {name} ends at the last write"
            );
        }
        assert!(
            inits > 1,
            "{mode}: the 410 made the watcher start over ({inits} inits)"
        );
    }
}

use super::*;
use serde_json::json;

fn store() -> Store {
    Store::new(StoreConfig::default())
}

fn cm_info(s: &Store) -> ResourceInfo {
    s.resolve("", "v1", "configmaps").unwrap()
}

fn cm(name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "x"}}, "data": {"k": data}})
}

#[test]
fn resource_versions_climb_and_stale_updates_conflict() {
    let s = store();
    let info = cm_info(&s);
    let a = s.create(&info, Some("default"), cm("a", "1"), false).unwrap();
    let mut stale = a.value.clone();
    let b = s
        .update(
            &info,
            Some("default"),
            "a",
            cm("a", "2"),
            Subresource::Main,
            false,
        )
        .unwrap();
    assert!(b.rv > a.rv);
    stale["data"]["k"] = json!("3");
    let err = s
        .update(&info, Some("default"), "a", stale, Subresource::Main, false)
        .unwrap_err();
    assert_eq!((err.code(), err.reason()), (409, "Conflict"));
    assert_eq!(
        s.get(&info, Some("default"), "a").unwrap().value["data"]["k"],
        "2"
    );
}

#[test]
fn a_write_that_changes_nothing_commits_nothing() {
    let s = store();
    let info = cm_info(&s);
    let a = s.create(&info, Some("default"), cm("a", "1"), false).unwrap();
    let same = s
        .update(
            &info,
            Some("default"),
            "a",
            cm("a", "1"),
            Subresource::Main,
            false,
        )
        .unwrap();
    assert_eq!(same.rv, a.rv);
    assert_eq!(s.current_rv(), a.rv);
}

#[test]
fn watch_replays_every_change_after_a_version_in_order() {
    let s = store();
    let info = cm_info(&s);
    let first = s.create(&info, Some("default"), cm("a", "1"), false).unwrap();
    s.update(
        &info,
        Some("default"),
        "a",
        cm("a", "2"),
        Subresource::Main,
        false,
    )
    .unwrap();
    s.create(&info, Some("default"), cm("b", "1"), false).unwrap();
    s.delete(&info, Some("default"), "a", &Preconditions::default(), false)
        .unwrap();
    let w = s
        .watch(&info, &Filter::default(), WatchFrom::After(first.rv))
        .unwrap();
    let seen: Vec<_> = w
        .replay
        .iter()
        .map(|e| (e.type_, e.object.name().to_string()))
        .collect();
    assert_eq!(
        seen,
        [
            (EventType::Modified, "a".to_string()),
            (EventType::Added, "b".to_string()),
            (EventType::Deleted, "a".to_string())
        ]
    );
    let rvs: Vec<u64> = w.replay.iter().map(|e| e.rv).collect();
    assert!(rvs.windows(2).all(|p| p[0] < p[1]));
}

#[test]
fn live_changes_reach_the_watches_of_their_resource_and_name_only() {
    let s = store();
    let info = cm_info(&s);
    let secrets = s.resolve("", "v1", "secrets").unwrap();
    let pinned = |name: &str| Filter {
        fields: crate::selector::FieldSelector::parse(&format!("metadata.name={name}"), "configmaps")
            .unwrap(),
        ..Filter::default()
    };
    let mut all = s
        .watch(&info, &Filter::default(), WatchFrom::Current)
        .unwrap()
        .live;
    let mut only_a = s.watch(&info, &pinned("a"), WatchFrom::Current).unwrap().live;
    let mut other_resource = s
        .watch(&secrets, &Filter::default(), WatchFrom::Current)
        .unwrap()
        .live;
    s.create(&info, Some("default"), cm("b", "1"), false).unwrap();
    s.create(&info, Some("default"), cm("a", "1"), false).unwrap();
    let names = |rx: &mut broadcast::Receiver<Arc<Event>>| {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| e.object.name().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&mut all), ["b", "a"]);
    assert_eq!(names(&mut only_a), ["a"], "b's change never woke a's watch");
    assert!(names(&mut other_resource).is_empty());
    // A topic whose watches are gone is dropped at its next change.
    drop(only_a);
    s.update(
        &info,
        Some("default"),
        "a",
        cm("a", "2"),
        Subresource::Main,
        false,
    )
    .unwrap();
    assert!(
        !s.lock().topics.has(&info.group_resource(), Some("a")),
        "the topic of a's gone watch is dropped"
    );
    assert_eq!(names(&mut all), ["a"]);
}

#[test]
fn a_pinned_name_lists_and_watches_that_object_only_and_still_applies_the_rest() {
    let s = store();
    let info = cm_info(&s);
    for name in ["a", "b", "c"] {
        s.create(&info, Some("default"), cm(name, "1"), false).unwrap();
    }
    s.create(&info, Some("kube-system"), cm("b", "2"), false).unwrap();
    let filter = |ns: Option<&str>, fields: &str, labels: &str| Filter {
        namespace: ns.map(str::to_string),
        fields: crate::selector::FieldSelector::parse(fields, "configmaps").unwrap(),
        labels: crate::selector::LabelSelector::parse(labels).unwrap(),
    };
    let listed = |f: &Filter| -> Vec<(String, String)> {
        s.list(&info, f, None, None)
            .unwrap()
            .items
            .iter()
            .map(|o| (o.namespace().to_string(), o.name().to_string()))
            .collect()
    };
    let b = |ns: &str| (ns.to_string(), "b".to_string());
    assert_eq!(
        listed(&filter(Some("default"), "metadata.name=b", "")),
        [b("default")]
    );
    // Every namespace: no key to look up, so every object is judged.
    assert_eq!(
        listed(&filter(None, "metadata.name=b", "")),
        [b("default"), b("kube-system")]
    );
    assert!(listed(&filter(Some("default"), "metadata.name=b", "app=y")).is_empty());
    assert!(listed(&filter(Some("default"), "metadata.name=b,metadata.name!=b", "")).is_empty());
    assert!(listed(&filter(Some("default"), "metadata.name=zz", "")).is_empty());
    let watched = s
        .watch(
            &info,
            &filter(Some("kube-system"), "metadata.name=b", ""),
            WatchFrom::Current,
        )
        .unwrap();
    let initial: Vec<_> = watched
        .initial
        .iter()
        .map(|(_, o)| (o.namespace().to_string(), o.name().to_string()))
        .collect();
    assert_eq!(initial, [b("kube-system")]);
    // From a version: the kept history, that name's changes only.
    let first = s.list(&info, &Filter::default(), None, None).unwrap().items[0].rv;
    let replayed = s
        .watch(
            &info,
            &filter(Some("default"), "metadata.name=b", ""),
            WatchFrom::After(first - 1),
        )
        .unwrap()
        .replay;
    let names: Vec<_> = replayed.iter().map(|e| e.object.name().to_string()).collect();
    assert!(!names.is_empty() && names.iter().all(|n| n == "b"), "{names:?}");
}

#[test]
fn history_past_its_limit_answers_410() {
    let s = Store::new(StoreConfig {
        history_limit: 3,
        ..StoreConfig::default()
    });
    let info = cm_info(&s);
    let first = s.create(&info, Some("default"), cm("a", "0"), false).unwrap();
    for i in 1..6 {
        s.update(
            &info,
            Some("default"),
            "a",
            cm("a", &i.to_string()),
            Subresource::Main,
            false,
        )
        .unwrap();
    }
    let err = s
        .watch(&info, &Filter::default(), WatchFrom::After(first.rv))
        .err()
        .unwrap();
    assert_eq!((err.code(), err.reason()), (410, "Expired"));
    assert!(err.to_string().starts_with("too old resource version"));
    let recent = s
        .watch(&info, &Filter::default(), WatchFrom::After(s.current_rv() - 2))
        .unwrap();
    assert_eq!(recent.replay.len(), 2);
    s.compact();
    assert!(
        s.watch(&info, &Filter::default(), WatchFrom::After(s.current_rv() - 1))
            .is_err()
    );
}

#[test]
fn pages_come_from_one_snapshot() {
    let s = store();
    let info = cm_info(&s);
    for i in 0..5 {
        s.create(&info, Some("default"), cm(&format!("c{i}"), "x"), false)
            .unwrap();
    }
    let first = s.list(&info, &Filter::default(), Some(2), None).unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.remaining, Some(3));
    // Writes between pages do not show up in the pages of this list.
    s.create(&info, Some("default"), cm("c9", "x"), false).unwrap();
    s.delete(&info, Some("default"), "c4", &Preconditions::default(), false)
        .unwrap();
    let token = first.continue_token.unwrap();
    let second = s.list(&info, &Filter::default(), Some(2), Some(&token)).unwrap();
    let third = s
        .list(
            &info,
            &Filter::default(),
            Some(2),
            second.continue_token.as_deref(),
        )
        .unwrap();
    let names: Vec<_> = [first.items, second.items, third.items]
        .concat()
        .iter()
        .map(|o| o.name().to_string())
        .collect();
    assert_eq!(names, ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(third.rv, first.rv);
    assert!(third.continue_token.is_none());
    let reused = s
        .list(&info, &Filter::default(), Some(2), Some(&token))
        .unwrap_err();
    assert_eq!(reused.code(), 410);
}

#[test]
fn finalizers_hold_deletion_until_removed() {
    let s = store();
    let info = cm_info(&s);
    let mut obj = cm("f", "1");
    obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
    s.create(&info, Some("default"), obj, false).unwrap();
    let outcome = s
        .delete(&info, Some("default"), "f", &Preconditions::default(), false)
        .unwrap();
    let DeleteOutcome::Finalizing(marked) = outcome else {
        panic!("should wait for finalizers")
    };
    assert!(marked.value["metadata"]["deletionTimestamp"].is_string());
    let mut released = marked.value.clone();
    released["metadata"]["finalizers"] = json!([]);
    s.update(&info, Some("default"), "f", released, Subresource::Main, false)
        .unwrap();
    assert_eq!(s.get(&info, Some("default"), "f").unwrap_err().code(), 404);
}

#[test]
fn deleting_a_namespace_deletes_its_objects() {
    let s = store();
    let info = cm_info(&s);
    let ns = s.resolve("", "v1", "namespaces").unwrap();
    let err = s.create(&info, Some("team"), cm("a", "1"), false).unwrap_err();
    assert_eq!(err.to_string(), "namespaces \"team\" not found");
    s.create(
        &ns,
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        false,
    )
    .unwrap();
    s.create(&info, Some("team"), cm("a", "1"), false).unwrap();
    s.create(&info, Some("default"), cm("a", "1"), false).unwrap();
    s.delete(&ns, None, "team", &Preconditions::default(), false)
        .unwrap();
    assert_eq!(s.get(&info, Some("team"), "a").unwrap_err().code(), 404);
    assert!(s.get(&info, Some("default"), "a").is_ok());
}

#[test]
fn a_crd_serves_its_resource_until_deleted() {
    let s = store();
    let crds = s
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]}});
    let stored = s.create(&crds, None, crd, false).unwrap();
    assert_eq!(stored.value["status"]["conditions"][1]["type"], "Established");
    let widgets = s
        .resolve("example.com", "v1", "widgets")
        .expect("served after create");
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                   "spec": {"size": 1}, "status": {"ready": true}});
    let created = s.create(&widgets, None, w, false).unwrap();
    assert!(
        created.value.get("status").is_none(),
        "status is written through /status only"
    );
    assert_eq!(created.value["metadata"]["generation"], 1);
    let mut next = created.value.clone();
    next["spec"]["size"] = json!(2);
    let updated = s
        .update(&widgets, None, "w", next, Subresource::Main, false)
        .unwrap();
    assert_eq!(updated.value["metadata"]["generation"], 2);
    let mut status = updated.value.clone();
    status["status"] = json!({"ready": true});
    status["spec"]["size"] = json!(99);
    let after_status = s
        .update(&widgets, None, "w", status, Subresource::Status, false)
        .unwrap();
    assert_eq!(after_status.value["spec"]["size"], 2, "/status ignores spec");
    assert_eq!(
        after_status.value["metadata"]["generation"], 2,
        "status writes keep generation"
    );
    s.delete(
        &crds,
        None,
        "widgets.example.com",
        &Preconditions::default(),
        false,
    )
    .unwrap();
    assert!(s.resolve("example.com", "v1", "widgets").is_none());
    assert_eq!(s.get(&widgets, None, "w").unwrap_err().code(), 404);
}

#[test]
fn rejected_writes_change_nothing() {
    let s = store();
    let info = cm_info(&s);
    let before = s.current_rv();
    let mut bad = cm("Bad_Name", "1");
    assert_eq!(
        s.create(&info, Some("default"), bad.clone(), false)
            .unwrap_err()
            .code(),
        422
    );
    bad["kind"] = json!("Secret");
    assert_eq!(
        s.create(&info, Some("default"), bad, false).unwrap_err().code(),
        400
    );
    s.create(&info, Some("default"), cm("a", "1"), true).unwrap();
    assert_eq!(s.current_rv(), before);
    assert!(s.get(&info, Some("default"), "a").is_err());
}

#[test]
fn null_annotation_values_become_empty_strings() {
    let s = store();
    let info = cm_info(&s);
    let mut obj = cm("n", "1");
    obj["metadata"]["annotations"] =
        json!({"auth.openshift.io/certificate-not-after": "2027-01-01T00:00:00Z"});
    s.create(&info, Some("default"), obj, false).unwrap();
    let patched = s
        .modify(&info, Some("default"), "n", Subresource::Main, false, |old| {
            let mut v = old.clone();
            crate::patch::json_patch(
                &mut v,
                &json!([{"op": "replace", "path": "/metadata/annotations/auth.openshift.io~1certificate-not-after", "value": null}]),
            )
            .unwrap();
            Ok(v)
        })
        .unwrap();
    assert_eq!(
        patched.value["metadata"]["annotations"]["auth.openshift.io/certificate-not-after"],
        ""
    );
}

/// A Secret's stringData lands in data, base64-encoded and over a key data already had, and is
/// never stored: what kube-apiserver's v1 conversion does, so a reader of `data` (client-go's
/// `Secret.Data`) sees what `kubectl create -f` with stringData wrote.
#[test]
fn a_secrets_string_data_is_merged_into_data_and_not_stored() {
    let s = store();
    let info = s.resolve("", "v1", "secrets").unwrap();
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "pull-secret"},
        "data": {"kept": "YQ==", ".dockerconfigjson": "b2xk"},
        "stringData": {".dockerconfigjson": "{\"auths\":{}}"}});
    let stored = s.create(&info, Some("default"), secret, false).unwrap();
    assert_eq!(
        stored.value["data"][".dockerconfigjson"],
        json!("eyJhdXRocyI6e319")
    );
    assert_eq!(stored.value["data"]["kept"], json!("YQ=="));
    assert!(stored.value.get("stringData").is_none(), "{}", stored.value);
    let mut update = stored.value.clone();
    update["stringData"] = json!({"new": "b"});
    let updated = s
        .update(
            &info,
            Some("default"),
            "pull-secret",
            update,
            Subresource::Main,
            false,
        )
        .unwrap();
    assert_eq!(updated.value["data"]["new"], json!("Yg=="));
    assert!(updated.value.get("stringData").is_none());
}

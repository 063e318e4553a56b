use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            http::HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

#[test]
fn headers_become_the_wanted_user() {
    let w = wanted_user(&headers(&[
        ("Impersonate-User", "bob"),
        ("Impersonate-Uid", "42"),
        ("Impersonate-Group", "a"),
        ("Impersonate-Group", "b"),
        ("Impersonate-Extra-Acme.io%2Fscopes", "view"),
        ("Impersonate-Extra-Acme.io%2Fscopes", "edit"),
        ("Impersonate-Extra-bad%zz", "x"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!((w.user.as_str(), w.uid.as_str()), ("bob", "42"));
    assert_eq!(w.groups, ["a", "b"]);
    assert_eq!(
        w.extra,
        BTreeMap::from([
            (
                "acme.io/scopes".to_string(),
                vec!["view".to_string(), "edit".to_string()]
            ),
            ("bad%zz".to_string(), vec!["x".to_string()]),
        ])
    );
    assert_eq!(wanted_user(&headers(&[])).unwrap(), None);
    let e = wanted_user(&headers(&[("Impersonate-Extra-K", "v")])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "requested &user.DefaultInfo{Name:\"\", UID:\"\", Groups:[]string(nil), Extra:map[string][]string{\"k\":[]string{\"v\"}}} without impersonating a user name"
    );
}

#[test]
fn usernames_of_nodes_and_service_accounts() {
    assert_eq!(node_name("system:node:n1"), Some("n1"));
    assert_eq!(node_name("system:node:N1"), None);
    assert_eq!(service_account("system:serviceaccount:ns:sa"), Some(("ns", "sa")));
    assert_eq!(service_account("system:serviceaccount:ns:sa:x"), None);
    assert_eq!(service_account("system:serviceaccount:n.s:sa"), None);
}

#[test]
fn the_admin_gets_uid_and_extra_through_user_info() {
    let store = Store::new(Default::default());
    let policy = Policy::default();
    let admin = Identity::new("system:admin", &["system:masters"]);
    let request = RequestAttributes {
        verb: "get".into(),
        path: Some("/api".into()),
        ..RequestAttributes::default()
    };
    let h = headers(&[
        ("Impersonate-User", "bob"),
        ("Impersonate-Uid", "42"),
        ("Impersonate-Extra-Acme.io%2Fscopes", "view"),
    ]);
    let who = impersonate(&policy, &store, admin.clone(), &h, &request).unwrap();
    assert_eq!(who.user, "bob");
    assert_eq!(who.uid, "42");
    assert_eq!(who.groups, ["system:authenticated"]);
    assert_eq!(who.extra["acme.io/scopes"], ["view"]);
    // A key that is no domain-prefixed path: user-info refuses, legacy (the admin's) allows.
    let h = headers(&[("Impersonate-User", "bob"), ("Impersonate-Extra-scopes", "view")]);
    let who = impersonate(&policy, &store, admin, &h, &request).unwrap();
    assert_eq!(who.extra["scopes"], ["view"]);
}

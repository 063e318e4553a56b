use super::*;
use crate::node::{EmbeddedNode, KUBELET_UNIT, Node};
use crate::pki::Signer;
use std::net::SocketAddr;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// A kubelet that is down is "not serving", not a rejection of the certificate.
#[tokio::test]
async fn a_kubelet_that_is_down_is_not_serving() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let signer = Signer::issue(
        "ns",
        "s",
        crate::pki::SIMULATION_EPOCH,
        time::Duration::days(1),
        1,
    )
    .unwrap();
    let client = signer
        .issue_client(
            "system:kube-apiserver",
            &[],
            crate::pki::SIMULATION_EPOCH,
            time::Duration::days(1),
            2,
        )
        .unwrap();
    let err = probe(addr, &client.pem, &client.key_pem).await.unwrap_err();
    assert!(matches!(err, ProbeError::NotServing { .. }), "{err}");
    assert!(err.to_string().contains("is not serving"), "{err}");
}

async fn kubelet_node() -> EmbeddedNode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let node = EmbeddedNode::new("node-1", &[KUBELET_UNIT], SimClock::default()).unwrap();
    // A kubeconfig of its own, as every seeded node has (without one the kubelet would
    // bootstrap first); it names no server, so the kubelet posts no status here.
    node.write(
        crate::node::seed::KUBELET_KUBECONFIG,
        b"apiVersion: v1\nkind: Config\n",
        0o600,
    )
    .await
    .unwrap();
    node.set_service(KUBELET_UNIT, Arc::new(FakeKubelet));
    node
}

async fn endpoint(node: &EmbeddedNode) -> SocketAddr {
    let mark = crate::node::JournalMark(0);
    node.wait_for_journal(mark, "Starting to listen", WAIT)
        .await
        .unwrap()
        .expect("the kubelet listens");
    node.kubelet_endpoint().await.unwrap().expect("published")
}

/// Replace the file as agents do: a new file renamed over the old one.
fn replace_atomically(node: &EmbeddedNode, contents: &str) {
    let path = node.root().join("etc/kubernetes/kubelet-ca.crt");
    let tmp = node.root().join("etc/kubernetes/.kubelet-ca.crt.tmp");
    std::fs::write(&tmp, contents).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

#[tokio::test]
async fn accepts_reloads_and_rejects_at_simulated_time() {
    let node = kubelet_node().await;
    let now = node.clock().now();
    let old = Signer::issue(
        "ns",
        "kube-apiserver-to-kubelet-signer",
        now,
        time::Duration::days(365),
        1,
    )
    .unwrap();
    let new = Signer::issue(
        "ns",
        "kube-apiserver-to-kubelet-signer",
        now + time::Duration::SECOND,
        time::Duration::days(365),
        2,
    )
    .unwrap();
    node.write(KUBELET_CA_PATH, old.cert.pem.as_bytes(), 0o644)
        .await
        .unwrap();
    node.boot().await;
    let addr = endpoint(&node).await;
    let client = old
        .issue_client(
            "system:kube-apiserver",
            &["kube-master"],
            now,
            time::Duration::days(30),
            3,
        )
        .unwrap();
    probe(addr, &client.pem, &client.key_pem)
        .await
        .expect("trusted signer: accepted");

    let mark = node.journal_mark().await.unwrap();
    replace_atomically(&node, &new.cert.pem);
    let reload = node
        .wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
        .await
        .unwrap()
        .expect("reloaded after the rename");
    assert!(reload.contains("node-1 kubelet["), "{reload}");
    let err = probe(addr, &client.pem, &client.key_pem).await.unwrap_err();
    assert!(matches!(err, ProbeError::Rejected { .. }), "{err}");
    let logged = node
        .wait_for_journal(mark, "Unable to authenticate the request", WAIT)
        .await
        .unwrap()
        .expect("the rejection logged");
    assert!(logged.contains("is not in the CA bundle"), "{logged}");

    let mark = node.journal_mark().await.unwrap();
    replace_atomically(&node, &format!("{}{}", new.cert.pem, old.cert.pem));
    node.wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
        .await
        .unwrap()
        .expect("reloaded again");
    probe(addr, &client.pem, &client.key_pem)
        .await
        .expect("both signers: accepted again");
    node.clock().advance(time::Duration::days(31));
    let mark = node.journal_mark().await.unwrap();
    assert!(
        probe(addr, &client.pem, &client.key_pem).await.is_err(),
        "expired at simulated time"
    );
    let logged = node
        .wait_for_journal(mark, "Unable to authenticate", WAIT)
        .await
        .unwrap()
        .expect("the rejection logged");
    assert!(logged.contains("(sim), not valid after"), "{logged}");
    node.shutdown().await;
}

/// What the watch on the file itself reports, from the inode it watched and the one there now.
#[test]
fn a_new_inode_is_a_replaced_file_and_the_same_one_a_write() {
    let table = [
        (Some(7), Some(7), Some(FileEvent::Written)),
        (Some(7), Some(8), Some(FileEvent::Replaced)),
        (Some(7), None, Some(FileEvent::Replaced)),
        (None, Some(8), None),
        (None, None, None),
    ];
    for (watched, now, expected) in table {
        assert_eq!(file_event(watched, now), expected, "{watched:?} -> {now:?}");
    }
}

/// The seeds' 4.12 node log: a kubelet-ca.crt renamed over the old one makes the kubelet log
/// that its watch is gone, then that it loaded the new bundle; a write in place only the
/// load; an emptied file an error, keeping the bundle it had.
#[tokio::test]
async fn a_rename_and_a_write_in_place_log_what_the_kubelet_logs() {
    let node = kubelet_node().await;
    let now = node.clock().now();
    let issue = |serial| Signer::issue("ns", "signer", now, time::Duration::days(365), serial).unwrap();
    let (first, second, third) = (issue(1), issue(2), issue(3));
    node.write(KUBELET_CA_PATH, first.cert.pem.as_bytes(), 0o644)
        .await
        .unwrap();
    node.boot().await;
    let addr = endpoint(&node).await;
    let relevant = |lines: Vec<String>| -> Vec<String> {
        lines
            .into_iter()
            .filter(|l| l.contains("dynamic_cafile_content.go"))
            .map(|l| l.split_once("] ").map(|(_, m)| m.to_string()).unwrap_or(l))
            .collect()
    };

    let mark = node.journal_mark().await.unwrap();
    replace_atomically(&node, &second.cert.pem);
    node.wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
        .await
        .unwrap()
        .expect("reloaded");
    let lines = relevant(node.journal_since(mark).await.unwrap());
    assert_eq!(
        lines,
        [
            format!(
                "{WATCH_GONE_LOG} err=\"can't remove non-existent inotify watch for: {KUBELET_CA_PATH}\""
            ),
            CA_RELOAD_LOG.to_string()
        ],
        "after a rename"
    );

    // In place: the same inode, written again.
    let mark = node.journal_mark().await.unwrap();
    let path = node.root().join("etc/kubernetes/kubelet-ca.crt");
    std::fs::write(&path, &third.cert.pem).unwrap();
    node.wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
        .await
        .unwrap()
        .expect("reloaded");
    let lines = relevant(node.journal_since(mark).await.unwrap());
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l == CA_RELOAD_LOG),
        "after a write in place: {lines:?}"
    );

    // Emptied in place: an error, and the bundle it had still verifies.
    let mark = node.journal_mark().await.unwrap();
    std::fs::write(&path, "").unwrap();
    let error = node
        .wait_for_journal(mark, "missing content for CA bundle", WAIT)
        .await
        .unwrap()
        .expect("the empty file is an error");
    assert!(
            error.contains(
                r#"dynamic_cafile_content.go] key failed with : missing content for CA bundle "client-ca-bundle::/etc/kubernetes/kubelet-ca.crt""#
            ),
            "{error}"
        );
    let client = third
        .issue_client(
            "system:kube-apiserver",
            &["kube-master"],
            now,
            time::Duration::days(30),
            4,
        )
        .unwrap();
    probe(addr, &client.pem, &client.key_pem)
        .await
        .expect("the bundle it had is kept");
    node.shutdown().await;
}

/// A reload by what the file holds: unchanged bytes do nothing; a file cut short inside its
/// only certificate, or holding none, is an error (the bundle stays); one cut short after a
/// whole certificate, or with bytes after it, loads the whole certificates.
#[test]
fn a_reload_takes_what_go_reads_whole_and_nothing_else() {
    let pem = |serial| {
        Signer::issue_named(
            "signer",
            crate::pki::SIMULATION_EPOCH,
            time::Duration::days(1),
            serial,
        )
        .unwrap()
        .cert
        .pem
    };
    let (one, two) = (pem(1), pem(2));
    let half = &two[..two.len() / 2];
    let bundle_error = |why: &str| {
        Reload::Failed(format!(
            "error loading CA bundle for \"client-ca-bundle::/etc/kubernetes/kubelet-ca.crt\": {why}"
        ))
    };
    let no_certificates = "data does not contain any valid RSA or ECDSA certificates";
    let read = |text: &str| Ok(text.as_bytes().to_vec());
    let had = Some(one.as_str());
    // The PEM the kubelet keeps: the certificates it read, written again.
    let clean =
        |text: &str| crate::pki::pem_encode("CERTIFICATE", &crate::pki::parse_certs(text).unwrap()[0].der);
    type Row<'a> = (&'a str, Option<&'a str>, std::io::Result<Vec<u8>>, Reload);
    let table: Vec<Row> = vec![
        (
            "a whole certificate",
            None,
            read(&one),
            Reload::Loaded(clean(&one)),
        ),
        ("the same bytes", had, read(&one), Reload::Unchanged),
        ("half of one", had, read(half), bundle_error(no_certificates)),
        (
            "its first line",
            had,
            read("-----BEGIN CERTIFICATE-----\n"),
            bundle_error(no_certificates),
        ),
        ("not PEM", had, read("garbage\n"), bundle_error(no_certificates)),
        (
            "a DER cut inside a whole block",
            had,
            Ok(crate::pki::pem_encode(
                "CERTIFICATE",
                &crate::pki::parse_certs(&two).unwrap()[0].der[..40],
            )
            .into_bytes()),
            bundle_error("x509: malformed certificate"),
        ),
        (
            "a whole one, then half of one",
            had,
            read(&format!("{two}{half}")),
            Reload::Loaded(clean(&two)),
        ),
        (
            "a whole one, then bytes",
            had,
            read(&format!("{two}\u{0}\u{1}")),
            Reload::Loaded(clean(&two)),
        ),
        (
            "empty",
            had,
            read(""),
            Reload::Failed(
                "missing content for CA bundle \"client-ca-bundle::/etc/kubernetes/kubelet-ca.crt\"".into(),
            ),
        ),
        (
            "missing",
            had,
            Err(std::io::ErrorKind::NotFound.into()),
            Reload::Failed("open /etc/kubernetes/kubelet-ca.crt: no such file or directory".into()),
        ),
    ];
    for (case, loaded, read, expected) in table {
        assert_eq!(reload(loaded.map(str::as_bytes), &read), expected, "{case}");
    }
}

/// On a node: a kubelet-ca.crt written half (in place, as a writer that streams the file
/// leaves it between two writes) keeps the bundle the kubelet had and logs why; a file
/// holding a whole certificate and half of another loads the whole one.
#[tokio::test]
async fn a_half_written_file_keeps_the_bundle_it_had() {
    let node = kubelet_node().await;
    let now = node.clock().now();
    let issue = |serial| Signer::issue("ns", "signer", now, time::Duration::days(365), serial).unwrap();
    let (first, second, third) = (issue(1), issue(2), issue(3));
    let client_of = |signer: &Signer, serial| {
        signer
            .issue_client(
                "system:kube-apiserver",
                &["kube-master"],
                now,
                time::Duration::days(30),
                serial,
            )
            .unwrap()
    };
    let (first_client, second_client) = (client_of(&first, 4), client_of(&second, 5));
    node.write(KUBELET_CA_PATH, first.cert.pem.as_bytes(), 0o644)
        .await
        .unwrap();
    node.boot().await;
    let addr = endpoint(&node).await;
    let path = node.root().join("etc/kubernetes/kubelet-ca.crt");

    let mark = node.journal_mark().await.unwrap();
    let half = &second.cert.pem[..second.cert.pem.len() / 2];
    std::fs::write(&path, half).unwrap();
    let error = node
        .wait_for_journal(mark, "error loading CA bundle", WAIT)
        .await
        .unwrap()
        .expect("a half-written file is an error");
    assert!(
            error.contains(
                r#"key failed with : error loading CA bundle for "client-ca-bundle::/etc/kubernetes/kubelet-ca.crt": data does not contain any valid RSA or ECDSA certificates"#
            ),
            "{error}"
        );
    probe(addr, &first_client.pem, &first_client.key_pem)
        .await
        .expect("the bundle it had is kept");
    let lines = node.journal_since(mark).await.unwrap();
    assert!(!lines.iter().any(|l| l.contains(CA_RELOAD_LOG)), "{lines:?}");

    // The rest of the file: the second certificate whole, and half of a third.
    let mark = node.journal_mark().await.unwrap();
    let third_half = &third.cert.pem[..third.cert.pem.len() / 2];
    std::fs::write(&path, format!("{}{third_half}", second.cert.pem)).unwrap();
    node.wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
        .await
        .unwrap()
        .expect("the whole certificate loads");
    probe(addr, &second_client.pem, &second_client.key_pem)
        .await
        .expect("the whole certificate verifies");
    let err = probe(addr, &first_client.pem, &first_client.key_pem)
        .await
        .unwrap_err();
    assert!(matches!(err, ProbeError::Rejected { .. }), "{err}");
    node.shutdown().await;
}

#[test]
fn a_failed_start_is_logged_as_the_kubelets_command_logs_it() {
    // klog quotes the error value as Go's %q does: inner quotes and backslashes escaped.
    assert_eq!(
        command_failed(r#"missing content for CA bundle "client-ca-bundle::/etc/kubernetes/kubelet-ca.crt""#),
        r#"E0000 run.go:74] "command failed" err="failed to run Kubelet: missing content for CA bundle \"client-ca-bundle::/etc/kubernetes/kubelet-ca.crt\"""#
    );
    assert_eq!(
        command_failed(r"a\b"),
        r#"E0000 run.go:74] "command failed" err="failed to run Kubelet: a\\b""#
    );
}

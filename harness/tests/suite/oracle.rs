//! The steps' oracle (`steps/oracle.rs`) checked on its own: the upstream rules it encodes,
//! against hand-built bundles, so the steps judge with rules that are themselves tested.

use harness::steps::oracle::*;

fn ca(name: &str) -> String {
    fake_apiserver::CertificateAuthority::generate(name)
        .unwrap()
        .cert_pem
}

#[test]
fn the_4_12_merge_replaces_the_signer_in_place() {
    let (a, k, b) = (
        ca("admin"),
        ca("kube-apiserver-to-kubelet-signer"),
        ca("bootstrap"),
    );
    let (k1, k2) = (
        ca("kube-apiserver-to-kubelet-signer"),
        ca("kube-apiserver-to-kubelet-signer"),
    );
    let initial = certs(format!("{a}{k}{b}").as_bytes()).unwrap();
    let bundle = certs(format!("{k2}{k1}").as_bytes()).unwrap();
    let merged = merge_4_12(&initial, &bundle);
    let expected = certs(format!("{a}{k2}{k1}{b}").as_bytes()).unwrap();
    assert_eq!(bundle_difference(&merged, &expected), None);
    let wrong = certs(format!("{a}{b}{k2}{k1}").as_bytes()).unwrap();
    assert!(
        bundle_difference(&wrong, &expected)
            .unwrap()
            .contains("another order")
    );
    let short = certs(a.as_bytes()).unwrap();
    assert!(bundle_difference(&short, &expected).unwrap().contains("lacks"));
}

#[test]
fn half_a_bundle_is_no_bundle() {
    let pem = format!("{}{}", ca("a"), ca("b"));
    assert_eq!(names(pem.as_bytes()).unwrap(), ["a", "b"]);
    assert!(certs(&pem.as_bytes()[..pem.len() - 40]).is_err());
}

#[test]
fn ignition_files_and_4_16_writes() {
    let read = |json| serde_json::from_value::<harness::mco::machine_config::File>(json).unwrap();
    let file =
        read(serde_json::json!({"path": "/etc/x", "mode": 384, "contents": {"source": "data:,a%20b%0A"}}));
    assert_eq!(
        ignition_file(&file).unwrap(),
        ("/etc/x".into(), b"a b\n".to_vec(), 0o600)
    );
    let file =
        read(serde_json::json!({"path": "/etc/y", "contents": {"source": "data:text/plain;base64,aGk="}}));
    assert_eq!(
        ignition_file(&file).unwrap(),
        ("/etc/y".into(), b"hi".to_vec(), 0o644)
    );
    assert!(ignition_file(&read(serde_json::json!({"contents": {"source": "data:,x"}}))).is_err());
    assert!(
        ignition_file(&read(
            serde_json::json!({"path": "/z", "contents": {"source": "https://x"}})
        ))
        .is_err()
    );
    assert_eq!(written_by_4_16(b"x"), b"x\n");
    assert_eq!(written_by_4_16(b"x\n"), b"x\n");
}

/// The steps judge from observables and their own rules: no step source reaches into the
/// reference cluster (`harness::cluster`) or the reference daemon (`harness::agent`), or uses the
/// reference's bundle merge.
#[test]
fn no_step_computes_an_expectation_with_reference_code() {
    let forbidden = [
        "harness::agent",
        "harness::cluster",
        "merge_cert_with_ca_bundle",
        "crate::agent",
        "crate::cluster",
    ];
    let mut found = Vec::new();
    for (file, text) in harness::runner::catalogue::SOURCES {
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for f in forbidden {
                if line.contains(f) {
                    found.push(format!("{file}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "steps reach into reference code:\n{}",
        found.join("\n")
    );
    let listed: Vec<&str> = harness::runner::catalogue::SOURCES
        .iter()
        .map(|(f, _)| *f)
        .collect();
    // Every file of `steps/` and its folders (a domain split into files), but `steps/mod.rs`.
    let steps = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/steps");
    let mut dirs = vec![steps.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let name = path
                .strip_prefix(&steps)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if name.ends_with(".rs") && name != "mod.rs" {
                assert!(
                    listed.contains(&format!("harness/src/steps/{name}").as_str()),
                    "steps/{name} is not in steps::SOURCES, so this check would not read it"
                );
            }
        }
    }
}

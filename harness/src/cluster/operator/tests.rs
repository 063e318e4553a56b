use super::*;
use crate::pki::{SIMULATION_EPOCH, Signer, subjects};
use time::Duration;

fn signer(name: &str, days: i64, serial: u64) -> String {
    Signer::issue(
        "openshift-kube-apiserver-operator",
        name,
        SIMULATION_EPOCH + Duration::days(days),
        Duration::days(365),
        serial,
    )
    .unwrap()
    .cert
    .pem
}

#[test]
fn each_profile_picks_its_sources() {
    let serving = Signer::issue_named(
        "kube-apiserver-lb-signer",
        SIMULATION_EPOCH,
        Duration::days(3650),
        1,
    )
    .unwrap()
    .cert
    .pem;
    let (old, new) = (
        signer(KUBE_APISERVER_TO_KUBELET_SIGNER, 0, 2),
        signer(KUBE_APISERVER_TO_KUBELET_SIGNER, 292, 3),
    );
    let csr = signer("csr-signer", 0, 4);
    let sources = CaSources {
        initial: Some(format!("{serving}{old}")),
        kubelet_client_ca: Some(format!("{new}{old}")),
        client_ca: Some(format!("{csr}{new}{old}")),
        bootstrap_complete: true,
    };
    let names = |pem: &str| subjects(pem).unwrap();
    assert_eq!(
        names(&kubelet_ca_bundle(Profile::Ocp412, &sources).unwrap()),
        names(&format!("{serving}{new}{old}"))
    );
    assert_eq!(
        names(&kubelet_ca_bundle(Profile::Ocp416, &sources).unwrap()),
        names(&format!("{csr}{new}{old}"))
    );
    let bringing_up = CaSources {
        bootstrap_complete: false,
        ..sources.clone()
    };
    assert_eq!(
        kubelet_ca_bundle(Profile::Ocp416, &bringing_up).unwrap(),
        kubelet_ca_bundle(Profile::Ocp412, &bringing_up).unwrap(),
        "before bootstrap completes, 4.16 renders what the bootstrap did"
    );
    let no_new = CaSources {
        kubelet_client_ca: None,
        ..sources.clone()
    };
    assert_eq!(
        kubelet_ca_bundle(Profile::Ocp412, &no_new).unwrap(),
        format!("{serving}{old}")
    );
    let nothing = CaSources::default();
    assert!(
        kubelet_ca_bundle(Profile::Ocp412, &nothing)
            .unwrap_err()
            .to_string()
            .contains("initial-kube-apiserver-server-ca")
    );
}

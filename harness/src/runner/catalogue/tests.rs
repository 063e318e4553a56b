use super::*;

#[test]
fn phrases_become_words_with_wildcards() {
    assert_eq!(
        skeleton(r"^(\d+ (?:days?|hours?)) pass(?:es)?$"),
        ["\u{0}", "pass"]
    );
    assert_eq!(
        skeleton("the {word} bundle holds {int} signer(s)"),
        ["the", "\u{0}", "bundle", "holds", "\u{0}", "signer"]
    );
    assert_eq!(
        skeleton(r"^every node's kubelet-ca\.crt (lists|lacks) the current (\S+)$"),
        [
            "every",
            "node's",
            "kubelet-ca.crt",
            "\u{0}",
            "the",
            "current",
            "\u{0}"
        ]
    );
}

#[test]
fn phrases_read_as_words() {
    let cases = [
        (
            r"^(\d+ (?:days?|hours?)) pass(?:es)?$",
            "<n> [day(s)|hour(s)] pass(es)",
        ),
        (
            r"^every node's (/\S+) is owned by (\d+):(\d+) with mode (0[0-7]{3})$",
            "every node's <path> is owned by <n>:<n> with mode <mode>",
        ),
        (
            r"^every kubelet loaded a new kubelet-ca\.crt (\d+) time(?:s|\(s\))?$",
            "every kubelet loaded a new kubelet-ca.crt <n> time(s)",
        ),
        (
            r#"^every node's annotation (\S+) is (?:"(.*)"|(the ControllerConfig's resourceVersion))$"#,
            r#"every node's annotation <name> is ["<text>"|the ControllerConfig's resourceVersion]"#,
        ),
        (
            r"^the image registry CAs? (.+) (?:is|are) published$",
            "the image registry CA(s) <text> [is|are] published",
        ),
        (
            r"^every node's (/\S+kubeconfig) (trusts|does not trust) (the kube-apiserver's new CA|the added CA)$",
            "every node's <path> [trusts|does not trust] [the kube-apiserver's new CA|the added CA]",
        ),
        (
            "the {word} bundle holds {int} signer(s)",
            "the <name> bundle holds <n> signer(s)",
        ),
        (
            "the {signer} bundle holds {int} signer(s)",
            "the <signer> bundle holds <n> signer(s)",
        ),
        (
            "the {pool} pool has {int} rendered config(s)",
            "the <pool> pool has <n> rendered config(s)",
        ),
        (
            r"^the (?P<pool>\w+) pool's certExpirys list the current (?P<signer>\S+) (with its expiry|without an expiry)$",
            "the <pool> pool's certExpirys list the current <signer> [with its expiry|without an expiry]",
        ),
    ];
    for (phrase, read) in cases {
        assert_eq!(human(phrase), read, "{phrase}");
    }
    // Every phrase of the catalogue reads without regex syntax.
    for s in catalogue() {
        let read = human(&s.phrase);
        assert!(
            !read.contains('\\') && !read.contains("(?") && !read.contains('^') && !read.contains('$'),
            "{} reads {read}",
            s.phrase
        );
    }
}

#[test]
fn a_misspelt_step_is_offered_the_phrase_it_missed() {
    let all = catalogue();
    let offered = nearest("3 dayz pass", &all);
    assert!(
        offered.first().is_some_and(|p| p == "When <duration> pass(es)"),
        "{offered:?}"
    );
    assert_eq!(
        offered.len(),
        1,
        "phrases made mostly of parameters are not near: {offered:?}"
    );
    let offered = nearest(
        "every nodes kubelet-ca.crt lists the current kubelet-signer",
        &all,
    );
    assert!(
        offered
            .iter()
            .any(|p| p == "Then every node's kubelet-ca.crt [lists|lacks] the current <signer>"),
        "{offered:?}"
    );
    assert!(nearest("the moon is made of cheese and nothing else", &all).is_empty());
}

#[test]
fn parameter_values_come_from_the_fixtures() {
    let all = parameter_values();
    let of = |kind: &str| {
        all.iter()
            .find(|p| p.kind == kind)
            .map(|p| p.values.clone())
            .unwrap()
    };
    assert!(of("signer").contains(&"kube-apiserver-to-kubelet-signer".to_string()));
    assert!(
        of("signer").contains(&"csr-signer-signer".to_string()),
        "{:?}",
        of("signer")
    );
    assert!(of("target (a certificate a signer issues)").contains(&"csr-signer".to_string()));
    assert_eq!(of("pool"), ["master", "worker"]);
    assert!(of("starting state").contains(&"fresh-install".to_string()));
}

//! The README's step catalogue is generated from the step definitions
//! (`mco-conformance steps --markdown`) and must not drift from them.

#[test]
fn the_readme_step_catalogue_matches_the_code() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).expect("README.md");
    let (begin, end) = ("<!-- steps:begin -->\n", "<!-- steps:end -->");
    let start = readme.find(begin).expect("README has a steps:begin marker") + begin.len();
    let stop = readme[start..].find(end).expect("README has a steps:end marker") + start;
    let generated = harness::runner::catalogue::catalogue_markdown();
    assert_eq!(
        &readme[start..stop],
        generated,
        "the README step catalogue is stale: replace it with the output of `cargo run --bin mco-conformance -- steps --markdown`"
    );
    assert!(
        harness::runner::catalogue::catalogue().len() >= 10,
        "every step is listed"
    );
    for step in harness::runner::catalogue::catalogue() {
        assert!(
            !step.phrase.is_empty(),
            "{} has no phrase in the catalogue",
            step.location
        );
    }
}

/// The README's features table is what `mco-conformance features` generates from the files.
#[test]
fn the_readme_features_table_matches_the_feature_files() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let table = readme
        .split("<!-- features:begin -->\n")
        .nth(1)
        .and_then(|rest| rest.split("<!-- features:end -->").next())
        .expect("README has the features markers");
    let generated = harness::runner::features_markdown(&[format!("{root}/features").into()])
        .unwrap_or_else(|e| panic!("the features lint: {e:?}"));
    assert_eq!(
        table, generated,
        "regenerate the README features table with `cargo run --bin mco-conformance -- features`"
    );
}

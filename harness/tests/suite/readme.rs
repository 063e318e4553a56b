//! The generated tables of the docs must not drift from what they are generated from: the step
//! catalogue in `docs/steps.md` (`mco-conformance steps --markdown`) and the features table in
//! `docs/features.md` (`mco-conformance features`).

#[test]
fn the_docs_step_catalogue_matches_the_code() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/steps.md"))
        .expect("docs/steps.md");
    let (begin, end) = ("<!-- steps:begin -->\n", "<!-- steps:end -->");
    let start = doc.find(begin).expect("docs/steps.md has a steps:begin marker") + begin.len();
    let stop = doc[start..]
        .find(end)
        .expect("docs/steps.md has a steps:end marker")
        + start;
    let generated = harness::runner::catalogue::catalogue_markdown();
    assert_eq!(
        &doc[start..stop],
        generated,
        "the step catalogue in docs/steps.md is stale: replace it with the output of `cargo run --bin mco-conformance -- steps --markdown`"
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

/// The features table of `docs/features.md` is what `mco-conformance features` generates from
/// the files.
#[test]
fn the_docs_features_table_matches_the_feature_files() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let doc = std::fs::read_to_string(format!("{root}/docs/features.md")).expect("docs/features.md");
    let table = doc
        .split("<!-- features:begin -->\n")
        .nth(1)
        .and_then(|rest| rest.split("<!-- features:end -->").next())
        .expect("docs/features.md has the features markers");
    let generated = harness::runner::features_markdown(&[format!("{root}/features").into()])
        .unwrap_or_else(|e| panic!("the features lint: {e:?}"));
    assert_eq!(
        table, generated,
        "the features table in docs/features.md is stale: replace it with the output of `cargo run --bin mco-conformance -- features`"
    );
}

/// The catalogue, read from the step sources, lists exactly the steps this binary registered
/// with cucumber (its inventory: keyword, file and line of each step function), so a step the
/// source reading missed or invented cannot hide.
#[test]
fn the_catalogue_lists_exactly_the_registered_steps() {
    use cucumber::codegen::{StepConstructor, WorldInventory, inventory};
    type W = harness::world::ConformanceWorld;
    // A registered step's file (normalised: this binary includes the steps by a relative
    // path) and line, with its keyword.
    fn at(keyword: &'static str, loc: cucumber::step::Location) -> (&'static str, String, u32) {
        let path = loc.path.replace('\\', "/");
        let file = path
            .rsplit_once("src/steps/")
            .map(|(_, f)| format!("harness/src/steps/{f}"))
            .unwrap_or(path);
        (keyword, file, loc.line)
    }
    let mut registered: Vec<(&'static str, String, u32)> = Vec::new();
    registered.extend(
        inventory::iter::<<W as WorldInventory>::Given>
            .into_iter()
            .map(|s| at("Given", s.inner().0)),
    );
    registered.extend(
        inventory::iter::<<W as WorldInventory>::When>
            .into_iter()
            .map(|s| at("When", s.inner().0)),
    );
    registered.extend(
        inventory::iter::<<W as WorldInventory>::Then>
            .into_iter()
            .map(|s| at("Then", s.inner().0)),
    );
    let catalogue = harness::runner::catalogue::catalogue();
    assert_eq!(
        registered.len(),
        catalogue.len(),
        "registered {registered:?}\ncatalogue {:?}",
        catalogue.iter().map(|s| &s.location).collect::<Vec<_>>()
    );
    // The catalogue names the attribute's line; cucumber the function's, a few lines below
    // (rustfmt may break a long attribute).
    for (keyword, file, line) in &registered {
        let found = catalogue.iter().any(|s| {
            let (f, l) = s.location.rsplit_once(':').unwrap();
            let l: u32 = l.parse().unwrap();
            s.keyword == *keyword && f == file && l <= *line && *line <= l + 6
        });
        assert!(
            found,
            "{keyword} step at {file}:{line} is registered but not in the catalogue"
        );
    }
}

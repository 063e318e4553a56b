//! The README's step catalogue is generated from the step definitions
//! (`mco-conformance steps --markdown`) and must not drift from them.

#[path = "../harness/src/steps/mod.rs"]
#[allow(dead_code)]
mod steps;

#[test]
fn the_readme_step_catalogue_matches_the_code() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let (begin, end) = ("<!-- steps:begin -->\n", "<!-- steps:end -->");
    let start = readme.find(begin).expect("README has a steps:begin marker") + begin.len();
    let stop = readme[start..].find(end).expect("README has a steps:end marker") + start;
    let generated = steps::catalogue_markdown();
    assert_eq!(
        &readme[start..stop],
        generated,
        "the README step catalogue is stale: replace it with the output of `cargo run --bin mco-conformance -- steps --markdown`"
    );
    assert!(steps::catalogue().len() >= 10, "every step is listed");
}

/// The README's features table has one row per file under `features/`, in file-name order, and
/// names no file that is not there.
#[test]
fn the_readme_features_table_lists_every_feature_file() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let section = readme
        .split("\n## Features\n")
        .nth(1)
        .expect("README has a Features section");
    let listed: Vec<String> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(name, _)| name.to_string()))
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(format!("{root}/features"))
        .expect("features/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".feature"))
        .collect();
    files.sort();
    assert_eq!(
        listed, files,
        "the README features table must have one row per feature file, in file-name order"
    );
}

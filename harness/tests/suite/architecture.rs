//! The harness's module graph has no cycles: the MCO model (`mco`: names, paths, API handles,
//! the Ignition side of a MachineConfig) and the per-release traits (`profile`) are the shared
//! homes, and the reference cluster, the reference daemon and the nodes depend on them, not on
//! each other in a ring. Read from the sources: every `crate::<module>` a top-level module's
//! code names (comments and test modules aside). File by file, `files` keeps both crates free of
//! circles too; `sizes` keeps functions at 80 lines or fewer; `overlay` keeps the mutants out of
//! the reference daemon's logic. And the node side (what runs on a node, and the model it
//! reads) uses nothing of the harness side: the line a split of the crate by weight cuts along.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod files;
mod overlay;
mod sizes;

/// Top-level module of `harness/src` → the top-level modules its code uses.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let module = first.trim_end_matches(".rs").to_string();
            if matches!(module.as_str(), "lib" | "bin") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let uses = graph.entry(module.clone()).or_default();
            for line in code.lines() {
                let line = line.trim_start();
                if line.starts_with("//") {
                    continue;
                }
                for (i, _) in line.match_indices("crate::") {
                    let name: String = line[i + "crate::".len()..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty()
                        && name != module
                        && name.chars().next().is_some_and(char::is_lowercase)
                    {
                        uses.insert(name);
                    }
                }
            }
        }
    }
    graph
}

/// A cycle through `start`, if there is one.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let here = path.last().unwrap().clone();
        for next in graph.get(&here).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(graph, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn the_harness_modules_depend_on_each_other_without_a_cycle() {
    let graph = module_graph();
    for module in ["agent", "cluster", "node", "mco", "profile", "scenario", "pki"] {
        assert!(
            graph.contains_key(module),
            "no module {module} under harness/src: {graph:?}"
        );
    }
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module) {
            panic!("a module cycle: {}", cycle.join(" -> "));
        }
    }
    // The shared homes depend on nothing of the reference implementation.
    for home in ["mco", "profile"] {
        let uses = &graph[home];
        for part in ["agent", "cluster", "node", "scenario", "steps"] {
            assert!(!uses.contains(part), "{home} uses {part}: {uses:?}");
        }
    }
}

/// The check finds a cycle where there is one.
/// What runs on a node (the reference daemon, the node runtime) and the model and traits it
/// reads: the modules a node-side crate would hold.
const NODE_SIDE: &[&str] = &["agent", "node", "mco", "pki", "profile", "pace"];

/// The node side's code names no module of the harness side (the cluster, scenarios, steps,
/// runner, waits, reports): what both sides need lives in the model (`mco`, `profile`, `pki`).
#[test]
fn the_node_side_uses_nothing_of_the_harness_side() {
    let graph = module_graph();
    let mut crossings = Vec::new();
    for module in NODE_SIDE {
        let uses = graph
            .get(*module)
            .unwrap_or_else(|| panic!("no module {module} in harness/src"));
        for used in uses {
            if !NODE_SIDE.contains(&used.as_str()) {
                crossings.push(format!("{module} uses {used}"));
            }
        }
    }
    assert!(
        crossings.is_empty(),
        "the node side reaches into the harness side (move what both need into mco, profile or pki): {}",
        crossings.join("; ")
    );
}

#[test]
fn a_ring_of_modules_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]
            .into_iter()
            .map(|(m, uses)| (m.to_string(), uses.iter().map(|u| u.to_string()).collect()))
            .collect();
    assert_eq!(
        cycle_from(&graph, "a"),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(cycle_from(&graph, "d"), None);
}

/// The lines of `code` that decide by profile in place: a comparison with a `Profile` variant
/// (`Profile::Ocp…`; `Profile::ALL` and the like are lists, not decisions),
/// or a match arm or `matches!` on one. Such decisions belong in the traits table
/// (`harness/src/profile`), where a new profile must fill every row.
fn profile_decisions(code: &str) -> Vec<String> {
    code.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//"))
        .filter(|line| {
            let variant = line.contains("Profile::Ocp");
            line.contains("== Profile::Ocp")
                || line.contains("!= Profile::Ocp")
                || (variant && line.contains("=>"))
                || (variant && line.contains("matches!("))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn no_code_outside_the_traits_table_decides_by_profile() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path != src.join("profile") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in profile_decisions(code) {
                found.push(format!("{}: {line}", path.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "decisions by profile outside harness/src/profile (put them in the traits table):\n{}",
        found.join("\n")
    );
    // The check sees each form it looks for.
    let decisions = profile_decisions(
        "if profile == Profile::Ocp412 {}\nlet x = p != Profile::Ocp416;\n    Profile::Ocp414 => 1,\nmatches!(p, Profile::Ocp412)\n// == Profile::Ocp412 in a comment\nlet all = Profile::ALL;\n\"all\" => Ok(Profile::ALL.to_vec()),",
    );
    assert_eq!(decisions.len(), 4, "{decisions:?}");
}

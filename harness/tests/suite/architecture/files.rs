//! No circle between files: in `harness/src` and in `fake-apiserver/src`, every `.rs` file of
//! the library is a node, named by its module path (`agent::update`, `http::objects`, `crate`
//! for `lib.rs`), and a file points at another when its code names an item of that file. The
//! nodes and their uses are read from the sources with a small tokenizer (comments, strings and
//! test code left out), not a Rust parser.
//!
//! - The files are those the compiler reads for the library: `lib.rs` and, from it, every
//!   `mod x;` outside test code (`src/bin/` holds binaries, crates of their own). Test code is
//!   an item under `#[cfg(test)]` (a `#[cfg(test)] mod x;` takes its file and the files below
//!   it along) and a module named `tests`, inline or in `tests.rs`; test code may use anything.
//! - A use is a path that starts at `crate`, `super`, `self`, the crate's own name (`harness`,
//!   which `lib.rs` declares with `extern crate self as harness`) or a module the file declares
//!   (`mod x;` then `x::…`), in a `use` or in code. It points at the deepest module along the
//!   path that is a file (`crate::agent::update::Foo` → `agent::update`), and when the next name
//!   is one that file imports rather than defines, on to where that name comes from (so
//!   `crate::ServerHandle`, re-exported by `lib.rs`, points at `handle`; a name a file has through
//!   a glob import is looked for in the glob's sources).
//! - A parent's `mod x;` and its re-exports (`pub use x::Y`, any `pub(…) use`) are not uses of
//!   the child: they are the parent's face to the rest of the crate, and a path through them
//!   already reaches the child (above). Counting them would make every child that reads one
//!   shared item from its parent (`super::Thing`) a circle with it, and the check would ask for
//!   moves no dependency calls for. A re-exported name the parent's own code also uses is a use,
//!   found by words: a type or constant's name anywhere in the code, a function's or module's
//!   where it is called or a path goes on (so a local variable of the same name is not taken
//!   for it; an enum variant of the same name is).
//! - A private `use` is a use even if only the file's children read it through `super::`;
//!   compiling with `-D warnings` keeps unused imports out. A private glob (`use super::*`) uses
//!   the file it reads from, whatever names it takes.
//!
//! Inline modules other than tests are not modelled (their `self` and `super` would be read as
//! the file's): the check refuses them rather than guess. A circle stays only when `ALLOWED`
//! names it, with its reason. The reading is in `tokens` and `graph`.

mod graph;
mod tokens;

use graph::CrateFiles;
use std::collections::{BTreeMap, BTreeSet};

/// Uses a circle may keep, `(crate directory, from, to, why)`: each is left out of the graph,
/// and must still be a use, so an entry goes when its reason does. An entry says why its circle
/// stays: files that are one concern, or the move that would end it, left to those files' next
/// change. Any other circle is broken by moving what both sides need into a file below both.
const ALLOWED: &[(&str, &str, &str, &str)] = &[
    // The reference daemon's context and its live parts.
    (
        "harness",
        "agent::env",
        "agent::auxiliary",
        "AgentEnv carries the daemon's error pipe (Auxiliary), and the main loop's handling of \
         it (until_fatal) runs on the AgentEnv it belongs to",
    ),
    (
        "harness",
        "agent::env",
        "agent::events",
        "AgentEnv carries the daemon's event recorder, and recording an event is a method of \
         the AgentEnv that posts it",
    ),
    (
        "harness",
        "agent::env",
        "agent::own_node",
        "AgentEnv carries the daemon's Node informer (OwnNode), which follows the node the \
         AgentEnv names and reports to its error pipe",
    ),
    // A trait and its implementor, and a node and its services.
    (
        "harness",
        "node",
        "node::embedded",
        "the Node trait's as_embedded names the embedded backend, which implements Node: one \
         of the two downcasts crash injection needs",
    ),
    (
        "harness",
        "node",
        "node::container",
        "the Node trait's as_container names the container backend, which implements Node: the \
         other downcast crash injection needs (the agent's start armed over the init's socket)",
    ),
    (
        "harness",
        "node::embedded::service",
        "node::embedded",
        "what a running service gets (ServiceContext) holds its EmbeddedNode, and the node runs \
         its services: types that refer to each other, in two files for size",
    ),
];

/// `files`' graph with the allowed edges left out; panics on an allowed edge that is gone.
fn checked_graph(files: &CrateFiles) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut graph = files.graph();
    for (dir, from, to, _why) in ALLOWED.iter().filter(|a| a.0 == files.dir) {
        let removed = graph.get_mut(*from).and_then(|uses| uses.remove(*to));
        assert!(
            removed.is_some(),
            "{dir}: the allowed edge {from} -> {to} is no longer there: remove it from ALLOWED"
        );
    }
    graph
}

/// The files of `graph` that lie on a circle, in groups that reach each other.
fn tangles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<BTreeSet<String>> {
    let reach = |start: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(here) = stack.pop() {
            for next in graph.get(&here).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|file| (file, reach(file))).collect();
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for (file, reached) in &reaches {
        if !reached.contains(*file) || found.iter().any(|t| t.contains(*file)) {
            continue;
        }
        found.push(
            reached
                .iter()
                .filter(|other| reaches.get(other).is_some_and(|r| r.contains(*file)))
                .cloned()
                .collect(),
        );
    }
    found
}

/// Each tangle as its files and the uses between them.
fn report(
    files: &CrateFiles,
    graph: &BTreeMap<String, BTreeMap<String, String>>,
    tangles: &[BTreeSet<String>],
) -> String {
    tangles
        .iter()
        .map(|tangle| {
            let mut lines = vec![format!("{}: files in a circle:", files.dir)];
            for from in tangle {
                for (to, how) in graph[from].iter().filter(|(to, _)| tangle.contains(*to)) {
                    lines.push(format!("  {} -> {to} ({how})", files.path_of(from)));
                }
            }
            lines.join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_file_of_either_crate_uses_itself_through_a_circle() {
    let mut found = Vec::new();
    for dir in ["harness", "fake-apiserver"] {
        let files = CrateFiles::read(dir);
        let graph = checked_graph(&files);
        // The reading sees what it must: the crates' files and some of their uses.
        assert!(graph.len() > 20, "{dir}: {:?}", graph.keys());
        assert!(
            graph.values().map(BTreeMap::len).sum::<usize>() > graph.len(),
            "{dir}: {graph:?}"
        );
        let tangles = tangles(&graph);
        if !tangles.is_empty() {
            found.push(report(&files, &graph, &tangles));
        }
    }
    assert!(
        found.is_empty(),
        "move what both sides need into the lower file or a small new one:\n{}",
        found.join("\n")
    );
}

/// The uses of `module` in a crate of `sources`.
fn uses_of(sources: &[(&str, &str)], module: &str) -> Vec<String> {
    let graph = CrateFiles::from_sources(sources).graph();
    graph[module].keys().cloned().collect()
}

/// The reading sees each kind of use, and nothing in comments, strings or test code.
#[test]
fn each_kind_of_use_is_seen() {
    let here = r#"
        //! crate::ignored::in_a_comment
        use crate::agent::{self, update::{Applied as A, Plan}};
        pub use crate::mco::Reexported;
        mod child;
        fn f() -> A {
            let s = "crate::ignored::in_a_string";
            let c = '{';
            harness::pki::clock::now(child::thing(), self::g::<'static>(), Plan);
            std::mem::drop(c);
        }
        #[cfg(test)]
        fn helper() { crate::ignored::test_only(); }
        #[cfg(test)]
        mod tests { use crate::ignored::tests; }
    "#;
    let sources = [
        (
            "",
            "extern crate self as harness; mod agent; mod mco; mod pki; mod ignored;",
        ),
        ("agent", "mod here; mod update; pub struct AgentEnv;"),
        ("agent::update", "pub struct Applied; pub struct Plan;"),
        ("agent::here", here),
        ("agent::here::child", "pub fn thing() {}"),
        ("mco", "mod pool; pub use pool::Reexported;"),
        ("mco::pool", "pub struct Reexported;"),
        ("pki", "pub mod clock;"),
        ("pki::clock", "pub fn now() {}"),
        ("ignored", ""),
    ];
    assert_eq!(
        uses_of(&sources, "agent::here"),
        ["agent", "agent::here::child", "agent::update", "pki::clock"]
    );
    // A re-export is no use; a path through it reaches the file the name comes from.
    assert!(uses_of(&sources, "mco").is_empty());
    let through = [
        ("", "mod a; mod mco;"),
        ("a", "use crate::mco::Reexported;"),
        ("mco", "mod pool; pub use pool::Reexported;"),
        ("mco::pool", "pub struct Reexported;"),
    ];
    assert_eq!(uses_of(&through, "a"), ["mco::pool"]);
    // A glob uses its file; a name a glob brings in is looked for where the glob reads.
    let globs = [
        ("", "mod a; mod b; mod c;"),
        ("a", "use super::b::*; fn f() { crate::c::Gamma; }"),
        ("b", "pub struct Beta;"),
        ("c", "mod inner; use inner::*;"),
        ("c::inner", "pub struct Gamma;"),
    ];
    assert_eq!(uses_of(&globs, "a"), ["b", "c::inner"]);
}

/// The check finds a ring of files, whichever way each names the next.
#[test]
fn a_ring_of_files_is_found() {
    let sources = [
        ("", "extern crate self as harness; mod a; mod b; mod d;"),
        ("a", "use crate::b::Beta; pub struct Alpha;"),
        ("b", "mod c; pub struct Beta(c::Gamma);"),
        (
            "b::c",
            "pub struct Gamma; fn f() -> harness::a::Alpha { todo!() }",
        ),
        ("d", "use super::a::Alpha;"),
    ];
    let files = CrateFiles::from_sources(&sources);
    let graph = files.graph();
    let found = tangles(&graph);
    let ring: BTreeSet<String> = ["a", "b", "b::c"].map(String::from).into();
    assert_eq!(found, [ring]);
    let report = report(&files, &graph, &found);
    for step in [
        "<a> -> b (use crate::b::Beta)",
        "<b> -> b::c (c::Gamma)",
        "<b::c> -> a (harness::a::Alpha)",
    ] {
        assert!(report.contains(step), "{report}");
    }
}

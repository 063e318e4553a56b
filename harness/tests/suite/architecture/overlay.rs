//! The mutants are an overlay on the reference daemon, not branches in it: the daemon's logic
//! calls the fault hooks (`agent::faults`), whose every answer is the reference's unless a
//! mutant is running, and no module of its logic names a mutant. Only the overlay, the
//! catalogue, and the plumbing that starts a daemon as a mutant may: read from the sources,
//! comments aside.

use std::path::Path;

/// The files of `harness/src/agent` that may name a mutant, and why.
const MAY_NAME_A_MUTANT: &[(&str, &str)] = &[
    ("mutant.rs", "the catalogue"),
    (
        "faults.rs",
        "the overlay: the hooks and what each mutant makes of them",
    ),
    ("env.rs", "which mutant a daemon runs as"),
    ("mod.rs", "the catalogue's re-export"),
    ("process.rs", "`--mutant NAME` on the daemon's command line"),
    ("embedded.rs", "the in-process daemon started as a mutant"),
];

#[test]
fn no_module_of_the_daemon_s_logic_names_a_mutant() {
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/agent");
    let mut offending = Vec::new();
    let mut stack = vec![agent.clone()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path.strip_prefix(&agent).unwrap().to_string_lossy().into_owned();
            if MAY_NAME_A_MUTANT.iter().any(|(file, _)| *file == relative) {
                continue;
            }
            seen += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if code.contains("Mutant") || code.contains(".mutant") || code.contains("mutant_is") {
                    offending.push(format!("harness/src/agent/{relative}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        seen > 10,
        "the daemon's modules were not found under {}",
        agent.display()
    );
    assert!(
        offending.is_empty(),
        "the daemon's logic names a mutant; call a hook of agent::faults instead:\n{}",
        offending.join("\n")
    );
}

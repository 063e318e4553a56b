use super::*;
use crate::node::crash::parse_trace;

const OLD: &str = "old bundle\n";
const NEW: &str = "new bundle, longer\n";
const CA: &str = "/r/etc/kubernetes/kubelet-ca.crt";

fn file(contents: &str) -> FileState {
    FileState {
        contents: contents.as_bytes().to_vec(),
        mode: 0o644,
        uid: 0,
        gid: 0,
    }
}

fn watched() -> BTreeMap<String, Option<FileState>> {
    [(CA.to_string(), Some(file(OLD)))].into_iter().collect()
}

/// What a reader finds at kubelet-ca.crt in every state the record can leave.
fn outcomes(trace: &str) -> Vec<Option<FileState>> {
    let record = record(&parse_trace(trace), &watched(), (0, 0)).expect("the record reads");
    let states = states(&record, STATE_BOUND).expect("within the bound");
    let dir = tempfile::tempdir().unwrap();
    states
        .iter()
        .map(|s| {
            record
                .materialise(s, &dir.path().join("state"))
                .unwrap()
                .remove(CA)
                .unwrap()
        })
        .collect()
}

fn whole(seen: &Option<FileState>) -> bool {
    *seen == Some(file(OLD)) || *seen == Some(file(NEW))
}

/// Upstream's writer (renameio): a temporary file in the same directory, chmod, write,
/// fsync, close, rename; no fsync of the directory.
const UPSTREAM: &str = r#"7 openat(AT_FDCWD</>, "/r/etc/kubernetes/.kubelet-ca.crt.1f", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 9</r/etc/kubernetes/.kubelet-ca.crt.1f>
7 fchmod(9</r/etc/kubernetes/.kubelet-ca.crt.1f>, 0644) = 0
7 write(9</r/etc/kubernetes/.kubelet-ca.crt.1f>, "new bundle, longer\n", 19) = 19
7 fsync(9</r/etc/kubernetes/.kubelet-ca.crt.1f>) = 0
7 rename("/r/etc/kubernetes/.kubelet-ca.crt.1f", "/r/etc/kubernetes/kubelet-ca.crt") = 0
"#;

#[test]
fn upstreams_writer_leaves_the_old_file_or_the_new_one_whole() {
    let seen = outcomes(UPSTREAM);
    assert!(seen.iter().all(whole), "{seen:?}");
    // Stale but whole: the rename, not followed by an fsync of the directory, may be lost.
    assert!(seen.contains(&Some(file(OLD))) && seen.contains(&Some(file(NEW))));
    // Nothing yet (1); the create (1); the chmod with or without the create (2); the write
    // kept, lost or zero-filled with each of those (8 new); the rename kept (1).
    assert_eq!(seen.len(), 13);
    // The fewest any writer that puts a new file in place leaves: create, write, fsync,
    // rename (the floor `features/power_loss.feature` states).
    let no_chmod: String = UPSTREAM
        .lines()
        .filter(|l| !l.contains("fchmod("))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(outcomes(&no_chmod).len(), 7);
}

#[test]
fn a_rename_with_no_fsync_before_it_can_leave_an_empty_or_zeroed_file() {
    let no_fsync: String = UPSTREAM
        .lines()
        .filter(|l| !l.contains("fsync("))
        .map(|l| format!("{l}\n"))
        .collect();
    let seen = outcomes(&no_fsync);
    assert!(
        seen.contains(&Some(file(""))),
        "an empty kubelet-ca.crt: {seen:?}"
    );
    let zeros = FileState {
        contents: vec![0; NEW.len()],
        ..file("")
    };
    assert!(seen.contains(&Some(zeros)), "a zero-filled one: {seen:?}");
    // A directory fsync after the rename makes the name durable, not the data.
    let dir_synced = format!(
        "{no_fsync}7 openat(AT_FDCWD</>, \"/r/etc/kubernetes\", O_RDONLY|O_DIRECTORY) = 4</r/etc/kubernetes>\n7 fsync(4</r/etc/kubernetes>) = 0\n"
    );
    assert!(outcomes(&dir_synced).iter().any(|s| !whole(s)));
}

#[test]
fn an_in_place_write_can_leave_an_empty_file_even_with_an_fsync() {
    let in_place = r#"7 openat(AT_FDCWD</>, "/r/etc/kubernetes/kubelet-ca.crt", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 9</r/etc/kubernetes/kubelet-ca.crt>
7 write(9</r/etc/kubernetes/kubelet-ca.crt>, "new bundle, longer\n", 19) = 19
7 fsync(9</r/etc/kubernetes/kubelet-ca.crt>) = 0
"#;
    let seen = outcomes(in_place);
    assert!(seen.contains(&Some(file(""))), "{seen:?}");
    assert!(seen.contains(&Some(file(NEW))), "{seen:?}");
}

#[test]
fn an_fsync_of_the_directory_after_the_rename_leaves_only_the_new_file() {
    let synced = format!(
        "{UPSTREAM}7 openat(AT_FDCWD</>, \"/r/etc/kubernetes\", O_RDONLY|O_DIRECTORY) = 4</r/etc/kubernetes>\n7 fsync(4</r/etc/kubernetes>) = 0\n"
    );
    let record = record(&parse_trace(&synced), &watched(), (0, 0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let end = record.ops.len();
    let after_sync = ca_in_states_at(&record, end, dir.path());
    assert_eq!(after_sync, [Some(file(NEW))], "one state, the new file");
    // Before the directory's fsync the rename could still be lost.
    let before_sync = ca_in_states_at(&record, end - 2, dir.path());
    assert!(before_sync.contains(&Some(file(OLD))), "{before_sync:?}");
}

#[test]
fn a_copy_across_file_systems_truncates_the_file_in_place() {
    // A temporary file in /tmp, renamed into place across file systems: EXDEV, then a copy.
    let copied = r#"7 openat(AT_FDCWD</>, "/tmp/.kubelet-ca.crt.1f", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 9</tmp/.kubelet-ca.crt.1f>
7 write(9</tmp/.kubelet-ca.crt.1f>, "new bundle, longer\n", 19) = 19
7 fsync(9</tmp/.kubelet-ca.crt.1f>) = 0
7 rename("/tmp/.kubelet-ca.crt.1f", "/r/etc/kubernetes/kubelet-ca.crt") = -1 EXDEV (Invalid cross-device link)
7 openat(AT_FDCWD</>, "/tmp/.kubelet-ca.crt.1f", O_RDONLY|O_CLOEXEC) = 9</tmp/.kubelet-ca.crt.1f>
7 openat(AT_FDCWD</>, "/r/etc/kubernetes/kubelet-ca.crt", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0100644) = 10</r/etc/kubernetes/kubelet-ca.crt>
7 sendfile(10</r/etc/kubernetes/kubelet-ca.crt>, 9</tmp/.kubelet-ca.crt.1f>, NULL, 2147479552) = 19
"#;
    let seen = outcomes(copied);
    assert!(seen.contains(&Some(file(""))), "{seen:?}");
    assert!(
        seen.contains(&Some(file(NEW))),
        "the copy's bytes are the temporary file's: {seen:?}"
    );
}

#[test]
fn states_are_the_same_every_time_and_the_whole_record_is_the_end_state() {
    let calls = parse_trace(UPSTREAM);
    let a = record(&calls, &watched(), (0, 0)).unwrap();
    let b = record(&calls, &watched(), (0, 0)).unwrap();
    assert_eq!(states(&a, STATE_BOUND).unwrap(), states(&b, STATE_BOUND).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let end = a.materialise(&a.whole(), &dir.path().join("s")).unwrap();
    assert_eq!(end[CA], Some(file(NEW)));
    assert!(states(&a, 2).is_err(), "past the bound it says so");
}

/// kubelet-ca.crt in each state a power loss after the record's first `at` calls can leave.
fn ca_in_states_at(record: &Record, at: usize, dir: &std::path::Path) -> Vec<Option<FileState>> {
    states_at(record, &durable_at(record), at, STATE_BOUND)
        .unwrap()
        .iter()
        .map(|s| record.materialise(s, &dir.join("s")).unwrap().remove(CA).unwrap())
        .collect()
}

//! Whether a file a reader found at a crash (or after a power loss) is whole: the old file or the
//! new one, with its mode and owner; and, when not, what it was instead, in words a failure can
//! show. Pure: it is given the three states and reads nothing.

use harness::scenario::FileState;

/// Why a file a reader found at a crash is not whole (`None`: it is the old file or the new one,
/// with its mode and owner).
pub(crate) fn not_whole(
    seen: Option<&FileState>,
    old: Option<&FileState>,
    new: Option<&FileState>,
) -> Option<String> {
    if seen == old || seen == new {
        return None;
    }
    let Some(seen) = seen else {
        return Some(format!(
            "was gone at the crash: neither the old file ({}) nor the new one ({})",
            describe(old),
            describe(new)
        ));
    };
    let same = |other: Option<&FileState>| other.is_some_and(|o| o.contents == seen.contents);
    Some(if same(old) || same(new) {
        format!(
            "had whole contents but mode {:04o} and owner {}:{} at the crash, expected {} or {}",
            seen.mode,
            seen.uid,
            seen.gid,
            describe(old),
            describe(new)
        )
    } else {
        format!(
            "was {} at the crash: neither the old contents ({}) nor the new ({}); {}",
            describe(Some(seen)),
            describe(old),
            describe(new),
            prefix_of(seen, old, new)
        )
    })
}

/// Whether what was seen is the start of the old or the new contents (a torn write).
fn prefix_of(seen: &FileState, old: Option<&FileState>, new: Option<&FileState>) -> &'static str {
    let starts = |f: Option<&FileState>| f.is_some_and(|f| f.contents.starts_with(&seen.contents));
    match (seen.contents.is_empty(), starts(new), starts(old)) {
        (true, _, _) => "an empty file",
        (false, true, _) => "the first part of the new contents",
        (false, false, true) => "the first part of the old contents",
        _ => "another file altogether",
    }
}

pub(crate) fn describe(file: Option<&FileState>) -> String {
    match file {
        None => "absent".into(),
        Some(f) => format!(
            "{} bytes (sha256 {}…), mode {:04o}, owner {}:{}",
            f.contents.len(),
            &hex_digest(&f.contents)[..12],
            f.mode,
            f.uid,
            f.gid
        ),
    }
}

fn hex_digest(data: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(contents: &str, mode: u32) -> FileState {
        FileState {
            contents: contents.as_bytes().to_vec(),
            mode,
            uid: 0,
            gid: 0,
        }
    }

    #[test]
    fn only_the_old_or_the_new_file_is_whole() {
        let (old, new) = (file("old bundle\n", 0o644), file("new bundle\n", 0o644));
        assert_eq!(not_whole(Some(&old), Some(&old), Some(&new)), None);
        assert_eq!(not_whole(Some(&new), Some(&old), Some(&new)), None);
        let empty = not_whole(Some(&file("", 0o644)), Some(&old), Some(&new)).unwrap();
        assert!(empty.contains("an empty file"), "{empty}");
        let torn = not_whole(Some(&file("new b", 0o644)), Some(&old), Some(&new)).unwrap();
        assert!(torn.contains("the first part of the new contents"), "{torn}");
        let mode = not_whole(Some(&file("new bundle\n", 0o600)), Some(&old), Some(&new)).unwrap();
        assert!(mode.contains("mode 0600"), "{mode}");
        let gone = not_whole(None, Some(&old), Some(&new)).unwrap();
        assert!(gone.contains("gone"), "{gone}");
        assert_eq!(
            not_whole(None, None, Some(&new)),
            None,
            "not there yet is the old state"
        );
    }
}

//! The Ignition side of a MachineConfig as both the controller and the daemon read it: a file
//! entry's contents (a `data:` URL), mode and path, and which files two configs differ in.

use base64::Engine;
use serde_json::Value;
use std::collections::BTreeSet;

/// The contents of an Ignition `data:` URL (`data:,<percent-encoded>` or `data:;base64,...`).
pub fn decode_data_url(url: &str) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if meta.ends_with(";base64") {
        base64::engine::general_purpose::STANDARD.decode(data).ok()
    } else {
        let mut out = Vec::with_capacity(data.len());
        let bytes = data.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        Some(out)
    }
}

/// A MachineConfig file entry's contents and mode.
pub fn file_entry(file: &Value) -> (String, Vec<u8>, u32) {
    let path = file["path"].as_str().unwrap_or("").to_string();
    let data = file["contents"]["source"]
        .as_str()
        .and_then(decode_data_url)
        .unwrap_or_default();
    let mode = file["mode"].as_u64().map(|m| m as u32).unwrap_or(0o644);
    (path, data, mode)
}

/// Paths added, removed, or whose whole file entry differs (`CalculateConfigFileDiffs`).
pub fn changed_files(old: &Value, new: &Value) -> Vec<String> {
    let files = |v: &Value| {
        v["config"]["storage"]["files"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let (old_files, new_files) = (files(old), files(new));
    let path = |f: &Value| f["path"].as_str().unwrap_or("").to_string();
    let mut changed = BTreeSet::new();
    for f in &old_files {
        if !new_files.iter().any(|n| path(n) == path(f) && n == f) {
            changed.insert(path(f));
        }
    }
    for f in &new_files {
        if !old_files.iter().any(|o| path(o) == path(f)) {
            changed.insert(path(f));
        }
    }
    changed.into_iter().collect()
}

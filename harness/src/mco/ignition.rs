//! The Ignition side of a MachineConfig as both the controller and the daemon read it: a file
//! entry's contents (a `data:` URL). Which files two configs differ in is `machine_config`'s.

use base64::Engine;

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

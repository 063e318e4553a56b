//! Upstream's docker-config helpers (release-4.16 pkg/controller/common/dockerconfig.go,
//! release-4.14 pkg/controller/common/helpers.go) as Go runs them: what
//! `MergeDockerConfigstoJSONMap` decodes into `map[string]DockerConfigEntry`, what
//! `ConvertSecretTodockercfg` decodes into `struct{ Auths map[string]interface{} }` and hands
//! on, and the final `json.Marshal(DockerConfigJSON{…})`. Pure functions over bytes; the
//! assembly that fetches the secrets lives in `registry_pull_secret.rs`, Go's JSON mechanics in
//! `go_syntax.rs` and `go_json.rs`.

use super::go_json::{self, GoJsonError, Kind, Reader};
use super::go_syntax;
use std::collections::BTreeMap;

/// One host's credentials: upstream's `DockerConfigEntry`, fields in declaration order (the
/// order Go writes them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    pub username: String,
    pub password: String,
    pub email: String,
    pub auth: String,
}

/// The JSON tags of `DockerConfigEntry`'s fields, in declaration order.
const FIELDS: [&str; 4] = ["username", "password", "email", "auth"];

impl Entry {
    fn fields(&self) -> [&String; 4] {
        [&self.username, &self.password, &self.email, &self.auth]
    }

    /// The field a JSON key decodes into: the exact tag, else one equal under Go's folding.
    fn field_mut(&mut self, key: &str) -> Option<&mut String> {
        let index = FIELDS
            .iter()
            .position(|name| *name == key)
            .or_else(|| FIELDS.iter().position(|name| go_json::folds_to(key, name)))?;
        [
            &mut self.username,
            &mut self.password,
            &mut self.email,
            &mut self.auth,
        ]
        .into_iter()
        .nth(index)
    }
}

/// Hosts and their entries; a `BTreeMap<String, _>` iterates as Go sorts map keys (bytewise).
pub type Hosts = BTreeMap<String, Entry>;

/// The old-style map `ConvertSecretTodockercfg` marshals: each host's value as decoded into
/// `interface{}`, kept as its bytes in the input; `None` when `Auths` stayed nil, which
/// marshals as `null`.
pub type OldStyle<'a> = Option<BTreeMap<String, &'a [u8]>>;

fn type_error(kind: Kind, target: &'static str, reader: &Reader) -> GoJsonError {
    GoJsonError::Type {
        value: kind.name(),
        target,
        offset: reader.offset(),
    }
}

/// `json.Unmarshal(raw, &dockerConfig)` into a nil `DockerConfig`: `null` leaves it empty; a
/// duplicate host replaces the earlier one whole, since Go zeroes the map element before
/// decoding each value.
pub fn unmarshal_docker_config(raw: &[u8]) -> Result<Hosts, GoJsonError> {
    go_syntax::check_valid(raw)?;
    let mut reader = Reader::new(raw);
    let mut hosts = Hosts::new();
    match reader.kind() {
        Kind::Null => {}
        Kind::Object => {
            while let Some(host) = reader.next_key() {
                let entry = decode_entry(&mut reader)?;
                hosts.insert(host, entry);
            }
        }
        kind => return Err(type_error(kind, "common.DockerConfig", &reader)),
    }
    Ok(hosts)
}

/// A host's value into a zeroed `DockerConfigEntry`: `null` leaves it zero; an object's keys
/// apply in document order, so the last key matching a field wins; unknown keys are skipped.
fn decode_entry(reader: &mut Reader) -> Result<Entry, GoJsonError> {
    let mut entry = Entry::default();
    match reader.kind() {
        Kind::Null => {
            reader.skip(false)?;
        }
        Kind::Object => {
            while let Some(key) = reader.next_key() {
                match entry.field_mut(&key) {
                    Some(slot) => decode_string(slot, reader)?,
                    None => {
                        reader.skip(false)?;
                    }
                }
            }
        }
        kind => return Err(type_error(kind, "common.DockerConfigEntry", reader)),
    }
    Ok(entry)
}

/// A value into a `string` field: `null` leaves the field as it was.
fn decode_string(slot: &mut String, reader: &mut Reader) -> Result<(), GoJsonError> {
    match reader.kind() {
        Kind::String => *slot = reader.string(),
        Kind::Null => {
            reader.skip(false)?;
        }
        kind => return Err(type_error(kind, "string", reader)),
    }
    Ok(())
}

/// `ConvertSecretTodockercfg`'s `json.Unmarshal` into `newStyleAuth`. The top level is an
/// object or `null`; every key folding to `auths` decodes into the one `Auths` field in
/// document order: an object adds its hosts to the map (Go reuses a non-nil map, replacing a
/// duplicate host whole), `null` sets it back to nil. A number in a host's value must fit a
/// `float64`, as it decodes into `interface{}`.
pub fn convert_secret_to_dockercfg(raw: &[u8]) -> Result<OldStyle<'_>, GoJsonError> {
    go_syntax::check_valid(raw)?;
    let mut reader = Reader::new(raw);
    let mut auths: OldStyle = None;
    match reader.kind() {
        Kind::Null => {}
        Kind::Object => {
            while let Some(key) = reader.next_key() {
                if !go_json::folds_to(&key, "auths") {
                    reader.skip(false)?;
                    continue;
                }
                match reader.kind() {
                    Kind::Null => {
                        reader.skip(false)?;
                        auths = None;
                    }
                    Kind::Object => {
                        let map = auths.get_or_insert_with(BTreeMap::new);
                        while let Some(host) = reader.next_key() {
                            let value = reader.skip(true)?;
                            map.insert(host, value);
                        }
                    }
                    kind => return Err(type_error(kind, "map[string]interface {}", &reader)),
                }
            }
        }
        kind => return Err(type_error(kind, "common.newStyleAuth", &reader)),
    }
    Ok(auths)
}

/// `MergeDockerConfigstoJSONMap`'s `json.Unmarshal` of what `ConvertSecretTodockercfg`
/// marshaled. The round trip through `map[string]interface{}` keeps each value's kind and
/// strings but leaves one key per name in a host's object, the last one written, and writes
/// them sorted: so a field takes the value of its matching key that sorts last ("username"
/// over "Username"), whatever the document order was.
pub fn unmarshal_old_style(auths: &OldStyle) -> Result<Hosts, GoJsonError> {
    let mut hosts = Hosts::new();
    for (host, value) in auths.iter().flatten() {
        let mut reader = Reader::new(value);
        let mut entry = Entry::default();
        match reader.kind() {
            Kind::Null => {}
            Kind::Object => {
                let mut members = BTreeMap::new();
                while let Some(key) = reader.next_key() {
                    members.insert(key, reader.skip(false)?);
                }
                for (key, value) in &members {
                    if let Some(slot) = entry.field_mut(key) {
                        decode_string(slot, &mut Reader::new(value))?;
                    }
                }
            }
            kind => return Err(type_error(kind, "common.DockerConfigEntry", &reader)),
        }
        hosts.insert(host.clone(), entry);
    }
    Ok(hosts)
}

/// `json.Marshal(DockerConfigJSON{Auths: hosts})`, byte for byte.
pub fn marshal_docker_config_json(hosts: &Hosts) -> Vec<u8> {
    let mut out = b"{\"auths\":{".to_vec();
    for (i, (host, entry)) in hosts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        go_json::write_string(&mut out, host);
        out.push(b':');
        for (j, (name, value)) in FIELDS.iter().zip(entry.fields()).enumerate() {
            out.push(if j == 0 { b'{' } else { b',' });
            go_json::write_string(&mut out, name);
            out.push(b':');
            go_json::write_string(&mut out, value);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}");
    out
}

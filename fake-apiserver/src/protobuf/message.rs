//! One message through a `schema` table: read from the wire as the generated decoder reads it
//! (a message field sent twice merges, a scalar's last value wins, a list appends, a map entry
//! replaces), then written as the JSON `encoding/json` writes the decoded Go struct; and back,
//! for answers.

use super::schema::{EXTRA_VALUE, Json, Message, QUANTITY, TIMESTAMP, Ty};
use super::wire::{self, WireError};
use base64::Engine as _;
use serde_json::{Map, Value};

/// A decoded message: one slot per field of its table, in the table's order.
#[derive(Debug, Clone, Default)]
pub(super) struct Decoded(Vec<Option<Val>>);

#[derive(Debug, Clone)]
pub(super) enum Val {
    /// A Go string: bytes, not necessarily UTF-8.
    Str(Vec<u8>),
    Int(i64),
    Bool(bool),
    Bytes(Vec<u8>),
    Msg(Decoded),
    /// Seconds and nanoseconds; `None` for the zero time (an empty `Timestamp`).
    Time(Option<(i64, i32)>),
    List(Vec<Val>),
    /// Entries in the order sent; a later one replaces an earlier one with the same key. A
    /// value is a `Str` (the bytes of a string or `[]byte`) or a `List` of them.
    Map(Vec<(Vec<u8>, Val)>),
    Dropped,
}

impl Decoded {
    fn empty(message: &Message) -> Self {
        Decoded(vec![None; message.fields.len()])
    }

    /// The value of the field with protobuf number `number`.
    pub(super) fn get(&self, message: &Message, number: i32) -> Option<&Val> {
        let index = message.fields.iter().position(|f| f.number == number)?;
        self.0.get(index)?.as_ref()
    }
}

/// Decode `data` as `message`.
pub(super) fn decode(message: &'static Message, data: &[u8]) -> Result<Decoded, WireError> {
    let mut out = Decoded::empty(message);
    decode_into(message, data, &mut out)?;
    Ok(out)
}

fn decode_into(message: &'static Message, data: &[u8], out: &mut Decoded) -> Result<(), WireError> {
    let end = data.len();
    let mut at = 0;
    while at < end {
        let start = at;
        let (number, wire_type) = wire::tag(data, &mut at, message.go)?;
        let Some(index) = message.fields.iter().position(|f| f.number == number) else {
            at = wire::skip(data, start, end)?;
            continue;
        };
        let field = &message.fields[index];
        let varint_field = matches!(field.ty, Ty::Bool | Ty::Int32 | Ty::Int64);
        if wire_type != if varint_field { 0 } else { 2 } {
            return Err(WireError::WrongWireType {
                wire_type,
                field: field.go,
            });
        }
        let slot = &mut out.0[index];
        match field.ty {
            Ty::Bool => *slot = Some(Val::Bool(wire::varint(data, &mut at)? != 0)),
            // Accumulated in an `int32`: the bits past the 32nd are lost.
            Ty::Int32 => *slot = Some(Val::Int(i64::from(wire::varint(data, &mut at)? as i32))),
            Ty::Int64 => *slot = Some(Val::Int(wire::varint(data, &mut at)? as i64)),
            Ty::String => *slot = Some(Val::Str(wire::delimited(data, &mut at)?.to_vec())),
            Ty::Bytes => *slot = Some(Val::Bytes(wire::delimited(data, &mut at)?.to_vec())),
            Ty::Message(inner) => {
                let payload = wire::delimited(data, &mut at)?;
                let mut merged = match slot.take() {
                    Some(Val::Msg(m)) => m,
                    _ => Decoded::empty(inner),
                };
                decode_into(inner, payload, &mut merged)?;
                *slot = Some(Val::Msg(merged));
            }
            Ty::Time | Ty::MicroTime => *slot = Some(Val::Time(timestamp(wire::delimited(data, &mut at)?)?)),
            Ty::Strings => {
                let value = Val::Str(wire::delimited(data, &mut at)?.to_vec());
                push(slot, value);
            }
            Ty::Messages(inner) => {
                let value = Val::Msg(decode(inner, wire::delimited(data, &mut at)?)?);
                push(slot, value);
            }
            Ty::StringMap | Ty::BytesMap | Ty::StringsMap | Ty::QuantityMap => {
                let entry = map_entry(data, &mut at, field.ty)?;
                match slot {
                    Some(Val::Map(entries)) => entries.push(entry),
                    _ => *slot = Some(Val::Map(vec![entry])),
                }
            }
            Ty::Dropped => {
                wire::delimited(data, &mut at)?;
                *slot = Some(Val::Dropped);
            }
        }
    }
    Ok(())
}

fn push(slot: &mut Option<Val>, value: Val) {
    match slot {
        Some(Val::List(items)) => items.push(value),
        _ => *slot = Some(Val::List(vec![value])),
    }
}

/// A `Time` or `MicroTime`: empty is the zero time, anything else a `Timestamp`.
fn timestamp(payload: &[u8]) -> Result<Option<(i64, i32)>, WireError> {
    if payload.is_empty() {
        return Ok(None);
    }
    let decoded = decode(&TIMESTAMP, payload)?;
    let number = |n| match decoded.get(&TIMESTAMP, n) {
        Some(Val::Int(v)) => *v,
        _ => 0,
    };
    Ok(Some((number(1), number(2) as i32)))
}

/// One map entry, as the generated code reads it: its bounds are checked, but its key (field
/// number 1) and value (number 2) are read up to the end of the enclosing message, whatever
/// their wire type; other fields are skipped within the entry. A missing key or value is empty.
/// A `StringsMap` value is an `ExtraValue` message, a `QuantityMap` one a `Quantity`, each
/// decoded as it is read.
fn map_entry(data: &[u8], at: &mut usize, ty: Ty) -> Result<(Vec<u8>, Val), WireError> {
    let mut entry_end = *at;
    let entry = wire::delimited(data, &mut entry_end)?;
    *at = entry_end - entry.len();
    let mut key = Vec::new();
    let strings = matches!(ty, Ty::StringsMap);
    let mut value = if strings {
        Val::List(Vec::new())
    } else {
        Val::Str(Vec::new())
    };
    while *at < entry_end {
        let start = *at;
        let number = (wire::varint(data, at)? >> 3) as i32;
        match number {
            1 => key = wire::delimited(data, at)?.to_vec(),
            2 if strings => {
                let items = decode(&EXTRA_VALUE, wire::delimited(data, at)?)?;
                value = match items.get(&EXTRA_VALUE, 1) {
                    Some(list @ Val::List(_)) => list.clone(),
                    _ => Val::List(Vec::new()),
                };
            }
            2 if matches!(ty, Ty::QuantityMap) => {
                let quantity = decode(&QUANTITY, wire::delimited(data, at)?)?;
                value = match quantity.get(&QUANTITY, 1) {
                    Some(text @ Val::Str(_)) => text.clone(),
                    _ => Val::Str(Vec::new()),
                };
            }
            2 => value = Val::Str(wire::delimited(data, at)?.to_vec()),
            _ => *at = wire::skip(data, start, entry_end)?,
        }
    }
    *at = entry_end;
    Ok((key, value))
}

/// `document`, a JSON object of `message`'s type, on the wire as the generated marshaller
/// writes it: fields in number order, maps in key order. A value that does not fit its field
/// (a wrong JSON type, a time that does not parse, bytes that are not base64) is left out.
pub(super) fn encode(message: &Message, document: &Map<String, Value>) -> Vec<u8> {
    let mut fields: Vec<_> = message.fields.iter().collect();
    fields.sort_by_key(|f| f.number);
    let mut out = Vec::new();
    for field in fields {
        if let Some(value) = document.get(field.json) {
            encode_field(&mut out, field.number, field.ty, value);
        }
    }
    out
}

/// One field of a document on the wire as field `number` of type `ty`; nothing when the value
/// does not fit the type.
fn encode_field(out: &mut Vec<u8>, number: i32, ty: Ty, value: &Value) {
    match ty {
        Ty::String => {
            if let Some(s) = value.as_str() {
                wire::put_delimited(out, number, s.as_bytes());
            }
        }
        Ty::Bool => {
            if let Some(b) = value.as_bool() {
                wire::put_tag(out, number, 0);
                wire::put_varint(out, u64::from(b));
            }
        }
        // Negative numbers take ten bytes, as Go's conversion to uint64 sign-extends them.
        Ty::Int32 | Ty::Int64 => {
            if let Some(n) = value.as_i64() {
                let n = if matches!(ty, Ty::Int32) {
                    i64::from(n as i32)
                } else {
                    n
                };
                wire::put_tag(out, number, 0);
                wire::put_varint(out, n as u64);
            }
        }
        Ty::Bytes => {
            if let Some(bytes) = unbase64(value) {
                wire::put_delimited(out, number, &bytes);
            }
        }
        Ty::Message(inner) => {
            if let Some(object) = value.as_object() {
                wire::put_delimited(out, number, &encode(inner, object));
            }
        }
        Ty::Time | Ty::MicroTime => {
            if let Some(payload) = value
                .as_str()
                .and_then(|s| encode_time(s, matches!(ty, Ty::MicroTime)))
            {
                wire::put_delimited(out, number, &payload);
            }
        }
        Ty::Strings => {
            for s in value.as_array().into_iter().flatten().filter_map(Value::as_str) {
                wire::put_delimited(out, number, s.as_bytes());
            }
        }
        Ty::Messages(inner) => {
            for object in value
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
            {
                wire::put_delimited(out, number, &encode(inner, object));
            }
        }
        Ty::StringMap | Ty::BytesMap | Ty::StringsMap | Ty::QuantityMap => {
            encode_map(out, number, ty, value);
        }
        Ty::Dropped => {}
    }
}

/// A map field (`ty` one of the map types): one entry message per key, in key order, its key
/// field 1 and its value field 2 (a string, base64-decoded bytes, an `ExtraValue` message of
/// strings or a `Quantity` message); a key whose value does not fit is left out.
fn encode_map(out: &mut Vec<u8>, number: i32, ty: Ty, value: &Value) {
    let mut entries: Vec<_> = value.as_object().into_iter().flatten().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (key, item) in entries {
        let item = match ty {
            Ty::BytesMap => unbase64(item),
            Ty::StringsMap => {
                let mut items = Vec::new();
                encode_field(&mut items, 1, Ty::Strings, item);
                Some(items)
            }
            Ty::QuantityMap => {
                let mut quantity = Vec::new();
                encode_field(&mut quantity, 1, Ty::String, item);
                Some(quantity)
            }
            _ => item.as_str().map(|s| s.as_bytes().to_vec()),
        };
        if let Some(item) = item {
            let mut entry = Vec::new();
            wire::put_delimited(&mut entry, 1, key.as_bytes());
            wire::put_delimited(&mut entry, 2, &item);
            wire::put_delimited(out, number, &entry);
        }
    }
}

/// The bytes a JSON string holds in base64, as `encoding/json` reads a `[]byte`.
fn unbase64(v: &Value) -> Option<Vec<u8>> {
    v.as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
}

/// A `Timestamp` for an RFC 3339 time: whole seconds for a `Time`, nanoseconds too for a
/// `MicroTime`.
fn encode_time(text: &str, micro: bool) -> Option<Vec<u8>> {
    let time = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    let mut out = Vec::new();
    wire::put_tag(&mut out, 1, 0);
    wire::put_varint(&mut out, time.unix_timestamp() as u64);
    if micro && time.nanosecond() != 0 {
        wire::put_tag(&mut out, 2, 0);
        wire::put_varint(&mut out, u64::from(time.nanosecond()));
    }
    Some(out)
}

/// The JSON document `encoding/json` writes for the Go struct `decoded` holds.
pub(super) fn to_json(message: &Message, decoded: &Decoded) -> Map<String, Value> {
    let mut out = Map::new();
    for (field, value) in message.fields.iter().zip(&decoded.0) {
        let rendered = match (field.json_rule, value) {
            _ if matches!(field.ty, Ty::Dropped) => None,
            (Json::Pointer, None) => None,
            (Json::Pointer, Some(v)) => Some(render(field.ty, v)),
            (rule, None) => zero(field.ty, rule),
            (Json::OmitEmpty, Some(v)) if is_empty(v) => zero(field.ty, Json::OmitEmpty),
            (_, Some(v)) => Some(render(field.ty, v)),
        };
        if let Some(rendered) = rendered {
            out.insert(field.json.to_string(), rendered);
        }
    }
    out
}

/// What an unset field is written as: `omitempty` leaves it out unless it is a struct (a
/// `Time` is `null`); without it, the Go zero value (`null` for a nil slice or map).
fn zero(ty: Ty, rule: Json) -> Option<Value> {
    match ty {
        Ty::Message(inner) => Some(Value::Object(to_json(inner, &Decoded::empty(inner)))),
        Ty::Time | Ty::MicroTime => Some(Value::Null),
        _ if rule == Json::OmitEmpty => None,
        Ty::String => Some(Value::from("")),
        Ty::Bool => Some(Value::Bool(false)),
        Ty::Int32 | Ty::Int64 => Some(Value::from(0)),
        _ => Some(Value::Null),
    }
}

fn is_empty(value: &Val) -> bool {
    match value {
        Val::Str(s) | Val::Bytes(s) => s.is_empty(),
        Val::Int(n) => *n == 0,
        Val::Bool(b) => !b,
        Val::List(items) => items.is_empty(),
        Val::Map(entries) => entries.is_empty(),
        Val::Msg(_) | Val::Time(_) | Val::Dropped => false,
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn base64(bytes: &[u8]) -> Value {
    Value::from(base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn render(ty: Ty, value: &Val) -> Value {
    match (ty, value) {
        (Ty::Bytes, Val::Str(b)) => base64(b),
        (_, Val::Str(s)) => Value::from(text(s)),
        (_, Val::Int(n)) => Value::from(*n),
        (_, Val::Bool(b)) => Value::Bool(*b),
        (_, Val::Bytes(b)) => base64(b),
        (Ty::Message(inner), Val::Msg(m)) => Value::Object(to_json(inner, m)),
        (Ty::Time, Val::Time(t)) => t.map_or(Value::Null, |(s, _)| Value::from(format_time(s, 0, false))),
        (Ty::MicroTime, Val::Time(t)) => t.map_or(Value::Null, |(s, n)| Value::from(format_time(s, n, true))),
        (Ty::Messages(inner), Val::List(items)) => Value::Array(
            items
                .iter()
                .map(|item| render(Ty::Message(inner), item))
                .collect(),
        ),
        (_, Val::List(items)) => Value::Array(items.iter().map(|item| render(Ty::String, item)).collect()),
        (Ty::BytesMap, Val::Map(entries)) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (text(k), render(Ty::Bytes, v)))
                .collect(),
        ),
        // An `ExtraValue` with no items is a nil slice: `null`.
        (Ty::StringsMap, Val::Map(entries)) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let empty = matches!(v, Val::List(items) if items.is_empty());
                    (
                        text(k),
                        if empty {
                            Value::Null
                        } else {
                            render(Ty::Strings, v)
                        },
                    )
                })
                .collect(),
        ),
        // A `Quantity` message without its string is the zero quantity.
        (Ty::QuantityMap, Val::Map(entries)) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let empty = matches!(v, Val::Str(s) if s.is_empty());
                    (
                        text(k),
                        if empty {
                            Value::from("0")
                        } else {
                            render(Ty::String, v)
                        },
                    )
                })
                .collect(),
        ),
        (_, Val::Map(entries)) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (text(k), render(Ty::String, v)))
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// A time as `metav1.Time` (`2006-01-02T15:04:05Z07:00`, UTC) or `metav1.MicroTime`
/// (`2006-01-02T15:04:05.000000Z07:00`) writes it, for any second Go's `time.Unix` takes:
/// nanoseconds outside a second carry into the seconds, a micro time's are cut to whole
/// microseconds first (toward zero, as `Duration.Truncate` cuts).
pub(super) fn format_time(seconds: i64, nanos: i32, micro: bool) -> String {
    let nanos = if micro {
        i128::from(nanos - nanos % 1000)
    } else {
        0
    };
    let total = i128::from(seconds) * 1_000_000_000 + nanos;
    let (secs, frac) = (total.div_euclid(1_000_000_000), total.rem_euclid(1_000_000_000));
    let (days, of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    let year = if year < 0 {
        format!("-{:04}", -year)
    } else {
        format!("{year:04}")
    };
    let clock = format!("{:02}:{:02}:{:02}", of_day / 3600, of_day / 60 % 60, of_day % 60);
    if micro {
        format!("{year}-{month:02}-{day:02}T{clock}.{:06}Z", frac / 1000)
    } else {
        format!("{year}-{month:02}-{day:02}T{clock}Z")
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian date (the well-known civil-from-days
/// arithmetic), in wide integers so no second a body can carry overflows.
fn civil_from_days(days: i128) -> (i128, i128, i128) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_go_writes_them() {
        assert_eq!(format_time(0, 0, false), "1970-01-01T00:00:00Z");
        assert_eq!(format_time(1_795_939_200, 999, false), "2026-11-29T08:00:00Z");
        assert_eq!(
            format_time(1_795_939_200, 123_456_789, true),
            "2026-11-29T08:00:00.123456Z"
        );
        assert_eq!(format_time(-1, 0, false), "1969-12-31T23:59:59Z");
        assert_eq!(format_time(951_782_400, 0, false), "2000-02-29T00:00:00Z");
        assert_eq!(format_time(253_402_300_800, 0, false), "10000-01-01T00:00:00Z");
        assert_eq!(format_time(-62_167_219_201, 0, false), "-0001-12-31T23:59:59Z");
        // Any second at all, without overflow.
        assert!(format_time(i64::MAX, i32::MAX, true).ends_with('Z'));
        assert!(format_time(i64::MIN, i32::MIN, true).ends_with('Z'));
    }
}

//! What the protobuf tables are written in: a message, its fields, each field's wire type and
//! how `encoding/json` writes it. The tables of `meta`, `core` and `groups` are made of these;
//! nothing here names a kind or a table.

/// One protobuf message: its Go type name (what the generated decoder's errors name) and its
/// fields in the Go struct's order (the order `encoding/json` writes them).
pub(crate) struct Message {
    pub go: &'static str,
    pub fields: &'static [Field],
}

pub(crate) struct Field {
    pub number: i32,
    pub json: &'static str,
    /// The Go struct field, as `proto: wrong wireType = 0 for field ObjectMeta` names it.
    pub go: &'static str,
    pub ty: Ty,
    pub json_rule: Json,
}

#[derive(Clone, Copy)]
pub(crate) enum Ty {
    String,
    Bool,
    Int32,
    Int64,
    /// `[]byte`: base64 in JSON.
    Bytes,
    Message(&'static Message),
    /// `metav1.Time`: a `Timestamp` on the wire, whole seconds in JSON (nanoseconds are read and
    /// dropped, as `Time.Unmarshal` drops them).
    Time,
    /// `metav1.MicroTime`: a `Timestamp` on the wire, microseconds in JSON.
    MicroTime,
    Strings,
    Messages(&'static Message),
    StringMap,
    BytesMap,
    /// `map[string]ExtraValue`: each value a message of strings on the wire, a list in JSON.
    StringsMap,
    /// `ResourceList`: each value a `Quantity` message on the wire (its string, field 1), that
    /// string in JSON. A quantity is kept as written (not parsed and put in canonical form, as
    /// a JSON body's is not either).
    QuantityMap,
    /// A message read for its framing only and not kept (`managedFields`: this server keeps no
    /// field owners).
    Dropped,
}

/// How `encoding/json` writes a field, from its Go type and tag.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Json {
    /// `omitempty` on a value: left out when zero; a struct (and a `Time`) is always written.
    OmitEmpty,
    /// No `omitempty`: always written, `null` for a nil slice or map.
    Always,
    /// A pointer with `omitempty`: written when the body carried the field.
    Pointer,
}

pub(super) const fn field(
    number: i32,
    json: &'static str,
    go: &'static str,
    ty: Ty,
    json_rule: Json,
) -> Field {
    Field {
        number,
        json,
        go,
        ty,
        json_rule,
    }
}

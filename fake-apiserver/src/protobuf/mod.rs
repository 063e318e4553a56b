//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), as
//! kubectl 1.31 and later sends built-in objects on `kubectl create namespace|configmap|secret`
//! and as client-go sends them when a program asks for protobuf. A body is the magic `k8s\0`
//! and a `runtime.Unknown` whose `raw` holds the object's message; it is read here into the JSON
//! document the same Go object marshals to, and from there takes the path a JSON body takes.
//!
//! Facts from apimachinery `runtime/serializer/protobuf/protobuf.go` (`Serializer.Decode`: the
//! checks before the envelope, the type defaulted from the URL's) and the generated decoders
//! (`wire`). Only the kinds `schema::KINDS` lists are modelled, with `DeleteOptions` for a
//! DELETE's body and `Status` for answers. Answers for a client that asks for protobuf are
//! written back through the same tables. Nothing here speaks HTTP: the caller words the errors.
//!
//! # Layout
//! - `wire`: the wire format and the generated decoders' errors.
//! - `schema`: the modelled messages as tables.
//! - `message`: one message through a table, to JSON and back.

mod message;
mod schema;
mod wire;

use message::Val;
use serde_json::{Value, json};

/// The media type of a protobuf body.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What starts every body (`protobuf.go`'s `protoEncodingPrefix`).
const MAGIC: &[u8; 4] = b"k8s\0";

/// A body's envelope, opened: the object's type as the envelope names it, any part it leaves
/// out taken from the URL's (`copyKindDefaults`), and the object's bytes.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub group: String,
    pub version: String,
    pub kind: String,
    raw: Vec<u8>,
}

impl Envelope {
    /// `apiVersion` as a JSON document carries it.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Open a body's envelope, or say why not in the serializer's words; `group`, `version` and
/// `kind` are the URL's type.
pub(crate) fn open(body: &[u8], group: &str, version: &str, kind: &str) -> Result<Envelope, String> {
    if body.is_empty() {
        return Err("empty data".into());
    }
    let Some(rest) = body.strip_prefix(MAGIC) else {
        // Go's `%v` of a byte slice.
        let prefix: Vec<String> = MAGIC.iter().map(u8::to_string).collect();
        return Err(format!(
            "provided data does not appear to be a protobuf message, expected prefix [{}]",
            prefix.join(" ")
        ));
    };
    if rest.is_empty() {
        return Err("empty body".into());
    }
    let unknown = message::decode(&schema::UNKNOWN, rest).map_err(|e| e.to_string())?;
    let string = |v: Option<&Val>| match v {
        Some(Val::Str(s)) => String::from_utf8_lossy(s).into_owned(),
        _ => String::new(),
    };
    let (api_version, named_kind) = match unknown.get(&schema::UNKNOWN, 1) {
        Some(Val::Msg(type_meta)) => (
            string(type_meta.get(&schema::TYPE_META, 1)),
            string(type_meta.get(&schema::TYPE_META, 2)),
        ),
        _ => (String::new(), String::new()),
    };
    let raw = match unknown.get(&schema::UNKNOWN, 2) {
        Some(Val::Bytes(raw)) => raw.clone(),
        _ => Vec::new(),
    };
    // `TypeMeta.GroupVersionKind`: an apiVersion with two slashes or more names no version.
    let (mut named_group, mut named_version) = match api_version.matches('/').count() {
        0 => (String::new(), api_version.clone()),
        1 => {
            let (g, v) = api_version.split_once('/').unwrap_or_default();
            (g.to_string(), v.to_string())
        }
        _ => (String::new(), String::new()),
    };
    if named_version.is_empty() && !version.is_empty() {
        (named_group, named_version) = (group.to_string(), version.to_string());
    }
    Ok(Envelope {
        group: named_group,
        version: named_version,
        kind: if named_kind.is_empty() {
            kind.to_string()
        } else {
            named_kind
        },
        raw,
    })
}

/// Why an envelope's object could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ObjectError {
    /// Its kind is one this server does not read in protobuf.
    NotModelled,
    /// Its bytes failed to decode, in the generated decoder's words.
    Malformed(String),
}

/// The envelope's object as the JSON document its Go type marshals to, `apiVersion` and `kind`
/// from the envelope. Fields the type does not declare are skipped, as the generated decoders
/// skip them (a protobuf body has no strict decoding).
pub(crate) fn object(envelope: &Envelope) -> Result<Value, ObjectError> {
    let message = schema::kind(&envelope.group, &envelope.kind).ok_or(ObjectError::NotModelled)?;
    let decoded =
        message::decode(message, &envelope.raw).map_err(|e| ObjectError::Malformed(e.to_string()))?;
    let mut document = json!({"apiVersion": envelope.api_version(), "kind": envelope.kind});
    if let Value::Object(fields) = &mut document {
        fields.extend(message::to_json(message, &decoded));
    }
    Ok(document)
}

/// A DELETE's `DeleteOptions` body as its JSON document, or why it cannot be read, in the
/// serializer's and the generated decoder's words.
pub(crate) fn delete_options(body: &[u8]) -> Result<Value, String> {
    let envelope = open(body, "meta.k8s.io", "v1", "DeleteOptions")?;
    let decoded = message::decode(&schema::DELETE_OPTIONS, &envelope.raw).map_err(|e| e.to_string())?;
    Ok(Value::Object(message::to_json(&schema::DELETE_OPTIONS, &decoded)))
}

/// A custom resource's answer when protobuf was negotiated, as kube-apiserver 1.36 gives it: a
/// Status is written in protobuf, but an object or a list cannot be (apiextensions' protobuf
/// serializer is handed an `Unstructured` it cannot marshal), so the encoder's error is the
/// answer, a 406 `NotAcceptable` Status in protobuf, after whatever the request did (apimachinery
/// `protobuf.go` `errNotMarshalable`, apiserver `responsewriters.SerializeObject`).
pub(crate) fn custom_answer(document: &Value) -> Option<(Vec<u8>, Option<http::StatusCode>)> {
    if document.get("kind").and_then(Value::as_str) == Some("Status") {
        return answer(document).map(|bytes| (bytes, None));
    }
    let go_type = if document.get("items").is_some_and(Value::is_array) {
        "*unstructured.UnstructuredList"
    } else {
        "*unstructured.Unstructured"
    };
    let refusal = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("object {go_type} does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"),
        "reason": "NotAcceptable", "code": 406});
    answer(&refusal).map(|bytes| (bytes, Some(http::StatusCode::NOT_ACCEPTABLE)))
}

/// An answer's JSON document in protobuf, envelope and all, when this server writes its kind
/// in protobuf: a `Status`, a modelled kind, or a list of one. `None` for anything else.
pub(crate) fn answer(document: &Value) -> Option<Vec<u8>> {
    let text = |key: &str| document.get(key).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let fields = document.as_object()?;
    let raw = if kind == "Status" && api_version == "v1" {
        message::encode(&schema::STATUS, fields)
    } else if let Some(message) = schema::kind(group, kind) {
        message::encode(message, fields)
    } else {
        let item = schema::kind(group, kind.strip_suffix("List")?)?;
        let mut raw = Vec::new();
        if let Some(meta) = fields.get("metadata").and_then(Value::as_object) {
            wire::put_delimited(&mut raw, 1, &message::encode(&schema::LIST_META, meta));
        }
        for object in fields
            .get("items")?
            .as_array()?
            .iter()
            .filter_map(Value::as_object)
        {
            wire::put_delimited(&mut raw, 2, &message::encode(item, object));
        }
        raw
    };
    let mut type_meta = Vec::new();
    wire::put_delimited(&mut type_meta, 1, api_version.as_bytes());
    wire::put_delimited(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    wire::put_delimited(&mut out, 1, &type_meta);
    wire::put_delimited(&mut out, 2, &raw);
    wire::put_delimited(&mut out, 3, b"");
    wire::put_delimited(&mut out, 4, b"");
    Some(out)
}

#[cfg(test)]
mod tests;

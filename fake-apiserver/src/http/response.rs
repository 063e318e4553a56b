//! What an answer is: the body type every handler returns, JSON and `Status` replies, and the
//! media type content negotiation picks. The handlers and the connection layer build on it;
//! it must not reach for the handlers, the routes or the server's state.

use crate::error::ApiError;
use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use std::convert::Infallible;

pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(crate) fn json_response(code: StatusCode, bytes: Bytes) -> Response<Body> {
    bytes_response(code, "application/json", bytes)
}

pub(super) fn bytes_response(code: StatusCode, content_type: &str, bytes: Bytes) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(bytes).boxed_unsync())
        .expect("valid static headers")
}

pub(super) fn value_response(code: StatusCode, value: &Value) -> Response<Body> {
    json_response(code, objects_bytes(value))
}

pub(super) fn objects_bytes(value: &Value) -> Bytes {
    Bytes::from(crate::depth::to_vec(value))
}

pub(crate) fn status_response(error: &ApiError) -> Response<Body> {
    if matches!(error, ApiError::PageNotFound) {
        let mut response = bytes_response(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"404 page not found\n"),
        );
        response.headers_mut().insert(
            header::HeaderName::from_static("x-content-type-options"),
            header::HeaderValue::from_static("nosniff"),
        );
        return response;
    }
    let code = StatusCode::from_u16(error.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    value_response(code, &error.status())
}

/// The media type content negotiation picks for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Json,
    Yaml,
    Protobuf,
}

/// The answer's media type, as apiserver's `negotiation.NegotiateOutputMediaType` picks it: the
/// `Accept` ranges by quality (and, at equal quality, the more specific first), the first the
/// server writes winning. `application/*` matches nothing (a real 1.36 answers it 406); a Table
/// request is JSON, and a protobuf one is skipped (this server writes no protobuf Table).
pub(crate) fn negotiated(headers: &http::HeaderMap) -> Output {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Output::Json;
    };
    let mut ranges: Vec<(f32, u8, bool, String)> = accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next()?.to_ascii_lowercase();
            let (mut q, mut table) = (1.0f32, false);
            for param in parts {
                match param.split_once('=') {
                    Some(("q", v)) => q = v.trim().parse().unwrap_or(0.0),
                    Some(("as", _)) => table = true,
                    _ => {}
                }
            }
            let specific = match media.as_str() {
                "*/*" => 0,
                m if m.ends_with("/*") => 1,
                _ => 2,
            };
            (q > 0.0).then_some((q, specific, table, media))
        })
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    for (_, _, table, media) in ranges {
        match media.as_str() {
            "application/json" | "*/*" => return Output::Json,
            "application/yaml" if !table => return Output::Yaml,
            crate::protobuf::MEDIA_TYPE if !table => return Output::Protobuf,
            _ => {}
        }
    }
    Output::Json
}

/// Whether content negotiation picks YAML for the answer.
pub(crate) fn yaml_negotiated(headers: &http::HeaderMap) -> bool {
    negotiated(headers) == Output::Yaml
}

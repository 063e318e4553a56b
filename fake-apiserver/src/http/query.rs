//! Query parameters of resource requests (ListOptions, WatchOptions, write options), read as
//! kube-apiserver's parameter codec reads them (`runtime.Convert_Slice_string_To_*`): the first
//! value of a repeated parameter counts; a boolean is false only for `0` or `false` in any case
//! and true for anything else, the empty string included; a number is Go's
//! `strconv.ParseInt(s, 10, 64)`, whose failure is a 400 in its own words. Numbers keep their
//! sign and full range here: a `limit` of zero or less asks for no paging, and what a watch
//! makes of any `timeoutSeconds` is `watch::timeout`'s. Parameters this server accepts and
//! ignores (`pretty`, `force`, `propagationPolicy`, `orphanDependents`) are listed so
//! `fake-apiserver/README.md` can say so; `gracePeriodSeconds` is only checked to be a number.

use crate::error::ApiError;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Query {
    pub watch: bool,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    /// As given: zero or less asks for no paging.
    pub limit: Option<i64>,
    pub continue_token: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub allow_watch_bookmarks: bool,
    /// As given, sign and all.
    pub timeout_seconds: Option<i64>,
    pub send_initial_events: bool,
    pub field_manager: Option<String>,
    /// `Strict`, `Warn` or `Ignore` for a write's unknown fields (unset is `Warn`).
    pub field_validation: Option<String>,
    pub dry_run: bool,
}

/// Accepted and ignored, so `fake-apiserver/README.md` can list them.
pub const IGNORED_PARAMETERS: &[&str] = &[
    "pretty",
    "force",
    "propagationPolicy",
    "gracePeriodSeconds",
    "orphanDependents",
    "includeObject",
    "timeout",
];

/// `runtime.Convert_Slice_string_To_bool`: only `0` and `false` (any case) are false.
fn boolean(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

/// Go's `strconv.ParseInt(value, 10, 64)`, its error worded as Go words it.
pub(crate) fn int64(value: &str) -> Result<i64, ApiError> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    let fail =
        |why: &str| ApiError::BadRequest(format!("strconv.ParseInt: parsing {}: {why}", go_quote(value)));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail("invalid syntax"));
    }
    // Rust's parser takes the same sign and digits; what it refuses now is only the range.
    value.parse::<i64>().map_err(|_| fail("value out of range"))
}

/// Go's `strconv.Quote`: printable characters as they are, the rest escaped.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() && (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\U{:08x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Query {
    pub(super) fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        let mut q = Query::default();
        let mut seen = std::collections::HashSet::new();
        for (key, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            let value = value.as_ref();
            let text = || (!value.is_empty()).then(|| value.to_string());
            // The codec reads a repeated parameter's first value (`dryRun` is a list).
            if key != "dryRun" && !seen.insert(key.to_string()) {
                continue;
            }
            match key.as_ref() {
                "watch" => q.watch = boolean(value),
                "resourceVersion" => q.resource_version = text(),
                "resourceVersionMatch" => q.resource_version_match = text(),
                "limit" => q.limit = Some(int64(value)?),
                "continue" => q.continue_token = text(),
                "labelSelector" => q.label_selector = text(),
                "fieldSelector" => q.field_selector = text(),
                "allowWatchBookmarks" => q.allow_watch_bookmarks = boolean(value),
                "timeoutSeconds" => q.timeout_seconds = Some(int64(value)?),
                "sendInitialEvents" => q.send_initial_events = boolean(value),
                "gracePeriodSeconds" => {
                    int64(value)?;
                }
                "fieldManager" => q.field_manager = text(),
                "fieldValidation" => q.field_validation = text(),
                "dryRun" => match value {
                    "All" => q.dry_run = true,
                    "" => {}
                    other => {
                        return Err(ApiError::invalid(
                            "DryRun",
                            "",
                            "FieldValueNotSupported",
                            "dryRun",
                            format!("Unsupported value: {other:?}: supported values: \"All\""),
                        ));
                    }
                },
                _ => {} // unknown parameters are ignored, as kube-apiserver does
            }
        }
        Ok(q)
    }

    /// A resourceVersion given as a number (`None` for unset or "0").
    pub(super) fn resource_version_number(&self) -> Result<Option<u64>, ApiError> {
        match self.resource_version.as_deref() {
            None | Some("" | "0") => Ok(None),
            // Go's ParseUint takes digits only (no sign).
            Some(v) => v.bytes().all(|b| b.is_ascii_digit()).then(|| v.parse().ok()).flatten().map(Some).ok_or_else(|| {
                // Go's `strconv.ParseUint` error, inside the field error the storage layer
                // wraps it in (apiserver `storage/interfaces.go`, `ValidateListOptions`).
                let why = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                    "value out of range"
                } else {
                    "invalid syntax"
                };
                ApiError::BadRequest(format!(
                    "invalid resource version: resourceVersion: Invalid value: {v:?}: strconv.ParseUint: parsing {v:?}: {why}"
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_kube_and_kubectl_send() {
        let q = Query::parse(Some(
            "watch=true&resourceVersion=12&allowWatchBookmarks=true&timeoutSeconds=290&labelSelector=a%3Db&fieldSelector=metadata.name%3Dx&limit=500&pretty=true",
        ))
        .unwrap();
        assert!(q.watch && q.allow_watch_bookmarks);
        assert_eq!(q.resource_version_number().unwrap(), Some(12));
        assert_eq!(q.label_selector.as_deref(), Some("a=b"));
        assert_eq!(q.field_selector.as_deref(), Some("metadata.name=x"));
        assert_eq!((q.limit, q.timeout_seconds), (Some(500), Some(290)));
    }

    #[test]
    fn numbers_are_go_int64s_and_booleans_false_only_for_0_and_false() {
        for (raw, message) in [
            ("limit=ten", "strconv.ParseInt: parsing \"ten\": invalid syntax"),
            ("limit=", "strconv.ParseInt: parsing \"\": invalid syntax"),
            ("limit=%2B", "strconv.ParseInt: parsing \"+\": invalid syntax"),
            (
                "timeoutSeconds=9223372036854775808",
                "strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
            ),
            (
                "gracePeriodSeconds=1%0A",
                "strconv.ParseInt: parsing \"1\\n\": invalid syntax",
            ),
        ] {
            let e = Query::parse(Some(raw)).unwrap_err();
            assert_eq!((e.code(), e.to_string()), (400, message.to_string()), "{raw}");
        }
        let q = Query::parse(Some(
            "limit=-9223372036854775808&timeoutSeconds=%2B9223372036854775807",
        ))
        .unwrap();
        assert_eq!((q.limit, q.timeout_seconds), (Some(i64::MIN), Some(i64::MAX)));
        for (raw, watch) in [
            ("watch=maybe", true),
            ("watch=", true),
            ("watch=FaLsE", false),
            ("watch=0", false),
        ] {
            assert_eq!(Query::parse(Some(raw)).unwrap().watch, watch, "{raw}");
        }
        assert!(
            !Query::parse(Some("watch=0&watch=1")).unwrap().watch,
            "the first value counts"
        );
        assert_eq!(Query::parse(Some("dryRun=Some")).unwrap_err().code(), 422);
        let q = Query::parse(Some("resourceVersion=abc")).unwrap();
        assert_eq!(q.resource_version_number().unwrap_err().code(), 400);
    }
}

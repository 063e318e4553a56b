//! Query parameters of resource requests (ListOptions, WatchOptions, write options), parsed
//! strictly: a malformed number or boolean is a 400 naming the parameter. Parameters this
//! server accepts and ignores (`pretty`, `fieldValidation`, `force`, `propagationPolicy`,
//! `gracePeriodSeconds`, `orphanDependents`) are listed so `fake-apiserver/README.md` can say so.

use crate::error::ApiError;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub watch: bool,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub allow_watch_bookmarks: bool,
    pub timeout_seconds: Option<u64>,
    pub send_initial_events: bool,
    pub field_manager: Option<String>,
    pub dry_run: bool,
}

/// Accepted and ignored, so `fake-apiserver/README.md` can list them.
pub const IGNORED_PARAMETERS: &[&str] = &[
    "pretty",
    "fieldValidation",
    "force",
    "propagationPolicy",
    "gracePeriodSeconds",
    "orphanDependents",
    "includeObject",
    "timeout",
];

fn boolean(name: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" | "1" | "True" => Ok(true),
        "false" | "0" | "False" | "" => Ok(false),
        other => Err(ApiError::BadRequest(format!(
            "invalid value {other:?} for parameter {name:?}: must be a boolean"
        ))),
    }
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, ApiError> {
    value.parse().map_err(|_| {
        ApiError::BadRequest(format!(
            "invalid value {value:?} for parameter {name:?}: must be a non-negative integer"
        ))
    })
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        let mut q = Query::default();
        for (key, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            let value = value.as_ref();
            let text = || (!value.is_empty()).then(|| value.to_string());
            match key.as_ref() {
                "watch" => q.watch = boolean("watch", value)?,
                "resourceVersion" => q.resource_version = text(),
                "resourceVersionMatch" => q.resource_version_match = text(),
                "limit" => q.limit = Some(number("limit", value)?),
                "continue" => q.continue_token = text(),
                "labelSelector" => q.label_selector = text(),
                "fieldSelector" => q.field_selector = text(),
                "allowWatchBookmarks" => q.allow_watch_bookmarks = boolean("allowWatchBookmarks", value)?,
                "timeoutSeconds" => q.timeout_seconds = Some(number("timeoutSeconds", value)?),
                "sendInitialEvents" => q.send_initial_events = boolean("sendInitialEvents", value)?,
                "fieldManager" => q.field_manager = text(),
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
    pub fn resource_version_number(&self) -> Result<Option<u64>, ApiError> {
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
    fn malformed_values_are_bad_requests() {
        for raw in ["limit=ten", "watch=maybe", "timeoutSeconds=-1", "dryRun=Some"] {
            let e = Query::parse(Some(raw)).unwrap_err();
            assert!(matches!(e.code(), 400 | 422), "{raw}");
        }
        let q = Query::parse(Some("resourceVersion=abc")).unwrap();
        assert_eq!(q.resource_version_number().unwrap_err().code(), 400);
    }
}

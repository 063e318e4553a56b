//! URL paths to routes: discovery, health, OpenAPI, the admin endpoint, and resource paths
//! in their core (`/api/v1/...`) and group (`/apis/{group}/{version}/...`) shapes.
//!
//! Parsing is purely syntactic; whether a resource exists is the registry's answer.

/// A resource path, split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    Version,
    Health,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`
    ResourceList {
        group: String,
        version: String,
    },
    OpenApiV2,
    OpenApiV3Root,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`
    OpenApiV3 {
        group: String,
        version: String,
    },
    /// `/_fake/v1/faults`: fault injection for tests.
    Faults,
    Resource(ResourcePath),
    Unknown,
}

/// Subresources of a namespace, told apart from the resources inside it.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// The path as Go's `net/url` gives it to kube-apiserver's router (`URL.Path`): every `%XX`
/// decoded, `%2F` included, before the path is split. A path whose escapes are malformed or
/// decode to bytes that are not UTF-8 is left as it came.
pub(crate) fn decode_path(raw: &str) -> std::borrow::Cow<'_, str> {
    if !raw.contains('%') {
        return raw.into();
    }
    match percent_decode(raw).map(String::from_utf8) {
        Some(Ok(decoded)) => decoded.into(),
        _ => raw.into(),
    }
}

/// `%XX` escapes decoded to bytes (Go's `url.PathUnescape`); `None` for a malformed escape.
pub(crate) fn percent_decode(raw: &str) -> Option<Vec<u8>> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(out)
}

pub(crate) fn parse(path: &str) -> Route {
    let trimmed = path.strip_suffix('/').filter(|p| !p.is_empty()).unwrap_or(path);
    let segments: Vec<&str> = trimmed.split('/').skip(1).collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Route::Unknown;
    }
    match segments.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", "api", version] => Route::OpenApiV3 {
            group: String::new(),
            version: version.to_string(),
        },
        ["openapi", "v3", "apis", group, version] => Route::OpenApiV3 {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["_fake", "v1", "faults"] => Route::Faults,
        ["api", version, rest @ ..] => resource_route("", version, rest),
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest),
        _ => Route::Unknown,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let (namespace, rest): (Option<&str>, &[&str]) = match rest {
        ["namespaces", ns, resource, tail @ ..]
            if !NAMESPACE_SUBRESOURCES.contains(resource) || !tail.is_empty() =>
        {
            (Some(ns), &rest[2..])
        }
        _ => (None, rest),
    };
    let path = |resource: &str, name: Option<&str>, sub: Option<&str>| {
        Route::Resource(ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: namespace.map(str::to_string),
            resource: resource.to_string(),
            name: name.map(str::to_string),
            subresource: sub.map(str::to_string),
        })
    };
    match rest {
        [] => Route::ResourceList {
            group: group.to_string(),
            version: version.to_string(),
        },
        [resource] => path(resource, None, None),
        [resource, name] => path(resource, Some(name), None),
        [resource, name, sub] => path(resource, Some(name), Some(sub)),
        _ => Route::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(group: &str, ns: Option<&str>, resource: &str, name: Option<&str>, sub: Option<&str>) -> Route {
        Route::Resource(ResourcePath {
            group: group.into(),
            version: "v1".into(),
            namespace: ns.map(Into::into),
            resource: resource.into(),
            name: name.map(Into::into),
            subresource: sub.map(Into::into),
        })
    }

    #[test]
    fn escapes_are_decoded_before_splitting() {
        assert_eq!(
            decode_path("/api/v1/namespaces/default/configmaps/my%2Dcm"),
            "/api/v1/namespaces/default/configmaps/my-cm"
        );
        assert_eq!(decode_path("/api%2Fv1/nodes"), "/api/v1/nodes");
        assert_eq!(decode_path("/api/v1/nodes/a%zz"), "/api/v1/nodes/a%zz");
        assert_eq!(decode_path("/api/v1/nodes/%ff"), "/api/v1/nodes/%ff");
        // A sign is no hex digit, though from_str_radix takes one.
        assert_eq!(decode_path("/api/v1/nodes/a%+f"), "/api/v1/nodes/a%+f");
        assert_eq!(
            parse(&decode_path("/api/v1/namespaces/kube%2Dsystem/configmaps")),
            res("", Some("kube-system"), "configmaps", None, None)
        );
    }

    #[test]
    fn paths() {
        let cases = [
            ("/api/v1/nodes", res("", None, "nodes", None, None)),
            (
                "/api/v1/nodes/n1/status",
                res("", None, "nodes", Some("n1"), Some("status")),
            ),
            ("/api/v1/namespaces", res("", None, "namespaces", None, None)),
            (
                "/api/v1/namespaces/default",
                res("", None, "namespaces", Some("default"), None),
            ),
            (
                "/api/v1/namespaces/default/status",
                res("", None, "namespaces", Some("default"), Some("status")),
            ),
            (
                "/api/v1/namespaces/default/configmaps",
                res("", Some("default"), "configmaps", None, None),
            ),
            (
                "/api/v1/namespaces/ns/pods/p/status",
                res("", Some("ns"), "pods", Some("p"), Some("status")),
            ),
            (
                "/apis/machineconfiguration.openshift.io/v1/machineconfigpools/worker/status",
                res(
                    "machineconfiguration.openshift.io",
                    None,
                    "machineconfigpools",
                    Some("worker"),
                    Some("status"),
                ),
            ),
            (
                "/api/v1",
                Route::ResourceList {
                    group: "".into(),
                    version: "v1".into(),
                },
            ),
            ("/apis/example.com", Route::Group("example.com".into())),
            ("/readyz/ping", Route::Health),
            ("/api/v1//configmaps", Route::Unknown),
            ("/api/v1/a/b/c/d", Route::Unknown),
            ("/nope", Route::Unknown),
            ("", Route::Unknown),
        ];
        for (path, want) in cases {
            assert_eq!(parse(path), want, "{path}");
        }
    }
}

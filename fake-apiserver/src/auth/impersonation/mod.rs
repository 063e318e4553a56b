//! Impersonation as kube-apiserver 1.36 serves it (apiserver `endpoints/filters/impersonation/`:
//! `constrained_impersonation.go`, `mode.go`; ConstrainedImpersonation is beta and on in 1.36):
//! the `Impersonate-User`, `-Group`, `-Uid` and `-Extra-*` headers are honoured when the
//! requestor is authorized to impersonate what they name, and refused otherwise; never ignored.
//!
//! Five modes are tried, the one that last worked for the requestor first (`modeIndexCache`):
//! associated-node (a service account acting as the node its pod runs on), arbitrary-node,
//! serviceaccount, user-info (each constrained: the requestor needs
//! `impersonate-on:<mode>:<verb>` on what the request addresses, and `impersonate:<mode>` on
//! each field), then legacy (`impersonate` on `users`, `groups`, `serviceaccounts`, `uids`,
//! `userextras`). When none allows the request the first refusal met is the answer. The
//! impersonated user is in `system:authenticated` (`system:unauthenticated` for
//! `system:anonymous`); a node impersonated by name alone is in `system:nodes`, a service
//! account without groups in its two service-account groups.
//!
//! Not modelled: the short-lived caches of successful checks (this server's authorizer never
//! changes its mind, so they change no answer), and the path check of an extra key
//! (`IsDomainPrefixedPath`'s regex; its domain is checked).

use super::{Identity, Policy, RequestAttributes};
use crate::error::ApiError;
use crate::store::Store;
use crate::validation::{is_dns1123_label, is_dns1123_subdomain};
use http::HeaderMap;
use std::collections::BTreeMap;

const USER: &str = "impersonate-user";
const UID: &str = "impersonate-uid";
const GROUP: &str = "impersonate-group";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// `authenticationv1.SchemeGroupVersion.Group`, where constrained modes check users and groups.
const AUTHENTICATION: &str = "authentication.k8s.io";

/// `serviceaccount.NodeNameKey`.
const NODE_NAME_EXTRA: &str = "authentication.kubernetes.io/node-name";

/// The mode index cache holds at most this many requestors (upstream's LRU: 10,000).
const MODE_CACHE_LIMIT: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    AssociatedNode,
    ArbitraryNode,
    ServiceAccount,
    UserInfo,
    Legacy,
}

/// `allImpersonationModes`, in order.
const MODES: [Mode; 5] = [
    Mode::AssociatedNode,
    Mode::ArbitraryNode,
    Mode::ServiceAccount,
    Mode::UserInfo,
    Mode::Legacy,
];

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::AssociatedNode => "associated-node",
            Mode::ArbitraryNode => "arbitrary-node",
            Mode::ServiceAccount => "serviceaccount",
            Mode::UserInfo => "user-info",
            Mode::Legacy => "legacy",
        }
    }

    fn constrained(self) -> bool {
        self != Mode::Legacy
    }

    /// The group users and groups are checked in: `authentication.k8s.io` for the constrained
    /// modes, the core group for legacy.
    fn users_group(self) -> &'static str {
        if self.constrained() { AUTHENTICATION } else { "" }
    }

    /// The verb of the per-field checks.
    fn verb(self) -> String {
        match self {
            Mode::Legacy => "impersonate".into(),
            constrained => format!("impersonate:{}", constrained.name()),
        }
    }

    /// Whether the mode applies at all (its `constrainedImpersonationModeFilter`).
    fn applies(self, wanted: &Identity, requestor: &Identity) -> bool {
        let only_name = wanted.uid.is_empty() && wanted.groups.is_empty() && wanted.extra.is_empty();
        let node = node_name(&wanted.user);
        match self {
            Mode::AssociatedNode => {
                only_name
                    && node.is_some()
                    && service_account(&requestor.user).is_some()
                    && requestor.extra.get(NODE_NAME_EXTRA).map(Vec::as_slice)
                        == node.map(|n| vec![n.to_string()]).as_deref()
            }
            Mode::ArbitraryNode => only_name && node.is_some(),
            Mode::ServiceAccount => only_name && service_account(&wanted.user).is_some(),
            Mode::UserInfo => node.is_none() && service_account(&wanted.user).is_none(),
            Mode::Legacy => true,
        }
    }
}

/// `isNodeUsername`: the node's name, if it is a valid one.
fn node_name(user: &str) -> Option<&str> {
    user.strip_prefix("system:node:")
        .filter(|n| is_dns1123_subdomain(n))
}

/// `serviceaccount.SplitUsername`: namespace and name.
fn service_account(user: &str) -> Option<(&str, &str)> {
    let (ns, name) = user.strip_prefix("system:serviceaccount:")?.split_once(':')?;
    (is_dns1123_label(ns) && !name.contains(':') && is_dns1123_subdomain(name)).then_some((ns, name))
}

/// The user the headers ask for, or `None` when they ask for nobody
/// (`processImpersonationHeaders`).
fn wanted_user(headers: &HeaderMap) -> Result<Option<Identity>, ApiError> {
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let first = |name: &str| headers.get(name).map(text).unwrap_or_default();
    let mut wanted = Identity {
        user: first(USER),
        uid: first(UID),
        groups: headers.get_all(GROUP).iter().map(text).collect(),
        ..Identity::default()
    };
    let mut has_extra = false;
    for name in headers.keys() {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            has_extra = true;
            wanted
                .extra
                .entry(path_unescape(key))
                .or_default()
                .extend(headers.get_all(name).iter().map(text));
        }
    }
    let has_groups = headers.contains_key(GROUP);
    if wanted.user.is_empty() {
        if !wanted.uid.is_empty() || has_groups || has_extra {
            return Err(ApiError::BadRequest(format!(
                "requested {} without impersonating a user name",
                go_default_info(&wanted)
            )));
        }
        return Ok(None);
    }
    Ok(Some(wanted))
}

/// `url.PathUnescape`, keeping the key as sent when it is malformed (`unescapeExtraKey`).
fn path_unescape(key: &str) -> String {
    match crate::http::route::percent_decode(key) {
        Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        None => key.to_string(),
    }
}

/// Go's `%#v` of a `*user.DefaultInfo`.
fn go_default_info(u: &Identity) -> String {
    let list = |v: &[String]| {
        let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
        format!("[]string{{{}}}", items.join(", "))
    };
    let groups = if u.groups.is_empty() {
        "[]string(nil)".to_string()
    } else {
        list(&u.groups)
    };
    let extra = if u.extra.is_empty() {
        "map[string][]string(nil)".to_string()
    } else {
        let entries: Vec<String> = u
            .extra
            .iter()
            .map(|(k, v)| format!("{k:?}:{}", list(v)))
            .collect();
        format!("map[string][]string{{{}}}", entries.join(", "))
    };
    format!(
        "&user.DefaultInfo{{Name:{:?}, UID:{:?}, Groups:{groups}, Extra:{extra}}}",
        u.user, u.uid
    )
}

/// Go's `%q` of a `[]string`.
fn go_quoted_list(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// What the authorizer chain is asked during one impersonation.
struct Checker<'a> {
    policy: &'a Policy,
    store: &'a Store,
    requestor: &'a Identity,
    request: &'a RequestAttributes,
}

impl Checker<'_> {
    /// `checkAuthorization`, as `mode`'s authorizer sees it: associated-node's hides the
    /// requestor's extra values and asks for every node at once.
    fn check(&self, mode: Mode, mut attrs: RequestAttributes) -> Result<(), ApiError> {
        if mode != Mode::AssociatedNode {
            return self.policy.check(self.requestor, &attrs, self.store);
        }
        let mut requestor = self.requestor.clone();
        let keys: Vec<String> = requestor.extra.keys().cloned().collect();
        requestor.extra = BTreeMap::from([(
            "authentication.kubernetes.io/associated-node-keys".to_string(),
            keys,
        )]);
        if attrs.verb == "impersonate:associated-node" {
            attrs.name = Some("*".into());
        }
        self.policy.check(&requestor, &attrs, self.store)
    }

    fn field(&self, mode: Mode, group: &str, resource: &str, name: &str) -> RequestAttributes {
        RequestAttributes {
            verb: mode.verb(),
            group: group.into(),
            resource: resource.into(),
            name: Some(name.to_string()).filter(|n| !n.is_empty()),
            ..RequestAttributes::default()
        }
    }

    /// One mode's verdict: `Ok(None)` when it does not apply.
    fn try_mode(&self, mode: Mode, wanted: &Identity) -> Result<Option<Identity>, ApiError> {
        if !mode.applies(wanted, self.requestor) {
            return Ok(None);
        }
        if mode.constrained() {
            let mut on = self.request.clone();
            on.verb = format!("impersonate-on:{}:{}", mode.name(), self.request.verb);
            self.check(mode, on)?;
        }
        let mut actual = wanted.clone();
        self.authorize_username(mode, wanted, &mut actual)?;
        // authorizeUID
        if !wanted.uid.is_empty() {
            self.check(mode, self.field(mode, AUTHENTICATION, "uids", &wanted.uid))?;
        }
        self.authorize_groups(mode, &wanted.groups)?;
        self.authorize_extra(mode, &wanted.extra)?;
        add_authentication_group(&mut actual);
        Ok(Some(actual))
    }

    /// `authorizeUsername`: may the requestor impersonate the user name? A node's name is
    /// checked as the node (whose groups become `system:nodes`), a service account's as the
    /// service account (whose groups, when none are asked for, become its two service-account
    /// groups); constrained modes refuse groups for either.
    fn authorize_username(
        &self,
        mode: Mode,
        wanted: &Identity,
        actual: &mut Identity,
    ) -> Result<(), ApiError> {
        let constrained = mode.constrained();
        let mut user = self.field(mode, mode.users_group(), "users", &wanted.user);
        if let Some(node) = node_name(&wanted.user).filter(|_| constrained) {
            user.resource = "nodes".into();
            user.name = Some(node.to_string());
            if !wanted.groups.is_empty() {
                return Err(user.denial(
                    self.requestor,
                    &format!(
                        "when impersonating a node, cannot impersonate groups {}",
                        go_quoted_list(&wanted.groups)
                    ),
                ));
            }
            actual.groups = vec!["system:nodes".into()];
        }
        if let Some((ns, name)) = service_account(&wanted.user) {
            user.resource = "serviceaccounts".into();
            user.namespace = Some(ns.to_string());
            user.name = Some(name.to_string());
            if constrained && !wanted.groups.is_empty() {
                return Err(user.denial(
                    self.requestor,
                    &format!(
                        "when impersonating a service account, cannot impersonate groups {}",
                        go_quoted_list(&wanted.groups)
                    ),
                ));
            }
            if wanted.groups.is_empty() {
                actual.groups = vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{ns}"),
                ];
            }
        }
        self.check(mode, user)
    }

    /// `authorizeGroups`: may the requestor impersonate each group? Constrained modes refuse
    /// the empty group and `system:masters`, and accept four or more groups at once when `*`
    /// is allowed.
    fn authorize_groups(&self, mode: Mode, wanted: &[String]) -> Result<(), ApiError> {
        if wanted.is_empty() {
            return Ok(());
        }
        let constrained = mode.constrained();
        let mut groups = self.field(mode, mode.users_group(), "groups", "");
        if constrained {
            if wanted.iter().any(String::is_empty) {
                return Err(groups.denial(
                    self.requestor,
                    "impersonating the empty string group is not allowed",
                ));
            }
            if wanted.iter().any(|g| g == "system:masters") {
                groups.name = Some("system:masters".into());
                return Err(groups.denial(
                    self.requestor,
                    "impersonating the system:masters group is not allowed",
                ));
            }
        }
        let all = constrained && wanted.len() >= 4 && {
            groups.name = Some("*".into());
            self.check(mode, groups.clone()).is_ok()
        };
        if !all {
            for group in wanted {
                groups.name = Some(group.clone()).filter(|g| !g.is_empty());
                self.check(mode, groups.clone())?;
            }
        }
        Ok(())
    }

    /// `authorizeExtra`: may the requestor impersonate each extra value (the key as
    /// subresource, the value as name)? Constrained modes validate the extra first, and accept
    /// four or more keys or values at once when `*`/`*` is allowed.
    fn authorize_extra(&self, mode: Mode, wanted: &BTreeMap<String, Vec<String>>) -> Result<(), ApiError> {
        if wanted.is_empty() {
            return Ok(());
        }
        let constrained = mode.constrained();
        let mut extras = self.field(mode, AUTHENTICATION, "userextras", "");
        if constrained && let Some(why) = invalid_extra(wanted) {
            return Err(extras.denial(self.requestor, &why));
        }
        let count: usize = wanted.values().map(Vec::len).sum();
        let all = constrained && (wanted.len() >= 4 || count >= 4) && {
            extras.subresource = Some("*".into());
            extras.name = Some("*".into());
            self.check(mode, extras.clone()).is_ok()
        };
        if !all {
            for (key, values) in wanted {
                extras.subresource = Some(key.clone()).filter(|k| !k.is_empty());
                for value in values {
                    extras.name = Some(value.clone()).filter(|v| !v.is_empty());
                    self.check(mode, extras.clone())?;
                }
            }
        }
        Ok(())
    }
}

/// Puts the impersonated user in `system:unauthenticated` if it is `system:anonymous`, else in
/// `system:authenticated` unless it already claims to be unauthenticated.
fn add_authentication_group(actual: &mut Identity) {
    let ensure = |groups: &mut Vec<String>, g: &str| {
        if !groups.iter().any(|x| x == g) {
            groups.push(g.to_string());
        }
    };
    if actual.user == "system:anonymous" {
        ensure(&mut actual.groups, "system:unauthenticated");
    } else if !actual.groups.iter().any(|g| g == "system:unauthenticated") {
        ensure(&mut actual.groups, "system:authenticated");
    }
}

/// `validateExtra` of the constrained modes: why the extra may not be impersonated.
fn invalid_extra(extra: &BTreeMap<String, Vec<String>>) -> Option<String> {
    for (key, values) in extra {
        if key.is_empty() {
            return Some("impersonating the empty string key in extra is not allowed".into());
        }
        let invalid = |value: &str, why: &str| {
            Some(format!(
                "impersonating an invalid key in extra is not allowed: extra.key: Invalid value: {value:?}: {why}"
            ))
        };
        match key.split_once('/') {
            Some((host, path)) if !host.is_empty() && !path.is_empty() => {
                if !is_dns1123_subdomain(host) {
                    return invalid(host, crate::validation::SUBDOMAIN_MSG);
                }
            }
            _ => return invalid(key, "must be a domain-prefixed path (such as \"acme.io/foo\")"),
        }
        if *key != key.to_lowercase() {
            return Some(format!(
                "impersonating a non-lowercase key in extra is not allowed: {key:?}"
            ));
        }
        if values.is_empty() {
            return Some("impersonating empty values in extra is not allowed".into());
        }
        if values.iter().any(String::is_empty) {
            return Some("impersonating the empty string value in extra is not allowed".into());
        }
    }
    None
}

/// The identity a request acts as: `requestor`, or whom its impersonation headers name if the
/// requestor may impersonate them for this `request` (which they then no longer carry).
pub(crate) fn impersonate(
    policy: &Policy,
    store: &Store,
    requestor: Identity,
    headers: &HeaderMap,
    request: &RequestAttributes,
) -> Result<Identity, ApiError> {
    let Some(wanted) = wanted_user(headers)? else {
        return Ok(requestor);
    };
    let checker = Checker {
        policy,
        store,
        requestor: &requestor,
        request,
    };
    let last = {
        let cache = policy
            .impersonation_modes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        cache.get(&requestor.user).copied()
    };
    let order = last
        .into_iter()
        .chain((0..MODES.len()).filter(|i| Some(*i) != last));
    let mut first_refusal = None;
    for index in order {
        let Some(mode) = MODES.get(index) else { continue };
        match checker.try_mode(*mode, &wanted) {
            Ok(Some(user)) => {
                let mut cache = policy
                    .impersonation_modes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                if cache.len() >= MODE_CACHE_LIMIT {
                    cache.clear();
                }
                cache.insert(requestor.user.clone(), index);
                return Ok(user);
            }
            Ok(None) => {}
            Err(e) => {
                first_refusal.get_or_insert(e);
            }
        }
    }
    Err(first_refusal.unwrap_or_else(|| ApiError::Internal("all impersonation modes failed".into())))
}

#[cfg(test)]
mod tests;

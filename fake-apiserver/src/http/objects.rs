//! Resource requests: from a parsed path and an HTTP request to a store call and its reply.
//!
//! This file maps HTTP onto the store (verbs, bodies, patch types, reply shapes); the store
//! decides semantics. Watches are in `watch.rs`, Table printing in `table.rs`.

use super::query::Query;
use super::route::ResourcePath;
use super::write::Write;
use super::{Body, json_response, read_body, table, watch};
use crate::auth::{Identity, Operation, RequestAttributes, admit};
use crate::depth;
use crate::error::{ApiError, success_status};
use crate::resource::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::store::{DeleteOutcome, Filter, Preconditions, StoredObject, Subresource};
use bytes::{BufMut, Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

/// The Kubernetes verb for a method on a collection or an object.
pub(super) fn verb(method: &Method, named: bool, watch: bool) -> Result<&'static str, ApiError> {
    Ok(match (method.as_str(), named) {
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("GET", true) if watch => "watch",
        ("GET", true) => "get",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return Err(ApiError::MethodNotAllowed),
    })
}

/// One request on a resource: resolve what it addresses, authorize its verb, negotiate its
/// output, and run the verb.
pub(super) async fn handle(
    shared: &Arc<Shared>,
    who: &Identity,
    attrs: RequestAttributes,
    path: ResourcePath,
    req: Request<super::PendingBody>,
) -> Result<Response<Body>, ApiError> {
    let (info, sub) = addressed(shared, &path)?;
    let query = Query::parse(req.uri().query())?;
    let verb = verb(req.method(), path.name.is_some(), query.watch)?;
    if !info.verbs().contains(&verb) {
        return Err(ApiError::MethodNotAllowed);
    }
    if sub != Subresource::Main && !matches!(verb, "get" | "update" | "patch") {
        return Err(ApiError::MethodNotAllowed);
    }
    let attrs = RequestAttributes {
        verb: verb.into(),
        group: info.group.clone(),
        resource: info.resource.clone(),
        ..attrs
    };
    shared.policy.check(who, &attrs, &shared.store)?;
    check_accept(req.headers(), matches!(verb, "list" | "watch"))?;
    let ns = path.namespace.as_deref();
    let name = path.name.as_deref().unwrap_or("");
    let wants_table = table::wanted(req.headers());
    if matches!(verb, "get" | "update" | "patch" | "delete") {
        path_segment_name(name)?;
    }
    match verb {
        "get" => get(shared, &info, ns, name, &query, wants_table),
        "list" => list(shared, &info, ns, &query, wants_table),
        "watch" => {
            // There is no YAML stream: 1.36's `NegotiateOutputMediaTypeStream` refuses it,
            // naming the streaming forms only.
            if super::yaml_negotiated(req.headers()) {
                return Err(ApiError::NotAcceptable(STREAMED_MEDIA_TYPES.join(", ")));
            }
            let filter = filter_for(&info, ns, path.name.as_deref(), &query)?;
            watch::start(shared, &info, filter, &query, wants_table)
        }
        "create" | "update" | "patch" => {
            let body = read_body(req, shared.body_limit).await?;
            let write = Write {
                shared: shared.clone(),
                who: who.clone(),
                attrs,
                info,
                ns: path.namespace,
                name: name.to_string(),
                sub,
                query,
                body,
            };
            write_on_deep_stack(verb, write).await
        }
        "delete" => {
            let body = read_body(req, shared.body_limit).await?;
            delete(shared, who, &attrs, &info, &path, &query, &body).await
        }
        "deletecollection" => {
            let body = read_body(req, shared.body_limit).await?;
            delete_collection(shared, &info, ns, &query, &body).await
        }
        _ => Err(ApiError::MethodNotAllowed),
    }
}

/// The resource a path addresses and which part of its objects: 404 for a resource not
/// served, a namespaced path to a cluster-scoped resource, a named object of a namespaced
/// resource without its namespace, or a subresource the resource does not have.
fn addressed(shared: &Shared, path: &ResourcePath) -> Result<(ResourceInfo, Subresource), ApiError> {
    let info = shared
        .store
        .resolve(&path.group, &path.version, &path.resource)
        .ok_or(ApiError::NoSuchResource)?;
    let scoped_wrong = (!info.namespaced && path.namespace.is_some())
        || (info.namespaced && path.name.is_some() && path.namespace.is_none());
    if scoped_wrong {
        return Err(ApiError::NoSuchResource);
    }
    let sub = match path.subresource.as_deref() {
        None => Subresource::Main,
        Some("status") if info.status_subresource => Subresource::Status,
        Some("approval") if crate::csr::is_csr(&info) => Subresource::Approval,
        Some(_) => return Err(ApiError::NoSuchResource),
    };
    Ok((info, sub))
}

/// A get: the object as stored, or its Table row.
fn get(
    shared: &Shared,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    query: &Query,
    wants_table: bool,
) -> Result<Response<Body>, ApiError> {
    // Parsed only to refuse a malformed one, as a list does (the fake serves the
    // newest version of an object whatever version is asked for).
    query.resource_version_number()?;
    let object = shared.store.get(info, ns, name)?;
    if wants_table {
        return Ok(json_response(
            StatusCode::OK,
            table::render(info, &[object], None),
        ));
    }
    Ok(json_response(StatusCode::OK, object.json.clone()))
}

/// A create, update or patch (`verb`), run on a deep stack as its body may nest as deep as
/// the decoder allows.
async fn write_on_deep_stack(verb: &'static str, write: Write) -> Result<Response<Body>, ApiError> {
    depth::on_deep_stack(move || match verb {
        "create" => write.create(),
        "update" => write.update(),
        _ => write.patch(),
    })
    .await
    .map_err(ApiError::Internal)?
}

/// A delete of the object `path` names, with the body's `DeleteOptions`: 202 and the object
/// while finalizers hold it, else a built-in's Success Status or a custom resource's last
/// state.
async fn delete(
    shared: &Arc<Shared>,
    who: &Identity,
    attrs: &RequestAttributes,
    info: &ResourceInfo,
    path: &ResourcePath,
    query: &Query,
    body: &super::RequestBody,
) -> Result<Response<Body>, ApiError> {
    let ns = path.namespace.as_deref();
    let name = path.name.as_deref().unwrap_or("");
    let (preconditions, dry_run) = delete_options(body)?;
    // NodeRestriction reads the object a kubelet deletes (from its informer upstream).
    if who.node_name().is_some()
        && let Ok(old) = shared.store.get(info, ns, name)
    {
        admit(who, attrs, Operation::Delete, Some(&old.value), None)?;
    }
    let (store, target, owned_ns, owned_name) = (
        shared.clone(),
        info.clone(),
        path.namespace.clone(),
        name.to_string(),
    );
    let dry_run = dry_run || query.dry_run;
    let outcome = deep(move || {
        let ns = owned_ns.as_deref();
        store
            .store
            .delete(&target, ns, &owned_name, &preconditions, dry_run)
    })
    .await?;
    Ok(match outcome {
        DeleteOutcome::Finalizing(o) => json_response(StatusCode::ACCEPTED, o.json.clone()),
        DeleteOutcome::Deleted(o) if info.builtin => {
            let uid = o
                .value
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("");
            json_response(
                StatusCode::OK,
                to_bytes(&success_status(&info.resource, name, uid)),
            )
        }
        DeleteOutcome::Deleted(o) => json_response(StatusCode::OK, o.json.clone()),
    })
}

/// A deletecollection: every object the selectors match in `ns` goes (or would, in a dry
/// run), and the answer lists them.
async fn delete_collection(
    shared: &Arc<Shared>,
    info: &ResourceInfo,
    ns: Option<&str>,
    query: &Query,
    body: &super::RequestBody,
) -> Result<Response<Body>, ApiError> {
    let (_, dry_run) = delete_options(body)?;
    let filter = filter_for(info, ns, None, query)?;
    let (store, target, dry_run) = (shared.clone(), info.clone(), dry_run || query.dry_run);
    let deleted = deep(move || store.store.delete_collection(&target, &filter, dry_run)).await?;
    let rv = shared.store.current_rv();
    Ok(json_response(
        StatusCode::OK,
        list_body(info, rv, &deleted, None, None),
    ))
}

/// What kube-apiserver writes (apiserver `endpoints/handlers/negotiation`); this server answers
/// all of them in JSON.
const SERVED_MEDIA_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// The streaming forms a collection also offers (its watch).
const STREAMED_MEDIA_TYPES: &[&str] = &[
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];

/// Output negotiation (`NegotiateOutputMediaType`): an Accept header none of whose media
/// ranges covers a served media type is 406 NotAcceptable, naming what is served; a list or
/// watch names the streaming forms too (as a real 1.36 answers).
fn check_accept(headers: &http::HeaderMap, collection: bool) -> Result<(), ApiError> {
    let Some(accept) = headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(());
    };
    if accept.trim().is_empty() {
        return Ok(());
    }
    let covered = accept.split(',').any(|range| {
        let media = range.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        // `application/*` is not enough for a real 1.36 (406), only `*/*` or a served type.
        media == "*/*" || SERVED_MEDIA_TYPES.contains(&media.as_str())
    });
    if covered {
        Ok(())
    } else {
        let streamed = if collection { STREAMED_MEDIA_TYPES } else { &[] };
        Err(ApiError::NotAcceptable(
            SERVED_MEDIA_TYPES
                .iter()
                .chain(streamed)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
        ))
    }
}

/// A name the storage keys an object by must be a path segment (the registry's key functions,
/// apiserver `registry/generic/registry/store.go`, with apimachinery's `IsPathSegmentName`).
fn path_segment_name(name: &str) -> Result<(), ApiError> {
    let why = match name {
        "." | ".." => vec![format!("may not be '{name}'")],
        _ => ["/", "%"]
            .iter()
            .filter(|bad| name.contains(*bad))
            .map(|bad| format!("may not contain '{bad}'"))
            .collect(),
    };
    if why.is_empty() {
        return Ok(());
    }
    Err(ApiError::BadRequest(format!(
        "Name parameter invalid: {}: {}",
        super::query::go_quote(name),
        why.join(";")
    )))
}

/// A store call that may clone or drop documents nested to `depth::MAX_DEPTH` (a delete keeps
/// the object's last state; a namespace's delete takes its contents with it), on a deep stack.
async fn deep<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    depth::on_deep_stack(work).await.map_err(ApiError::Internal)?
}

pub(super) fn filter_for(
    info: &ResourceInfo,
    ns: Option<&str>,
    name: Option<&str>,
    query: &Query,
) -> Result<Filter, ApiError> {
    let mut fields = FieldSelector::parse(query.field_selector.as_deref().unwrap_or(""), &info.kind)?;
    if let Some(name) = name {
        let pinned = FieldSelector::parse(&format!("metadata.name={name}"), &info.kind)?;
        fields = FieldSelector::and(fields, pinned);
    }
    Ok(Filter {
        namespace: ns.map(str::to_string),
        labels: LabelSelector::parse(query.label_selector.as_deref().unwrap_or(""))?,
        fields,
    })
}

fn list(
    shared: &Arc<Shared>,
    info: &ResourceInfo,
    ns: Option<&str>,
    query: &Query,
    wants_table: bool,
) -> Result<Response<Body>, ApiError> {
    let filter = filter_for(info, ns, None, query)?;
    let current = shared.store.current_rv();
    if let Some(matching) = query.resource_version_match.as_deref() {
        let Some(rv) = query.resource_version_number()? else {
            if query.resource_version.is_none() {
                return Err(ApiError::invalid_options(
                    "ListOptions",
                    "FieldValueForbidden",
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
                ));
            }
            return list_now(shared, info, &filter, query, wants_table);
        };
        match matching {
            "NotOlderThan" if rv <= current => {}
            "Exact" if rv == current => {}
            "Exact" if rv < current => {
                return Err(ApiError::Gone(format!(
                    "too old resource version: {rv} ({current})"
                )));
            }
            "NotOlderThan" | "Exact" => return Err(too_large(rv, current)),
            other => {
                return Err(ApiError::invalid_options(
                    "ListOptions",
                    "FieldValueNotSupported",
                    "resourceVersionMatch",
                    format!("Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""),
                ));
            }
        }
    } else if let Some(rv) = query.resource_version_number()?
        && rv > current
    {
        return Err(too_large(rv, current));
    }
    list_now(shared, info, &filter, query, wants_table)
}

fn too_large(rv: u64, current: u64) -> ApiError {
    ApiError::Injected {
        code: 504,
        message: format!("Too large resource version: {rv}, current: {current}"),
    }
}

/// The page size a `limit` asks for: none at zero or less (apiserver storage pages only
/// when `Limit > 0`).
fn page_size(limit: Option<i64>) -> Option<usize> {
    limit.and_then(|l| usize::try_from(l).ok()).filter(|l| *l > 0)
}

fn list_now(
    shared: &Arc<Shared>,
    info: &ResourceInfo,
    filter: &Filter,
    query: &Query,
    wants_table: bool,
) -> Result<Response<Body>, ApiError> {
    let page = shared.store.list(
        info,
        filter,
        page_size(query.limit),
        query.continue_token.as_deref(),
    )?;
    if wants_table {
        return Ok(json_response(
            StatusCode::OK,
            table::render(info, &page.items, Some(page.rv)),
        ));
    }
    Ok(json_response(
        StatusCode::OK,
        list_body(
            info,
            page.rv,
            &page.items,
            page.continue_token.as_deref(),
            page.remaining,
        ),
    ))
}

/// A `<Kind>List`, assembled from the stored bytes of its items.
pub(super) fn list_body(
    info: &ResourceInfo,
    rv: u64,
    items: &[Arc<StoredObject>],
    continue_token: Option<&str>,
    remaining: Option<usize>,
) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(n) = remaining {
        metadata["remainingItemCount"] = json!(n);
    }
    let head = json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": metadata});
    let head = serde_json::to_vec(&head).expect("serialises");
    let size: usize = items.iter().map(|i| i.json.len() + 1).sum();
    let mut out = BytesMut::with_capacity(head.len() + size + 16);
    out.put_slice(&head[..head.len() - 1]); // drop the closing brace
    out.put_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(&item.json);
    }
    out.put_slice(b"]}");
    out.freeze()
}

pub(super) fn to_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).expect("serialises"))
}

/// `DeleteOptions` from a DELETE body (which may be empty).
fn delete_options(body: &super::RequestBody) -> Result<(Preconditions, bool), ApiError> {
    let bytes = &body.bytes;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((Preconditions::default(), false));
    }
    // client-go sends DeleteOptions in protobuf when asked to write protobuf. kube-apiserver
    // passes a decode error on as it is, which its error writer turns into a 500; a client's
    // mistake is a 400 here.
    let opts: Value =
        if super::decode::media_type(body.content_type.as_deref()) == crate::protobuf::MEDIA_TYPE {
            crate::protobuf::delete_options(bytes).map_err(ApiError::BadRequest)?
        } else {
            serde_json::from_slice(bytes)
                .map_err(|e| ApiError::BadRequest(format!("error decoding DeleteOptions: {e}")))?
        };
    let text = |p: &str| opts.pointer(p).and_then(Value::as_str).map(str::to_string);
    let dry_run = opts["dryRun"]
        .as_array()
        .is_some_and(|d| d.iter().any(|v| v == "All"));
    Ok((
        Preconditions {
            uid: text("/preconditions/uid"),
            resource_version: text("/preconditions/resourceVersion"),
        },
        dry_run,
    ))
}

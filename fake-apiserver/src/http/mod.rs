//! The HTTP face of the server: one entry point per request that authenticates, applies
//! injected faults, routes, turns every error into a `Status` reply, and writes the answer in
//! the media type the client negotiated (JSON, YAML or protobuf).
//!
//! # Layout
//! - `body`: reading request bodies, and settling the ones no handler read.
//! - `response`: the body type, JSON and `Status` replies, content negotiation.
//! - `route`: URL path to route.
//! - `query`: query parameters.
//! - `objects`: resource verbs (get, list, watch, delete, deletecollection) and dispatch.
//! - `decode`: how each body shape decodes or fails, per verb.
//! - `write`: the verbs that carry a body (create, update, patch, apply), on a deep stack.
//! - `watch`: watch streams.
//! - `discovery`, `openapi`: what clients read to find resources and validate.
//! - `table`: server-side printing for kubectl.

mod body;
mod decode;
mod discovery;
mod objects;
mod openapi;
mod query;
mod response;
pub(crate) mod route;
mod table;
mod watch;
mod write;

pub use query::IGNORED_PARAMETERS;

use crate::auth::{CertAuth, Identity, RequestAttributes};
use crate::error::ApiError;
use crate::faults::Fault;
use crate::shared::Shared;
pub(crate) use body::{PendingBody, RequestBody, read_body};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, Version, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
pub(crate) use response::{Body, json_response, yaml_negotiated};
use response::{Output, bytes_response, negotiated, objects_bytes, status_response, value_response};
use route::Route;
use serde_json::Value;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

/// Serve one request. Never fails: errors become Status replies.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    cert: Arc<CertAuth>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let started = Instant::now();
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let (version, headers) = (req.version(), req.headers().clone());
    let (parts, incoming) = req.into_parts();
    let pending = PendingBody::new(incoming);
    let req = Request::from_parts(parts, pending.clone());
    let mut response = match dispatch(&shared, &cert, req).await {
        Ok(r) => r,
        Err(e) => status_response(&e),
    };
    match negotiated(&headers) {
        Output::Yaml => response = as_yaml(response).await,
        Output::Protobuf => {
            let custom = custom_resource(&shared, &path);
            response = as_protobuf(response, custom).await;
        }
        Output::Json => {}
    }
    let keep_alive = body::settle(&pending, &headers).await;
    if !keep_alive && version <= Version::HTTP_11 {
        response
            .headers_mut()
            .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    }
    if shared.log_requests {
        eprintln!(
            "{method} {path} {} {:?}",
            response.status().as_u16(),
            started.elapsed()
        );
    }
    Ok(response)
}

/// A whole JSON answer rewritten in protobuf (`k8s\0` and the envelope) when its kind is one
/// `protobuf::answer` writes: a Status, a modelled built-in object or a list of them. Anything
/// else stays JSON, which clients that ask for protobuf also read (client-go decodes by the
/// answer's `Content-Type`); a watch stays a JSON stream.
///
/// A custom resource's object or list cannot be written in protobuf: 1.36's answer for it is a
/// 406 Status (`protobuf::custom_answer`).
async fn as_protobuf(response: Response<Body>, custom: bool) -> Response<Body> {
    let convert = if custom {
        crate::protobuf::custom_answer
    } else {
        |value: &Value| crate::protobuf::answer(value).map(|bytes| (bytes, None))
    };
    rewrite_json(response, crate::protobuf::MEDIA_TYPE, convert).await
}

/// Whether `path` addresses a custom resource (one a CRD serves).
fn custom_resource(shared: &Shared, path: &str) -> bool {
    match route::parse(&route::decode_path(path)) {
        Route::Resource(p) => shared
            .store
            .registry()
            .get(&p.group, &p.version, &p.resource)
            .is_some_and(|info| !info.builtin),
        _ => false,
    }
}

/// A whole JSON answer rewritten as YAML (`application/yaml`). A watch asked for in YAML is
/// refused before it starts.
async fn as_yaml(response: Response<Body>) -> Response<Body> {
    rewrite_json(response, "application/yaml", |value| {
        serde_yaml::to_string(value)
            .ok()
            .map(|yaml| (yaml.into_bytes(), None))
    })
    .await
}

/// What a conversion makes of a JSON answer: its bytes, and a status code that replaces a
/// successful one.
type Converted = Option<(Vec<u8>, Option<StatusCode>)>;

/// A whole JSON answer rewritten by `convert` and served as `content_type`, on a deep stack as
/// any document may nest 10,000 deep. Answers that are not JSON, are streamed, or that
/// `convert` declines stay as they are.
async fn rewrite_json(
    response: Response<Body>,
    content_type: &'static str,
    convert: fn(&Value) -> Converted,
) -> Response<Body> {
    use hyper::body::Body as _;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !is_json || response.body().size_hint().exact().is_none() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let json = bytes.clone();
    let converted = crate::depth::on_deep_stack(move || {
        let value = crate::depth::parse(&json).ok()?;
        let converted = convert(&value);
        crate::depth::dismantle(value);
        converted
    })
    .await
    .ok()
    .flatten();
    let Some((converted, status)) = converted else {
        return Response::from_parts(parts, Full::new(bytes).boxed_unsync());
    };
    if let Some(status) = status.filter(|_| parts.status.is_success()) {
        parts.status = status;
    }
    parts.headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(Bytes::from(converted)).boxed_unsync())
}

/// The verb and resource a request addresses, as fault rules match them.
fn fault_target(method: &Method, route: &Route, raw_query: Option<&str>) -> (String, String) {
    match route {
        Route::Resource(p) => {
            let watch = query::Query::parse(raw_query).map(|q| q.watch).unwrap_or(false);
            let verb = objects::verb(method, p.name.is_some(), watch).unwrap_or("unknown");
            (verb.to_string(), p.resource.clone())
        }
        _ => (method.as_str().to_ascii_lowercase(), String::new()),
    }
}

/// The authorizer's view of a request, from its URL alone (apiserver `RequestInfoFactory`): a
/// list or watch whose field selector pins `metadata.name` names that object.
fn request_attributes(method: &Method, route: &Route, uri: &http::Uri) -> RequestAttributes {
    let lowercase = || method.as_str().to_ascii_lowercase();
    let Route::Resource(p) = route else {
        return RequestAttributes {
            verb: lowercase(),
            path: Some(uri.path().to_string()),
            ..RequestAttributes::default()
        };
    };
    let query = query::Query::parse(uri.query()).ok();
    let watch = query.as_ref().is_some_and(|q| q.watch);
    let verb = objects::verb(method, p.name.is_some(), watch).map_or_else(|_| lowercase(), str::to_string);
    let field_selector = query
        .and_then(|q| q.field_selector)
        .filter(|_| matches!(verb.as_str(), "list" | "watch" | "deletecollection"));
    let mut attrs = RequestAttributes {
        verb,
        group: p.group.clone(),
        resource: p.resource.clone(),
        subresource: p.subresource.clone(),
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        field_selector,
        path: None,
    };
    if attrs.name.is_none() && matches!(attrs.verb.as_str(), "list" | "watch") {
        // `IsPathSegmentName`: a name that could stand in a URL path.
        let segment = |n: &&str| !n.is_empty() && *n != "." && *n != ".." && !n.contains(['/', '%']);
        attrs.name = attrs
            .field_value("metadata.name")
            .filter(segment)
            .map(str::to_string);
    }
    attrs
}

/// Whether kube-apiserver would answer `path` with Go's plain-text `404 page not found`
/// rather than a Status: a path under `/apis/` whose group it does not serve (at any depth),
/// and any path outside `/api` and `/apis`. A served group's unknown version or resource is a
/// `NotFound` Status (checked against a real kube-apiserver 1.36).
fn page_not_found(route: &Route, path: &str, registry: &crate::resource::Registry) -> bool {
    let unknown_group = |g: &str| !g.is_empty() && registry.versions_of(g).is_empty();
    match route {
        Route::Group(g) | Route::ResourceList { group: g, .. } => unknown_group(g),
        Route::Resource(p) => unknown_group(&p.group),
        Route::Unknown => {
            let mut parts = path.trim_start_matches('/').split('/');
            match parts.next() {
                Some("api") => false,
                Some("apis") => parts.next().is_none_or(unknown_group),
                _ => true,
            }
        }
        _ => false,
    }
}

/// Authenticate, apply injected faults, refuse what no handler should see, and route.
async fn dispatch(
    shared: &Arc<Shared>,
    cert: &CertAuth,
    req: Request<PendingBody>,
) -> Result<Response<Body>, ApiError> {
    let route = route::parse(&route::decode_path(req.uri().path()));
    let (who, attrs) = identify(shared, cert, &req, &route)?;
    if route != Route::Faults {
        apply_request_faults(shared, req.method(), &route, req.uri().query()).await?;
    }
    // Resources are the authorizer chain's to refuse, in their own words.
    let public = matches!(route, Route::Health | Route::Version | Route::Resource(_));
    if !public && who.is_anonymous() {
        return Err(attrs.rbac_denial(&who));
    }
    if page_not_found(&route, req.uri().path(), &shared.store.registry()) {
        return Err(ApiError::PageNotFound);
    }
    if !matches!(route, Route::Resource(_) | Route::Faults) && req.method() != Method::GET {
        return Err(ApiError::MethodNotAllowed);
    }
    let ok = |v: Value| Ok(value_response(StatusCode::OK, &v));
    match route {
        Route::Health => Ok(bytes_response(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"ok"),
        )),
        Route::Version => ok(discovery::version()),
        Route::CoreVersions | Route::Groups => Ok(discovery_index(shared, &route, req.headers())),
        Route::Group(g) => ok(discovery::group(&shared.store.registry(), &g)?),
        Route::ResourceList { group, version } => ok(discovery::resource_list(
            &shared.store.registry(),
            &group,
            &version,
        )?),
        Route::OpenApiV3Root => openapi_v3_root(shared).await,
        Route::OpenApiV3 { group, version } => openapi_v3_group(shared, group, version).await,
        Route::OpenApiV2 => Ok(openapi_v2(req.headers())),
        Route::Faults => faults(shared, &who, req).await,
        Route::Resource(path) => objects::handle(shared, &who, attrs, path, req).await,
        Route::Unknown => Err(ApiError::NoSuchResource),
    }
}

/// Who the request acts as, and what it asks of the authorizer: the authenticated requestor
/// (client certificate or bearer token), or whom its impersonation headers name if it may
/// impersonate them.
fn identify(
    shared: &Shared,
    cert: &CertAuth,
    req: &Request<PendingBody>,
    route: &Route,
) -> Result<(Identity, RequestAttributes), ApiError> {
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let who = shared
        .authenticator()
        .authenticate(cert, authorization.as_deref())?;
    let attrs = request_attributes(req.method(), route, req.uri());
    let who = crate::auth::impersonate(&shared.policy, &shared.store, who, req.headers(), &attrs)?;
    Ok((who, attrs))
}

/// The injected faults matching the request's verb and resource: their delay, then their
/// failure if one is due.
async fn apply_request_faults(
    shared: &Shared,
    method: &Method,
    route: &Route,
    raw_query: Option<&str>,
) -> Result<(), ApiError> {
    let (verb, resource) = fault_target(method, route, raw_query);
    let (delay, failure) = shared.faults.on_request(&verb, &resource);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `/api` or `/apis`: the core versions or the API groups, aggregated or legacy as the
/// client's `Accept` asks.
fn discovery_index(shared: &Shared, route: &Route, headers: &http::HeaderMap) -> Response<Body> {
    let shape = discovery::shape(headers);
    let registry = shared.store.registry();
    let doc = if *route == Route::Groups {
        discovery::groups(&registry, shape)
    } else {
        discovery::core_versions(&registry, shape, &shared.addr.to_string())
    };
    match shape {
        discovery::Shape::Aggregated(v) => bytes_response(
            StatusCode::OK,
            &discovery::aggregated_content_type(v),
            objects_bytes(&doc),
        ),
        discovery::Shape::Legacy => value_response(StatusCode::OK, &doc),
    }
}

/// `/openapi/v3`: the index of group-versions. A CRD's schema may nest as deep as any stored
/// document: built, hashed and dropped on a deep stack.
async fn openapi_v3_root(shared: &Shared) -> Result<Response<Body>, ApiError> {
    let registry = shared.store.registry();
    let bytes = crate::depth::on_deep_stack(move || objects_bytes(&openapi::v3_root(&registry)))
        .await
        .map_err(ApiError::Internal)?;
    Ok(json_response(StatusCode::OK, bytes))
}

/// `/openapi/v3/<group-version>`: one group-version's schemas, built on a deep stack.
async fn openapi_v3_group(
    shared: &Shared,
    group: String,
    version: String,
) -> Result<Response<Body>, ApiError> {
    let registry = shared.store.registry();
    let bytes = crate::depth::on_deep_stack(move || {
        openapi::v3_group(&registry, &group, &version).map(|doc| objects_bytes(&doc))
    })
    .await
    .map_err(ApiError::Internal)??;
    Ok(json_response(StatusCode::OK, bytes))
}

/// `/openapi/v2`: protobuf when the client's `Accept` names it, JSON otherwise.
fn openapi_v2(headers: &http::HeaderMap) -> Response<Body> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("protobuf") {
        bytes_response(
            StatusCode::OK,
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            Bytes::from(openapi::v2_protobuf()),
        )
    } else {
        value_response(StatusCode::OK, &openapi::v2_json())
    }
}

async fn faults(
    shared: &Arc<Shared>,
    who: &Identity,
    req: Request<PendingBody>,
) -> Result<Response<Body>, ApiError> {
    if !who.in_group("system:masters") {
        return Err(ApiError::Forbidden {
            message: format!("forbidden: User {:?} cannot inject faults", who.user),
            group: String::new(),
            resource: String::new(),
            name: None,
        });
    }
    if req.method() != Method::POST {
        return Err(ApiError::MethodNotAllowed);
    }
    let body = read_body(req, shared.body_limit).await?;
    let fault: Fault = serde_json::from_slice(&body.bytes)
        .map_err(|e| ApiError::BadRequest(format!("invalid fault: {e}")))?;
    shared.inject(fault.clone())?;
    ok_status()
}

fn ok_status() -> Result<Response<Body>, ApiError> {
    Ok(value_response(
        StatusCode::OK,
        &serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
    ))
}

//! The tower `Service` in front of everything: routing, body limits, identity, overload
//! protection, and turning handler replies into HTTP responses. Generic over the request body,
//! so `kube::Client::new(service, ..)` can use it in-process and hyper can serve it on a socket.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::auth::Identity;
use crate::handlers::{Reply, ReplyBody, ResourceRequest};
use crate::request::{Query, Route, parse_route, split_cluster};
use crate::state::{DEFAULT_CLUSTER, Inner};
use ocm_apiserver_status::ApiError;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The response body: a complete buffer or a stream of chunks (watch).
pub struct ResponseBody {
    inner: BodyInner,
}

enum BodyInner {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseBody")
    }
}

impl ResponseBody {
    fn full(bytes: Bytes) -> Self {
        ResponseBody {
            inner: BodyInner::Full(Some(bytes)),
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.inner {
            BodyInner::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            BodyInner::Stream(rx) => rx
                .poll_recv(cx)
                .map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.inner, BodyInner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            BodyInner::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            BodyInner::Full(None) => SizeHint::with_exact(0),
            BodyInner::Stream(_) => SizeHint::default(),
        }
    }
}

/// The API server as a tower service.
#[derive(Clone)]
pub struct ApiService {
    inner: Arc<Inner>,
    cluster: Option<String>,
    identity: Option<Identity>,
}

impl std::fmt::Debug for ApiService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiService")
            .field("cluster", &self.cluster)
            .finish()
    }
}

impl ApiService {
    pub(crate) fn new(inner: Arc<Inner>, cluster: Option<String>) -> Self {
        ApiService {
            inner,
            cluster,
            identity: None,
        }
    }

    /// The same service, acting as `identity` on requests that carry no identity yet.
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }
}

impl<B> tower::Service<Request<B>> for ApiService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if let Some(identity) = &self.identity
            && req.extensions().get::<Identity>().is_none()
        {
            req.extensions_mut().insert(identity.clone());
        }
        let inner = self.inner.clone();
        let cluster = self.cluster.clone();
        Box::pin(async move { Ok(serve(inner, cluster, req).await) })
    }
}

struct InFlight<'a>(&'a Inner);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn serve<B>(
    inner: Arc<Inner>,
    fixed_cluster: Option<String>,
    req: Request<B>,
) -> Response<ResponseBody>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().map(str::to_owned);
    let (path_cluster, cluster_path) = match split_cluster(&path) {
        Some((cluster, rest)) => (Some(cluster), rest),
        None => (None, path.as_str()),
    };
    // What the request addresses, read once: authorization, the long-running check and the
    // request counter all use it.
    let attrs = crate::request_info::request_attributes(
        Identity::system(),
        method.as_str(),
        &crate::request::percent_decode(cluster_path),
        query.as_deref(),
    );
    // Only the default cluster's requests are counted: logical clusters are other clusters.
    let counted = match path_cluster {
        Some(cluster) => cluster == DEFAULT_CLUSTER,
        None => fixed_cluster
            .as_deref()
            .is_none_or(|c| c == DEFAULT_CLUSTER),
    };
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let error_reply = |err: ApiError| crate::handlers::error_reply(accept.as_deref(), &err);
    let is_watch = req
        .uri()
        .query()
        .is_some_and(|q| q.contains("watch=true") || q.contains("watch=1"));
    let reply = if !is_watch
        && inner.in_flight.fetch_add(1, Ordering::Relaxed) >= inner.config.max_in_flight
    {
        inner.in_flight.fetch_sub(1, Ordering::Relaxed);
        error_reply(ApiError::too_many_requests())
    } else if is_watch {
        route(&inner, fixed_cluster, &attrs, req)
            .await
            .unwrap_or_else(error_reply)
    } else {
        let _guard = InFlight(&inner);
        route(&inner, fixed_cluster, &attrs, req)
            .await
            .unwrap_or_else(error_reply)
    };
    tracing::debug!(%method, path, status = reply.status.as_u16(), "request");
    if counted {
        let kind =
            crate::metrics::RequestKind::of(&attrs, cluster_path, query.as_deref(), &content_type);
        inner.metrics.count(kind, reply.status);
    }
    into_response(reply, method == Method::HEAD)
}

fn into_response(reply: Reply, head: bool) -> Response<ResponseBody> {
    let body = match reply.body {
        _ if head => ResponseBody::full(Bytes::new()),
        ReplyBody::Full(b) => ResponseBody::full(b),
        ReplyBody::Stream(rx) => ResponseBody {
            inner: BodyInner::Stream(rx),
        },
    };
    let mut response = Response::new(body);
    *response.status_mut() = reply.status;
    let headers = response.headers_mut();
    if !reply.content_type.is_empty()
        && let Ok(ct) = HeaderValue::from_str(&reply.content_type)
    {
        headers.insert(header::CONTENT_TYPE, ct);
    }
    headers.extend(reply.headers);
    if let Ok(id) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
        headers.insert("audit-id", id);
    }
    let mut sent: Vec<&str> = Vec::new();
    for warning in &reply.warnings {
        // kube-apiserver sends each warning text once; Go's header writer turns line breaks
        // into spaces.
        if sent.contains(&warning.as_str()) {
            continue;
        }
        sent.push(warning);
        let escaped = warning
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace(['\n', '\r'], " ");
        if let Ok(v) = HeaderValue::from_bytes(format!("299 - \"{escaped}\"").as_bytes()) {
            headers.append(header::WARNING, v);
        }
    }
    if reply.status == StatusCode::TOO_MANY_REQUESTS {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

fn valid_cluster_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !name.starts_with(['-', '.'])
        && !name.ends_with(['-', '.'])
}

/// kube's `BasicLongRunningRequestCheck`: watch and proxy verbs, and the attach, exec, log,
/// portforward and proxy subresources.
fn long_running(attrs: &ocm_apiserver_rbac::Attributes) -> bool {
    matches!(attrs.verb.as_str(), "watch" | "proxy")
        || matches!(&attrs.target, ocm_apiserver_rbac::Target::Resource(r)
            if matches!(r.subresource.as_str(), "attach" | "exec" | "log" | "portforward" | "proxy"))
}

async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, ApiError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let limited = http_body_util::Limited::new(body, limit);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) => {
            if err
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large(limit))
            } else {
                Err(ApiError::bad_request(format!(
                    "error reading request body: {err}"
                )))
            }
        }
    }
}

async fn route<B>(
    inner: &Arc<Inner>,
    fixed_cluster: Option<String>,
    attrs: &ocm_apiserver_rbac::Attributes,
    req: Request<B>,
) -> Result<Reply, ApiError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (parts, body) = req.into_parts();
    let full_path = parts.uri.path().to_owned();
    let (cluster, path) = match split_cluster(&full_path) {
        Some((c, rest)) => (c.to_owned(), rest.to_owned()),
        None => (
            fixed_cluster.unwrap_or_else(|| DEFAULT_CLUSTER.to_owned()),
            full_path.clone(),
        ),
    };
    if cluster != DEFAULT_CLUSTER && !valid_cluster_name(&cluster) {
        return Err(ApiError::route_not_found());
    }
    let query = Query::parse(parts.uri.query());
    if let Some(message) = crate::request::invalid_timeout(&query)
        && !long_running(attrs)
    {
        return Err(ApiError::bad_request(message));
    }
    // Authenticate and authorize before anything else happens (e.g. a logical cluster is
    // created on first use).
    let credentials = inner.credentials();
    let identity = match (
        parts.extensions.get::<Identity>(),
        parts.extensions.get::<crate::authn::PeerCertificates>(),
    ) {
        (Some(identity), _) => identity.clone(),
        (None, Some(peer)) => {
            crate::authn::authenticate(&credentials, &cluster, &parts.headers, peer)?
        }
        (None, None) => {
            crate::authn::authenticate_in_process(&credentials, &cluster, &parts.headers)?
        }
    };
    let policy = || inner.policy(&cluster);
    let identity = crate::authz::impersonate(&policy, identity, &parts.headers)?;
    // Only a cluster administrator brings a logical cluster into being; for anyone else an
    // unknown cluster does not exist, whatever the request.
    let unknown = cluster != DEFAULT_CLUSTER && !inner.cluster_known(&cluster);
    if unknown && (!inner.config.auto_create_clusters || !identity.is_master()) {
        return Err(ApiError::route_not_found());
    }
    crate::authz::authorize(&policy, &identity, attrs)?;
    if let Some(create) = crate::handlers::connect_create_also(attrs) {
        crate::authz::authorize(&policy, &identity, &create)?;
    }
    if unknown {
        crate::controllers::ensure_cluster(
            &crate::control::ServerAccess::new(inner.clone()),
            &cluster,
        )
        .await?;
    }
    if let Some(len) = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && len > inner.config.max_body_bytes
    {
        return Err(ApiError::too_large(inner.config.max_body_bytes));
    }
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let route = parse_route(&path);
    // API Priority and Fairness classifies the default cluster's authorized requests (after
    // impersonation): the answer names the FlowSchema and priority level, and the request is
    // counted in the metrics while it executes. Other logical clusters (simulated managed
    // clusters, thousands to a process) are not classified: no configuration per cluster is
    // kept in memory.
    let config = (cluster == DEFAULT_CLUSTER).then(|| inner.apf.get(&inner.store, DEFAULT_CLUSTER));
    let flow = config.as_ref().and_then(|c| c.classify(&identity, attrs));
    let _executing = flow
        .as_ref()
        .map(|f| inner.metrics.dispatch(f.level, f.schema));
    let mut result = dispatch(inner, cluster, route, parts, body, query, identity, accept).await;
    if let (Some(flow), Ok(reply)) = (&flow, &mut result) {
        for (name, value) in [
            ("x-kubernetes-pf-flowschema-uid", flow.schema_uid),
            ("x-kubernetes-pf-prioritylevel-uid", flow.level_uid),
        ] {
            if let Ok(value) = http::HeaderValue::from_str(value) {
                reply.headers.insert(name, value);
            }
        }
    }
    result
}

/// Answers an authenticated and authorized request.
#[allow(clippy::too_many_arguments)]
async fn dispatch<B>(
    inner: &Arc<Inner>,
    cluster: String,
    route: Route,
    parts: http::request::Parts,
    body: B,
    query: Query,
    identity: Identity,
    accept: Option<String>,
) -> Result<Reply, ApiError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let is_read = parts.method == Method::GET || parts.method == Method::HEAD;
    let header_str = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    // A cluster's local APIServices are written when something first looks at them (see
    // `controllers::apiservices`); the health checks report on them too.
    let looks_at_apiservices = match &route {
        Route::Resource(r) => r.group == "apiregistration.k8s.io" && r.resource == "apiservices",
        Route::Health(..) => true,
        _ => false,
    };
    if looks_at_apiservices {
        crate::controllers::register_apiservices(
            &crate::control::ServerAccess::new(inner.clone()),
            &cluster,
        )
        .await;
    }
    match route {
        Route::Resource(rpath) => {
            let Some(res) =
                inner
                    .registry
                    .lookup(&cluster, &rpath.group, &rpath.version, &rpath.resource)
            else {
                return Err(ApiError::route_not_found());
            };
            let connect = res.builtin() == Some(crate::registry::BuiltinKind::Pod)
                && crate::handlers::is_connect(rpath.subresource.as_deref());
            let body = if is_read || connect {
                Bytes::new()
            } else {
                read_body(body, inner.config.max_body_bytes).await?
            };
            let req = ResourceRequest {
                inner: inner.clone(),
                cluster,
                path: rpath,
                res,
                query,
                identity,
                user_agent: header_str(header::USER_AGENT).unwrap_or_default(),
                accept,
                content_type: header_str(header::CONTENT_TYPE).unwrap_or_default(),
                method: parts.method.clone(),
            };
            if connect {
                return crate::handlers::connect(req, parts).await;
            }
            crate::handlers::handle(req, body).await
        }
        _ if !is_read => Err(ApiError::method_not_allowed()),
        Route::Health(endpoint, check) => crate::health::serve(
            inner,
            &cluster,
            endpoint,
            check.as_deref(),
            parts.uri.query(),
        ),
        Route::Version => Ok(Reply::json(StatusCode::OK, &crate::version::version())),
        Route::Metrics if cluster == DEFAULT_CLUSTER => {
            let limits = inner
                .apf
                .get_current(&inner.store, DEFAULT_CLUSTER)
                .nominal_limits();
            inner.metrics.set_nominal_limits(&limits);
            Ok(Reply {
                status: StatusCode::OK,
                content_type: "text/plain; version=0.0.4; charset=utf-8".into(),
                body: ReplyBody::Full(Bytes::from(inner.metrics.render())),
                warnings: Vec::new(),
                headers: http::HeaderMap::new(),
            })
        }
        Route::Metrics => Err(ApiError::route_not_found()),
        Route::CoreRoot => crate::discovery::core_root(inner, &cluster, accept.as_deref()),
        Route::GroupsRoot => crate::discovery::groups_root(inner, &cluster, accept.as_deref()),
        Route::Group(g) => crate::discovery::group(inner, &cluster, &g, accept.as_deref()),
        Route::GroupVersion(g, v) => {
            crate::discovery::group_version(inner, &cluster, &g, &v, accept.as_deref())
        }
        Route::OpenApiV2 => Ok(crate::openapi::v2::serve::serve(
            inner,
            &cluster,
            accept.as_deref(),
            header_str(header::IF_NONE_MATCH).as_deref(),
        )),
        Route::OpenApiV3Root => Ok(Reply::json(
            StatusCode::OK,
            &crate::openapi::root(inner, &cluster),
        )),
        Route::OpenApiV3(gv) => {
            crate::openapi::document(inner, &cluster, &gv).map(|v| Reply::json(StatusCode::OK, &v))
        }
        Route::Unknown => Err(ApiError::route_not_found()),
    }
}

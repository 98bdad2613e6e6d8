//! The HTTP side: HTTP/1 with hyper on a TCP listener (loopback unless told otherwise), the
//! routes, and the guards of a page that acts with its user's credentials:
//!
//! - every response forbids framing and foreign scripts (`Content-Security-Policy`), so no
//!   other site can embed the page and trick a click;
//! - a `Host` header must be an IP address or `localhost`, so a hostile DNS name pointed at
//!   127.0.0.1 (DNS rebinding) cannot read the pages;
//! - a POST must come from the dashboard's own pages (`Origin` / `Sec-Fetch-Site`) and carry
//!   the process's random token, which only those pages hold.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use ocm_runtime::shutdown::Shutdown;

use crate::actions::{Action, PermissionCache};
use crate::cache::{Cache, Kind};
use crate::pages::{self, Page};
use crate::query::{Query, decode, encode};

/// A response body.
type Body = UnsyncBoxBody<Bytes, Infallible>;

const APP_CSS: &str = include_str!("assets/app.css");
const APP_JS: &str = include_str!("assets/app.js");

/// Why the dashboard could not start.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// None of the addresses could be bound.
    #[error("cannot listen on {addresses}: {source}")]
    Bind {
        /// The addresses tried.
        addresses: String,
        /// The last error.
        #[source]
        source: std::io::Error,
    },
}

/// A running dashboard.
#[derive(Debug)]
pub struct Dashboard {
    /// Where it listens.
    pub local_addr: SocketAddr,
    /// The URL to open.
    pub url: String,
}

/// The shared state of the handlers.
struct App {
    client: kube::Client,
    cache: Arc<Cache>,
    token: String,
    permissions: PermissionCache,
    shutdown: Shutdown,
}

impl Dashboard {
    /// Listens on the first of `addresses` that can be bound, starts the watches with `client`
    /// (the user's credentials) and serves until `shutdown` is cancelled.
    #[inline(never)]
    pub fn start(
        client: kube::Client,
        addresses: &[SocketAddr],
        shutdown: Shutdown,
    ) -> futures::future::BoxFuture<'_, Result<Dashboard, DashboardError>> {
        Box::pin(Self::start_body(client, addresses, shutdown))
    }

    async fn start_body(
        client: kube::Client,
        addresses: &[SocketAddr],
        shutdown: Shutdown,
    ) -> Result<Dashboard, DashboardError> {
        let mut last_error = std::io::Error::other("no address to listen on");
        let mut listener = None;
        for address in addresses {
            match tokio::net::TcpListener::bind(address).await {
                Ok(bound) => {
                    listener = Some(bound);
                    break;
                }
                Err(err) => last_error = err,
            }
        }
        let bind_error = |source| DashboardError::Bind {
            addresses: addresses
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            source,
        };
        let listener = listener.ok_or_else(|| bind_error(last_error))?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        let app = Arc::new(App {
            cache: Cache::start(&client, &shutdown),
            client,
            token: random_token(),
            permissions: PermissionCache::default(),
            shutdown: shutdown.clone(),
        });
        let connections = shutdown.clone();
        tokio::spawn(ocm_runtime::accept::accept_until(
            "dashboard",
            listener,
            shutdown,
            move |stream, _| serve_connection(stream, app.clone(), connections.clone()),
        ));
        let host = match local_addr.ip() {
            ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
            IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        Ok(Dashboard {
            local_addr,
            url: format!("http://{host}:{}/", local_addr.port()),
        })
    }
}

/// Serves one connection until it ends, or ends it gracefully at `shutdown`.
async fn serve_connection(stream: tokio::net::TcpStream, app: Arc<App>, shutdown: Shutdown) {
    let service = hyper::service::service_fn(move |req| {
        let app = app.clone();
        async move { Ok::<_, Infallible>(with_security_headers(handle(app, req).await)) }
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// 32 random bytes in hex.
fn random_token() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        tracing::warn!("no system randomness: the dashboard's form token is weak");
        let now = jiff::Timestamp::now().as_nanosecond().to_le_bytes();
        bytes[..16].copy_from_slice(&now);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a `Host` header names this machine by address or as `localhost`.
pub fn allowed_host(host: &str) -> bool {
    if let Some(rest) = host.strip_prefix('[') {
        // [v6]:port
        return rest
            .split_once(']')
            .is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok());
    }
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    name.parse::<IpAddr>().is_ok() || name == "localhost" || name.ends_with(".localhost")
}

/// Whether a POST comes from one of the dashboard's own pages at `host`.
pub fn same_origin(origin: Option<&str>, fetch_site: Option<&str>, host: &str) -> bool {
    if fetch_site.is_some_and(|site| site != "same-origin") {
        return false;
    }
    origin.is_none_or(|origin| origin == format!("http://{host}"))
}

/// Compares two strings in time independent of where they differ.
fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

async fn handle(app: Arc<App>, req: Request<Incoming>) -> Response<Body> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if !allowed_host(&host) {
        return text(
            StatusCode::MISDIRECTED_REQUEST,
            "This dashboard answers only to an IP address or localhost.",
        );
    }
    let query = Query::parse(req.uri().query().unwrap_or_default());
    let path = req.uri().path().to_owned();
    let segments: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    if req.method() == Method::POST {
        return match segments.as_slice() {
            ["join-requests", cluster, action] => match Action::parse(action) {
                Some(action) => {
                    let cluster = (*cluster).to_owned();
                    post_action(&app, req, &host, &cluster, action).await
                }
                None => text(StatusCode::NOT_FOUND, "no such action"),
            },
            _ => text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
        };
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
    }
    let snapshot = || app.cache.snapshot();
    let page: Page = match segments.as_slice() {
        [] => pages::overview::render(&snapshot(), &query),
        ["clusters", name] => {
            pages::cluster::render(&snapshot(), name, &app.cache.history.of(name))
        }
        ["join-requests"] => {
            let permissions = app.permissions.get(&app.client).await;
            pages::join::render(&snapshot(), &query, &permissions, &app.token)
        }
        ["placements"] => pages::placements::render_list(&snapshot()),
        ["placements", namespace, name] => {
            pages::placements::render(&snapshot(), namespace, name, &query)
        }
        ["replicasets"] => pages::replicasets::render(&snapshot()),
        ["addons"] => pages::addons::render(&snapshot(), &query),
        ["events"] => return events(&app, &query),
        ["assets", "app.css"] => return asset(APP_CSS, "text/css; charset=utf-8"),
        ["assets", "app.js"] => return asset(APP_JS, "text/javascript; charset=utf-8"),
        ["healthz"] => return text(StatusCode::OK, "ok"),
        _ => pages::not_found(&format!("Page {path}")),
    };
    let status = StatusCode::from_u16(page.status).unwrap_or(StatusCode::OK);
    let html = if query.get("fragment").is_some() {
        page.body
    } else {
        pages::layout(&page, &app.token)
    };
    respond(status, "text/html; charset=utf-8", html)
}

/// Accept or deny, then back to the join requests with the outcome.
async fn post_action(
    app: &App,
    req: Request<Incoming>,
    host: &str,
    cluster: &str,
    action: Action,
) -> Response<Body> {
    let header = |name: header::HeaderName| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let origin = header(header::ORIGIN);
    let fetch_site = header(header::HeaderName::from_static("sec-fetch-site"));
    if !same_origin(origin.as_deref(), fetch_site.as_deref(), host) {
        return text(
            StatusCode::FORBIDDEN,
            "Refused: the request did not come from this dashboard's pages.",
        );
    }
    let body = match Limited::new(req.into_body(), 16 * 1024).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "form too large"),
    };
    let form = Query::parse(&String::from_utf8_lossy(&body));
    if !constant_time_eq(form.get("token").unwrap_or_default(), &app.token) {
        return text(
            StatusCode::FORBIDDEN,
            "Refused: the form's token is missing or stale; reload the page.",
        );
    }
    let outcome = crate::actions::run(&app.client, cluster, action).await;
    tracing::info!(cluster, ?action, ?outcome, "dashboard action");
    let location = match outcome {
        Ok(done) => format!("/join-requests?done={}", encode(&done)),
        Err(error) => format!("/join-requests?error={}", encode(&error)),
    };
    let mut response = respond(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        String::new(),
    );
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// The page's event stream.
fn events(app: &App, query: &Query) -> Response<Body> {
    let kinds: BTreeSet<Kind> = crate::live::parse_kinds(query.get("kinds").unwrap_or_default());
    let stream = crate::live::events(app.cache.subscribe(), kinds, app.shutdown.clone())
        .map(|bytes| Ok::<_, Infallible>(Frame::data(bytes)));
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

fn asset(content: &'static str, content_type: &'static str) -> Response<Body> {
    let mut response =
        Response::new(Full::new(Bytes::from_static(content.as_bytes())).boxed_unsync());
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed_unsync());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", format!("{message}\n"))
}

fn with_security_headers(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    for (name, value) in [
        (
            "content-security-policy",
            "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
    ] {
        headers.insert(
            header::HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_must_be_addresses_or_localhost() {
        for ok in [
            "127.0.0.1:8090",
            "127.0.0.1",
            "[::1]:8090",
            "localhost:8090",
            "app.localhost",
            "10.0.0.5:80",
        ] {
            assert!(allowed_host(ok), "{ok}");
        }
        for bad in ["evil.example.com:8090", "evil.example.com", "", "[evil]:80"] {
            assert!(!allowed_host(bad), "{bad}");
        }
    }

    #[test]
    fn posts_must_come_from_the_dashboards_own_pages() {
        let host = "127.0.0.1:8090";
        assert!(same_origin(
            Some("http://127.0.0.1:8090"),
            Some("same-origin"),
            host
        ));
        assert!(same_origin(None, None, host));
        assert!(!same_origin(
            Some("http://evil.example.com"),
            Some("cross-site"),
            host
        ));
        assert!(!same_origin(Some("http://evil.example.com"), None, host));
        assert!(!same_origin(None, Some("same-site"), host));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "ab"));
        assert!(!constant_time_eq("", "a"));
        assert_eq!(random_token().len(), 64);
    }
}

//! The proxy server on the hub: one HTTPS port where agents open their tunnels (`GET /tunnel`,
//! upgraded; the server then speaks HTTP/2 to the agent over it) and where users send requests
//! for a cluster's API server under `/clusters/<cluster>/`. A user request is authenticated and
//! authorized against the hub, stamped with the identity the user has on clusters
//! ([`crate::identity::cluster_identity`]) and sent through that cluster's tunnel; the answer
//! streams back (watches included).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Request, Response, StatusCode, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::shutdown::Shutdown;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::authn::{AuthError, CLUSTER_GROUP, HubAuth, certificate_user};
use crate::error::{ProxyError, io};
use crate::identity::{self, HubUser, Route};
use crate::pki::{self, Endpoint};
use crate::status::{self, ProxyBody, strip_hop_headers};
use crate::tunnel::{CutSwitch, Cuttable, Tunnels};
use crate::upgrade;

/// The `Upgrade` protocol an agent asks for on `GET /tunnel`.
pub const TUNNEL_PROTOCOL: &str = "ocm-cluster-proxy-tunnel";
/// How often each side of a tunnel pings the other.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);
/// How long a ping may go unanswered before the tunnel is dropped.
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Where and how the proxy server runs.
#[derive(Clone, Debug)]
pub struct ProxyServerOptions {
    /// Address to listen on (port 0 picks one).
    pub listen: SocketAddr,
    /// Extra names or addresses in the serving certificate (loopback is always there).
    pub hostnames: Vec<String>,
    /// The URL agents and users reach the server at; by default
    /// `https://<first hostname, or 127.0.0.1>:<port>`.
    pub public_url: Option<String>,
    /// Hub namespace of the CA Secret and the endpoint ConfigMap.
    pub namespace: String,
}

impl Default for ProxyServerOptions {
    fn default() -> Self {
        ProxyServerOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            hostnames: Vec::new(),
            public_url: None,
            namespace: pki::PROXY_NAMESPACE.into(),
        }
    }
}

/// A running proxy server.
#[derive(Debug)]
pub struct RunningProxy {
    /// Where it is and the CA of its certificate.
    pub endpoint: Endpoint,
    /// The bound address.
    pub addr: SocketAddr,
    /// Its open tunnels.
    pub tunnels: Tunnels,
    stop: Shutdown,
    task: tokio::task::JoinHandle<()>,
}

impl RunningProxy {
    /// Stops accepting and closes every connection and tunnel.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

struct Shared {
    hub: kube::Client,
    tunnels: Tunnels,
    auth: HubAuth,
    stop: Shutdown,
}

/// The hub's client CA bundle (kube-system/extension-apiserver-authentication
/// `client-ca-file`), against which users' and agents' client certificates are verified.
async fn hub_client_ca(hub: &kube::Client) -> Result<String, ProxyError> {
    let configmaps: Api<ConfigMap> = Api::namespaced(hub.clone(), "kube-system");
    let cm = configmaps.get("extension-apiserver-authentication").await?;
    cm.data
        .and_then(|d| d.get("client-ca-file").cloned())
        .ok_or_else(|| {
            ProxyError::Config(
                "kube-system/extension-apiserver-authentication has no client-ca-file".into(),
            )
        })
}

fn tls_config(
    serving: &pki::CaPair,
    client_ca_pem: &str,
) -> Result<rustls::ServerConfig, ProxyError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pem = |e: rustls::pki_types::pem::Error| ProxyError::Pki(e.to_string());
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(serving.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(pem)?;
    let key = PrivateKeyDer::from_pem_slice(serving.key_pem.as_bytes()).map_err(pem)?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()) {
        roots.add(cert.map_err(pem)?)?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| ProxyError::Pki(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The URL to publish: `--public-url`, else `https://<first hostname>:<port>`, else the bound
/// address — loopback for a wildcard listen address, which is no address to dial (the serving
/// certificate always names loopback).
fn public_url(options: &ProxyServerOptions, addr: SocketAddr) -> String {
    if let Some(url) = &options.public_url {
        return url.clone();
    }
    let host = options.hostnames.first().cloned().unwrap_or_else(|| {
        if addr.ip().is_unspecified() {
            "127.0.0.1".to_owned()
        } else {
            addr.ip().to_string()
        }
    });
    format!("https://{host}:{}", addr.port())
}

/// Starts the proxy server for `hub` (a client allowed to read the client CA, manage the
/// proxy's namespace and create TokenReviews and SubjectAccessReviews); it runs until
/// `shutdown` or [`RunningProxy::stop`].
#[inline(never)]
pub fn start(
    hub: kube::Client,
    options: ProxyServerOptions,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, Result<RunningProxy, ProxyError>> {
    Box::pin(start_body(hub, options, shutdown))
}

async fn start_body(
    hub: kube::Client,
    options: ProxyServerOptions,
    shutdown: Shutdown,
) -> Result<RunningProxy, ProxyError> {
    let ca = pki::load_or_create_ca(&hub, &options.namespace).await?;
    let serving = pki::serving_certificate(&ca, &options.hostnames)?;
    let client_ca = hub_client_ca(&hub).await?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls_config(&serving, &client_ca)?));
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(io(format!("listening on {}", options.listen)))?;
    let addr = listener.local_addr().map_err(io("local address"))?;
    let url = public_url(&options, addr);
    let endpoint = Endpoint {
        url,
        ca_pem: ca.cert_pem.clone(),
    };
    pki::publish_endpoint(&hub, &options.namespace, &endpoint).await?;
    let stop = shutdown.child();
    let tunnels = Tunnels::default();
    let shared = Arc::new(Shared {
        tunnels: tunnels.clone(),
        auth: HubAuth::new(hub.clone()),
        hub,
        stop: stop.clone(),
    });
    tokio::spawn(crate::profiles::run(
        shared.hub.clone(),
        endpoint.clone(),
        stop.clone(),
    ));
    let task = tokio::spawn(accept_loop(listener, acceptor, shared));
    tracing::info!(url = %endpoint.url, "cluster proxy server listening");
    Ok(RunningProxy {
        endpoint,
        addr,
        tunnels,
        stop,
        task,
    })
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared>,
) {
    let stop = shared.stop.clone();
    ocm_runtime::accept::accept_until("cluster proxy", listener, stop, move |tcp, peer| {
        serve_connection(tcp, peer, acceptor.clone(), shared.clone())
    })
    .await;
}

/// Serves one client or agent connection: TLS (handshake within 10 s), then HTTP/1 or
/// HTTP/2 with upgrades, until it ends or the server stops.
async fn serve_connection(
    tcp: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared>,
) {
    let _ = tcp.set_nodelay(true);
    let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(%peer, %err, "TLS handshake failed");
            return;
        }
        Err(_) => return,
    };
    let cert_user = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| certificate_user(leaf));
    let stop = shared.stop.clone();
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        let cert_user = cert_user.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(&shared, cert_user, req).await) }
    });
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::select! {
        result = conn => {
            if let Err(err) = result {
                tracing::debug!(%peer, %err, "connection ended");
            }
        }
        _ = stop.cancelled() => {}
    }
}

async fn handle(
    shared: &Shared,
    cert_user: Option<HubUser>,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".into());
    match identity::route(&path) {
        Route::Healthz => {
            let mut response = Response::new(status::full("ok"));
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain"),
            );
            response
        }
        Route::Tunnel => accept_tunnel(shared, cert_user, req),
        Route::Tunnels => match list_tunnels(shared, cert_user, &req).await {
            Ok(response) => response,
            Err(err) => auth_reply(&err),
        },
        Route::Cluster { cluster, path } => forward(shared, cert_user, req, &cluster, &path).await,
        Route::NotFound => status::status(
            StatusCode::NOT_FOUND,
            &format!("{path} is not served by the cluster proxy: use /clusters/<cluster>/…"),
        ),
    }
}

fn auth_reply(err: &AuthError) -> Response<ProxyBody> {
    let code = match err {
        AuthError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        AuthError::Forbidden(_) => StatusCode::FORBIDDEN,
        AuthError::HubUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    status::status(code, &err.to_string())
}

/// The hub user behind a request: its client certificate (verified during the handshake), or
/// else its bearer token.
async fn authenticate(
    shared: &Shared,
    cert_user: Option<HubUser>,
    headers: &http::HeaderMap,
) -> Result<HubUser, AuthError> {
    if let Some(user) = cert_user {
        return Ok(user);
    }
    let token = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match token {
        Some(token) => shared.auth.token_user(token).await,
        None => Err(AuthError::Unauthorized(
            "Unauthorized: the cluster proxy needs hub credentials (a client certificate or a \
             bearer token)"
                .into(),
        )),
    }
}

async fn list_tunnels(
    shared: &Shared,
    cert_user: Option<HubUser>,
    req: &Request<Incoming>,
) -> Result<Response<ProxyBody>, AuthError> {
    let user = authenticate(shared, cert_user, req.headers()).await?;
    shared.auth.authorize(&user, "list", None).await?;
    Ok(status::json(&serde_json::json!({
        "tunnels": shared.tunnels.list(),
    })))
}

fn accept_tunnel(
    shared: &Shared,
    cert_user: Option<HubUser>,
    mut req: Request<Incoming>,
) -> Response<ProxyBody> {
    let Some((cluster, agent)) = cert_user
        .as_ref()
        .and_then(|u| identity::agent_of(&u.name, &u.groups))
    else {
        return status::status(
            StatusCode::FORBIDDEN,
            "only a cluster-proxy agent's client certificate may open a tunnel",
        );
    };
    let asks_upgrade = req.headers().get(http::header::UPGRADE).is_some_and(|v| {
        v.as_bytes()
            .eq_ignore_ascii_case(TUNNEL_PROTOCOL.as_bytes())
    });
    if !asks_upgrade || req.version() != Version::HTTP_11 {
        return status::status(
            StatusCode::BAD_REQUEST,
            &format!("a tunnel is opened with HTTP/1.1 `Upgrade: {TUNNEL_PROTOCOL}`"),
        );
    }
    let upgrade = hyper::upgrade::on(&mut req);
    let tunnels = shared.tunnels.clone();
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        let switch = Arc::new(CutSwitch::default());
        let upgraded = match upgrade.await {
            Ok(u) => u,
            Err(err) => {
                tracing::debug!(%cluster, %err, "tunnel upgrade failed");
                return;
            }
        };
        let handshake = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(true)
            .initial_stream_window_size(2 << 20)
            .initial_connection_window_size(8 << 20)
            .handshake::<_, ProxyBody>(Cuttable::new(upgraded, switch.clone()))
            .await;
        let (sender, conn) = match handshake {
            Ok(pair) => pair,
            Err(err) => {
                tracing::debug!(%cluster, %err, "tunnel handshake failed");
                return;
            }
        };
        let cut = Arc::new(Notify::new());
        let id = tunnels.insert(&cluster, &agent, sender, cut.clone());
        tracing::info!(%cluster, %agent, "tunnel open");
        tokio::select! {
            result = conn => {
                if let Err(err) = result {
                    tracing::info!(%cluster, %err, "tunnel broke");
                }
            }
            _ = cut.notified() => tracing::info!(%cluster, "tunnel cut"),
            _ = stop.cancelled() => {}
        }
        // The HTTP/2 connection may outlive its handle while streams are open: break it.
        switch.throw();
        tunnels.remove(&cluster, id);
    });
    let mut response = Response::new(status::full(""));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    response.headers_mut().insert(
        http::header::UPGRADE,
        HeaderValue::from_static(TUNNEL_PROTOCOL),
    );
    response.headers_mut().insert(
        http::header::CONNECTION,
        HeaderValue::from_static("upgrade"),
    );
    response
}

/// The answer for a cluster without a tunnel: 404 when there is no such ManagedCluster, else
/// 503 at once (never a hang).
async fn no_tunnel(shared: &Shared, cluster: &str) -> Response<ProxyBody> {
    let clusters: Api<ManagedCluster> = Api::all(shared.hub.clone());
    if let Ok(None) = clusters.get_opt(cluster).await {
        return status::status(
            StatusCode::NOT_FOUND,
            &format!("managedclusters.{CLUSTER_GROUP} \"{cluster}\" not found"),
        );
    }
    status::status(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!(
            "cluster {cluster} is not reachable through the proxy: its cluster-proxy agent has \
             no tunnel open (is the addon enabled on it and its agent running?)"
        ),
    )
}

async fn forward(
    shared: &Shared,
    cert_user: Option<HubUser>,
    mut req: Request<Incoming>,
    cluster: &str,
    path: &str,
) -> Response<ProxyBody> {
    let user = match authenticate(shared, cert_user, req.headers()).await {
        Ok(user) => user,
        Err(err) => return auth_reply(&err),
    };
    if req
        .headers()
        .keys()
        .any(|k| k.as_str().starts_with("impersonate-"))
    {
        return status::status(
            StatusCode::FORBIDDEN,
            "impersonation is not available through the cluster proxy: requests run as the \
             caller's own identity on the cluster",
        );
    }
    if let Err(err) = shared
        .auth
        .authorize(&user, identity::verb_for(req.method()), Some(cluster))
        .await
    {
        return auth_reply(&err);
    }
    let Some(tunnel) = shared.tunnels.get(cluster) else {
        return no_tunnel(shared, cluster).await;
    };
    let asked = upgrade::asked(req.version(), req.headers());
    let client_switch = asked.is_some().then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    let uri = format!("http://{cluster}.cluster-proxy{path}");
    match uri.parse() {
        Ok(uri) => parts.uri = uri,
        Err(_) => return status::status(StatusCode::BAD_REQUEST, "malformed request path"),
    }
    parts.version = Version::HTTP_2;
    strip_hop_headers(&mut parts.headers);
    // Only the server marks a request as an upgrade (a user's marker could otherwise open a
    // raw stream to the cluster without asking for an upgrade).
    parts.headers.remove(upgrade::UPGRADE_HEADER);
    parts.headers.remove(upgrade::UPGRADED_HEADER);
    parts.headers.remove(http::header::AUTHORIZATION);
    parts.headers.remove(http::header::HOST);
    let on_cluster = identity::cluster_identity(&user);
    let Ok(name) = HeaderValue::from_str(&on_cluster.name) else {
        return status::status(
            StatusCode::BAD_REQUEST,
            "the user name is not a header value",
        );
    };
    parts.headers.insert("impersonate-user", name);
    for group in &on_cluster.groups {
        if let Ok(value) = HeaderValue::from_str(group) {
            parts.headers.append("impersonate-group", value);
        }
    }
    let (client_bytes, request) = match &asked {
        Some(protocol) => {
            parts
                .headers
                .insert(upgrade::UPGRADE_HEADER, protocol.clone());
            // The stream's body is the user's bytes after the switch, not the request's body
            // (kubectl's SPDY upgrade is a POST with `Content-Length: 0`).
            parts.headers.remove(http::header::CONTENT_LENGTH);
            let (tx, stream) = upgrade::channel_body();
            (Some(tx), Request::from_parts(parts, stream))
        }
        None => (
            None,
            Request::from_parts(parts, body.map_err(Into::into).boxed_unsync()),
        ),
    };
    let mut sender = tunnel.sender();
    let sent = async {
        sender.ready().await?;
        sender.send_request(request).await
    };
    match sent.await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_headers(&mut parts.headers);
            parts.version = Version::HTTP_11;
            if let (Some(protocol), Some(switch), Some(tx)) = (
                parts.headers.remove(upgrade::UPGRADED_HEADER),
                client_switch,
                client_bytes,
            ) {
                tokio::spawn(async move {
                    match switch.await {
                        Ok(io) => upgrade::splice(TokioIo::new(io), body, tx).await,
                        Err(err) => tracing::debug!(%err, "the client's upgrade failed"),
                    }
                });
                parts.status = StatusCode::SWITCHING_PROTOCOLS;
                parts.headers.insert(
                    http::header::CONNECTION,
                    HeaderValue::from_static("Upgrade"),
                );
                parts.headers.insert(http::header::UPGRADE, protocol);
                return Response::from_parts(parts, status::full(""));
            }
            Response::from_parts(parts, body.map_err(Into::into).boxed_unsync())
        }
        Err(err) => status::status(
            StatusCode::BAD_GATEWAY,
            &format!("the tunnel to cluster {cluster} failed during the request: {err}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_url_is_one_agents_can_dial() {
        let wildcard = SocketAddr::from(([0, 0, 0, 0], 8090));
        let options = ProxyServerOptions::default();
        assert_eq!(public_url(&options, wildcard), "https://127.0.0.1:8090");
        let named = ProxyServerOptions {
            hostnames: vec!["proxy.example.com".into()],
            ..Default::default()
        };
        assert_eq!(
            public_url(&named, wildcard),
            "https://proxy.example.com:8090"
        );
        let explicit = ProxyServerOptions {
            public_url: Some("https://lb.example.com".into()),
            ..named
        };
        assert_eq!(public_url(&explicit, wildcard), "https://lb.example.com");
    }
}

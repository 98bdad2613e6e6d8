//! The cluster-proxy agent on a managed cluster: it opens one outbound TLS connection to the
//! proxy server (client certificate from its addon registration), upgrades it to a tunnel and
//! then serves HTTP/2 over it — each request the hub sends is checked
//! ([`crate::identity::forwarded_identity`]) and sent to this cluster's API server with the
//! agent's own credentials, impersonating the mapped hub user. It reconnects with backoff when
//! the tunnel breaks, and renews its health Lease.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use ocm_addon_framework::agent_helpers::{LeaseUpdater, TLS_CRT_FILE, TLS_KEY_FILE};
use ocm_runtime::shutdown::Shutdown;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::error::{ProxyError, io};
use crate::server::{KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, TUNNEL_PROTOCOL};
use crate::status::{self, ProxyBody, strip_hop_headers};
use crate::upgrade;

/// Largest request body the agent forwards (kube-apiserver's own limit is 3 MiB per object).
pub const MAX_REQUEST_BODY: usize = 64 << 20;

/// How the agent reaches the proxy server.
#[derive(Clone, Debug)]
pub struct TunnelAgentOptions {
    /// This cluster's name on the hub.
    pub cluster: String,
    /// The addon's install namespace on this cluster (its health Lease is there).
    pub namespace: String,
    /// `https://host:port` of the proxy server.
    pub proxy_url: String,
    /// PEM CA of the proxy server's certificate.
    pub proxy_ca_pem: String,
    /// Directory with `tls.crt` and `tls.key` of the agent's hub registration (read again at
    /// every connection, so rotated certificates are used).
    pub credentials_dir: PathBuf,
    /// Longest wait between connection attempts.
    pub max_backoff: Duration,
    /// Renew the health Lease (off when something else reports the addon's health).
    pub lease: bool,
    /// The client upgrade requests (exec, attach, port-forward) go through; without one they
    /// go through the agent's own client, which then must speak HTTP/1.1 over the network.
    pub upgrades: Option<UpgradeClient>,
}

/// An HTTP/1.1 client of the cluster (kube's own, `kube::Client::try_from`): an upgrade needs
/// an HTTP/1.1 connection, which a client that may speak HTTP/2 cannot promise.
#[derive(Clone)]
pub struct UpgradeClient(pub kube::Client);

impl std::fmt::Debug for UpgradeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpgradeClient")
    }
}

impl TunnelAgentOptions {
    /// Options with a 30 s backoff cap and the health Lease on.
    pub fn new(
        cluster: impl Into<String>,
        namespace: impl Into<String>,
        proxy_url: impl Into<String>,
        proxy_ca_pem: impl Into<String>,
        credentials_dir: impl Into<PathBuf>,
    ) -> TunnelAgentOptions {
        TunnelAgentOptions {
            cluster: cluster.into(),
            namespace: namespace.into(),
            proxy_url: proxy_url.into(),
            proxy_ca_pem: proxy_ca_pem.into(),
            credentials_dir: credentials_dir.into(),
            max_backoff: Duration::from_secs(30),
            lease: true,
            upgrades: None,
        }
    }
}

/// Whether the agent's tunnel is open, and how many it has opened so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TunnelState {
    /// A tunnel is open now.
    pub connected: bool,
    /// Tunnels opened since start.
    pub opened: u64,
}

/// Runs the agent until `shutdown`, forwarding to the cluster through `spoke`; `state`
/// reports the tunnel.
#[inline(never)]
pub fn run_with_state(
    spoke: kube::Client,
    options: TunnelAgentOptions,
    state: watch::Sender<TunnelState>,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_with_state_body(spoke, options, state, shutdown))
}

async fn run_with_state_body(
    spoke: kube::Client,
    options: TunnelAgentOptions,
    state: watch::Sender<TunnelState>,
    shutdown: Shutdown,
) {
    if options.lease {
        let lease = LeaseUpdater::new(spoke.clone(), options.namespace.clone(), crate::ADDON_NAME);
        tokio::spawn(lease.run(shutdown.clone()));
    }
    let first = Duration::from_millis(200);
    let mut backoff = first;
    while !shutdown.is_cancelled() {
        match open_tunnel(&options).await {
            Ok(io) => {
                backoff = first;
                state.send_modify(|s| {
                    s.connected = true;
                    s.opened += 1;
                });
                tracing::info!(proxy = %options.proxy_url, "tunnel open");
                let upgrades = options
                    .upgrades
                    .as_ref()
                    .map_or_else(|| spoke.clone(), |u| u.0.clone());
                serve_tunnel(io, spoke.clone(), upgrades, &shutdown).await;
                state.send_modify(|s| s.connected = false);
                tracing::info!("tunnel closed; reconnecting");
            }
            Err(err) => {
                tracing::warn!(%err, proxy = %options.proxy_url, "cannot open the tunnel");
                backoff = (backoff * 2).min(options.max_backoff.max(first));
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(backoff) => {}
        }
    }
}

/// Runs the agent until `shutdown`.
#[inline(never)]
pub fn run(
    spoke: kube::Client,
    options: TunnelAgentOptions,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(spoke, options, shutdown))
}

async fn run_body(spoke: kube::Client, options: TunnelAgentOptions, shutdown: Shutdown) {
    run_with_state(
        spoke,
        options,
        watch::channel(TunnelState::default()).0,
        shutdown,
    )
    .await;
}

fn read_pem(dir: &Path, file: &str) -> Result<Vec<u8>, ProxyError> {
    let path = dir.join(file);
    std::fs::read(&path).map_err(io(format!("reading {}", path.display())))
}

fn client_config(options: &TunnelAgentOptions) -> Result<rustls::ClientConfig, ProxyError> {
    let pem = |e: rustls::pki_types::pem::Error| ProxyError::Pki(e.to_string());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(options.proxy_ca_pem.as_bytes()) {
        roots.add(cert.map_err(pem)?)?;
    }
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&read_pem(&options.credentials_dir, TLS_CRT_FILE)?)
            .collect::<Result<_, _>>()
            .map_err(pem)?;
    let key = PrivateKeyDer::from_pem_slice(&read_pem(&options.credentials_dir, TLS_KEY_FILE)?)
        .map_err(pem)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Connects, authenticates and upgrades: the returned stream is the tunnel.
async fn open_tunnel(options: &TunnelAgentOptions) -> Result<hyper::upgrade::Upgraded, ProxyError> {
    let uri: http::Uri = options
        .proxy_url
        .parse()
        .map_err(|e| ProxyError::Config(format!("proxy URL {:?}: {e}", options.proxy_url)))?;
    let host = uri
        .host()
        .ok_or_else(|| {
            ProxyError::Config(format!("proxy URL {:?} has no host", options.proxy_url))
        })?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(443);
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config(options)?));
    let name = ServerName::try_from(host.clone())
        .map_err(|e| ProxyError::Config(format!("proxy host {host:?}: {e}")))?;
    let connect = async {
        let tcp = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(io(format!("connecting to {host}:{port}")))?;
        let _ = tcp.set_nodelay(true);
        connector
            .connect(name, tcp)
            .await
            .map_err(io("TLS handshake with the proxy server"))
    };
    let tls = tokio::time::timeout(Duration::from_secs(15), connect)
        .await
        .map_err(|_| ProxyError::Tunnel("connecting timed out".into()))??;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| ProxyError::Tunnel(e.to_string()))?;
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_else(|| host.clone());
    let request = Request::get("/tunnel")
        .header(http::header::HOST, authority)
        .header(http::header::CONNECTION, "upgrade")
        .header(http::header::UPGRADE, TUNNEL_PROTOCOL)
        .body(http_body_util::Empty::<Bytes>::new())
        .map_err(|e| ProxyError::Tunnel(e.to_string()))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| ProxyError::Tunnel(e.to_string()))?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let code = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
            .unwrap_or_default();
        return Err(ProxyError::Tunnel(format!(
            "the proxy server answered {code}: {body}"
        )));
    }
    hyper::upgrade::on(response)
        .await
        .map_err(|e| ProxyError::Tunnel(e.to_string()))
}

/// Serves HTTP/2 over the tunnel until it closes or `shutdown`.
async fn serve_tunnel(
    io: hyper::upgrade::Upgraded,
    spoke: kube::Client,
    upgrades: kube::Client,
    shutdown: &Shutdown,
) {
    let service = hyper::service::service_fn(move |req| {
        let spoke = spoke.clone();
        let upgrades = upgrades.clone();
        async move { Ok::<_, std::convert::Infallible>(forward(&spoke, &upgrades, req).await) }
    });
    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .initial_stream_window_size(2 << 20)
        .initial_connection_window_size(8 << 20)
        .serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(err) = result {
                tracing::info!(%err, "tunnel ended");
            }
        }
        _ = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

/// Sends one tunnelled request to the cluster as the identity it names.
async fn forward(
    spoke: &kube::Client,
    upgrades: &kube::Client,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    if let Err(refused) = crate::identity::forwarded_identity(req.headers()) {
        return status::status(
            StatusCode::FORBIDDEN,
            &format!("the cluster-proxy agent refuses the request: {refused}"),
        );
    }
    let (mut parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".into());
    match path.parse() {
        Ok(uri) => parts.uri = uri,
        Err(_) => return status::status(StatusCode::BAD_REQUEST, "malformed request path"),
    }
    parts.version = Version::HTTP_11;
    strip_hop_headers(&mut parts.headers);
    parts.headers.remove(http::header::AUTHORIZATION);
    parts.headers.remove(http::header::HOST);
    if let Some(protocol) = parts.headers.remove(upgrade::UPGRADE_HEADER) {
        return forward_upgrade(upgrades, parts, body, protocol).await;
    }
    let body = match Limited::new(body, MAX_REQUEST_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            return status::status(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body: {err}"),
            );
        }
    };
    let request = Request::from_parts(parts, kube::client::Body::from(body));
    match spoke.send(request).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_headers(&mut parts.headers);
            Response::from_parts(parts, body.map_err(Into::into).boxed_unsync())
        }
        Err(err) => status::status(
            StatusCode::BAD_GATEWAY,
            &format!("the cluster's API server could not be reached: {err}"),
        ),
    }
}

/// Makes a tunnelled upgrade request to the cluster over HTTP/1.1 and, once the cluster
/// switches protocols, splices its connection to the tunnel stream (see [`crate::upgrade`]).
async fn forward_upgrade(
    client: &kube::Client,
    mut parts: http::request::Parts,
    body: Incoming,
    protocol: http::HeaderValue,
) -> Response<ProxyBody> {
    parts.headers.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("Upgrade"),
    );
    parts
        .headers
        .insert(http::header::UPGRADE, protocol.clone());
    let request = Request::from_parts(parts, kube::client::Body::from(Vec::new()));
    let mut response = match client.send(request).await {
        Ok(response) => response,
        Err(err) => {
            return status::status(
                StatusCode::BAD_GATEWAY,
                &format!("the cluster's API server could not be reached: {err}"),
            );
        }
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let (mut parts, body) = response.into_parts();
        strip_hop_headers(&mut parts.headers);
        return Response::from_parts(parts, body.map_err(Into::into).boxed_unsync());
    }
    let switched = hyper::upgrade::on(&mut response);
    let (out, stream) = upgrade::channel_body();
    tokio::spawn(async move {
        match switched.await {
            Ok(io) => upgrade::splice(TokioIo::new(io), body, out).await,
            Err(err) => tracing::debug!(%err, "the cluster's upgrade failed"),
        }
    });
    let (mut parts, _) = response.into_parts();
    strip_hop_headers(&mut parts.headers);
    parts.status = StatusCode::OK;
    parts.headers.insert(upgrade::UPGRADED_HEADER, protocol);
    Response::from_parts(parts, stream)
}

//! `kube` clients that negotiate HTTP/2 with the server (ALPN), as client-go does.
//!
//! kube's default client speaks HTTP/1.1 only, so every open watch holds a TCP and TLS
//! connection of its own. An agent keeps several watches and a steady trickle of writes, so
//! at fleet scale the hub would carry several connections per cluster. Over HTTP/2 one
//! connection carries all of a client's requests and watches; keep-alive pings notice a
//! dead peer the way client-go's `ReadIdleTimeout` does.

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use tower::retry::RetryLayer;
use tower::{BoxError, ServiceBuilder};

/// How often an idle HTTP/2 connection is pinged (client-go's read-idle timeout is 30 s).
const PING_INTERVAL: Duration = Duration::from_secs(30);
/// How long a ping may go unanswered before the connection is dropped (client-go: 15 s).
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// Builds a client for `config`: HTTP/2 when the server offers it over TLS, else HTTP/1.1.
///
/// Configurations this builder does not cover (a proxy, a TLS server-name override, plain
/// HTTP) get kube's own HTTP/1.1 client.
pub fn build(config: kube::Config) -> Result<kube::Client, kube::Error> {
    if config.proxy_url.is_some()
        || config.tls_server_name.is_some()
        || config.cluster_url.scheme_str() != Some("https")
    {
        return kube::Client::try_from(config);
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(config.connect_timeout);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_only()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    let hyper_client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .http2_keep_alive_interval(PING_INTERVAL)
        .http2_keep_alive_timeout(PING_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .build(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(hyper_client);
    Ok(kube::Client::new(service, config.default_namespace))
}

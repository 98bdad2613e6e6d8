//! `kube` clients that negotiate HTTP/2 with the server (ALPN), as client-go does.
//!
//! kube's default client speaks HTTP/1.1 only, so every open watch holds a TCP and TLS
//! connection of its own. An agent keeps several watches and a steady trickle of writes, so
//! at fleet scale the hub would carry several connections per cluster. Over HTTP/2 one
//! connection carries all of a client's requests and watches; keep-alive pings notice a
//! dead peer the way client-go's `ReadIdleTimeout` does, and the connect timeout bounds the TLS
//! handshake as well as the TCP connect, as client-go's `TLSHandshakeTimeout` does.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
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
    let https = ConnectTimeout {
        inner: https,
        timeout: config.connect_timeout,
    };
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

/// Bounds the whole connection setup, TCP connect and TLS handshake, by the connect timeout,
/// as kube's own client does. The `HttpConnector` alone bounds only the TCP connect, so a peer
/// that accepts TCP and then stays silent (a partitioned proxy or load balancer) would hold a
/// request in the TLS handshake for as long as the connection lives.
#[derive(Clone)]
struct ConnectTimeout<C> {
    inner: C,
    timeout: Option<Duration>,
}

impl<C> tower::Service<hyper::Uri> for ConnectTimeout<C>
where
    C: tower::Service<hyper::Uri>,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: hyper::Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let Some(limit) = self.timeout else {
            return Box::pin(async move { connecting.await.map_err(Into::into) });
        };
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(connected) => connected.map_err(Into::into),
                Err(_) => Err(Box::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("connecting (TCP and TLS) took longer than {limit:?}"),
                )) as BoxError),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// A server that completes TCP handshakes and then says nothing (a silent middlebox, a
    /// partitioned proxy): the TLS handshake must not wait for it forever.
    #[tokio::test]
    async fn a_silent_server_fails_the_connect_within_the_connect_timeout() {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        let mut config = kube::Config::new(format!("https://127.0.0.1:{port}").parse().unwrap());
        config.accept_invalid_certs = true;
        config.connect_timeout = Some(Duration::from_millis(200));
        let client = build(config).unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(10), client.apiserver_version())
            .await
            .expect("the request ends within the connect timeout");
        assert!(answer.is_err(), "{answer:?}");
        hold.abort();
    }
}

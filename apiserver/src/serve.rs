//! Serving the API over TCP with TLS (HTTP/1.1 and HTTP/2), with the client certificate's
//! presented certificate chain attached to every request for authentication.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::server::ApiServer;

/// How long the accept loop waits after a failed accept before it tries again.
const PAUSE_AFTER_FAILED_ACCEPT: Duration = Duration::from_millis(100);

/// A running listener.
#[derive(Debug)]
pub struct Serving {
    /// The bound address.
    pub local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Serving {
    /// Stops accepting, ends watches and waits (up to 5 s) for open requests.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Binds `addr` and serves `server` over TLS.
#[inline(never)]
pub fn serve_tls(
    server: ApiServer,
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
) -> futures::future::BoxFuture<'static, std::io::Result<Serving>> {
    Box::pin(serve_tls_body(server, addr, tls))
}

async fn serve_tls_body(
    server: ApiServer,
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
) -> std::io::Result<Serving> {
    let listener = TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    server.inner.set_serving_port(local_addr.port());
    let (stop, mut stopped) = watch::channel(false);
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let task = tokio::spawn(async move {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(err) => {
                        // Out of file descriptors, mostly: wait for some to close rather
                        // than spin on a core retrying.
                        tracing::warn!(%err, "accept failed");
                        tokio::select! {
                            _ = stopped.changed() => break,
                            () = tokio::time::sleep(PAUSE_AFTER_FAILED_ACCEPT) => continue,
                        }
                    }
                },
                _ = stopped.changed() => break,
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let service = server.service();
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp))
                    .await
                {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(err)) => {
                        tracing::debug!(%peer, %err, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
                let chain: Vec<Vec<u8>> = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .map(|certs| certs.iter().map(|c| c.as_ref().to_vec()).collect())
                    .unwrap_or_default();
                let peer_certs = crate::authn::PeerCertificates::new(chain);
                let svc = tower::ServiceBuilder::new()
                    .map_request(move |mut req: http::Request<hyper::body::Incoming>| {
                        req.extensions_mut().insert(peer_certs.clone());
                        req
                    })
                    .service(service);
                let builder = Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection_with_upgrades(
                    TokioIo::new(tls),
                    TowerToHyperService::new(svc),
                );
                if let Err(err) = watcher.watch(conn.into_owned()).await {
                    tracing::debug!(%peer, %err, "connection ended");
                }
            });
        }
        server.shutdown();
        let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
    });
    Ok(Serving {
        local_addr,
        stop,
        task,
    })
}

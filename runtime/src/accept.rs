//! The accept loop of ocm-rs's small HTTP endpoints (health and metrics, the placement
//! debugger, the dashboard, the cluster-proxy server, the process kubelet): connections are
//! taken until shutdown and each is served on its own task. A failed accept — almost always
//! the process out of file descriptors — is logged and retried after a short pause, so the
//! loop does not spin on a core while descriptors are short.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

use crate::shutdown::Shutdown;

/// How long the loop waits after a failed accept before it tries again.
const PAUSE_AFTER_FAILED_ACCEPT: Duration = Duration::from_millis(100);

/// Accepts connections on `listener` until `shutdown` is cancelled, running
/// `serve(stream, peer)` on a task of its own for each; `name` labels the log line of a failed
/// accept.
pub async fn accept_until<F, Fut>(
    name: &'static str,
    listener: TcpListener,
    shutdown: Shutdown,
    serve: F,
) where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                tokio::spawn(serve(stream, peer));
            }
            Err(err) => {
                tracing::warn!(%err, endpoint = name, "accepting a connection failed");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(PAUSE_AFTER_FAILED_ACCEPT) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn serves_each_connection_and_stops_at_shutdown() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = Shutdown::new();
        let running = tokio::spawn(accept_until(
            "test",
            listener,
            shutdown.clone(),
            |mut stream, _| async move {
                let _ = stream.write_all(b"hello").await;
            },
        ));
        for _ in 0..2 {
            let mut client = TcpStream::connect(addr).await.unwrap();
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"hello");
        }
        shutdown.cancel();
        running.await.unwrap();
    }
}

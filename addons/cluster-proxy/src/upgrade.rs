//! Upgrade requests through a tunnel — `kubectl exec`, `attach` and `port-forward` (WebSocket
//! or SPDY): HTTP/2 has no `Upgrade`, so the server sends such a request as an ordinary stream
//! marked with [`UPGRADE_HEADER`] (the protocol asked for), whose request body carries the
//! client's bytes once upgraded. The agent makes the HTTP/1.1 upgrade request to its cluster;
//! when the cluster switches protocols it answers `200` marked with [`UPGRADED_HEADER`] and the
//! cluster's handshake headers, and the response body carries the cluster's bytes. The server
//! then answers the client `101 Switching Protocols` and both ends [`splice`] their upgraded
//! connection to the stream. An upgrade the cluster refuses comes back as its answer.

use bytes::Bytes;
use futures::SinkExt;
use http::HeaderMap;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::status::ProxyBody;

/// Marks a tunnelled request as an upgrade; its value is the `Upgrade` asked for.
pub const UPGRADE_HEADER: &str = "ocm-proxy-upgrade";
/// Marks a tunnelled answer as the cluster's `101 Switching Protocols`; its value is the
/// protocol switched to.
pub const UPGRADED_HEADER: &str = "ocm-proxy-upgraded";

type Chunk = Result<Frame<Bytes>, Box<dyn std::error::Error + Send + Sync>>;

/// Where one end writes the bytes the other end's body carries.
pub type ChunkSender = futures::channel::mpsc::Sender<Chunk>;

/// A streamed body and the handle that feeds it.
pub fn channel_body() -> (ChunkSender, ProxyBody) {
    let (tx, rx) = futures::channel::mpsc::channel::<Chunk>(16);
    (tx, StreamBody::new(rx).boxed_unsync())
}

/// The `Upgrade` a client's request asks for (HTTP/1.1 only).
pub fn asked(version: http::Version, headers: &HeaderMap) -> Option<http::HeaderValue> {
    if version != http::Version::HTTP_11 {
        return None;
    }
    let connection_upgrade = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    connection_upgrade
        .then(|| headers.get(http::header::UPGRADE).cloned())
        .flatten()
}

/// Copies an upgraded connection both ways with a tunnel stream: what `io` reads goes to
/// `out` (ending it when `io` ends), what `incoming` carries is written to `io` (shut when it
/// ends).
pub async fn splice<S>(io: S, mut incoming: Incoming, mut out: ChunkSender)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let up = async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = Bytes::copy_from_slice(&buf[..n]);
                    if out.send(Ok(Frame::data(chunk))).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = out.close().await;
    };
    let down = async move {
        while let Some(Ok(frame)) = incoming.frame().await {
            if let Ok(data) = frame.into_data()
                && (writer.write_all(&data).await.is_err() || writer.flush().await.is_err())
            {
                break;
            }
        }
        let _ = writer.shutdown().await;
    };
    tokio::join!(up, down);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_an_http1_connection_upgrade_asks_for_one() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::UPGRADE, "websocket".parse().unwrap());
        assert_eq!(asked(http::Version::HTTP_11, &headers), None);
        headers.insert(
            http::header::CONNECTION,
            "keep-alive, Upgrade".parse().unwrap(),
        );
        assert_eq!(
            asked(http::Version::HTTP_11, &headers).unwrap(),
            "websocket"
        );
        assert_eq!(asked(http::Version::HTTP_2, &headers), None);
    }
}

//! The server side of WebSocket (RFC 6455), as far as the kubelet's streaming endpoints need
//! it: the handshake's accept key, reading the client's (masked) frames as whole messages and
//! writing unmasked binary messages and a close.

use base64::Engine;
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::Full;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The GUID RFC 6455 appends to the client's key.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Largest message accepted from a client (stdin chunks and resize events are small).
const MAX_MESSAGE: usize = 16 << 20;

/// `Sec-WebSocket-Accept` for the client's `Sec-WebSocket-Key`.
pub fn accept_key(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{}{ACCEPT_GUID}", key.trim()).as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Header `name` of a request as text: empty when it is absent or not text.
pub fn header_text(headers: &http::HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The client's `Sec-WebSocket-Key`, or the `400` answer saying it is missing.
pub fn client_key(headers: &http::HeaderMap) -> Result<String, Box<Response<Full<Bytes>>>> {
    let key = header_text(headers, "sec-websocket-key");
    if key.is_empty() {
        let mut response = Response::new(Full::new(Bytes::from("Sec-WebSocket-Key is missing")));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return Err(Box::new(response));
    }
    Ok(key)
}

/// The `101 Switching Protocols` answer accepting a WebSocket of `protocol` for the client's
/// `Sec-WebSocket-Key` `key`.
pub fn switching_protocols(key: &str, protocol: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(http::header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(
        http::header::CONNECTION,
        HeaderValue::from_static("Upgrade"),
    );
    headers.insert("sec-websocket-protocol", HeaderValue::from_static(protocol));
    if let Ok(accept) = HeaderValue::from_str(&accept_key(key)) {
        headers.insert("sec-websocket-accept", accept);
    }
    response
}

/// A message from the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Message {
    /// A binary (or text) message's payload.
    Data(Vec<u8>),
    /// A ping, to be answered with a pong carrying the same payload.
    Ping(Vec<u8>),
    /// A pong, the answer to a ping sent.
    Pong,
    /// The client closed the connection.
    Close,
}

/// Reads the next message, answering nothing itself; `Ok(None)` at the end of the stream.
pub async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Message>> {
    let mut payload = Vec::new();
    loop {
        let mut head = [0u8; 2];
        match reader.read_exact(&mut head).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let fin = head[0] & 0x80 != 0;
        let opcode = head[0] & 0x0f;
        let masked = head[1] & 0x80 != 0;
        let len = match head[1] & 0x7f {
            126 => u64::from(reader.read_u16().await?),
            127 => reader.read_u64().await?,
            n => u64::from(n),
        };
        let len = usize::try_from(len)
            .ok()
            .filter(|l| payload.len() + l <= MAX_MESSAGE)
            .ok_or_else(|| invalid("message too large"))?;
        let mut mask = [0u8; 4];
        if masked {
            reader.read_exact(&mut mask).await?;
        }
        let mut data = vec![0u8; len];
        reader.read_exact(&mut data).await?;
        if masked {
            for (i, b) in data.iter_mut().enumerate() {
                *b ^= mask[i % 4];
            }
        }
        match opcode {
            0x8 => return Ok(Some(Message::Close)),
            0x9 => return Ok(Some(Message::Ping(data))),
            0xA => return Ok(Some(Message::Pong)),
            0x0..=0x2 => {
                payload.extend_from_slice(&data);
                if fin {
                    return Ok(Some(Message::Data(payload)));
                }
            }
            _ => return Err(invalid("unknown WebSocket opcode")),
        }
    }
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}

/// One unmasked frame of `opcode` (a server's frames are not masked).
pub fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// Writes a binary message.
pub async fn write_binary<W: AsyncWrite + Unpin>(
    writer: &mut W,
    payload: &[u8],
) -> std::io::Result<()> {
    writer.write_all(&frame(0x2, payload)).await?;
    writer.flush().await
}

/// Writes a pong answering a ping.
pub async fn write_pong<W: AsyncWrite + Unpin>(
    writer: &mut W,
    payload: &[u8],
) -> std::io::Result<()> {
    writer.write_all(&frame(0xA, payload)).await?;
    writer.flush().await
}

/// Writes a normal close (status 1000).
pub async fn write_close<W: AsyncWrite + Unpin>(writer: &mut W) -> std::io::Result<()> {
    writer
        .write_all(&frame(0x8, &1000u16.to_be_bytes()))
        .await?;
    writer.flush().await
}

/// The writing half of a connection: bytes sent to the channel are written in order; once all
/// senders are gone the connection ends (with a WebSocket close first when `websocket`).
pub(super) fn byte_writer<W>(
    writer: W,
    websocket: bool,
) -> (
    tokio::sync::mpsc::Sender<Vec<u8>>,
    tokio::task::JoinHandle<()>,
)
where
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (frames, outgoing) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    (frames, write_from(writer, outgoing, websocket))
}

/// Writes what `outgoing` carries to `writer`, in order, until its senders are gone; then
/// ends the connection (with a WebSocket close first when `websocket`).
pub(super) fn write_from<W>(
    mut writer: W,
    mut outgoing: tokio::sync::mpsc::Receiver<Vec<u8>>,
    websocket: bool,
) -> tokio::task::JoinHandle<()>
where
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        while let Some(frame) = outgoing.recv().await {
            if writer.write_all(&frame).await.is_err() || writer.flush().await.is_err() {
                return;
            }
        }
        if websocket {
            let _ = write_close(&mut writer).await;
        }
        let _ = writer.shutdown().await;
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_handshake_without_a_key_is_refused_naming_it() {
        let mut headers = http::HeaderMap::new();
        let refusal = client_key(&headers).unwrap_err();
        assert_eq!(refusal.status(), StatusCode::BAD_REQUEST);
        headers.insert(
            "sec-websocket-key",
            HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ=="),
        );
        assert_eq!(client_key(&headers).unwrap(), "dGhlIHNhbXBsZSBub25jZQ==");
    }

    #[test]
    fn the_accept_key_is_rfc_6455s_example() {
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[tokio::test]
    async fn masked_fragments_read_as_one_message() {
        // "Hel" then "lo", masked, as RFC 6455 §5.7's examples.
        let mut bytes = vec![0x01, 0x83, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d];
        bytes.extend([0x80, 0x02, b'l', b'o']);
        bytes.extend(frame(0x9, b"hi"));
        bytes.extend(frame(0xA, b""));
        bytes.extend(frame(0x8, &[]));
        let mut reader = bytes.as_slice();
        assert_eq!(
            read_message(&mut reader).await.unwrap(),
            Some(Message::Data(b"Hello".to_vec()))
        );
        assert_eq!(
            read_message(&mut reader).await.unwrap(),
            Some(Message::Ping(b"hi".to_vec()))
        );
        assert_eq!(
            read_message(&mut reader).await.unwrap(),
            Some(Message::Pong)
        );
        assert_eq!(
            read_message(&mut reader).await.unwrap(),
            Some(Message::Close)
        );
        assert_eq!(read_message(&mut reader).await.unwrap(), None);
    }

    #[test]
    fn long_payloads_carry_extended_lengths() {
        assert_eq!(&frame(0x2, &[0; 300])[..4], &[0x82, 126, 1, 44]);
        assert_eq!(frame(0x2, &[0; 70_000])[1], 127);
    }
}

//! The kubelet's port-forward endpoint, so that `kubectl port-forward` (the API server's
//! `pods/portforward`, which passes the upgrade on) reaches the ports a pod's process listens
//! on: `GET /portForward/<namespace>/<pod>`, upgraded to a WebSocket of the
//! `SPDY/3.1+portforward.k8s.io` protocol — SPDY/3.1 frames carried in binary messages, as
//! kubectl speaks first — or to `SPDY/3.1` itself with `X-Stream-Protocol-Version:
//! portforward.k8s.io` (kubectl's fallback, and older clients'). A request offering neither
//! is refused saying so.
//!
//! Inside the session, each connection kubectl forwards opens two streams sharing a
//! `requestid` header: `streamtype: error` and `streamtype: data`, both naming the pod's
//! `port`. The container port is the one the pod declares; its process listens on the local
//! port the supervisor gave it (recorded while it runs, see [`super::record::record`]), or on
//! the port itself for a pod in the host's network. The data stream's bytes are copied to and
//! from that address; a port no process listens on gets a message on the error stream, which
//! kubectl prints. The server answers pings, acknowledges data with WINDOW_UPDATEs and honours
//! the client's windows once the client shows it keeps them (kubectl's SPDY library sends no
//! WINDOW_UPDATE, so a window it never replenishes is not waited on, as the kubelet's own
//! SPDY library does not).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use ocm_runtime::shutdown::Shutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};

use super::exec::reply;
use super::logs::is_plain_name;
use super::record::recorded_ports;
use super::spdy::{self, Frame};
use super::websocket::byte_writer;
use super::websocket::{self, Message};

/// The WebSocket protocol served.
pub const PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";
/// The stream protocol of a plain SPDY upgrade.
pub const STREAM_PROTOCOL: &str = "portforward.k8s.io";

/// Largest DATA frame the server sends.
const CHUNK: usize = 16 * 1024;
/// A SPDY/3 stream's and session's window until the client says otherwise.
const DEFAULT_WINDOW: i64 = 64 * 1024;

/// The pod a port-forward request names: `<namespace>/<pod>` and its folder.
pub fn parse(work_dir: &Path, path: &str) -> Result<(String, PathBuf), String> {
    let parts: Vec<&str> = path
        .strip_prefix("/portForward/")
        .map(|rest| rest.split('/').collect())
        .unwrap_or_default();
    match parts.as_slice() {
        [namespace, pod] | [namespace, pod, _]
            if is_plain_name(namespace) && is_plain_name(pod) =>
        {
            Ok((
                format!("{namespace}/{pod}"),
                work_dir.join(namespace).join(pod),
            ))
        }
        _ => Err(format!("{path} does not name <namespace>/<pod>")),
    }
}

/// The local port where `port` of a pod (recorded `ports`) listens, or why there is none.
pub fn local_port(pod: &str, ports: Option<&BTreeMap<u16, u16>>, port: u16) -> Result<u16, String> {
    let Some(ports) = ports else {
        return Err(format!(
            "pod {pod} has no process listening on port {port}: its container is not running"
        ));
    };
    ports.get(&port).copied().ok_or_else(|| {
        let declared: Vec<String> = ports.keys().map(u16::to_string).collect();
        format!(
            "pod {pod} has no process listening on port {port}: its container declares {}",
            if declared.is_empty() {
                "no ports".to_owned()
            } else {
                format!("ports {}", declared.join(", "))
            }
        )
    })
}

/// Answers a port-forward request: refusals before the upgrade, else `101 Switching
/// Protocols` and the SPDY session over the upgraded connection.
pub fn answer(work_dir: &Path, mut req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (pod, pod_dir) = match parse(work_dir, req.uri().path()) {
        Ok(found) => found,
        Err(message) => return reply(StatusCode::BAD_REQUEST, message),
    };
    if recorded_ports(&pod_dir).is_none() {
        return reply(
            StatusCode::BAD_REQUEST,
            format!("pod {pod} is not running: it has no process to forward to"),
        );
    }
    let header = |name: &str| websocket::header_text(req.headers(), name);
    let upgrade_to = header("upgrade");
    let websocket = upgrade_to.eq_ignore_ascii_case("websocket");
    let offered = if websocket {
        header("sec-websocket-protocol")
    } else {
        req.headers()
            .get_all("x-stream-protocol-version")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(",")
    };
    let wanted = if websocket { PROTOCOL } else { STREAM_PROTOCOL };
    let spdy = upgrade_to.eq_ignore_ascii_case("SPDY/3.1");
    if !(websocket || spdy) || !offered.split(',').any(|p| p.trim() == wanted) {
        return reply(
            StatusCode::BAD_REQUEST,
            format!(
                "port-forward is served over WebSocket ({PROTOCOL}) or SPDY/3.1 \
                 ({STREAM_PROTOCOL}); the request offers neither"
            ),
        );
    }
    let key = if websocket {
        match websocket::client_key(req.headers()) {
            Ok(key) => key,
            Err(refusal) => return *refusal,
        }
    } else {
        String::new()
    };
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        match upgrade.await {
            Ok(upgraded) => session(TokioIo::new(upgraded), pod, pod_dir, websocket).await,
            Err(err) => tracing::debug!(%err, "port-forward upgrade failed"),
        }
    });
    if websocket {
        return websocket::switching_protocols(&key, PROTOCOL);
    }
    let mut response = reply(StatusCode::SWITCHING_PROTOCOLS, String::new());
    let headers = response.headers_mut();
    headers.insert(http::header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    headers.insert(
        http::header::CONNECTION,
        HeaderValue::from_static("Upgrade"),
    );
    headers.insert(
        "x-stream-protocol-version",
        HeaderValue::from_static(STREAM_PROTOCOL),
    );
    response
}

/// A stream the client opened.
struct Stream {
    /// Where the client's data goes (the data stream, until the client's last frame).
    data: Option<mpsc::Sender<Vec<u8>>>,
    /// Cancelled when the client resets the stream or the session ends.
    reset: Shutdown,
}

/// Streams of one forwarded connection, until both are open.
#[derive(Default)]
struct Pair {
    port: String,
    error: Option<u32>,
    data: Option<(u32, mpsc::Receiver<Vec<u8>>)>,
}

/// How much the server may still send, once the client keeps windows.
struct Flow {
    enforced: bool,
    initial: i64,
    session: i64,
    streams: HashMap<u32, i64>,
}

impl Default for Flow {
    fn default() -> Self {
        Flow {
            enforced: false,
            initial: DEFAULT_WINDOW,
            session: DEFAULT_WINDOW,
            streams: HashMap::new(),
        }
    }
}

impl Flow {
    /// How many of `want` bytes may go on `stream` now (taken from its windows); 0: wait.
    fn take(&mut self, stream: u32, want: usize) -> usize {
        if !self.enforced {
            return want;
        }
        let initial = self.initial;
        let window = self.streams.entry(stream).or_insert(initial);
        let allowed = (*window).min(self.session).min(want as i64).max(0);
        *window -= allowed;
        self.session -= allowed;
        allowed as usize
    }

    /// The client's WINDOW_UPDATE: `delta` more bytes on `stream` (0: the session).
    fn grant(&mut self, stream: u32, delta: u32) {
        self.enforced = true;
        if stream == 0 {
            self.session += i64::from(delta);
        } else {
            let initial = self.initial;
            *self.streams.entry(stream).or_insert(initial) += i64::from(delta);
        }
    }

    /// The client's SETTINGS: a new initial window for every stream.
    fn set_initial(&mut self, window: u32) {
        let change = i64::from(window) - self.initial;
        self.enforced = true;
        self.initial = i64::from(window);
        for w in self.streams.values_mut() {
            *w += change;
        }
    }
}

struct State {
    streams: HashMap<u32, Stream>,
    pairs: HashMap<String, Pair>,
    flow: Flow,
}

/// One SPDY session.
struct Session {
    pod: String,
    pod_dir: PathBuf,
    /// Bytes to write, in order.
    frames: mpsc::Sender<Vec<u8>>,
    /// Whether SPDY travels in WebSocket binary messages (else bare).
    websocket: bool,
    state: Mutex<State>,
    window_grew: Notify,
}

impl Session {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends SPDY bytes (in a binary message over WebSocket); false once the connection is
    /// gone.
    async fn send(&self, spdy: Vec<u8>) -> bool {
        let bytes = if self.websocket {
            websocket::frame(0x2, &spdy)
        } else {
            spdy
        };
        self.frames.send(bytes).await.is_ok()
    }

    /// How many of `want` bytes may go on `stream` now, waiting for the client's window.
    async fn reserve(&self, stream: u32, want: usize) -> usize {
        let want = want.min(CHUNK);
        loop {
            let grew = self.window_grew.notified();
            let allowed = self.state().flow.take(stream, want);
            if allowed > 0 {
                return allowed;
            }
            grew.await;
        }
    }

    fn forget(&self, ids: &[u32]) {
        let mut state = self.state();
        for id in ids {
            state.streams.remove(id);
            state.flow.streams.remove(id);
        }
    }

    /// Handles a frame; false when the session ends.
    async fn handle(self: &Arc<Self>, frame: Frame, out: &mut spdy::Writer) -> bool {
        match frame {
            Frame::SynStream {
                stream, headers, ..
            } => return self.open(stream, &headers, out).await,
            Frame::Data { stream, fin, data } => {
                let (sender, reset) = {
                    let mut state = self.state();
                    match state.streams.get_mut(&stream) {
                        Some(s) if fin => (s.data.take(), s.reset.clone()),
                        Some(s) => (s.data.clone(), s.reset.clone()),
                        None => return true,
                    }
                };
                if let Some(sender) = sender
                    && !data.is_empty()
                {
                    tokio::select! {
                        _ = sender.send(data) => {}
                        () = reset.cancelled() => {}
                    }
                }
            }
            Frame::RstStream { stream } => {
                if let Some(s) = self.state().streams.remove(&stream) {
                    s.reset.cancel();
                }
            }
            Frame::Ping(id) => return self.send(spdy::ping(id)).await,
            Frame::GoAway => return false,
            Frame::WindowUpdate { stream, delta } => {
                self.state().flow.grant(stream, delta);
                self.window_grew.notify_waiters();
            }
            Frame::Settings {
                initial_window: Some(window),
            } => {
                self.state().flow.set_initial(window);
                self.window_grew.notify_waiters();
            }
            Frame::Settings { .. } | Frame::Ignored => {}
        }
        true
    }

    /// A stream the client opens: accepted, and once both streams of its connection are
    /// open, the connection is forwarded.
    async fn open(
        self: &Arc<Self>,
        stream: u32,
        headers: &[(String, String)],
        out: &mut spdy::Writer,
    ) -> bool {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let (Some(kind), Some(port), Some(request)) =
            (header("streamtype"), header("port"), header("requestid"))
        else {
            return self
                .send(spdy::rst_stream(stream, spdy::PROTOCOL_ERROR))
                .await;
        };
        if !self.send(out.syn_reply(stream)).await {
            return false;
        }
        let ready = {
            let mut state = self.state();
            let (data, receiver) = match kind.as_str() {
                "data" => {
                    let (tx, rx) = mpsc::channel(16);
                    (Some(tx), Some(rx))
                }
                _ => (None, None),
            };
            state.streams.insert(
                stream,
                Stream {
                    data,
                    reset: Shutdown::new(),
                },
            );
            let pair = state.pairs.entry(request.clone()).or_default();
            pair.port = port;
            match receiver {
                Some(rx) => pair.data = Some((stream, rx)),
                None => pair.error = Some(stream),
            }
            if pair.error.is_some() && pair.data.is_some() {
                state.pairs.remove(&request)
            } else {
                None
            }
        };
        if let Some(Pair {
            port,
            error: Some(error),
            data: Some((data, receiver)),
        }) = ready
        {
            let reset = self
                .state()
                .streams
                .get(&data)
                .map(|s| s.reset.clone())
                .unwrap_or_default();
            tokio::spawn(forward(self.clone(), port, error, data, receiver, reset));
        }
        true
    }

    /// Cancels every stream (the session has ended).
    fn end(&self) {
        for stream in self.state().streams.values() {
            stream.reset.cancel();
        }
    }
}

/// Forwards one connection: the data stream to and from the pod's port, or the reason it
/// cannot on the error stream.
async fn forward(
    session: Arc<Session>,
    port: String,
    error: u32,
    data: u32,
    mut from_client: mpsc::Receiver<Vec<u8>>,
    reset: Shutdown,
) {
    let target = port
        .parse::<u16>()
        .map_err(|_| format!("invalid port {port:?}"))
        .and_then(|port| {
            local_port(
                &session.pod,
                recorded_ports(&session.pod_dir).as_ref(),
                port,
            )
            .map(|local| (port, local))
        });
    let connected = match target {
        Ok((port, local)) => tokio::net::TcpStream::connect(("127.0.0.1", local))
            .await
            .map_err(|err| {
                format!(
                    "pod {} has no process listening on port {port} (its address 127.0.0.1:{local}: {err})",
                    session.pod
                )
            }),
        Err(message) => Err(message),
    };
    let socket = match connected {
        Ok(socket) => socket,
        Err(message) => {
            tracing::debug!(pod = %session.pod, %message, "port-forward refused");
            session
                .send(spdy::data(error, true, message.as_bytes()))
                .await;
            session.send(spdy::data(data, true, &[])).await;
            session.forget(&[error, data]);
            return;
        }
    };
    let (mut from_pod, mut to_pod) = socket.into_split();
    let upstream = async {
        while let Some(chunk) = from_client.recv().await {
            if to_pod.write_all(&chunk).await.is_err() {
                break;
            }
            let consumed = chunk.len() as u32;
            session.send(spdy::window_update(data, consumed)).await;
            session.send(spdy::window_update(0, consumed)).await;
        }
        let _ = to_pod.shutdown().await;
    };
    let downstream = async {
        let mut buffer = vec![0u8; CHUNK];
        loop {
            let n = match from_pod.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut sent = 0;
            while sent < n {
                let allowed = session.reserve(data, n - sent).await;
                if !session
                    .send(spdy::data(data, false, &buffer[sent..sent + allowed]))
                    .await
                {
                    return;
                }
                sent += allowed;
            }
        }
        session.send(spdy::data(data, true, &[])).await;
        session.send(spdy::data(error, true, &[])).await;
    };
    tokio::select! {
        _ = async { tokio::join!(upstream, downstream) } => {}
        () = reset.cancelled() => {}
    }
    session.forget(&[error, data]);
}

/// The client's SPDY bytes, from WebSocket binary messages (pings answered through `frames`)
/// or bare; `None` when the client has gone.
async fn receive<R>(
    reader: &mut R,
    websocket: bool,
    frames: &mpsc::Sender<Vec<u8>>,
) -> Option<Vec<u8>>
where
    R: tokio::io::AsyncRead + Unpin,
{
    if !websocket {
        let mut buffer = vec![0u8; CHUNK];
        return match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                buffer.truncate(n);
                Some(buffer)
            }
        };
    }
    loop {
        match websocket::read_message(reader).await {
            Ok(Some(Message::Data(bytes))) => return Some(bytes),
            Ok(Some(Message::Ping(data))) => {
                let _ = frames.send(websocket::frame(0xA, &data)).await;
            }
            Ok(Some(Message::Pong)) => {}
            Ok(Some(Message::Close) | None) | Err(_) => return None,
        }
    }
}

/// Serves one SPDY session over the upgraded connection until the client ends it.
async fn session<S>(io: S, pod: String, pod_dir: PathBuf, websocket: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    let (mut reader, writer) = tokio::io::split(io);
    let (frames, _written) = byte_writer(writer, websocket);
    let session = Arc::new(Session {
        pod,
        pod_dir,
        frames: frames.clone(),
        websocket,
        state: Mutex::new(State {
            streams: HashMap::new(),
            pairs: HashMap::new(),
            flow: Flow::default(),
        }),
        window_grew: Notify::new(),
    });
    let mut incoming = spdy::Reader::default();
    let mut out = spdy::Writer::default();
    'session: while let Some(bytes) = receive(&mut reader, websocket, &frames).await {
        incoming.push(&bytes);
        loop {
            match incoming.next_frame() {
                Ok(Some(frame)) => {
                    if !session.handle(frame, &mut out).await {
                        break 'session;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    tracing::debug!(pod = %session.pod, %err, "port-forward session");
                    break 'session;
                }
            }
        }
    }
    session.end();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Runs a plain SPDY session for pod `default/web` whose port 8080 is `ports`' and
    /// forwards one connection (sending `request`): the data stream's bytes and the error
    /// stream's, once the server has ended both.
    async fn forward_once(ports: BTreeMap<i64, u16>, request: &[u8]) -> (Vec<u8>, String) {
        let dir = tempfile::tempdir().unwrap();
        super::super::record::record(dir.path(), Path::new("/bin/true"), &[], &ports).unwrap();
        let (client, server) = tokio::io::duplex(1 << 16);
        tokio::spawn(session(
            server,
            "default/web".into(),
            dir.path().to_path_buf(),
            false,
        ));
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let mut bytes = spdy::fixtures::forward_port_8080();
        bytes.extend(spdy::data(3, true, request));
        to_server.write_all(&bytes).await.unwrap();
        let mut frames = spdy::Reader::default();
        let (mut data, mut error, mut ended) = (Vec::new(), Vec::new(), 0);
        let mut buffer = vec![0u8; 8192];
        while ended < 2 {
            let n = from_server.read(&mut buffer).await.unwrap();
            assert_ne!(n, 0, "the session ended early");
            frames.push(&buffer[..n]);
            while let Some(frame) = frames.next_frame().unwrap() {
                if let Frame::Data {
                    stream,
                    fin,
                    data: bytes,
                } = frame
                {
                    match stream {
                        3 => data.extend(bytes),
                        _ => error.extend(bytes),
                    }
                    ended += usize::from(fin);
                }
            }
        }
        (data, String::from_utf8(error).unwrap())
    }

    #[tokio::test]
    async fn a_connection_is_forwarded_both_ways_past_the_default_window() {
        // The pod's process: reads the request, answers 200 KiB, closes.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let local = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 5];
            socket.read_exact(&mut request).await.unwrap();
            assert_eq!(&request, b"hello");
            socket.write_all(&vec![7u8; 200 * 1024]).await.unwrap();
        });
        // No WINDOW_UPDATE comes (as from kubectl): the answer still flows whole.
        let (data, error) = forward_once(BTreeMap::from([(8080, local)]), b"hello").await;
        assert_eq!((data.len(), error.as_str()), (200 * 1024, ""));
    }

    #[tokio::test]
    async fn a_port_the_pod_does_not_declare_is_reported_on_the_error_stream() {
        let (data, error) = forward_once(BTreeMap::new(), b"hello").await;
        assert!(data.is_empty());
        assert_eq!(
            error,
            "pod default/web has no process listening on port 8080: its container declares no ports"
        );
    }

    #[test]
    fn windows_bind_once_the_client_keeps_them() {
        let mut flow = Flow::default();
        // kubectl's SPDY library keeps no windows: nothing waits on them.
        assert_eq!(flow.take(1, 100_000), 100_000);
        flow.grant(1, 10);
        assert_eq!(flow.take(1, 100_000), 65_536);
        assert_eq!(flow.take(1, 1), 0);
        flow.grant(0, 5);
        assert_eq!(flow.take(1, 100), 5);
        flow.set_initial(1000);
        flow.grant(0, 10_000);
        assert_eq!(flow.take(3, 5000), 1000);
    }

    #[test]
    fn the_path_names_a_pod() {
        let (pod, dir) = parse(Path::new("/w"), "/portForward/default/web-1").unwrap();
        assert_eq!(
            (pod.as_str(), dir),
            ("default/web-1", PathBuf::from("/w/default/web-1"))
        );
        assert!(parse(Path::new("/w"), "/portForward/default/uid/web/x").is_err());
        assert!(parse(Path::new("/w"), "/portForward/../etc").is_err());
    }

    #[test]
    fn a_container_port_leads_to_where_its_process_listens() {
        let ports = BTreeMap::from([(8080, 40001)]);
        assert_eq!(local_port("default/web", Some(&ports), 8080), Ok(40001));
        assert_eq!(
            local_port("default/web", Some(&ports), 9999),
            Err(
                "pod default/web has no process listening on port 9999: its container declares \
                 ports 8080"
                    .into()
            )
        );
        assert!(
            local_port("default/web", None, 8080)
                .unwrap_err()
                .contains("not running")
        );
    }
}

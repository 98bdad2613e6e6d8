//! A TCP proxy that injects network faults between a client and a server, for scenario tests
//! and benchmarks.
//!
//! [`FaultProxy`] listens on `127.0.0.1:0` and forwards every connection to one target
//! address. It moves raw bytes, so TLS passes through untouched: a client that trusts the
//! target's certificate for `127.0.0.1` trusts it through the proxy too.
//!
//! The test drives it through methods that change one shared state; every live connection
//! follows a change at once (no polling, no sleeps in the control path):
//!
//! | method | existing connections | new connections |
//! |---|---|---|
//! | [`heal`](FaultProxy::heal) (the start) | forwarded | forwarded |
//! | [`delay`](FaultProxy::delay) | each chunk held that long | same |
//! | [`drop_new`](FaultProxy::drop_new) | forwarded | accepted and reset at once |
//! | [`blackhole`](FaultProxy::blackhole) | kept open, nothing moves | accepted, not forwarded |
//! | [`reset`](FaultProxy::reset) | aborted with RST | unchanged |
//! | [`partition`](FaultProxy::partition) | aborted with RST | accepted, not forwarded |
//!
//! A blackhole holds data rather than dropping it, as a silent network partition does while
//! TCP keeps retransmitting: what was sent during it arrives after [`heal`](FaultProxy::heal),
//! unless a reset ended the connection first. A chunk that was already being written when a
//! fault began is still delivered, like a packet already on the wire. A connection accepted
//! during a blackhole opens its connection to the target only once healed.
//!
//! [`stats`](FaultProxy::stats) counts connections and bytes each way.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// Size of the buffer each direction of a connection reads into (one forwarded chunk).
const CHUNK: usize = 16 * 1024;

/// The faults in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Faults {
    /// Added before each chunk is forwarded.
    delay: Duration,
    /// New connections are reset as soon as they are accepted.
    refuse_new: bool,
    /// Nothing is forwarded (and no connection to the target is opened).
    blackhole: bool,
    /// Bumped by every reset: connections opened under an older value are aborted.
    epoch: u64,
}

/// What the proxy has done since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Connections accepted and served (also those held by a blackhole).
    pub accepted: u64,
    /// Connections reset on arrival because new connections were refused.
    pub refused: u64,
    /// Live connections aborted with a reset.
    pub aborted: u64,
    /// Connections open now.
    pub live: usize,
    /// Bytes forwarded from clients to the target.
    pub bytes_to_target: u64,
    /// Bytes forwarded from the target to clients.
    pub bytes_to_client: u64,
}

/// State shared by the handle, the accept loop and the connections.
#[derive(Default)]
struct Shared {
    faults: watch::Sender<Faults>,
    /// Live connections: id → the reset epoch they were opened under.
    live: watch::Sender<BTreeMap<u64, u64>>,
    accepted: AtomicU64,
    refused: AtomicU64,
    aborted: AtomicU64,
    to_target: AtomicU64,
    to_client: AtomicU64,
}

/// A fault-injecting TCP proxy in front of one target address; stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    target: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy on `127.0.0.1:0` that forwards to `target`.
    pub async fn start(target: SocketAddr) -> io::Result<FaultProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let task = tokio::spawn(accept_loop(listener, target, shared.clone()));
        tracing::debug!(%addr, %target, "fault proxy started");
        Ok(FaultProxy {
            addr,
            target,
            shared,
            task,
        })
    }

    /// Starts a proxy in front of the server of `url` (`https://host:port`, as a hub's URL).
    pub async fn in_front_of(url: &str) -> io::Result<FaultProxy> {
        let invalid = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no host:port in {url:?}"),
            )
        };
        let authority = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .split('/')
            .next()
            .ok_or_else(invalid)?;
        let target = tokio::net::lookup_host(authority)
            .await?
            .next()
            .ok_or_else(invalid)?;
        FaultProxy::start(target).await
    }

    /// The address the proxy listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address it forwards to.
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// `https://` and the proxy's address: the URL to give a client in place of the target's.
    pub fn https_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Holds every chunk `latency` before forwarding it (zero: no added latency).
    pub fn delay(&self, latency: Duration) {
        self.change("delay", |f| f.delay = latency);
    }

    /// Refuses new connections (each is reset as soon as it is accepted); live ones go on.
    pub fn drop_new(&self) {
        self.change("drop new connections", |f| f.refuse_new = true);
    }

    /// A silent partition of what is open: live connections stay open but nothing moves in
    /// either direction, and new ones are accepted but not forwarded.
    pub fn blackhole(&self) {
        self.change("blackhole", |f| {
            f.blackhole = true;
            f.refuse_new = false;
        });
    }

    /// Aborts every live connection with a TCP reset; returns once all of them are closed.
    pub async fn reset(&self) {
        self.change("reset", |f| f.epoch += 1);
        self.wait_reset().await;
    }

    /// A partition: [`blackhole`](Self::blackhole) and [`reset`](Self::reset) in one step,
    /// so clients lose their connections and cannot open working new ones.
    pub async fn partition(&self) {
        self.change("partition", |f| {
            f.blackhole = true;
            f.refuse_new = false;
            f.epoch += 1;
        });
        self.wait_reset().await;
    }

    /// Back to plain forwarding: no delay, no blackhole, new connections accepted. Data held
    /// by a blackhole is delivered now.
    pub fn heal(&self) {
        self.change("heal", |f| {
            *f = Faults {
                epoch: f.epoch,
                ..Faults::default()
            };
        });
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        let count = |c: &AtomicU64| c.load(Ordering::SeqCst);
        ProxyStats {
            accepted: count(&self.shared.accepted),
            refused: count(&self.shared.refused),
            aborted: count(&self.shared.aborted),
            live: self.shared.live.borrow().len(),
            bytes_to_target: count(&self.shared.to_target),
            bytes_to_client: count(&self.shared.to_client),
        }
    }

    fn change(&self, what: &str, change: impl FnOnce(&mut Faults)) {
        self.shared.faults.send_modify(change);
        let faults = *self.shared.faults.borrow();
        tracing::info!(proxy = %self.addr, target = %self.target, ?faults, "fault proxy: {what}");
    }

    /// Waits until no connection opened before the latest reset is left.
    async fn wait_reset(&self) {
        let epoch = self.shared.faults.borrow().epoch;
        let mut live = self.shared.live.subscribe();
        // The sender lives in `self.shared`, so the channel cannot close while we wait.
        let _ = live.wait_for(|l| l.values().all(|e| *e >= epoch)).await;
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // Dropping the accept loop drops its JoinSet, which aborts every connection.
        self.task.abort();
    }
}

/// Accepts connections until aborted; each is served by a task of its own.
async fn accept_loop(listener: TcpListener, target: SocketAddr, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    let mut next_id = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let faults = *shared.faults.borrow();
                    if faults.refuse_new {
                        shared.refused.fetch_add(1, Ordering::SeqCst);
                        abort(stream);
                        continue;
                    }
                    shared.accepted.fetch_add(1, Ordering::SeqCst);
                    let id = next_id;
                    next_id += 1;
                    shared.live.send_modify(|l| {
                        l.insert(id, faults.epoch);
                    });
                    let live = Live { shared: shared.clone(), id };
                    connections.spawn(serve(stream, target, live, faults.epoch));
                }
                Err(err) => {
                    tracing::warn!(error = %err, "fault proxy: accepting a connection");
                    tokio::task::yield_now().await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A live connection's entry in [`Shared::live`], removed when the connection ends.
struct Live {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.shared.live.send_modify(|l| {
            l.remove(&self.id);
        });
    }
}

/// Serves one accepted connection until both directions end or a reset aborts it.
async fn serve(client: TcpStream, target: SocketAddr, live: Live, epoch: u64) {
    let shared = live.shared.clone();
    let mut flow = shared.faults.subscribe();
    let connect = async {
        flowing(&mut flow).await;
        TcpStream::connect(target).await
    };
    let upstream = tokio::select! {
        () = reset_after(shared.faults.subscribe(), epoch) => {
            shared.aborted.fetch_add(1, Ordering::SeqCst);
            abort(client);
            return;
        }
        upstream = connect => upstream,
    };
    let mut upstream = match upstream {
        Ok(upstream) => upstream,
        Err(err) => {
            tracing::warn!(error = %err, %target, "fault proxy: connecting to the target");
            abort(client);
            return;
        }
    };
    let mut client = client;
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let was_reset = {
        let (client_read, client_write) = client.split();
        let (target_read, target_write) = upstream.split();
        let forward = async {
            tokio::join!(
                pump(
                    client_read,
                    target_write,
                    &shared.to_target,
                    shared.faults.subscribe()
                ),
                pump(
                    target_read,
                    client_write,
                    &shared.to_client,
                    shared.faults.subscribe()
                ),
            )
        };
        tokio::select! {
            () = reset_after(shared.faults.subscribe(), epoch) => true,
            _ = forward => false,
        }
    };
    if was_reset {
        shared.aborted.fetch_add(1, Ordering::SeqCst);
        abort(client);
        abort(upstream);
    }
    drop(live);
}

/// Copies `from` to `to` chunk by chunk, honouring the delay and the blackhole, until `from`
/// ends (its end is passed on as a half-close) or a write fails.
async fn pump(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    bytes: &AtomicU64,
    mut faults: watch::Receiver<Faults>,
) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        flowing(&mut faults).await;
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let latency = faults.borrow().delay;
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        // What was read as a blackhole began is held until it ends.
        flowing(&mut faults).await;
        let Some(chunk) = buf.get(..n) else { break };
        if to.write_all(chunk).await.is_err() {
            break;
        }
        bytes.fetch_add(n as u64, Ordering::SeqCst);
    }
    let _ = to.shutdown().await;
}

/// Completes when no blackhole is in force (never, if the proxy is gone).
async fn flowing(faults: &mut watch::Receiver<Faults>) {
    if faults.wait_for(|f| !f.blackhole).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Completes when a reset after `epoch` was asked for (never, if the proxy is gone).
async fn reset_after(mut faults: watch::Receiver<Faults>, epoch: u64) {
    if faults.wait_for(|f| f.epoch != epoch).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Closes `stream` with a TCP reset instead of the orderly FIN.
fn abort(stream: TcpStream) {
    if let Err(err) = stream.set_zero_linger() {
        tracing::debug!(error = %err, "fault proxy: SO_LINGER 0");
    }
    drop(stream);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// An echo server counting the connections it accepted.
    struct Echo {
        addr: SocketAddr,
        connections: watch::Receiver<u64>,
        task: JoinHandle<()>,
    }

    impl Echo {
        async fn start() -> Echo {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (count, connections) = watch::channel(0u64);
            let task = tokio::spawn(async move {
                loop {
                    let Ok((mut stream, _)) = listener.accept().await else {
                        return;
                    };
                    count.send_modify(|c| *c += 1);
                    tokio::spawn(async move {
                        let (mut r, mut w) = stream.split();
                        let _ = tokio::io::copy(&mut r, &mut w).await;
                    });
                }
            });
            Echo {
                addr,
                connections,
                task,
            }
        }
    }

    impl Drop for Echo {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    /// How long a test waits for something that must happen.
    const MUST: Duration = Duration::from_secs(10);
    /// How long a test watches for something that must not happen.
    const MUST_NOT: Duration = Duration::from_millis(300);

    async fn echo_round(stream: &mut TcpStream, message: &[u8]) -> io::Result<Vec<u8>> {
        stream.write_all(message).await?;
        arrives(stream, message.len()).await
    }

    /// The next `n` bytes of `stream`, which must come.
    async fn arrives(stream: &mut TcpStream, n: usize) -> io::Result<Vec<u8>> {
        let mut back = vec![0u8; n];
        tokio::time::timeout(MUST, stream.read_exact(&mut back))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "nothing came"))??;
        Ok(back)
    }

    /// Sends `message` and checks that no answer comes for a while.
    async fn unanswered(stream: &mut TcpStream, message: &[u8]) {
        stream.write_all(message).await.unwrap();
        let mut back = vec![0u8; message.len()];
        let answer = tokio::time::timeout(MUST_NOT, stream.read_exact(&mut back)).await;
        assert!(answer.is_err(), "an answer came through: {answer:?}");
    }

    /// Reads until the connection ends; the error kind, or `None` for an orderly end.
    async fn end_of(stream: &mut TcpStream) -> Option<io::ErrorKind> {
        let mut buf = [0u8; 64];
        loop {
            match tokio::time::timeout(MUST, stream.read(&mut buf))
                .await
                .expect("the connection ends")
            {
                Ok(0) => return None,
                Ok(_) => {}
                Err(err) => return Some(err.kind()),
            }
        }
    }

    /// An echo server, a proxy in front of it and a connection through the proxy that has
    /// carried one echo.
    async fn echo_behind_proxy() -> (Echo, FaultProxy, TcpStream) {
        let echo = Echo::start().await;
        let proxy = FaultProxy::start(echo.addr).await.unwrap();
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(echo_round(&mut stream, b"x").await.unwrap(), b"x");
        (echo, proxy, stream)
    }

    async fn wait_live(proxy: &FaultProxy, n: usize) {
        let mut live = proxy.shared.live.subscribe();
        tokio::time::timeout(MUST, live.wait_for(|l| l.len() == n))
            .await
            .expect("live connections")
            .unwrap();
    }

    #[tokio::test]
    async fn forwards_both_ways_and_counts_bytes() {
        let echo = Echo::start().await;
        let proxy = FaultProxy::start(echo.addr).await.unwrap();
        let mut a = TcpStream::connect(proxy.addr()).await.unwrap();
        let mut b = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(echo_round(&mut a, b"hello").await.unwrap(), b"hello");
        assert_eq!(echo_round(&mut b, b"world!").await.unwrap(), b"world!");
        let big = vec![7u8; 3 * CHUNK + 5];
        assert_eq!(echo_round(&mut a, &big).await.unwrap(), big);
        let stats = proxy.stats();
        let sent = (5 + 6 + big.len()) as u64;
        assert_eq!(stats.accepted, 2);
        assert_eq!(stats.live, 2);
        assert_eq!(stats.bytes_to_target, sent);
        assert_eq!(stats.bytes_to_client, sent);
        // A client's half-close reaches the server, whose close comes back.
        a.shutdown().await.unwrap();
        assert_eq!(end_of(&mut a).await, None);
        wait_live(&proxy, 1).await;
    }

    #[tokio::test]
    async fn a_url_is_resolved_to_its_server() {
        let echo = Echo::start().await;
        let proxy = FaultProxy::in_front_of(&format!("https://{}", echo.addr))
            .await
            .unwrap();
        assert_eq!(proxy.target(), echo.addr);
        assert_eq!(proxy.https_url(), format!("https://{}", proxy.addr()));
        assert!(FaultProxy::in_front_of("https://").await.is_err());
    }

    #[tokio::test]
    async fn delay_holds_every_chunk() {
        let (_echo, proxy, mut a) = echo_behind_proxy().await;
        let latency = Duration::from_millis(150);
        proxy.delay(latency);
        let started = std::time::Instant::now();
        assert_eq!(echo_round(&mut a, b"slow").await.unwrap(), b"slow");
        // Once on the way there, once on the way back.
        assert!(started.elapsed() >= 2 * latency, "{:?}", started.elapsed());
        proxy.heal();
        assert_eq!(echo_round(&mut a, b"fast").await.unwrap(), b"fast");
    }

    #[tokio::test]
    async fn reset_aborts_live_connections_with_rst_and_keeps_accepting() {
        let (_echo, proxy, mut a) = echo_behind_proxy().await;
        proxy.reset().await;
        assert_eq!(proxy.stats().live, 0);
        assert_eq!(proxy.stats().aborted, 1);
        assert_eq!(end_of(&mut a).await, Some(io::ErrorKind::ConnectionReset));
        let mut b = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(echo_round(&mut b, b"again").await.unwrap(), b"again");
    }

    #[tokio::test]
    async fn drop_new_resets_new_connections_only() {
        let (echo, proxy, mut old) = echo_behind_proxy().await;
        proxy.drop_new();
        let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(end_of(&mut new).await, Some(io::ErrorKind::ConnectionReset));
        assert_eq!(proxy.stats().refused, 1);
        assert_eq!(echo_round(&mut old, b"still").await.unwrap(), b"still");
        proxy.heal();
        let mut healed = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(echo_round(&mut healed, b"ok").await.unwrap(), b"ok");
        assert_eq!(*echo.connections.borrow(), 2);
    }

    #[tokio::test]
    async fn blackhole_holds_everything_until_healed() {
        let (echo, proxy, mut old) = echo_behind_proxy().await;
        let mut connections = echo.connections.clone();
        proxy.blackhole();
        // Live connections stay open but carry nothing.
        unanswered(&mut old, b"held").await;
        // New ones are accepted but do not reach the target.
        let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
        new.write_all(b"later").await.unwrap();
        wait_live(&proxy, 2).await;
        assert_eq!(proxy.stats().accepted, 2);
        assert_eq!(*connections.borrow_and_update(), 1);
        assert_eq!(proxy.stats().bytes_to_target, 1);
        proxy.heal();
        // What was held arrives.
        assert_eq!(arrives(&mut old, 4).await.unwrap(), b"held");
        assert_eq!(arrives(&mut new, 5).await.unwrap(), b"later");
        assert_eq!(*connections.borrow(), 2);
    }

    #[tokio::test]
    async fn partition_resets_what_is_open_and_holds_what_comes() {
        let (echo, proxy, mut old) = echo_behind_proxy().await;
        proxy.partition().await;
        assert_eq!(end_of(&mut old).await, Some(io::ErrorKind::ConnectionReset));
        let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
        unanswered(&mut new, b"q").await;
        // A reset during the partition also ends connections that never reached the target.
        proxy.reset().await;
        assert_eq!(end_of(&mut new).await, Some(io::ErrorKind::ConnectionReset));
        assert_eq!(*echo.connections.borrow(), 1);
        proxy.heal();
        let mut healed = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(echo_round(&mut healed, b"back").await.unwrap(), b"back");
        assert_eq!(proxy.stats().aborted, 2);
    }
}

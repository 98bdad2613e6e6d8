//! The tunnels the proxy server holds: one HTTP/2 connection per cluster, opened by the
//! cluster's agent, over which the server sends requests to the cluster. A newer tunnel from
//! the same cluster replaces the older one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hyper::client::conn::http2::SendRequest;
use tokio::sync::{Notify, watch};

use crate::status::ProxyBody;

/// One open tunnel.
#[derive(Clone, Debug)]
pub struct Tunnel {
    /// Which connection this is (increases with every tunnel the server accepts).
    pub id: u64,
    /// The agent's name (from its certificate).
    pub agent: String,
    /// When it was opened.
    pub since: jiff::Timestamp,
    sender: SendRequest<ProxyBody>,
    cut: Arc<Notify>,
}

impl Tunnel {
    /// The handle to send requests through.
    pub fn sender(&self) -> SendRequest<ProxyBody> {
        self.sender.clone()
    }

    /// Resolves once the tunnel is to be closed by the server ([`Tunnels::cut`]).
    pub fn cut_signal(&self) -> Arc<Notify> {
        self.cut.clone()
    }
}

/// A tunnel as `/tunnels` and `ocm proxy health` show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TunnelInfo {
    /// The managed cluster.
    pub cluster: String,
    /// The agent that holds it.
    pub agent: String,
    /// RFC 3339 time it was opened.
    pub connected_since: String,
}

#[derive(Default)]
struct State {
    next_id: u64,
    open: BTreeMap<String, Tunnel>,
}

/// The registry of open tunnels, shared by the server's connections.
#[derive(Clone)]
pub struct Tunnels {
    state: Arc<Mutex<State>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for Tunnels {
    fn default() -> Self {
        Tunnels {
            state: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
        }
    }
}

impl std::fmt::Debug for Tunnels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tunnels")
            .field("open", &self.list().len())
            .finish()
    }
}

impl Tunnels {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn notify(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Registers the tunnel of `cluster`; returns its id (for [`Tunnels::remove`]).
    pub fn insert(
        &self,
        cluster: &str,
        agent: &str,
        sender: SendRequest<ProxyBody>,
        cut: Arc<Notify>,
    ) -> u64 {
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.open.insert(
                cluster.to_owned(),
                Tunnel {
                    id,
                    agent: agent.to_owned(),
                    since: jiff::Timestamp::now(),
                    sender,
                    cut,
                },
            );
            id
        };
        self.notify();
        id
    }

    /// Forgets tunnel `id` of `cluster` (a newer one stays).
    pub fn remove(&self, cluster: &str, id: u64) {
        let removed = {
            let mut state = self.lock();
            if state.open.get(cluster).is_some_and(|t| t.id == id) {
                state.open.remove(cluster);
                true
            } else {
                false
            }
        };
        if removed {
            self.notify();
        }
    }

    /// Closes the tunnel of `cluster` from the server side (requests in flight fail); the agent
    /// opens a new one. False when there is none.
    pub fn cut(&self, cluster: &str) -> bool {
        match self.get(cluster) {
            Some(tunnel) => {
                tunnel.cut.notify_one();
                true
            }
            None => false,
        }
    }

    /// The tunnel of `cluster`, if one is open.
    pub fn get(&self, cluster: &str) -> Option<Tunnel> {
        self.lock().open.get(cluster).cloned()
    }

    /// All open tunnels.
    pub fn list(&self) -> Vec<TunnelInfo> {
        self.lock()
            .open
            .iter()
            .map(|(cluster, t)| TunnelInfo {
                cluster: cluster.clone(),
                agent: t.agent.clone(),
                connected_since: t.since.to_string(),
            })
            .collect()
    }

    /// Waits until `done` holds for the tunnel of `cluster` (or its absence).
    pub async fn wait_for(&self, cluster: &str, done: impl Fn(Option<&Tunnel>) -> bool) {
        let mut changes = self.changed.subscribe();
        loop {
            if done(self.lock().open.get(cluster)) {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}

/// A switch that breaks a tunnel's connection from the server side: once thrown, every read
/// and write of the [`Cuttable`] stream fails, so the HTTP/2 connection over it ends at once
/// and every request in flight (watches included) fails rather than hanging.
#[derive(Debug, Default)]
pub struct CutSwitch {
    thrown: std::sync::atomic::AtomicBool,
    reader: futures::task::AtomicWaker,
    writer: futures::task::AtomicWaker,
}

impl CutSwitch {
    /// Breaks the connection.
    pub fn throw(&self) {
        self.thrown.store(true, std::sync::atomic::Ordering::SeqCst);
        self.reader.wake();
        self.writer.wake();
    }

    fn is_thrown(&self) -> bool {
        self.thrown.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn cut_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "tunnel cut")
}

/// A stream that fails once its [`CutSwitch`] is thrown.
#[derive(Debug)]
pub struct Cuttable<T> {
    inner: T,
    switch: Arc<CutSwitch>,
}

impl<T> Cuttable<T> {
    /// Wraps `inner`, broken by `switch`.
    pub fn new(inner: T, switch: Arc<CutSwitch>) -> Cuttable<T> {
        Cuttable { inner, switch }
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for Cuttable<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<Result<(), std::io::Error>> {
        self.switch.reader.register(cx.waker());
        if self.switch.is_thrown() {
            return std::task::Poll::Ready(Err(cut_error()));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for Cuttable<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<Result<usize, std::io::Error>> {
        self.switch.writer.register(cx.waker());
        if self.switch.is_thrown() {
            return std::task::Poll::Ready(Err(cut_error()));
        }
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::io::Error>> {
        if self.switch.is_thrown() {
            return std::task::Poll::Ready(Err(cut_error()));
        }
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::io::Error>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<Result<usize, std::io::Error>> {
        self.switch.writer.register(cx.waker());
        if self.switch.is_thrown() {
            return std::task::Poll::Ready(Err(cut_error()));
        }
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

//! Live updates as Server-Sent Events: a page subscribes to the kinds it shows
//! (`/events?kinds=clusters,leases`) and is told which of them changed; it then re-fetches its
//! live part. Changes are gathered for [`GATHER`] and announced at most once per
//! [`MIN_INTERVAL`], so a busy fleet costs each page at most two re-renders a second, and every
//! tab shares the process's one watch per kind.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use ocm_runtime::shutdown::Shutdown;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;

use crate::cache::Kind;

/// How long changes are gathered before they are announced.
pub const GATHER: Duration = Duration::from_millis(100);
/// The shortest time between two announcements to one page.
pub const MIN_INTERVAL: Duration = Duration::from_millis(500);
/// How often an idle stream sends a comment, so dead connections are noticed.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// When changes first seen at `first` may be announced, the last announcement having been
/// at `last`.
pub fn announce_at(first: Instant, last: Option<Instant>) -> Instant {
    let gathered = first + GATHER;
    match last {
        Some(last) => gathered.max(last + MIN_INTERVAL),
        None => gathered,
    }
}

/// The event announcing `kinds`.
pub fn change_event(kinds: &BTreeSet<Kind>) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    format!("event: change\ndata: {}\n\n", names.join(","))
}

/// The kinds named in `text` (`clusters,leases`); unknown names are ignored.
pub fn parse_kinds(text: &str) -> BTreeSet<Kind> {
    text.split(',').filter_map(Kind::parse).collect()
}

struct State {
    changes: broadcast::Receiver<Kind>,
    kinds: BTreeSet<Kind>,
    shutdown: Shutdown,
    started: bool,
    last: Option<Instant>,
}

/// The event stream of one page: a `hello` event first (a page that reconnects re-renders, as
/// it may have missed changes), then `change` events naming the changed kinds among `kinds`.
pub fn events(
    changes: broadcast::Receiver<Kind>,
    kinds: BTreeSet<Kind>,
    shutdown: Shutdown,
) -> impl Stream<Item = Bytes> + Send + 'static {
    let state = State {
        changes,
        kinds,
        shutdown,
        started: false,
        last: None,
    };
    futures::stream::unfold(state, |mut state| async move {
        if !state.started {
            state.started = true;
            return Some((
                Bytes::from_static(b"retry: 1000\nevent: hello\ndata: hello\n\n"),
                state,
            ));
        }
        let mut changed = BTreeSet::new();
        // Wait for a change of interest (or send a keep-alive).
        let first = loop {
            let received = tokio::select! {
                _ = state.shutdown.cancelled() => return None,
                _ = tokio::time::sleep(KEEPALIVE) => {
                    return Some((Bytes::from_static(b": keep-alive\n\n"), state));
                }
                received = state.changes.recv() => received,
            };
            match received {
                Ok(kind) if state.kinds.contains(&kind) => {
                    changed.insert(kind);
                    break Instant::now();
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {
                    changed.extend(state.kinds.iter().copied());
                    break Instant::now();
                }
                Err(RecvError::Closed) => return None,
            }
        };
        // Gather more until it may be announced.
        let deadline = announce_at(first, state.last);
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => return None,
                _ = tokio::time::sleep_until(deadline) => break,
                received = state.changes.recv() => match received {
                    Ok(kind) if state.kinds.contains(&kind) => { changed.insert(kind); }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => changed.extend(state.kinds.iter().copied()),
                    Err(RecvError::Closed) => break,
                },
            }
        }
        state.last = Some(Instant::now());
        Some((Bytes::from(change_event(&changed)), state))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use futures::StreamExt;

    #[test]
    fn announcements_are_gathered_and_spaced() {
        let t = Instant::now();
        assert_eq!(announce_at(t, None), t + GATHER);
        assert_eq!(
            announce_at(t, Some(t - Duration::from_millis(100))),
            t - Duration::from_millis(100) + MIN_INTERVAL
        );
        assert_eq!(announce_at(t, Some(t - Duration::from_secs(5))), t + GATHER);
    }

    #[test]
    fn events_name_kinds() {
        let kinds = parse_kinds("leases,clusters,nonsense");
        assert_eq!(kinds.len(), 2);
        assert_eq!(
            change_event(&kinds),
            "event: change\ndata: clusters,leases\n\n"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_pages_kinds_are_announced_together() {
        let (tx, rx) = broadcast::channel(16);
        let shutdown = Shutdown::new();
        let mut events = Box::pin(events(
            rx,
            parse_kinds("clusters,manifestworks"),
            shutdown.clone(),
        ));
        assert!(String::from_utf8_lossy(&events.next().await.unwrap()).contains("event: hello"));
        tx.send(Kind::Placements).unwrap();
        tx.send(Kind::Clusters).unwrap();
        tx.send(Kind::Works).unwrap();
        tx.send(Kind::Clusters).unwrap();
        assert_eq!(
            events.next().await.unwrap(),
            "event: change\ndata: clusters,manifestworks\n\n"
        );
        shutdown.cancel();
        assert!(events.next().await.is_none());
    }
}

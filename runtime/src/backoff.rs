//! Backoff for watch streams that grows while a watch keeps failing.
//!
//! kube-runtime's `default_backoff()` resets its delay on every `Ok` item, and a watcher yields
//! `Ok(Event::Init)` before each attempt to list. A watch whose list keeps failing — an agent
//! whose permissions the hub has not granted yet answers `403` — therefore retries about once a
//! second forever, and ten thousand such agents keep a hub busy answering them.
//! [`WatchBackoffExt::backoff_on_errors`] keeps kube's delays (0.8 s doubling to 30 s, with
//! jitter, forgotten after two quiet minutes) but resets them only when the watch makes
//! progress: a listed object, the end of a list, or an event.

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, DefaultBackoff, Event};

/// Adds [`backoff_on_errors`](WatchBackoffExt::backoff_on_errors) to watcher streams.
pub trait WatchBackoffExt<K>: Stream<Item = Result<Event<K>, watcher::Error>> {
    /// Waits after each error before polling the watch again, with kube's default delays,
    /// reset only by progress (not by the `Init` marker that starts every relist).
    fn backoff_on_errors(self) -> BoxedWatch<K>
    where
        Self: Sized + Send + 'static,
        K: Send + 'static,
    {
        backoff_with(self, DefaultBackoff::default())
    }
}

impl<K, S> WatchBackoffExt<K> for S where S: Stream<Item = Result<Event<K>, watcher::Error>> {}

/// A watch stream with its backoff, boxed so callers can name and pin it.
pub type BoxedWatch<K> =
    Pin<Box<dyn Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static>>;

/// [`WatchBackoffExt::backoff_on_errors`] with a given backoff policy.
pub fn backoff_with<K, S, B>(stream: S, backoff: B) -> BoxedWatch<K>
where
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    B: Backoff + 'static,
    K: Send + 'static,
{
    let state = (Box::pin(stream), backoff, None::<Duration>);
    futures::stream::unfold(state, |(mut stream, mut backoff, wait)| async move {
        if let Some(delay) = wait {
            tokio::time::sleep(delay).await;
        }
        let item = stream.next().await?;
        let wait = match &item {
            Err(_) => backoff.next(),
            Ok(Event::Init) => None,
            Ok(_) => {
                backoff.reset();
                None
            }
        };
        Some((item, (stream, backoff, wait)))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    /// A backoff of 1 s, 2 s, 4 s, … without jitter, so the test can read the delays.
    #[derive(Default)]
    struct Doubling(u32);

    impl Iterator for Doubling {
        type Item = Duration;
        fn next(&mut self) -> Option<Duration> {
            self.0 += 1;
            Some(Duration::from_secs(1 << (self.0 - 1)))
        }
    }

    impl Backoff for Doubling {
        fn reset(&mut self) {
            self.0 = 0;
        }
    }

    fn failed() -> Result<Event<String>, watcher::Error> {
        Err(watcher::Error::NoResourceVersion)
    }

    /// Seconds of (paused) time at which each item arrived.
    async fn arrivals(items: Vec<Result<Event<String>, watcher::Error>>) -> Vec<u64> {
        let start = Instant::now();
        backoff_with(futures::stream::iter(items), Doubling::default())
            .map(|_| start.elapsed().as_secs())
            .collect()
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn a_relist_marker_does_not_reset_the_delay() {
        let items = vec![
            Ok(Event::Init),
            failed(),
            Ok(Event::Init),
            failed(),
            Ok(Event::Init),
            failed(),
            Ok(Event::Init),
        ];
        // Delays 1 s, 2 s, 4 s after the three failures: the Init markers change nothing.
        assert_eq!(arrivals(items).await, vec![0, 0, 1, 1, 3, 3, 7]);
    }

    #[tokio::test(start_paused = true)]
    async fn progress_resets_the_delay() {
        let items = vec![
            failed(),
            failed(),
            Ok(Event::InitDone),
            failed(),
            Ok(Event::Apply("object".to_owned())),
        ];
        // 1 s, then 2 s; the finished list resets, so the next failure waits 1 s again.
        assert_eq!(arrivals(items).await, vec![0, 1, 3, 3, 4]);
    }
}

//! Controllers whose caches leave out `metadata.managedFields`.
//!
//! A controller keeps a decoded copy of every object it watches. Managed fields are the
//! largest part of an object many writers touch (a ManagedCluster has entries from the agent,
//! the hub's acceptance, taint, cluster-set and lease controllers), no reconciler reads them,
//! and at fleet scale the hub holds one copy per controller per cluster — so they are dropped
//! as events arrive, before anything is cached (as informer transforms do in client-go).

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use crate::backoff::WatchBackoffExt;
use futures::{Stream, StreamExt};
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, reflector};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

/// Drops an object's managed fields.
pub fn strip_managed_fields<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Like `Controller::new(api, config)`, with managed fields left out of its cache and the
/// watcher's default backoff.
pub fn controller<K>(api: Api<K>, config: watcher::Config) -> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(api, config)
            .backoff_on_errors()
            .modify(strip_managed_fields),
    )
    .applied_objects();
    Controller::for_stream(stream, reader)
}

/// A store of every `K` that `api` and `config` select (managed fields left out), kept by a
/// task that wakes `changed` on every event until `shutdown`; returns the store and the task.
/// For loops that recompute everything from several caches when anything changed.
pub fn notifying_store<K>(
    api: Api<K>,
    config: watcher::Config,
    changed: Arc<tokio::sync::Notify>,
    shutdown: crate::shutdown::Shutdown,
) -> (reflector::Store<K>, tokio::task::JoinHandle<()>)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    let (store, writer) = reflector::store();
    let feed = tokio::spawn(async move {
        reflector(
            writer,
            watcher(api, config)
                .backoff_on_errors()
                .modify(strip_managed_fields),
        )
        .take_until(shutdown.cancelled())
        .for_each(|_| {
            changed.notify_one();
            futures::future::ready(())
        })
        .await;
    });
    (store, feed)
}

/// A change of an object in a [`SharedCache`], as its subscribers receive it.
#[derive(Debug)]
pub enum Change<K> {
    /// The object was added or changed (or listed again after a watch restart).
    Applied(Arc<K>),
    /// The object was deleted.
    Deleted(Arc<K>),
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Change::Applied(o) => Change::Applied(o.clone()),
            Change::Deleted(o) => Change::Deleted(o.clone()),
        }
    }
}

/// A subscriber's end: a queue that never drops a change and never holds the cache up.
struct Subscriber<K> {
    changes: mpsc::UnboundedSender<Change<K>>,
    /// Subscribed while a list was in progress: the objects of that list have not all been
    /// passed on yet, so every object is sent once the list is complete.
    needs_listed: bool,
}

struct SharedState<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    writer: reflector::store::Writer<K>,
    listing: bool,
    subscribers: Vec<Subscriber<K>>,
}

/// One watch and one decoded copy of every object of a kind, shared by several controllers
/// of a process (managed fields left out).
///
/// Each controller of a kind used to hold its own watch and its own copy of every object; a
/// hub with ten ManagedCluster controllers held ten copies of every cluster. Subscribers get
/// every object already cached when they subscribe and then every change, in order, through
/// their own unbounded queue, so one slow controller never holds the others up and a late
/// subscriber misses nothing.
pub struct SharedCache<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    reader: reflector::Store<K>,
    state: Arc<Mutex<SharedState<K>>>,
}

impl<K: Resource + Clone + 'static> Clone for SharedCache<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    fn clone(&self) -> Self {
        SharedCache {
            reader: self.reader.clone(),
            state: self.state.clone(),
        }
    }
}

impl<K> Default for SharedCache<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K> SharedCache<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Unpin,
{
    /// An empty cache; [`SharedCache::run`] fills it.
    pub fn new() -> Self {
        let (reader, writer) = reflector::store();
        SharedCache {
            reader,
            state: Arc::new(Mutex::new(SharedState {
                writer,
                listing: false,
                subscribers: Vec::new(),
            })),
        }
    }

    /// The cached objects.
    pub fn store(&self) -> reflector::Store<K> {
        self.reader.clone()
    }

    /// Every object now cached, then every change.
    pub fn subscribe(&self) -> impl Stream<Item = Change<K>> + Send + 'static {
        let (changes, mut received) = mpsc::unbounded_channel();
        let mut state = lock(&self.state);
        for object in self.reader.state() {
            let _ = changes.send(Change::Applied(object));
        }
        let needs_listed = state.listing;
        state.subscribers.push(Subscriber {
            changes,
            needs_listed,
        });
        futures::stream::poll_fn(move |cx| received.poll_recv(cx))
    }

    /// The objects added or changed (deletions left out), for a controller's trigger.
    pub fn applied(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        self.subscribe()
            .map(|change| match change {
                Change::Applied(object) => Some(object),
                Change::Deleted(_) => None,
            })
            .filter_map(futures::future::ready)
    }

    /// The objects added, changed or deleted.
    pub fn touched(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        self.subscribe().map(|change| match change {
            Change::Applied(object) | Change::Deleted(object) => object,
        })
    }

    /// A controller of this kind fed by the cache, as [`controller`] makes one with its own
    /// watch.
    pub fn controller(&self) -> Controller<K> {
        Controller::for_shared_stream(self.applied(), self.store())
    }

    /// Watches `api` and keeps the cache and its subscribers up to date until the watch ends
    /// (it only ends when the stream does; errors are retried with the watcher's backoff).
    pub async fn run(&self, api: Api<K>, config: watcher::Config) {
        let mut events = watcher(api, config)
            .backoff_on_errors()
            .modify(strip_managed_fields);
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => self.apply(&event),
                Err(err) => {
                    tracing::debug!(%err, kind = %K::kind(&Default::default()), "shared cache watch failed; retrying")
                }
            }
        }
    }

    /// Applies one watch event to the cache and passes it on.
    fn apply(&self, event: &watcher::Event<K>) {
        let mut state = lock(&self.state);
        state.writer.apply_watcher_event(event);
        let change = match event {
            watcher::Event::Init => {
                state.listing = true;
                None
            }
            watcher::Event::InitApply(object) => Some(Change::Applied(Arc::new(object.clone()))),
            watcher::Event::InitDone => {
                state.listing = false;
                let listed = self.reader.state();
                for subscriber in state.subscribers.iter_mut().filter(|s| s.needs_listed) {
                    subscriber.needs_listed = false;
                    for object in &listed {
                        let _ = subscriber.changes.send(Change::Applied(object.clone()));
                    }
                }
                None
            }
            watcher::Event::Apply(object) => Some(Change::Applied(
                self.reader
                    .get(&reflector::ObjectRef::from_obj(object))
                    .unwrap_or_else(|| Arc::new(object.clone())),
            )),
            watcher::Event::Delete(object) => Some(Change::Deleted(Arc::new(object.clone()))),
        };
        if let Some(change) = change {
            state
                .subscribers
                .retain(|s| s.changes.send(change.clone()).is_ok());
        }
    }
}

/// Locks the shared state; a panic while it was held (none of its code panics) leaves it
/// usable.
fn lock<K: Resource + Clone + 'static>(
    state: &Mutex<SharedState<K>>,
) -> std::sync::MutexGuard<'_, SharedState<K>>
where
    K::DynamicType: Eq + Hash + Clone,
{
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn map(name: &str, value: &str) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.name = Some(name.to_owned());
        object.metadata.namespace = Some("ns".to_owned());
        object.data = Some([("v".to_owned(), value.to_owned())].into());
        object
    }

    /// What `changes` holds now, as "+name=value" / "-name".
    fn drain(changes: &mut (impl Stream<Item = Change<ConfigMap>> + Unpin)) -> Vec<String> {
        let mut seen = Vec::new();
        while let Some(Some(change)) = changes.next().now_or_never() {
            seen.push(match change {
                Change::Applied(o) => format!(
                    "+{}={}",
                    o.metadata.name.as_deref().unwrap_or(""),
                    o.data
                        .as_ref()
                        .and_then(|d| d.get("v"))
                        .map_or("", String::as_str)
                ),
                Change::Deleted(o) => format!("-{}", o.metadata.name.as_deref().unwrap_or("")),
            });
        }
        seen.sort();
        seen
    }

    fn list(cache: &SharedCache<ConfigMap>, objects: &[ConfigMap]) {
        cache.apply(&watcher::Event::Init);
        for object in objects {
            cache.apply(&watcher::Event::InitApply(object.clone()));
        }
        cache.apply(&watcher::Event::InitDone);
    }

    #[test]
    fn every_subscriber_sees_every_change_once_from_one_copy() {
        let cache = SharedCache::<ConfigMap>::new();
        let mut early = Box::pin(cache.subscribe());
        list(&cache, &[map("a", "1"), map("b", "1")]);
        assert_eq!(drain(&mut early), ["+a=1", "+b=1"]);
        assert_eq!(cache.store().len(), 2);

        // A later subscriber starts from what is cached.
        let mut late = Box::pin(cache.subscribe());
        assert_eq!(drain(&mut late), ["+a=1", "+b=1"]);

        cache.apply(&watcher::Event::Apply(map("a", "2")));
        cache.apply(&watcher::Event::Delete(map("b", "1")));
        assert_eq!(drain(&mut early), ["+a=2", "-b"]);
        assert_eq!(drain(&mut late), ["+a=2", "-b"]);

        // A change passed on is the cache's own copy, not another one.
        let mut applied = Box::pin(cache.applied());
        assert!(applied.next().now_or_never().flatten().is_some()); // "a" as cached
        cache.apply(&watcher::Event::Apply(map("a", "3")));
        let passed_on = applied.next().now_or_never().flatten();
        let stored = cache.store().state();
        assert_eq!(stored.len(), 1);
        assert!(passed_on.is_some_and(|o| Arc::ptr_eq(&o, &stored[0])));
    }

    #[test]
    fn a_subscriber_joining_during_a_list_gets_the_whole_list() {
        let cache = SharedCache::<ConfigMap>::new();
        cache.apply(&watcher::Event::Init);
        cache.apply(&watcher::Event::InitApply(map("a", "1")));
        let mut joined = Box::pin(cache.subscribe());
        cache.apply(&watcher::Event::InitApply(map("b", "1")));
        cache.apply(&watcher::Event::InitDone);
        let seen = drain(&mut joined);
        // "b" as listed, then the complete list: "a" is not missed.
        assert!(seen.contains(&"+a=1".to_owned()), "{seen:?}");
        assert!(seen.contains(&"+b=1".to_owned()), "{seen:?}");
    }

    #[test]
    fn a_dropped_subscriber_is_forgotten() {
        let cache = SharedCache::<ConfigMap>::new();
        let gone = cache.subscribe();
        drop(gone);
        let mut kept = Box::pin(cache.touched());
        cache.apply(&watcher::Event::Apply(map("a", "1")));
        assert!(kept.next().now_or_never().flatten().is_some());
        assert_eq!(lock(&cache.state).subscribers.len(), 1);
    }
}

//! The watches of the addon install controller: each keeps a cache of one kind and turns every
//! event into what it changes for the next pass ([`crate::install_changes`]), gathered in one
//! [`Pending`] that the controller takes at the start of each pass.

use std::fmt::Debug;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::cache::strip_managed_fields;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;

use crate::install_changes::{AddonIndex, Dirty};

/// What the watches gathered since the last pass.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// What the next pass looks at.
    pub(crate) dirty: Dirty,
    /// The ManagedClusterAddOns by addon name, kept by their watch.
    pub(crate) index: AddonIndex,
}

/// The [`Pending`] work the watches add to and the controller takes, and the wake-up of the
/// controller.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pending: Mutex<Pending>,
    /// Notified when something became dirty.
    pub(crate) changed: tokio::sync::Notify,
    /// Notified on every event, whether it changed anything or not: a write that failed on a
    /// conflict is retried once the newer object arrived, whatever changed in it.
    pub(crate) seen: tokio::sync::Notify,
}

impl Changes {
    /// The pending work, locked (never across an await).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The watches of one controller: its client, the [`Changes`] they add to, and when they
/// stop.
pub(crate) struct Watches<'a> {
    pub(crate) client: &'a kube::Client,
    pub(crate) changes: &'a Arc<Changes>,
    pub(crate) shutdown: &'a Shutdown,
}

impl Watches<'_> {
    /// [`watch`] of every `K`, for a kind that keeps no index.
    pub(crate) fn all<K, F>(&self, what: F) -> (Store<K>, tokio::task::JoinHandle<()>)
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        F: FnMut(&mut Pending, Option<&K>, Option<&K>) -> Dirty + Send + 'static,
    {
        self.watch(watcher::Config::default(), |_, _| {}, what)
    }

    /// [`watch`] with this controller's client, changes and shutdown.
    pub(crate) fn watch<K, F>(
        &self,
        config: watcher::Config,
        relisted: fn(&mut Pending, &Store<K>),
        what: F,
    ) -> (Store<K>, tokio::task::JoinHandle<()>)
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        F: FnMut(&mut Pending, Option<&K>, Option<&K>) -> Dirty + Send + 'static,
    {
        watch(
            self.client,
            config,
            self.changes,
            self.shutdown,
            relisted,
            what,
        )
    }
}

/// A cache of every `K` that `config` selects in all namespaces (managed fields left out),
/// kept by a task until `shutdown`: each event is applied to the cache, then `what` says what
/// an object added (old None), changed or deleted (new None) changes — with the pending work
/// locked, so that the ManagedClusterAddOn index and the cache move together — and the
/// controller is woken when that is anything. When the watch listed every object again (at
/// its start, or after it was lost) `relisted` is told and everything is dirty: objects
/// deleted meanwhile left the cache without an event.
fn watch<K, F>(
    client: &kube::Client,
    config: watcher::Config,
    changes: &Arc<Changes>,
    shutdown: &Shutdown,
    relisted: fn(&mut Pending, &Store<K>),
    mut what: F,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    F: FnMut(&mut Pending, Option<&K>, Option<&K>) -> Dirty + Send + 'static,
{
    let api = Api::<K>::all(client.clone());
    let (changes, shutdown) = (changes.clone(), shutdown.clone());
    let (store, mut writer) = reflector::store();
    let reader = store.clone();
    let task = tokio::spawn(async move {
        let mut events = watcher(api, config)
            .backoff_on_errors()
            .modify(strip_managed_fields);
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => break,
                event = events.next() => event,
            };
            let event = match event {
                Some(Ok(event)) => event,
                Some(Err(err)) => {
                    tracing::debug!(%err, "addon install controller watch failed; retrying");
                    continue;
                }
                None => break,
            };
            let woke = {
                let mut pending = changes.lock();
                let old = match &event {
                    watcher::Event::Apply(o) | watcher::Event::Delete(o) => {
                        reader.get(&ObjectRef::from_obj(o))
                    }
                    _ => None,
                };
                writer.apply_watcher_event(&event);
                let dirty = match &event {
                    watcher::Event::Apply(new) => what(&mut pending, old.as_deref(), Some(new)),
                    watcher::Event::Delete(gone) => {
                        what(&mut pending, Some(old.as_deref().unwrap_or(gone)), None)
                    }
                    watcher::Event::InitDone => {
                        relisted(&mut pending, &reader);
                        Dirty::everything()
                    }
                    watcher::Event::Init | watcher::Event::InitApply(_) => continue,
                };
                let woke = !dirty.is_empty();
                pending.dirty.merge(dirty);
                woke
            };
            if woke {
                changes.changed.notify_one();
            }
            changes.seen.notify_one();
        }
    });
    (store, task)
}

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

/// One event of a watch as the controller sees it.
pub(crate) enum Seen<'a, K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    /// An object added (`old` None), changed, or deleted (`new` None).
    Changed {
        /// As cached before the event.
        old: Option<&'a K>,
        /// As the event has it.
        new: Option<&'a K>,
    },
    /// The watch listed every object again (at its start, or after it was lost): objects
    /// deleted meanwhile are gone from `store` without an event of their own.
    Relisted(&'a Store<K>),
}

/// A cache of every `K` that `config` selects in all namespaces (managed fields left out),
/// kept by a task until `shutdown`: each event is applied to the cache, then `what` says what
/// it changes (with the pending work locked, so that the ManagedClusterAddOn index and the
/// cache move together) and the controller is woken when that is anything.
pub(crate) fn watch<K, F>(
    client: &kube::Client,
    config: watcher::Config,
    changes: &Arc<Changes>,
    shutdown: &Shutdown,
    mut what: F,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    F: FnMut(&mut Pending, Seen<'_, K>) -> Dirty + Send + 'static,
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
                let seen = match &event {
                    watcher::Event::Apply(new) => Seen::Changed {
                        old: old.as_deref(),
                        new: Some(new),
                    },
                    watcher::Event::Delete(gone) => Seen::Changed {
                        old: Some(old.as_deref().unwrap_or(gone)),
                        new: None,
                    },
                    watcher::Event::InitDone => Seen::Relisted(&reader),
                    watcher::Event::Init | watcher::Event::InitApply(_) => continue,
                };
                let dirty = what(&mut pending, seen);
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

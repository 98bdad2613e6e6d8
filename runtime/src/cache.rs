//! Controllers whose caches leave out `metadata.managedFields`.
//!
//! A controller keeps a decoded copy of every object it watches. Managed fields are the
//! largest part of an object many writers touch (a ManagedCluster has entries from the agent,
//! the hub's acceptance, taint, cluster-set and lease controllers), no reconciler reads them,
//! and at fleet scale the hub holds one copy per controller per cluster — so they are dropped
//! as events arrive, before anything is cached (as informer transforms do in client-go).

use std::fmt::Debug;
use std::hash::Hash;

use crate::backoff::WatchBackoffExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, reflector};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

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

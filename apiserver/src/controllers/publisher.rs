//! Keeps the [`published`](super::published) objects in every active namespace of every logical
//! cluster: made when a namespace appears (and, for the system namespaces, when the cluster is
//! created), made again when deleted, put right when changed. A namespace that is terminating
//! is left alone, so namespace deletion still empties it.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::published::{Published, Settings};
use super::system_ctx;
use crate::meta;
use crate::ops::{Managed, Target};
use crate::state::Inner;
use ocm_apiserver_status::ApiError;
use ocm_apiserver_storage::{Bucket, Event, EventKind, ObjectKey};

const NS_RESOURCE: &str = "/namespaces";

/// Whether a namespace object is active (not being deleted).
fn active(namespace: &Value) -> bool {
    !meta::is_deleting(namespace)
        && namespace.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating")
}

/// Whether a failed create or update may be forgotten: the namespace or the object went
/// away, someone else made it, or the namespace started terminating.
fn settled(err: &ApiError) -> bool {
    matches!(err.code, 404 | 409)
        || err
            .details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
}

/// Makes or repairs one published object in `namespace`. Returns whether it is done.
async fn ensure(
    inner: &Arc<Inner>,
    cluster: &str,
    namespace: &str,
    item: Published,
    settings: &Settings,
) -> bool {
    let bucket = Bucket::new(cluster, item.resource());
    let Some(mut ctx) = system_ctx(inner, &bucket, item.manager()) else {
        return true;
    };
    let key = ObjectKey::new(bucket, namespace, item.name());
    let result = match inner.store.get(&key) {
        None => ctx
            .create(namespace, item.desired(settings), Managed::RecordUpdate)
            .await
            .map(|_| ()),
        Some(stored) => {
            let needs_repair = serde_json::from_slice::<Value>(&stored.value)
                .ok()
                .and_then(|current| item.repair(&current, settings))
                .is_some();
            if !needs_repair {
                return true;
            }
            let mut mutate = |_: &mut crate::ops::Ctx, current: &Value| {
                Ok(item
                    .repair(current, settings)
                    .unwrap_or_else(|| current.clone()))
            };
            ctx.update(
                namespace,
                item.name(),
                &Target::Main,
                Managed::RecordUpdate,
                false,
                &mut mutate,
            )
            .await
            .map(|_| ())
        }
    };
    match result {
        Ok(()) => true,
        Err(err) if settled(&err) => true,
        Err(err) => {
            tracing::debug!(%err, cluster, namespace, name = item.name(), "publishing failed; will retry");
            false
        }
    }
}

/// What the published objects are made of now.
fn settings(inner: &Inner) -> Settings {
    let root_ca = inner
        .config
        .serving_ca
        .clone()
        .or_else(|| inner.config.client_ca.clone())
        .unwrap_or_default();
    Settings {
        root_ca,
        client_ca: inner.config.client_ca.clone(),
        port: *inner.serving_port.borrow(),
    }
}

/// Makes or repairs every published object that belongs in `namespace` of `cluster`, if the
/// namespace is active. Returns whether all are done (else the pass should be retried).
pub(crate) async fn sync_namespace(inner: &Arc<Inner>, cluster: &str, namespace: &str) -> bool {
    let key = ObjectKey::new(Bucket::new(cluster, NS_RESOURCE), "", namespace);
    let Some(stored) = inner.store.get(&key) else {
        return true;
    };
    if !serde_json::from_slice::<Value>(&stored.value).is_ok_and(|ns| active(&ns)) {
        return true;
    }
    let settings = settings(inner);
    let mut done = true;
    for item in Published::ALL {
        if item.belongs_in(namespace) {
            done &= ensure(inner, cluster, namespace, item, &settings).await;
        }
    }
    done
}

/// The namespace a change calls for a pass over, if any.
fn affected(event: &Event) -> Option<String> {
    let resource = &*event.key.bucket.resource;
    if resource == NS_RESOURCE {
        let added_or_active = event.kind != EventKind::Deleted
            && serde_json::from_slice::<Value>(&event.object).is_ok_and(|ns| active(&ns));
        return added_or_active.then(|| event.key.name.clone());
    }
    let namespace = &event.key.namespace;
    Published::ALL
        .iter()
        .any(|item| {
            item.resource() == resource
                && item.name() == event.key.name
                && item.belongs_in(namespace)
        })
        .then(|| namespace.clone())
}

/// Every namespace of every logical cluster: (cluster, namespace).
fn all_namespaces(inner: &Inner, only: Option<&str>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for bucket in inner.store.buckets() {
        if &*bucket.resource != NS_RESOURCE {
            continue;
        }
        let (_, items) = inner.store.list(&bucket, None, None);
        for (_, name, _) in items {
            if only.is_none_or(|o| o == name) {
                out.push((bucket.cluster.to_string(), name));
            }
        }
    }
    out
}

pub(crate) async fn run(inner: Arc<Inner>) {
    let (_, mut events) = inner.store.subscribe_all();
    let mut shutdown = inner.shutdown.subscribe();
    let mut port = inner.serving_port.subscribe();
    let mut retry: HashSet<(String, String)> = HashSet::new();
    for (cluster, namespace) in all_namespaces(&inner, None) {
        if !sync_namespace(&inner, &cluster, &namespace).await {
            retry.insert((cluster, namespace));
        }
    }
    let mut resync = tokio::time::interval(inner.config.resync_interval);
    loop {
        let due: Vec<(String, String)> = tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                affected(&event)
                    .map(|ns| vec![(event.key.bucket.cluster.to_string(), ns)])
                    .unwrap_or_default()
            }
            changed = port.changed() => {
                if changed.is_err() {
                    return;
                }
                all_namespaces(&inner, Some("default"))
            }
            _ = resync.tick() => retry.drain().collect(),
            _ = shutdown.changed() => return,
        };
        for (cluster, namespace) in due {
            if sync_namespace(&inner, &cluster, &namespace).await {
                retry.remove(&(cluster, namespace));
            } else {
                retry.insert((cluster, namespace));
            }
        }
    }
}

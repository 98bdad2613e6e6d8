//! Keeps the [`published`](super::published) objects in every active namespace of every logical
//! cluster: made when a namespace appears (and, for the system namespaces, when the cluster is
//! created), made again when deleted, put right when changed. A namespace that is terminating
//! is left alone, so namespace deletion still empties it.

use std::collections::HashSet;

use serde_json::Value;

use super::published::{Published, Settings};
use crate::control::ServerAccess;
use crate::meta;
use crate::ops::{Managed, Target};
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
    server: &ServerAccess,
    cluster: &str,
    namespace: &str,
    item: Published,
    settings: &Settings,
) -> bool {
    let bucket = Bucket::new(cluster, item.resource());
    let Some(mut ctx) = server.writer(&bucket, item.manager()) else {
        return true;
    };
    let key = ObjectKey::new(bucket, namespace, item.name());
    let result = match server.get(&key) {
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
fn settings(server: &ServerAccess) -> Settings {
    let root_ca = server
        .config()
        .serving_ca
        .clone()
        .or_else(|| server.config().client_ca.clone())
        .unwrap_or_default();
    Settings {
        root_ca,
        client_ca: server.config().client_ca.clone(),
        port: *server.serving_port().borrow(),
    }
}

/// Makes or repairs every published object that belongs in `namespace` of `cluster`, if the
/// namespace is active. Returns whether all are done (else the pass should be retried).
pub(crate) async fn sync_namespace(server: &ServerAccess, cluster: &str, namespace: &str) -> bool {
    let key = ObjectKey::new(Bucket::new(cluster, NS_RESOURCE), "", namespace);
    let Some(stored) = server.get(&key) else {
        return true;
    };
    if !serde_json::from_slice::<Value>(&stored.value).is_ok_and(|ns| active(&ns)) {
        return true;
    }
    let settings = settings(server);
    let mut done = true;
    for item in Published::ALL {
        if item.belongs_in(namespace) {
            done &= ensure(server, cluster, namespace, item, &settings).await;
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
fn all_namespaces(server: &ServerAccess, only: Option<&str>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for bucket in server.buckets() {
        if &*bucket.resource != NS_RESOURCE {
            continue;
        }
        let (_, items) = server.list(&bucket, None, None);
        for (_, name, _) in items {
            if only.is_none_or(|o| o == name) {
                out.push((bucket.cluster.to_string(), name));
            }
        }
    }
    out
}

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let mut port = server.serving_port();
    let mut retry: HashSet<(String, String)> = HashSet::new();
    for (cluster, namespace) in all_namespaces(&server, None) {
        if !sync_namespace(&server, &cluster, &namespace).await {
            retry.insert((cluster, namespace));
        }
    }
    let mut resync = tokio::time::interval(server.config().resync_interval);
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
                all_namespaces(&server, Some("default"))
            }
            _ = resync.tick() => retry.drain().collect(),
            _ = shutdown.changed() => return,
        };
        for (cluster, namespace) in due {
            if sync_namespace(&server, &cluster, &namespace).await {
                retry.remove(&(cluster, namespace));
            } else {
                retry.insert((cluster, namespace));
            }
        }
    }
}

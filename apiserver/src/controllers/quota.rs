//! ResourceQuota usage, as kube-controller-manager's resourcequota controller reports it:
//! `status.hard` mirrors `spec.hard`, and `status.used` holds, for every key the server
//! measures (object counts `count/<resource>[.<group>]` and the legacy `configmaps`,
//! `secrets`, …; `requests.storage` and the per-StorageClass
//! `<class>.storageclass.storage.k8s.io/{requests.storage,persistentvolumeclaims}`;
//! `<class>.deviceclass.resource.k8s.io/devices`), what the namespace uses — recomputed
//! whenever an object it measures changes. Compute-resource keys (`requests.cpu`,
//! `limits.memory`, …) are left out of `used`: there are no real pods to sum.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::control::ServerAccess;
use crate::ops::{Managed, Target};
use crate::quantity::{self, Quantity};
use crate::quota::{QUOTA_RESOURCE, Usage};
use ocm_apiserver_storage::{Bucket, Event, EventKind, ObjectKey};

/// The status a quota with `spec.hard` = `hard` should have, `measure(usage)` giving what the
/// namespace uses of each measured key.
/// Quantities are written in canonical form, as the server stores them (`1000` objects are
/// `1k`), so the status compares equal to the stored one once written.
pub(crate) fn desired_status(
    hard: &Map<String, Value>,
    measure: impl Fn(&Usage) -> Quantity,
) -> Value {
    let used: Map<String, Value> = hard
        .keys()
        .filter_map(|key| {
            let used = measure(&Usage::of_key(key)?);
            Some((key.clone(), json!(used.to_string())))
        })
        .collect();
    let hard: Map<String, Value> = hard
        .iter()
        .map(|(key, limit)| {
            let text = limit.as_str().and_then(|t| quantity::canonical(t).ok());
            (
                key.clone(),
                text.map_or_else(|| limit.clone(), Value::String),
            )
        })
        .collect();
    json!({"hard": hard, "used": used})
}

/// Brings one quota's status up to date; false when the write failed (to be retried).
async fn sync_quota(server: &ServerAccess, cluster: &str, namespace: &str, name: &str) -> bool {
    let bucket = Bucket::new(cluster, QUOTA_RESOURCE);
    let Some(stored) = server.get(&ObjectKey::new(bucket.clone(), namespace, name)) else {
        return true;
    };
    let Ok(quota) = serde_json::from_slice::<Value>(&stored.value) else {
        return true;
    };
    let hard = quota
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let desired = desired_status(&hard, |usage| {
        let bucket = Bucket::new(cluster, usage.resource());
        let (_, items) = server.list(&bucket, Some(namespace), None);
        usage.total(&items)
    });
    if quota.get("status") == Some(&desired) {
        return true;
    }
    let Some(mut ctx) = server.writer(&bucket, "kube-controller-manager") else {
        return true;
    };
    let mut mutate = |_: &mut crate::ops::Ctx, current: &Value| {
        let mut next = current.clone();
        next["status"] = desired.clone();
        Ok(next)
    };
    let target = Target::Sub("status".into());
    match ctx
        .update(
            namespace,
            name,
            &target,
            Managed::RecordUpdate,
            false,
            &mut mutate,
        )
        .await
    {
        Ok(_) => true,
        Err(err) if matches!(err.code, 404 | 409) => err.code == 404,
        Err(err) => {
            tracing::debug!(%err, cluster, namespace, name, "quota status update failed");
            false
        }
    }
}

/// The quotas of `namespace` in `cluster` that count `resource`.
fn quotas_counting(
    server: &ServerAccess,
    cluster: &str,
    namespace: &str,
    resource: &str,
) -> Vec<String> {
    let (_, items) = server.list(&Bucket::new(cluster, QUOTA_RESOURCE), Some(namespace), None);
    items
        .into_iter()
        .filter(|(_, _, o)| {
            serde_json::from_slice::<Value>(&o.value).is_ok_and(|q| {
                q.pointer("/spec/hard")
                    .and_then(Value::as_object)
                    .is_some_and(|hard| {
                        hard.keys()
                            .any(|k| Usage::of_key(k).is_some_and(|u| u.resource() == resource))
                    })
            })
        })
        .map(|(_, name, _)| name)
        .collect()
}

/// The quotas a change calls for a pass over: (cluster, namespace, name).
fn affected(server: &ServerAccess, event: &Event) -> Vec<(String, String, String)> {
    let cluster = event.key.bucket.cluster.to_string();
    let resource = &*event.key.bucket.resource;
    let namespace = &event.key.namespace;
    if namespace.is_empty() {
        return Vec::new();
    }
    let mut due = Vec::new();
    if resource == QUOTA_RESOURCE && event.kind != EventKind::Deleted {
        due.push((cluster.clone(), namespace.clone(), event.key.name.clone()));
    }
    // Counts change on creation and deletion; pods finish, and claims change what they
    // request, in updates.
    if event.kind != EventKind::Modified
        || matches!(resource, crate::quota::PODS | "/persistentvolumeclaims")
    {
        for name in quotas_counting(server, &cluster, namespace, resource) {
            due.push((cluster.clone(), namespace.clone(), name));
        }
    }
    due
}

/// Every quota of every logical cluster.
fn all_quotas(server: &ServerAccess) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for bucket in server.buckets() {
        if &*bucket.resource != QUOTA_RESOURCE {
            continue;
        }
        let (_, items) = server.list(&bucket, None, None);
        for (namespace, name, _) in items {
            out.push((bucket.cluster.to_string(), namespace, name));
        }
    }
    out
}

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let mut retry: HashSet<(String, String, String)> = HashSet::new();
    for (cluster, namespace, name) in all_quotas(&server) {
        if !sync_quota(&server, &cluster, &namespace, &name).await {
            retry.insert((cluster, namespace, name));
        }
    }
    let mut resync = tokio::time::interval(server.config().resync_interval);
    loop {
        let due = tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                affected(&server, &event)
            }
            _ = resync.tick() => retry.drain().collect(),
            _ = shutdown.changed() => return,
        };
        for (cluster, namespace, name) in due {
            if sync_quota(&server, &cluster, &namespace, &name).await {
                retry.remove(&(cluster, namespace, name));
            } else {
                retry.insert((cluster, namespace, name));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_mirrors_hard_and_counts_only_object_counts() {
        let hard = json!({"count/configmaps": "5", "requests.cpu": "2", "secrets": "3"});
        let status = desired_status(hard.as_object().unwrap(), |u| {
            Quantity::from_count(match u.resource() {
                "/configmaps" => 2,
                "/secrets" => 1,
                _ => 99,
            })
        });
        assert_eq!(status["hard"], hard);
        assert_eq!(
            status["used"],
            json!({"count/configmaps": "2", "secrets": "1"})
        );
    }

    #[test]
    fn status_quantities_are_canonical() {
        let hard = json!({"count/configmaps": "2000", "requests.cpu": "0.5"});
        let status = desired_status(hard.as_object().unwrap(), |_| Quantity::from_count(1000));
        assert_eq!(
            status,
            json!({"hard": {"count/configmaps": "2k", "requests.cpu": "500m"},
                "used": {"count/configmaps": "1k"}})
        );
    }
}

//! ResourceQuota usage, as kube-controller-manager's resourcequota controller reports it for
//! object counts: `status.hard` mirrors `spec.hard`, and `status.used` holds, for every
//! object-count key (`count/<resource>[.<group>]`, and the legacy `configmaps`, `secrets`,
//! `services`, `pods`, `resourcequotas`, `replicationcontrollers`, `persistentvolumeclaims`),
//! how many such objects the namespace holds — recomputed whenever one is created or deleted.
//! Compute-resource keys (`requests.cpu`, `limits.memory`, …) are left out of `used`: there are
//! no real pods to sum.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::system_ctx;
use crate::ops::{Managed, Target};
use crate::quantity::{self, Quantity};
use crate::quota::{PODS, QUOTA_RESOURCE, count_objects, counted_resource};
use crate::state::Inner;
use ocm_apiserver_storage::{Bucket, Event, EventKind, ObjectKey};

/// The status a quota with `spec.hard` = `hard` should have, `count(resource)` giving the
/// objects of each counted storage resource in its namespace.
/// Quantities are written in canonical form, as the server stores them (`1000` objects are
/// `1k`), so the status compares equal to the stored one once written.
pub(crate) fn desired_status(hard: &Map<String, Value>, count: impl Fn(&str) -> u64) -> Value {
    let used: Map<String, Value> = hard
        .keys()
        .filter_map(|key| {
            let resource = counted_resource(key)?;
            let used = Quantity::from_count(count(&resource));
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
async fn sync_quota(inner: &Arc<Inner>, cluster: &str, namespace: &str, name: &str) -> bool {
    let bucket = Bucket::new(cluster, QUOTA_RESOURCE);
    let Some(stored) = inner
        .store
        .get(&ObjectKey::new(bucket.clone(), namespace, name))
    else {
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
    let desired = desired_status(&hard, |resource| {
        count_objects(inner, cluster, namespace, resource)
    });
    if quota.get("status") == Some(&desired) {
        return true;
    }
    let Some(mut ctx) = system_ctx(inner, &bucket, "kube-controller-manager") else {
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
fn quotas_counting(inner: &Inner, cluster: &str, namespace: &str, resource: &str) -> Vec<String> {
    let (_, items) = inner
        .store
        .list(&Bucket::new(cluster, QUOTA_RESOURCE), Some(namespace), None);
    items
        .into_iter()
        .filter(|(_, _, o)| {
            serde_json::from_slice::<Value>(&o.value).is_ok_and(|q| {
                q.pointer("/spec/hard")
                    .and_then(Value::as_object)
                    .is_some_and(|hard| {
                        hard.keys()
                            .any(|k| counted_resource(k).as_deref() == Some(resource))
                    })
            })
        })
        .map(|(_, name, _)| name)
        .collect()
}

/// The quotas a change calls for a pass over: (cluster, namespace, name).
fn affected(inner: &Inner, event: &Event) -> Vec<(String, String, String)> {
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
    // Counts change on creation and deletion (and, for pods, when one finishes).
    if event.kind != EventKind::Modified || resource == PODS {
        for name in quotas_counting(inner, &cluster, namespace, resource) {
            due.push((cluster.clone(), namespace.clone(), name));
        }
    }
    due
}

/// Every quota of every logical cluster.
fn all_quotas(inner: &Inner) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for bucket in inner.store.buckets() {
        if &*bucket.resource != QUOTA_RESOURCE {
            continue;
        }
        let (_, items) = inner.store.list(&bucket, None, None);
        for (namespace, name, _) in items {
            out.push((bucket.cluster.to_string(), namespace, name));
        }
    }
    out
}

pub(crate) async fn run(inner: Arc<Inner>) {
    let (_, mut events) = inner.store.subscribe_all();
    let mut shutdown = inner.shutdown.subscribe();
    let mut retry: HashSet<(String, String, String)> = HashSet::new();
    for (cluster, namespace, name) in all_quotas(&inner) {
        if !sync_quota(&inner, &cluster, &namespace, &name).await {
            retry.insert((cluster, namespace, name));
        }
    }
    let mut resync = tokio::time::interval(inner.config.resync_interval);
    loop {
        let due = tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                affected(&inner, &event)
            }
            _ = resync.tick() => retry.drain().collect(),
            _ = shutdown.changed() => return,
        };
        for (cluster, namespace, name) in due {
            if sync_quota(&inner, &cluster, &namespace, &name).await {
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
        let status = desired_status(hard.as_object().unwrap(), |r| match r {
            "/configmaps" => 2,
            "/secrets" => 1,
            _ => 99,
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
        let status = desired_status(hard.as_object().unwrap(), |_| 1000);
        assert_eq!(
            status,
            json!({"hard": {"count/configmaps": "2k", "requests.cpu": "500m"},
                "used": {"count/configmaps": "1k"}})
        );
    }
}

//! Each logical cluster's RBAC [`Policy`], kept current from storage: rebuilt from the stored
//! roles and bindings once, then brought up to date by applying the changes made since (a full
//! rebuild only when the store's history window no longer holds them).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use ocm_apiserver_rbac::{LivePolicy, Policy, PolicyError, RBAC_GROUP};
use ocm_apiserver_storage::{Bucket, Event, EventKind, Revision, Store};

/// The RBAC storage buckets, in the order objects are loaded.
const RBAC_RESOURCES: [&str; 4] = [
    "clusterroles",
    "roles",
    "clusterrolebindings",
    "rolebindings",
];

/// The kind stored in each of [`RBAC_RESOURCES`].
const RBAC_KINDS: [&str; 4] = ["ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"];

/// Each cluster's policy, kept current by applying the RBAC changes made since it was last
/// brought up to date (rebuilt from scratch only when the history window no longer holds them).
#[derive(Default)]
pub(crate) struct PolicyCache {
    by_cluster: Mutex<HashMap<String, CachedPolicy>>,
}

/// One cluster's policy and the state of storage it reflects.
struct CachedPolicy {
    /// The fingerprint when the policy was last brought up to date.
    seen: Fingerprint,
    /// Per bucket: every change up to this revision is applied.
    applied: [Revision; 4],
    live: LivePolicy,
}

/// Identifies a state of a cluster's RBAC objects: per bucket, the revision of its last write.
/// Every create, update and delete is a write at a new, higher revision, so equal
/// fingerprints mean equal states. O(1) per request.
type Fingerprint = [Revision; 4];

fn bucket(cluster: &str, resource: &str) -> Bucket {
    Bucket::new(cluster, &format!("{RBAC_GROUP}/{resource}"))
}

fn fingerprint(store: &Store, cluster: &str) -> Fingerprint {
    RBAC_RESOURCES.map(|resource| store.bucket_revision(&bucket(cluster, resource)))
}

/// Builds a cluster's policy from scratch: the stored objects, with aggregated ClusterRoles
/// filled. Only what is stored counts, as in kube-apiserver: the default roles and bindings are
/// stored when a logical cluster is created (and the missing ones again when the server
/// starts), so deleting one takes its permissions away until then.
fn build_policy(store: &Store, cluster: &str, seen: Fingerprint) -> CachedPolicy {
    let mut live = LivePolicy::new(Arc::new(Policy::default()));
    let mut applied = [0; 4];
    for (i, resource) in RBAC_RESOURCES.into_iter().enumerate() {
        let (revision, items) = store.list(&bucket(cluster, resource), None, None);
        applied[i] = revision;
        for (_, name, object) in items {
            let Ok(value) = serde_json::from_slice::<Value>(&object.value) else {
                continue;
            };
            if let Err(err) = live.upsert(&value) {
                tracing::warn!(resource, name, %err, "stored RBAC object ignored");
            }
        }
    }
    CachedPolicy {
        seen,
        applied,
        live,
    }
}

/// Applies the changes of `bucket` committed after `entry.applied`, as a full rebuild would
/// see them (an object that does not decode counts as absent). `Err` when the history window
/// no longer holds them.
fn catch_up(
    store: &Store,
    cluster: &str,
    entry: &mut CachedPolicy,
    seen: Fingerprint,
) -> Result<(), ocm_apiserver_storage::StorageError> {
    for (i, resource) in RBAC_RESOURCES.into_iter().enumerate() {
        if entry.seen[i] == seen[i] {
            continue;
        }
        let kind = RBAC_KINDS[i];
        for event in store.changes_since(&bucket(cluster, resource), entry.applied[i])? {
            let key = &event.key;
            let applied = match event.kind {
                EventKind::Deleted => Ok(false),
                EventKind::Added | EventKind::Modified => apply_stored(&mut entry.live, &event),
            };
            match applied {
                Ok(true) => {}
                Ok(false) => entry.live.remove(kind, &key.namespace, &key.name),
                Err(err) => {
                    tracing::warn!(resource, name = key.name, %err, "stored RBAC object ignored");
                    entry.live.remove(kind, &key.namespace, &key.name);
                }
            }
            entry.applied[i] = event.rev;
        }
    }
    entry.seen = seen;
    Ok(())
}

/// Upserts the object an event stored: `Ok(false)` when it is not JSON, `Err` when it is not
/// a readable RBAC object (a full rebuild skips both).
fn apply_stored(live: &mut LivePolicy, event: &Event) -> Result<bool, PolicyError> {
    let Ok(value) = serde_json::from_slice::<Value>(&event.object) else {
        return Ok(false);
    };
    live.upsert(&value).map(|()| true)
}

impl PolicyCache {
    /// The current policy of `cluster`, brought up to date with what `store` holds.
    pub(crate) fn policy(&self, store: &Store, cluster: &str) -> Arc<Policy> {
        // Held throughout: racing requests apply each change once, in order.
        let mut cache = self.by_cluster.lock().unwrap_or_else(|p| p.into_inner());
        let current = fingerprint(store, cluster);
        if let Some(entry) = cache.get_mut(cluster) {
            if entry.seen == current {
                return entry.live.snapshot();
            }
            match catch_up(store, cluster, entry, current) {
                Ok(()) => return entry.live.snapshot(),
                Err(err) => {
                    tracing::debug!(cluster, %err, "RBAC changes compacted; rebuilding policy")
                }
            }
        }
        let mut built = build_policy(store, cluster, current);
        let snapshot = built.live.snapshot();
        cache.insert(cluster.to_owned(), built);
        snapshot
    }
}

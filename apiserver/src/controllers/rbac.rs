//! ClusterRole aggregation, as kube-controller-manager's clusterrole-aggregation controller
//! does it: every ClusterRole with an `aggregationRule` gets the union of the rules of the
//! ClusterRoles its selectors match, written back to storage.
//!
//! A pass reads every ClusterRole of the cluster, so it runs only for changes that can move
//! aggregated rules ([`Aggregators::affected_by`]); the per-cluster roles a fleet hub writes
//! by the thousand do not.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use k8s_openapi::api::rbac::v1::ClusterRole;
use serde_json::{Value, json};

use crate::control::ServerAccess;
use crate::ops::{Managed, Target};
use ocm_apiserver_rbac::{Aggregators, Policy};
use ocm_apiserver_storage::{Bucket, Event, EventKind};

const CLUSTER_ROLES: &str = "rbac.authorization.k8s.io/clusterroles";

/// Runs one aggregation pass over `cluster`'s ClusterRoles; returns their aggregators.
async fn reconcile(server: &ServerAccess, cluster: &str) -> Aggregators {
    let bucket = Bucket::new(cluster, CLUSTER_ROLES);
    let (_, items) = server.list(&bucket, None, None);
    let mut policy = Policy::new();
    for (_, _, object) in items {
        if let Ok(value) = serde_json::from_slice::<Value>(&object.value) {
            let _ = policy.upsert(&value);
        }
    }
    let aggregators = Aggregators::of(policy.cluster_roles());
    for (name, rules) in policy.pending_aggregations() {
        let Some(mut ctx) = server.writer(&bucket, "clusterrole-aggregation-controller") else {
            return aggregators;
        };
        let rules = serde_json::to_value(&rules).unwrap_or_else(|_| json!([]));
        let mut mutate = move |_: &mut crate::ops::Ctx, current: &Value| {
            let mut next = current.clone();
            next["rules"] = rules.clone();
            Ok(next)
        };
        if let Err(err) = ctx
            .update(
                "",
                &name,
                &Target::Main,
                Managed::RecordUpdate,
                false,
                &mut mutate,
            )
            .await
            && err.code != 404
        {
            tracing::warn!(%err, name, "ClusterRole aggregation failed");
        }
    }
    aggregators
}

/// A stored ClusterRole, if the bytes decode as one (read through the v1 shape whatever
/// version they were stored at, as the policy reads them).
fn decode(bytes: &Bytes) -> Option<ClusterRole> {
    let mut value: Value = serde_json::from_slice(bytes).ok()?;
    value
        .as_object_mut()?
        .insert("apiVersion".into(), json!("rbac.authorization.k8s.io/v1"));
    serde_json::from_value(value).ok()
}

/// The role before and after the change `event` records.
fn before_and_after(event: &Event) -> (Option<ClusterRole>, Option<ClusterRole>) {
    match event.kind {
        EventKind::Deleted => (decode(&event.object), None),
        EventKind::Added | EventKind::Modified => {
            (event.prev.as_ref().and_then(decode), decode(&event.object))
        }
    }
}

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let clusters: HashSet<String> = server
        .buckets()
        .into_iter()
        .filter(|b| &*b.resource == CLUSTER_ROLES)
        .map(|b| b.cluster.to_string())
        .collect();
    let mut aggregators: HashMap<String, Aggregators> = HashMap::new();
    for cluster in clusters {
        let found = reconcile(&server, &cluster).await;
        aggregators.insert(cluster, found);
    }
    loop {
        tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                // Each aggregated role of a new cluster's bootstrap would otherwise start a
                // pass over every ClusterRole of its cluster.
                let due = super::due_clusters(event, &mut events, |due, event| {
                    note_change(&mut aggregators, due, event);
                });
                for cluster in due {
                    let found = reconcile(&server, &cluster).await;
                    aggregators.insert(cluster, found);
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// Takes one stored change into account: its cluster joins `due` when the change can move
/// aggregated rules (or its previous state is unknown); otherwise the cluster's aggregators
/// record it. Changes of a cluster already due are left to its pass, which reads them all.
fn note_change(
    aggregators: &mut HashMap<String, Aggregators>,
    due: &mut Vec<String>,
    event: &Event,
) {
    if &*event.key.bucket.resource != CLUSTER_ROLES {
        return;
    }
    let cluster = &*event.key.bucket.cluster;
    if due.iter().any(|c| c.as_str() == cluster) {
        return;
    }
    let (before, after) = before_and_after(event);
    // An update whose previous state is unknown could have moved anything.
    let unknown_before = event.kind == EventKind::Modified && before.is_none();
    let known = aggregators.entry(cluster.to_owned()).or_default();
    if unknown_before || known.affected_by(&event.key.name, before.as_ref(), after.as_ref()) {
        due.push(cluster.to_owned());
    } else {
        known.record(&event.key.name, after.as_ref());
    }
}

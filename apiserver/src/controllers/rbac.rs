//! ClusterRole aggregation, as kube-controller-manager's clusterrole-aggregation controller
//! does it: every ClusterRole with an `aggregationRule` gets the union of the rules of the
//! ClusterRoles its selectors match, written back to storage.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};

use super::system_ctx;
use crate::ops::{Managed, Target};
use crate::rbac::Policy;
use crate::server::Inner;
use crate::storage::Bucket;

const CLUSTER_ROLES: &str = "rbac.authorization.k8s.io/clusterroles";

async fn reconcile(inner: &Arc<Inner>, cluster: &str) {
    let bucket = Bucket::new(cluster, CLUSTER_ROLES);
    let (_, items) = inner.store.list(&bucket, None, None);
    let mut policy = Policy::new();
    for (_, _, object) in items {
        if let Ok(value) = serde_json::from_slice::<Value>(&object.value) {
            let _ = policy.upsert(&value);
        }
    }
    for (name, rules) in policy.pending_aggregations() {
        let Some(mut ctx) = system_ctx(inner, &bucket, "clusterrole-aggregation-controller") else {
            return;
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
}

pub(crate) async fn run(inner: Arc<Inner>) {
    let (_, mut events) = inner.store.subscribe_all();
    let mut shutdown = inner.shutdown.subscribe();
    let clusters: HashSet<String> = inner
        .store
        .buckets()
        .into_iter()
        .filter(|b| &*b.resource == CLUSTER_ROLES)
        .map(|b| b.cluster.to_string())
        .collect();
    for cluster in clusters {
        reconcile(&inner, &cluster).await;
    }
    loop {
        tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                if &*event.key.bucket.resource != CLUSTER_ROLES {
                    continue;
                }
                let cluster = event.key.bucket.cluster.to_string();
                reconcile(&inner, &cluster).await;
            }
            _ = shutdown.changed() => return,
        }
    }
}

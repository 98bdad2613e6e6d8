//! CRD controller: serves a CRD's resource as soon as it is stored, reports `NamesAccepted` and
//! `Established`, and on deletion removes every custom resource before the cleanup finalizer.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::control::ServerAccess;
use crate::meta;
use crate::ops::{CRD_CLEANUP_FINALIZER, DeleteOptions, Managed, Propagation, Target};
use crate::registry::{crd_conditions, resource_from_crd};
use ocm_apiserver_storage::{Bucket, ObjectKey};

const CRD_RESOURCE: &str = "apiextensions.k8s.io/customresourcedefinitions";

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    // Bring every stored CRD's status up to date once.
    for bucket in server.buckets() {
        if &*bucket.resource == CRD_RESOURCE {
            let (_, items) = server.list(&bucket, None, None);
            for (_, name, _) in items {
                reconcile(&server, &bucket.cluster, &name).await;
            }
        }
    }
    // CRDs being deleted, and the storage resource of their custom resources.
    let mut terminating: HashSet<(String, String, String)> = HashSet::new();
    loop {
        let event = tokio::select! {
            e = events.recv() => match e { Some(e) => e, None => return },
            _ = shutdown.changed() => return,
        };
        let cluster = event.key.bucket.cluster.to_string();
        if &*event.key.bucket.resource == CRD_RESOURCE {
            if let Some(res) = reconcile(&server, &cluster, &event.key.name).await {
                terminating.insert((cluster.clone(), event.key.name.clone(), res));
            } else {
                terminating.retain(|(c, n, _)| !(c == &cluster && n == &event.key.name));
            }
            continue;
        }
        let hit: Vec<String> = terminating
            .iter()
            .filter(|(c, _, r)| *c == cluster && **r == *event.key.bucket.resource)
            .map(|(_, n, _)| n.clone())
            .collect();
        for name in hit {
            if reconcile(&server, &cluster, &name).await.is_none() {
                terminating.retain(|(c, n, _)| !(c == &cluster && n == &name));
            }
        }
    }
}

/// Brings one CRD to its desired state. Returns the storage resource while the CRD is being
/// deleted (so events of its custom resources re-trigger it).
async fn reconcile(server: &ServerAccess, cluster: &str, name: &str) -> Option<String> {
    let bucket = Bucket::new(cluster, CRD_RESOURCE);
    let key = ObjectKey::new(bucket.clone(), "", name);
    let Some(stored) = server.get(&key) else {
        server.stop_serving_crd(cluster, name);
        return None;
    };
    let crd: Value = serde_json::from_slice(&stored.value).ok()?;
    let info = match resource_from_crd(&crd) {
        Ok(info) => info,
        Err(err) => {
            tracing::warn!(crd = name, %err, "CRD cannot be served");
            return None;
        }
    };
    let storage_resource = info.storage_resource();
    if meta::is_deleting(&crd) {
        if !meta::finalizers(&crd)
            .iter()
            .any(|f| f == CRD_CLEANUP_FINALIZER)
        {
            return Some(storage_resource);
        }
        let res_bucket = info.bucket(cluster);
        let (_, items) = server.list(&res_bucket, None, None);
        if !items.is_empty() {
            if let Some(mut ctx) = server.writer(&res_bucket, "kube-apiserver") {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..DeleteOptions::default()
                };
                for (ns, obj_name, object) in items {
                    let already = serde_json::from_slice::<Value>(&object.value)
                        .is_ok_and(|v| meta::is_deleting(&v));
                    if !already && let Err(err) = ctx.delete(&ns, &obj_name, &opts).await {
                        tracing::debug!(%err, "deleting custom resource");
                    }
                }
            }
            let (_, left) = server.list(&res_bucket, None, None);
            if !left.is_empty() {
                return Some(storage_resource);
            }
        }
        if let Some(mut ctx) = server.writer(&bucket, "kube-apiserver") {
            let mut mutate = |_: &mut crate::ops::Ctx, old: &Value| {
                let mut new = old.clone();
                let fins: Vec<String> = meta::finalizers(old)
                    .into_iter()
                    .filter(|f| f != CRD_CLEANUP_FINALIZER)
                    .collect();
                meta::set_finalizers(&mut new, &fins);
                Ok(new)
            };
            if let Err(err) = ctx
                .update(
                    "",
                    name,
                    &Target::Main,
                    Managed::RecordUpdate,
                    false,
                    &mut mutate,
                )
                .await
            {
                tracing::debug!(%err, "removing CRD cleanup finalizer");
            }
        }
        server.stop_serving_crd(cluster, name);
        return None;
    }
    server.serve_crd(cluster, name, &crd, info.clone());
    let status = crd_conditions(&crd, &info, &meta::now());
    if crd.get("status") != Some(&status)
        && let Some(mut ctx) = server.writer(&bucket, "kube-apiserver")
    {
        let mut mutate = |_: &mut crate::ops::Ctx, old: &Value| {
            let mut new = old.clone();
            new["status"] = crd_conditions(old, &info, &meta::now());
            Ok(new)
        };
        if let Err(err) = ctx
            .update(
                "",
                name,
                &Target::Sub("status".into()),
                Managed::RecordUpdate,
                false,
                &mut mutate,
            )
            .await
        {
            tracing::debug!(%err, "updating CRD status");
        }
    }
    let _ = json!(null);
    None
}

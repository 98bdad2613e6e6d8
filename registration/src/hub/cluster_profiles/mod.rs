//! ClusterProfiles for SIG-Multicluster's Cluster Inventory API (hub feature gate
//! `ClusterProfile`, off by default as upstream): one profile per ManagedCluster in every
//! namespace a cluster set containing it is bound to, its status following the cluster. What
//! the profiles must be is decided in [`desired`]; this module watches clusters, sets,
//! bindings and OCM's profiles and, whenever any of them changes, brings the profiles in line
//! (creating, deleting, then patching status and labels — each with the resourceVersion it
//! read, so a concurrent writer gives a conflict and another round, never a lost update).

mod desired;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::multicluster::v1alpha1::ClusterProfile;
use ocm_api::multicluster::{CLUSTER_MANAGER_NAME, LABEL_CLUSTER_MANAGER};
use ocm_runtime::cache::SharedCache;
use serde_json::json;
use tokio::sync::Notify;
use tracing::info;

use super::HubContext;
use super::error::{HubError, has_code, retry_after};
use super::lease::{RETRY, ticks};

const CONTROLLER: &str = "cluster-profile";

/// How long to let further events arrive before acting on the first one.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// What the controller has seen of the hub.
struct Caches {
    clusters: Store<ManagedCluster>,
    sets: Store<ManagedClusterSet>,
    bindings: Store<ManagedClusterSetBinding>,
    profiles: Store<ClusterProfile>,
}

/// Feeds `store` from a watch of `api` and wakes `changed` on every event, until shutdown.
fn spawn_cache<K>(
    api: Api<K>,
    config: watcher::Config,
    changed: Arc<Notify>,
    ctx: &HubContext,
) -> Store<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    ocm_runtime::cache::notifying_store(api, config.any_semantic(), changed, ctx.shutdown.clone()).0
}

/// Wakes `changed` on every item of `events`, until shutdown.
fn spawn_notifier<T>(
    events: impl futures::Stream<Item = T> + Send + 'static,
    changed: Arc<Notify>,
    ctx: &HubContext,
) {
    let mut events = Box::pin(events);
    let shutdown = ctx.shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                event = events.next() => match event {
                    Some(_) => changed.notify_one(),
                    None => return,
                },
            }
        }
    });
}

/// Runs the ClusterProfile controller until shutdown (at once returns when the gate is off).
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    if !ctx.options.cluster_profiles {
        return;
    }
    let changed = Arc::new(Notify::new());
    let client = ctx.client.clone();
    spawn_notifier(clusters.subscribe(), changed.clone(), &ctx);
    let caches = Caches {
        clusters: clusters.store(),
        sets: spawn_cache(
            Api::all(client.clone()),
            watcher::Config::default(),
            changed.clone(),
            &ctx,
        ),
        bindings: spawn_cache(
            Api::all(client.clone()),
            watcher::Config::default(),
            changed.clone(),
            &ctx,
        ),
        profiles: spawn_cache(
            Api::all(client),
            watcher::Config::default()
                .labels(&format!("{LABEL_CLUSTER_MANAGER}={CLUSTER_MANAGER_NAME}")),
            changed.clone(),
            &ctx,
        ),
    };
    let ready = async {
        let _ = caches.clusters.wait_until_ready().await;
        let _ = caches.sets.wait_until_ready().await;
        let _ = caches.bindings.wait_until_ready().await;
        let _ = caches.profiles.wait_until_ready().await;
    };
    tokio::select! {
        () = ctx.shutdown.cancelled() => return,
        () = ready => {}
    }
    let mut resync = Box::pin(ticks(ctx.options.resync));
    loop {
        ctx.metrics.reconciled(CONTROLLER);
        let wait = match sync(&ctx, &caches).await {
            Ok(()) => None,
            Err(err) => {
                retry_after(&ctx.metrics, CONTROLLER, &err, RETRY);
                Some(RETRY)
            }
        };
        tokio::select! {
            () = ctx.shutdown.cancelled() => return,
            () = changed.notified() => {}
            _ = resync.next() => {}
            () = tokio::time::sleep(wait.unwrap_or(RETRY)), if wait.is_some() => {}
        }
        tokio::select! {
            () = ctx.shutdown.cancelled() => return,
            () = tokio::time::sleep(DEBOUNCE) => {}
        }
    }
}

/// One round: create and delete profiles, then bring statuses and labels in line.
async fn sync(ctx: &HubContext, caches: &Caches) -> Result<(), HubError> {
    let clusters = caches.clusters.state();
    let sets = caches.sets.state();
    let bindings = caches.bindings.state();
    let profiles = caches.profiles.state();
    let set_by_name: HashMap<String, &ManagedClusterSet> =
        sets.iter().map(|s| (s.name_any(), &**s)).collect();
    let cluster_list: Vec<&ManagedCluster> = clusters.iter().map(|c| &**c).collect();
    let wanted =
        desired::desired_profiles(bindings.iter().map(|b| &**b), &set_by_name, &cluster_list);
    let plan = desired::plan(&wanted, profiles.iter().map(|p| &**p));
    let mut failures = Vec::new();

    let mut usable_namespaces: BTreeMap<String, bool> = BTreeMap::new();
    for (namespace, cluster) in &plan.create {
        let usable = match usable_namespaces.get(namespace) {
            Some(usable) => *usable,
            None => {
                let usable = namespace_usable(ctx, namespace).await?;
                usable_namespaces.insert(namespace.clone(), usable);
                usable
            }
        };
        if !usable {
            continue;
        }
        let api: Api<ClusterProfile> = Api::namespaced(ctx.client.clone(), namespace);
        match api
            .create(
                &PostParams::default(),
                &desired::new_profile(namespace, cluster),
            )
            .await
        {
            Ok(_) => info!(namespace, cluster, "created cluster profile"),
            // Ours appears through the watch; one without our label is someone else's and
            // stays as it is.
            Err(e) if has_code(&e, 409) => {
                tracing::debug!(namespace, cluster, "a cluster profile of that name exists");
            }
            Err(e) => failures.push(HubError::kube(
                format!("create cluster profile {namespace}/{cluster}"),
                e,
            )),
        }
    }
    for (namespace, cluster) in &plan.delete {
        let api: Api<ClusterProfile> = Api::namespaced(ctx.client.clone(), namespace);
        match api.delete(cluster, &DeleteParams::default()).await {
            Ok(_) => info!(namespace, cluster, "deleted cluster profile"),
            Err(e) if has_code(&e, 404) => {}
            Err(e) => failures.push(HubError::kube(
                format!("delete cluster profile {namespace}/{cluster}"),
                e,
            )),
        }
    }

    let cluster_by_name: HashMap<String, &ManagedCluster> =
        cluster_list.iter().map(|c| (c.name_any(), *c)).collect();
    for profile in profiles.iter().filter(|p| desired::managed_by_us(p)) {
        let Some(cluster) = cluster_by_name.get(&desired::cluster_of(profile)) else {
            continue;
        };
        if let Err(e) = update_profile(ctx, cluster, profile).await {
            failures.push(e);
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 => Err(failures.remove(0)),
        _ => Err(HubError::Many(
            failures
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )),
    }
}

/// Writes the profile's status when it differs from its cluster's, else its labels when they
/// do (one write per round: the second would only conflict with the first).
async fn update_profile(
    ctx: &HubContext,
    cluster: &ManagedCluster,
    profile: &ClusterProfile,
) -> Result<(), HubError> {
    let namespace = profile.namespace().unwrap_or_default();
    let name = profile.name_any();
    let api: Api<ClusterProfile> = Api::namespaced(ctx.client.clone(), &namespace);
    let resource_version = profile.meta().resource_version.clone();
    if let Some(status) = desired::desired_status(cluster, profile.status.as_ref()) {
        // Only the fields the hub owns: access providers belong to their publishers.
        let patch = json!({
            "metadata": {"resourceVersion": resource_version},
            "status": {
                "version": status.version,
                "properties": status.properties,
                "conditions": status.conditions,
            },
        });
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| {
                HubError::kube(
                    format!("update status of cluster profile {namespace}/{name}"),
                    e,
                )
            })?;
        return Ok(());
    }
    let labels = desired::label_patch(cluster, profile);
    if labels.is_empty() {
        return Ok(());
    }
    let patch = json!({"metadata": {"resourceVersion": resource_version, "labels": labels}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| HubError::kube(format!("label cluster profile {namespace}/{name}"), e))?;
    Ok(())
}

/// Whether profiles may be created in `namespace`: it exists and is not terminating.
async fn namespace_usable(ctx: &HubContext, namespace: &str) -> Result<bool, HubError> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    match api.get_opt(namespace).await {
        Ok(Some(ns)) => Ok(ns.metadata.deletion_timestamp.is_none()),
        Ok(None) => Ok(false),
        Err(e) => Err(HubError::kube(format!("get namespace {namespace}"), e)),
    }
}

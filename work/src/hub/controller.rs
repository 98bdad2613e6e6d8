//! The ManifestWorkReplicaSet controller: reads the hub's objects, asks
//! [`super::replicaset::plan`] what to do, creates/updates/deletes ManifestWorks, and writes
//! the status. Runs on the hub; talks only to the hub API server.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::work::names::{
    MANIFEST_WORK_REPLICA_SET_FINALIZER, MANIFEST_WORK_REPLICA_SET_LABEL, PLACEMENT_NAME_LABEL,
};
use ocm_api::work::v1::ManifestWork;
use ocm_api::work::v1alpha1::{CascadeDeletionPolicy, ManifestWorkReplicaSet};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use super::overrides::ClusterFacts;
use super::replicaset::{DesiredWork, ReplicaSetInput, plan, replica_set_key};

const CONTROLLER: &str = "manifestworkreplicaset";

/// Field manager of the controller's writes.
pub const FIELD_MANAGER: &str = "manifestworkreplicaset-controller";

/// Errors of one reconcile; the controller retries.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaSetError {
    /// A call to the hub failed.
    #[error("hub API: {0}")]
    Api(#[from] kube::Error),
    /// The object has no namespace or name.
    #[error("object without namespace or name")]
    Incomplete,
}

/// Tunables.
#[derive(Clone, Debug)]
pub struct ReplicaSetOptions {
    /// Delay before retrying a failed reconcile.
    pub retry: Duration,
    /// Reconciles running at once.
    pub concurrency: u16,
}

impl Default for ReplicaSetOptions {
    fn default() -> Self {
        ReplicaSetOptions {
            retry: Duration::from_secs(2),
            concurrency: 4,
        }
    }
}

struct Ctx {
    client: kube::Client,
    options: ReplicaSetOptions,
    metrics: ControllerMetrics,
}

/// Runs the controller until `shutdown` is cancelled.
#[inline(never)]
pub fn run(
    client: kube::Client,
    options: ReplicaSetOptions,
    metrics: ControllerMetrics,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(client, options, metrics, shutdown))
}

async fn run_body(
    client: kube::Client,
    options: ReplicaSetOptions,
    metrics: ControllerMetrics,
    shutdown: Shutdown,
) {
    let labelled = watcher::Config::default()
        .labels(MANIFEST_WORK_REPLICA_SET_LABEL)
        .any_semantic();
    let everything = watcher::Config::default().any_semantic();
    let controller = ocm_runtime::cache::controller(
        Api::<ManifestWorkReplicaSet>::all(client.clone()),
        everything.clone(),
    )
    .with_config(kube::runtime::controller::Config::default().concurrency(options.concurrency));
    // Triggers: a change of a work, placement, decision or cluster re-reconciles the
    // replica sets it can affect (found through the controller's own cache).
    let rs_store = controller.store();
    let by_placement = {
        let store = rs_store.clone();
        move |p: Placement| referencing(&store, p.namespace().as_deref(), &p.name_any())
    };
    let by_decision = {
        let store = rs_store.clone();
        move |d: PlacementDecision| {
            let placement = d
                .labels()
                .get(ocm_api::cluster::names::labels::PLACEMENT)
                .cloned()
                .unwrap_or_default();
            referencing(&store, d.namespace().as_deref(), &placement)
        }
    };
    let by_cluster = {
        let store = rs_store;
        move |_: ManagedCluster| {
            // Only replica sets with overrides depend on cluster labels and claims.
            store
                .state()
                .iter()
                .filter(|rs| {
                    rs.annotations()
                        .contains_key(super::overrides::OVERRIDES_ANNOTATION)
                })
                .map(|rs| ObjectRef::from_obj(rs.as_ref()))
                .collect::<Vec<_>>()
        }
    };
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        options,
        metrics,
    });
    let running = controller
        .watches(Api::<ManifestWork>::all(client.clone()), labelled, by_work)
        .watches(
            Api::<Placement>::all(client.clone()),
            everything.clone(),
            by_placement,
        )
        .watches(
            Api::<PlacementDecision>::all(client.clone()),
            everything.clone(),
            by_decision,
        )
        .watches(Api::<ManagedCluster>::all(client), everything, by_cluster)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = running => {}
        () = shutdown.cancelled() => {}
    }
}

/// The replica set a work belongs to, from its label `<namespace>.<name>`.
fn by_work(work: ManifestWork) -> Option<ObjectRef<ManifestWorkReplicaSet>> {
    work.labels()
        .get(MANIFEST_WORK_REPLICA_SET_LABEL)
        .and_then(|key| key.split_once('.'))
        .map(|(ns, name)| ObjectRef::new(name).within(ns))
}

fn referencing(
    store: &Store<ManifestWorkReplicaSet>,
    namespace: Option<&str>,
    placement: &str,
) -> Vec<ObjectRef<ManifestWorkReplicaSet>> {
    store
        .state()
        .iter()
        .filter(|rs| rs.namespace().as_deref() == namespace)
        .filter(|rs| rs.spec.placement_refs.iter().any(|p| p.name == placement))
        .map(|rs| ObjectRef::from_obj(rs.as_ref()))
        .collect()
}

fn error_policy(_rs: Arc<ManifestWorkReplicaSet>, err: &ReplicaSetError, ctx: Arc<Ctx>) -> Action {
    tracing::debug!(%err, "manifestworkreplicaset reconcile failed");
    ctx.metrics.failed(CONTROLLER, "api");
    Action::requeue(ctx.options.retry)
}

async fn reconcile(
    rs: Arc<ManifestWorkReplicaSet>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReplicaSetError> {
    let (Some(namespace), Some(name)) = (rs.namespace(), rs.metadata.name.clone()) else {
        return Err(ReplicaSetError::Incomplete);
    };
    ctx.metrics.reconciled(CONTROLLER);
    let api: Api<ManifestWorkReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    let key = replica_set_key(&rs);
    // Read live rather than from caches: a cache that lags behind our own writes would make
    // us create a second work for a cluster.
    let own_works = Api::<ManifestWork>::all(ctx.client.clone())
        .list(&ListParams::default().labels(&format!("{MANIFEST_WORK_REPLICA_SET_LABEL}={key}")))
        .await?
        .items;

    if rs.metadata.deletion_timestamp.is_some() {
        return finalize(&rs, &api, &own_works, &ctx).await;
    }
    if !rs
        .finalizers()
        .iter()
        .any(|f| f == MANIFEST_WORK_REPLICA_SET_FINALIZER)
    {
        let mut finalizers = rs.finalizers().to_vec();
        finalizers.push(MANIFEST_WORK_REPLICA_SET_FINALIZER.to_owned());
        let patch = json!({"metadata": {
            "finalizers": finalizers, "resourceVersion": rs.resource_version()}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        return Ok(Action::await_change());
    }

    let placements: BTreeMap<String, Placement> =
        Api::<Placement>::namespaced(ctx.client.clone(), &namespace)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|p| (p.name_any(), p))
            .collect();
    let decisions = Api::<PlacementDecision>::namespaced(ctx.client.clone(), &namespace)
        .list(&ListParams::default().labels(ocm_api::cluster::names::labels::PLACEMENT))
        .await?
        .items;
    let clusters: BTreeMap<String, ClusterFacts> = if rs
        .annotations()
        .contains_key(super::overrides::OVERRIDES_ANNOTATION)
    {
        Api::<ManagedCluster>::all(ctx.client.clone())
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .map(|c| (c.name_any(), facts(c)))
            .collect()
    } else {
        BTreeMap::new()
    };
    let planned = plan(&ReplicaSetInput {
        replica_set: &rs,
        placements: &placements,
        decisions: &decisions,
        works: &own_works,
        clusters: &clusters,
        now: jiff::Timestamp::now(),
    });

    for desired in &planned.apply {
        apply_work(&ctx.client, &key, desired).await?;
    }
    for (ns, work) in &planned.delete {
        delete_work(&ctx.client, ns, work).await?;
    }

    let mut status = rs.status.clone().unwrap_or_default();
    let mut conditions = status.conditions.clone();
    for condition in planned.status.conditions.iter().cloned() {
        ocm_runtime::conditions::set_condition(&mut conditions, condition);
    }
    let new_status = ocm_api::work::v1alpha1::ManifestWorkReplicaSetStatus {
        conditions,
        ..planned.status.clone()
    };
    if rs.status.as_ref() != Some(&new_status) {
        status = new_status;
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await?;
    }
    Ok(match planned.requeue_after {
        Some(after) => Action::requeue(after.max(Duration::from_millis(200))),
        None => Action::requeue(super::replicaset::MAX_REQUEUE),
    })
}

fn facts(cluster: &ManagedCluster) -> ClusterFacts {
    ClusterFacts {
        labels: cluster.labels().clone(),
        claims: cluster
            .status
            .as_ref()
            .map(|s| {
                s.cluster_claims
                    .iter()
                    .map(|c| (c.name.clone(), c.value.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Creates or updates one work. A new work is created with `generateName`, after checking
/// the live namespace (not the cache) so that a slow cache never produces a second work for
/// the same cluster.
async fn apply_work(
    client: &kube::Client,
    key: &str,
    desired: &DesiredWork,
) -> Result<(), ReplicaSetError> {
    let api: Api<ManifestWork> = Api::namespaced(client.clone(), &desired.namespace);
    let placement = desired
        .labels
        .get(PLACEMENT_NAME_LABEL)
        .cloned()
        .unwrap_or_default();
    let name = match &desired.name {
        Some(name) => Some(name.clone()),
        None => api
            .list(&ListParams::default().labels(&format!(
                "{MANIFEST_WORK_REPLICA_SET_LABEL}={key},{PLACEMENT_NAME_LABEL}={placement}"
            )))
            .await?
            .items
            .first()
            .map(|w| w.name_any()),
    };
    let body = json!({
        "metadata": {"labels": desired.labels},
        "spec": desired.spec,
    });
    match name {
        Some(name) => {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&body))
                .await?;
        }
        None => {
            let mut work: ManifestWork = serde_json::from_value(json!({
                "apiVersion": "work.open-cluster-management.io/v1",
                "kind": "ManifestWork",
                "metadata": {
                    "generateName": desired.generate_name,
                    "namespace": desired.namespace,
                    "labels": desired.labels,
                },
                "spec": desired.spec,
            }))
            .map_err(kube::Error::SerdeError)?;
            work.meta_mut().name = None;
            api.create(&PostParams::default(), &work).await?;
        }
    }
    Ok(())
}

async fn delete_work(client: &kube::Client, ns: &str, name: &str) -> Result<(), ReplicaSetError> {
    let api: Api<ManifestWork> = Api::namespaced(client.clone(), ns);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn finalize(
    rs: &ManifestWorkReplicaSet,
    api: &Api<ManifestWorkReplicaSet>,
    works: &[ManifestWork],
    ctx: &Ctx,
) -> Result<Action, ReplicaSetError> {
    if !rs
        .finalizers()
        .iter()
        .any(|f| f == MANIFEST_WORK_REPLICA_SET_FINALIZER)
    {
        return Ok(Action::await_change());
    }
    for work in works {
        if work.metadata.deletion_timestamp.is_none()
            && let (Some(ns), Some(name)) = (work.namespace(), work.metadata.name.as_deref())
        {
            delete_work(&ctx.client, &ns, name).await?;
        }
    }
    if rs.spec.cascade_deletion_policy == CascadeDeletionPolicy::Foreground && !works.is_empty() {
        // Wait until the works are gone (their deletion events trigger us again).
        return Ok(Action::requeue(ctx.options.retry));
    }
    let finalizers: Vec<String> = rs
        .finalizers()
        .iter()
        .filter(|f| *f != MANIFEST_WORK_REPLICA_SET_FINALIZER)
        .cloned()
        .collect();
    let patch = json!({"metadata": {
        "finalizers": finalizers, "resourceVersion": rs.resource_version()}});
    let name = rs.metadata.name.clone().unwrap_or_default();
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(Action::await_change())
}

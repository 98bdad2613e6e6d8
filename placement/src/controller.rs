//! The placement controller: keeps every Placement's PlacementDecisions and status equal to
//! what the [`scheduler`](crate::scheduler) decides for the hub's current objects.
//!
//! It caches ManagedClusters, ManagedClusterSets, ManagedClusterSetBindings,
//! AddOnPlacementScores, PlacementDecisions and Placements with watches. Any change wakes it;
//! it then builds one [`Snapshot`] and schedules every placement against it (one snapshot for
//! the whole batch, so a burst of changes costs one pass), writes only what differs, and
//! sleeps until the next change or the earliest time a result changes by the clock alone
//! (toleration expiry, score validity).
//!
//! Writes per placement: PlacementDecisions that must exist are created or their
//! `status.decisions` updated, in page order, before surplus ones are deleted; the
//! placement's status last. Known limit: every change re-evaluates every placement (upstream
//! narrows this with indexes); with thousands of placements a change costs a full pass.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::labels::PLACEMENT;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::Notify;

use crate::scheduler::{Snapshot, SnapshotInput, merge_conditions, schedule};

/// Errors of one placement's writes (logged; the next pass retries).
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// A call to the hub failed.
    #[error("hub API: {0}")]
    Api(#[from] kube::Error),
}

fn cache<K>(api: Api<K>, wake: Arc<Notify>, shutdown: &Shutdown) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default().any_semantic()),
    )
    .default_backoff()
    .touched_objects();
    let token = shutdown.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                next = stream.next() => match next {
                    Some(_) => wake.notify_one(),
                    None => return,
                },
            }
        }
    });
    reader
}

/// Runs the controller until `shutdown` is cancelled.
pub async fn run(client: kube::Client, shutdown: Shutdown) {
    let wake = Arc::new(Notify::new());
    let clusters = cache(
        Api::<ManagedCluster>::all(client.clone()),
        wake.clone(),
        &shutdown,
    );
    let sets = cache(
        Api::<ManagedClusterSet>::all(client.clone()),
        wake.clone(),
        &shutdown,
    );
    let bindings = cache(
        Api::<ManagedClusterSetBinding>::all(client.clone()),
        wake.clone(),
        &shutdown,
    );
    let scores = cache(
        Api::<AddOnPlacementScore>::all(client.clone()),
        wake.clone(),
        &shutdown,
    );
    let decisions = cache(
        Api::<PlacementDecision>::all(client.clone()),
        wake.clone(),
        &shutdown,
    );
    let placements = cache(
        Api::<Placement>::all(client.clone()),
        wake.clone(),
        &shutdown,
    );
    for ready in [
        clusters.wait_until_ready().await,
        sets.wait_until_ready().await,
        bindings.wait_until_ready().await,
        scores.wait_until_ready().await,
        decisions.wait_until_ready().await,
        placements.wait_until_ready().await,
    ] {
        if ready.is_err() {
            return;
        }
    }
    let mut next_check: Option<jiff::Timestamp> = None;
    loop {
        let now = jiff::Timestamp::now();
        let snapshot = Snapshot::new(SnapshotInput {
            clusters: clusters.state(),
            cluster_sets: sets.state(),
            bindings: bindings.state(),
            scores: scores.state(),
            decisions: decisions.state(),
            now,
        });
        next_check = next_check.filter(|t| *t > now);
        for placement in placements.state() {
            let result = schedule(&placement, &snapshot);
            if result.skipped.is_some() {
                continue;
            }
            if let Some(at) = result.requeue_at {
                next_check = Some(next_check.map_or(at, |n| n.min(at)));
            }
            if let Err(err) = write(&client, &placement, &decisions, result).await {
                tracing::debug!(%err, placement = %placement.name_any(), "writing placement decisions");
                next_check = Some(now + jiff::SignedDuration::from_secs(1));
            }
        }
        let sleep = async {
            match next_check {
                Some(at) => {
                    let wait = at.duration_since(jiff::Timestamp::now());
                    let wait = std::time::Duration::try_from(wait).unwrap_or_default();
                    tokio::time::sleep(wait).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = wake.notified() => {}
            () = sleep => {}
        }
    }
}

async fn write(
    client: &kube::Client,
    placement: &Placement,
    cached: &Store<PlacementDecision>,
    result: crate::scheduler::ScheduleResult,
) -> Result<(), PlacementError> {
    let ns = placement.namespace().unwrap_or_default();
    let name = placement.name_any();
    let api: Api<PlacementDecision> = Api::namespaced(client.clone(), &ns);
    let existing: BTreeMap<String, Arc<PlacementDecision>> = cached
        .state()
        .into_iter()
        .filter(|d| d.namespace().as_deref() == Some(ns.as_str()))
        .filter(|d| d.labels().get(PLACEMENT) == Some(&name))
        .map(|d| (d.name_any(), d))
        .collect();
    let mut wanted = Vec::new();
    let mut created = false;
    for desired in &result.decisions {
        let decision_name = desired.name_any();
        wanted.push(decision_name.clone());
        let status = desired.status.clone().unwrap_or_default();
        match existing.get(&decision_name) {
            Some(current) => {
                if current.labels() != desired.labels() {
                    let patch = json!({"metadata": {"labels": desired.labels()}});
                    api.patch(
                        &decision_name,
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
                }
                if current.status.clone().unwrap_or_default() != status {
                    api.patch_status(
                        &decision_name,
                        &PatchParams::default(),
                        &Patch::Merge(&json!({"status": status})),
                    )
                    .await?;
                }
            }
            None => {
                created = true;
                let mut fresh = desired.clone();
                fresh.status = None;
                match api.create(&PostParams::default(), &fresh).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
                api.patch_status(
                    &decision_name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": status})),
                )
                .await?;
            }
        }
    }
    // Surplus decisions go last, so no selected cluster is missing in between. From the
    // cache; only after creating a decision (the cache may then lag behind an earlier pass's
    // creates) is the server asked.
    let mut surplus: Vec<String> = existing
        .keys()
        .filter(|n| !wanted.contains(n))
        .cloned()
        .collect();
    if created {
        surplus = api
            .list(&ListParams::default().labels(&format!("{PLACEMENT}={name}")))
            .await?
            .items
            .iter()
            .map(ResourceExt::name_any)
            .filter(|n| !wanted.contains(n))
            .collect();
    }
    for decision in surplus {
        match api.delete(&decision, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    let old = placement.status.clone().unwrap_or_default();
    let mut status = result.status;
    status.conditions = merge_conditions(&old.conditions, &status.conditions);
    if status != old {
        let placements: Api<Placement> = Api::namespaced(client.clone(), &ns);
        placements
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": status})),
            )
            .await?;
    }
    Ok(())
}

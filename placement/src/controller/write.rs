//! Writing one placement's schedule result: its PlacementDecision pages (in the gap-free
//! order of [`pages::plan`](super::pages::plan)) and then its status.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1beta1::{ClusterDecision, Placement, PlacementDecision, PlacementStatus};
use serde_json::json;

use super::PlacementError;
use super::events::WriteReport;
use super::pages::{PageStep, plan};
use crate::scheduler::merge_conditions;

/// The pages of one placement: decision name → its clusters.
pub(crate) type Pages = BTreeMap<String, Vec<ClusterDecision>>;

/// The clusters of one PlacementDecision.
pub(crate) fn clusters_of(decision: &PlacementDecision) -> Vec<ClusterDecision> {
    decision
        .status
        .as_ref()
        .map(|s| s.decisions.clone())
        .unwrap_or_default()
}

fn pages_of<'a>(decisions: impl IntoIterator<Item = &'a PlacementDecision>) -> Pages {
    decisions
        .into_iter()
        .map(|d| (d.name_any(), clusters_of(d)))
        .collect()
}

/// Writes `decisions` and `status` for `placement`, given its decisions as the cache has them and the pages
/// last written for it, and returns the pages as written.
pub(crate) async fn write(
    client: &kube::Client,
    placement: &Placement,
    cached: &[Arc<PlacementDecision>],
    written: Option<&Pages>,
    decisions: Vec<PlacementDecision>,
    status: PlacementStatus,
) -> Result<(Pages, WriteReport), PlacementError> {
    let ns = placement.namespace().unwrap_or_default();
    let name = placement.name_any();
    let api: Api<PlacementDecision> = Api::namespaced(client.clone(), &ns);
    let desired: Vec<(String, Vec<ClusterDecision>)> = decisions
        .iter()
        .map(|d| (d.name_any(), clusters_of(d)))
        .collect();
    let existing: BTreeMap<String, &PlacementDecision> =
        cached.iter().map(|d| (d.name_any(), d.as_ref())).collect();
    let mut steps = plan(&pages_of(existing.values().copied()), &desired);
    // The cache may lag behind this controller's earlier writes: a page it created may not be
    // cached yet (creating it again meets 409 and only writes its status), and such a page
    // may already be surplus.
    steps.extend(
        written
            .into_iter()
            .flat_map(|w| w.keys())
            .filter(|n| !existing.contains_key(*n) && !desired.iter().any(|(d, _)| d == *n))
            .map(|n| PageStep::Delete(n.clone())),
    );
    let mut report = WriteReport::default();
    for want in &decisions {
        if let Some(current) = existing.get(&want.name_any())
            && current.labels() != want.labels()
        {
            report.updated(&want.name_any());
            let patch = json!({"metadata": {"labels": want.labels()}});
            api.patch(
                &want.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        }
    }
    for step in steps {
        match step {
            PageStep::Write {
                page,
                clusters,
                create,
            } => {
                let want = &decisions[page];
                let decision_name = want.name_any();
                if create {
                    let mut fresh = want.clone();
                    fresh.status = None;
                    match api.create(&PostParams::default(), &fresh).await {
                        Ok(_) => report.created.push(decision_name.clone()),
                        Err(kube::Error::Api(e)) if e.code == 409 => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                report.updated(&decision_name);
                api.patch_status(
                    &decision_name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": {"decisions": clusters}})),
                )
                .await?;
            }
            PageStep::Delete(decision_name) => {
                match api.delete(&decision_name, &DeleteParams::default()).await {
                    Ok(_) => report.deleted.push(decision_name),
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    let old = placement.status.clone().unwrap_or_default();
    let mut status = status;
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
    Ok((desired.into_iter().collect(), report))
}

//! PlacementDecision objects, as upstream's `generateDecision`: each group's clusters (sorted
//! by name) are cut into pages of at most [`MAX_CLUSTER_DECISIONS`]; an empty group still gets
//! one empty page. Pages are named `<placement>-decision-<N>` with N counting from 1 across all
//! groups, carry the labels placement / decision-group-name / decision-group-index, and are
//! owned by the placement (controller reference, blocking owner deletion). The `reason` and
//! `score` of each cluster decision are left empty, as upstream.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use ocm_api::cluster::GROUP;
use ocm_api::cluster::names::{DECISION_NAME_INFIX, MAX_CLUSTER_DECISIONS, labels};
use ocm_api::cluster::v1beta1::{
    ClusterDecision, DecisionGroupStatus, Placement, PlacementDecision, PlacementDecisionStatus,
};

use super::groups::Group;
use super::result::DecisionGroupResult;
use super::snapshot::Snapshot;

/// Name of the `n`-th (from 1) PlacementDecision of `placement`.
pub fn decision_name(placement: &str, n: usize) -> String {
    format!("{placement}{DECISION_NAME_INFIX}{n}")
}

/// The controller owner reference a placement puts on its decisions.
pub fn owner_reference(placement: &Placement) -> OwnerReference {
    OwnerReference {
        api_version: format!("{GROUP}/v1beta1"),
        kind: "Placement".to_string(),
        name: placement.metadata.name.clone().unwrap_or_default(),
        uid: placement.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The decisions, the group status and the groups with names.
pub(crate) fn build(
    placement: &Placement,
    snapshot: &Snapshot,
    groups: &[Group],
) -> (
    Vec<PlacementDecision>,
    Vec<DecisionGroupStatus>,
    Vec<DecisionGroupResult>,
) {
    let name = placement.metadata.name.clone().unwrap_or_default();
    let owner = owner_reference(placement);
    let mut decisions = Vec::new();
    let mut statuses = Vec::with_capacity(groups.len());
    let mut results = Vec::with_capacity(groups.len());
    for (index, group) in groups.iter().enumerate() {
        let index = index as i32;
        let mut names = Vec::new();
        let pages: Vec<&[u32]> = if group.clusters.is_empty() {
            vec![&[]]
        } else {
            group.clusters.chunks(MAX_CLUSTER_DECISIONS).collect()
        };
        for page in pages {
            let decision_name = decision_name(&name, decisions.len() + 1);
            let labels = BTreeMap::from([
                (labels::PLACEMENT.to_string(), name.clone()),
                (labels::DECISION_GROUP_NAME.to_string(), group.name.clone()),
                (labels::DECISION_GROUP_INDEX.to_string(), index.to_string()),
            ]);
            let mut decision = PlacementDecision::new(&decision_name, Default::default());
            decision.metadata = ObjectMeta {
                name: Some(decision_name.clone()),
                namespace: placement.metadata.namespace.clone(),
                labels: Some(labels),
                owner_references: Some(vec![owner.clone()]),
                ..ObjectMeta::default()
            };
            decision.status = Some(PlacementDecisionStatus {
                decisions: page
                    .iter()
                    .map(|&i| ClusterDecision {
                        cluster_name: snapshot.entry(i).name.to_string(),
                        reason: String::new(),
                        score: None,
                    })
                    .collect(),
            });
            decisions.push(decision);
            names.push(decision_name);
        }
        statuses.push(DecisionGroupStatus {
            decision_group_index: index,
            decision_group_name: group.name.clone(),
            decisions: names.clone(),
            clusters_count: group.clusters.len() as i32,
        });
        results.push(DecisionGroupResult {
            index,
            name: group.name.clone(),
            clusters: group
                .clusters
                .iter()
                .map(|&i| snapshot.entry(i).name.clone())
                .collect(),
            decision_names: names,
        });
    }
    (decisions, statuses, results)
}

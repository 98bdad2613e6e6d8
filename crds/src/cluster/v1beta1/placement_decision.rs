//! PlacementDecision: one page of the clusters a Placement selected.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Nothing: a PlacementDecision carries only a status. The `no_spec` option keeps a `spec`
/// key off the wire.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.open-cluster-management.io",
    version = "v1beta1",
    kind = "PlacementDecision",
    doc = "A page of the clusters a Placement selected, written by the placement controller. Find a placement's decisions with the cluster.open-cluster-management.io/placement label; each decision group has its own pages.",
    plural = "placementdecisions",
    namespaced,
    no_spec,
    status = "PlacementDecisionStatus"
)]
pub struct PlacementDecisionSpec {}

/// The selected clusters of this page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementDecisionStatus {
    /// Selected clusters; the controller puts at most
    /// [`MAX_CLUSTER_DECISIONS`](crate::cluster::names::MAX_CLUSTER_DECISIONS) in one object.
    pub decisions: Vec<ClusterDecision>,
}

/// One selected cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecision {
    /// Name of the ManagedCluster.
    pub cluster_name: String,
    /// Why the cluster was selected (currently left empty by the scheduler).
    pub reason: String,
    /// Total prioritizer score of the cluster; absent when zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
}

//! AddOnPlacementScore: scores an addon computes for its cluster, for use by placement
//! prioritizers and CEL selectors.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Nothing: an AddOnPlacementScore carries only a status. The `no_spec` option keeps a `spec`
/// key off the wire.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.open-cluster-management.io",
    version = "v1alpha1",
    kind = "AddOnPlacementScore",
    doc = "Scores published by an addon for the cluster whose namespace holds this object. Placements refer to them by object name and score name.",
    plural = "addonplacementscores",
    namespaced,
    no_spec,
    status = "AddOnPlacementScoreStatus"
)]
pub struct AddOnPlacementScoreSpec {}

/// The scores and how long they stay valid.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnPlacementScoreStatus {
    /// Conditions reported by the addon.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Named scores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub scores: Vec<AddOnPlacementScoreItem>,
    /// When the scores expire; absent means never. Expired scores count as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Time>,
}

/// One named score.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnPlacementScoreItem {
    /// Score name, referred to by placements.
    pub name: String,
    /// Score value, from -100 to 100.
    #[schemars(range(min = -100, max = 100))]
    pub value: i32,
}

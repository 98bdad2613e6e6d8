//! ManifestWorkReplicaSet: one ManifestWork template rolled out to every cluster a placement
//! selects.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::v1alpha1::RolloutStrategy;
use crate::work::v1::ManifestWorkSpec;

/// The work template and the placements whose clusters receive it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "work.open-cluster-management.io",
    version = "v1alpha1",
    kind = "ManifestWorkReplicaSet",
    doc = "Deploys one ManifestWork template to every managed cluster its placements select, following each placement's rollout strategy, and removes the works of clusters no longer selected.",
    plural = "manifestworkreplicasets",
    namespaced,
    shortname = "mwrs",
    status = "ManifestWorkReplicaSetStatus",
    printcolumn = r#"{"name":"Placement","type":"string","jsonPath":".status.conditions[?(@.type==\"PlacementVerified\")].reason"}"#,
    printcolumn = r#"{"name":"Found","type":"string","jsonPath":".status.conditions[?(@.type==\"PlacementVerified\")].status"}"#,
    printcolumn = r#"{"name":"ManifestWorks","type":"string","jsonPath":".status.conditions[?(@.type==\"ManifestworkApplied\")].reason"}"#,
    printcolumn = r#"{"name":"Applied","type":"string","jsonPath":".status.conditions[?(@.type==\"ManifestworkApplied\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetSpec {
    /// Spec of the ManifestWork created in each selected cluster's namespace. Always
    /// serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub manifest_work_template: ManifestWorkSpec,

    /// Placements (in this namespace) whose decisions choose the clusters, each with its
    /// rollout strategy.
    #[schemars(extend("minItems" = 1))]
    pub placement_refs: Vec<LocalPlacementReference>,

    /// Whether deleting this object waits for its ManifestWorks to be gone (`Foreground`)
    /// or not (`Background`); the API server fills in `Background` when left out.
    #[schemars(extend("default" = "Background"))]
    pub cascade_deletion_policy: CascadeDeletionPolicy,
}

/// A Placement in the ManifestWorkReplicaSet's namespace, with how to roll out to its
/// clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalPlacementReference {
    /// Name of the Placement.
    #[schemars(length(min = 1))]
    pub name: String,
    /// How the works reach the placement's clusters; absent means all at once with no
    /// progress deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"type": "All", "all": {"progressDeadline": "None"}}))]
    pub rollout_strategy: Option<RolloutStrategy>,
}

/// Whether a ManifestWorkReplicaSet's deletion waits for its ManifestWorks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CascadeDeletionPolicy {
    /// Delete at once; the works are removed afterwards.
    #[default]
    Background,
    /// Keep the object until all its works are gone.
    Foreground,
}

/// Rollout progress of a ManifestWorkReplicaSet. Summaries are always serialized, as the
/// controller writes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetStatus {
    /// PlacementVerified, PlacementRolledOut and ManifestworkApplied conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Counts over the works of every placement.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub summary: ManifestWorkReplicaSetSummary,
    /// Counts per placement.
    #[serde(default, rename = "placementSummary")]
    #[schemars(transform = crate::schema::no_default)]
    pub placements_summary: Vec<PlacementSummary>,
}

/// Rollout progress for one placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSummary {
    /// Placement name.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub name: String,
    /// Decision groups whose works are all available, out of all groups, as `x/y`.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub available_decision_groups: String,
    /// Counts over this placement's works.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub summary: ManifestWorkReplicaSetSummary,
}

/// Counts of the ManifestWorks of a ManifestWorkReplicaSet by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetSummary {
    /// Works that exist.
    #[serde(default)]
    #[schemars(schema_with = "crate::work::schema::integer", transform = crate::schema::no_default)]
    pub total: i64,
    /// Works whose Progressing condition is True.
    #[serde(default)]
    #[schemars(schema_with = "crate::work::schema::integer", transform = crate::schema::no_default)]
    pub progressing: i64,
    /// Works whose Available condition is True.
    #[serde(default)]
    #[schemars(schema_with = "crate::work::schema::integer", transform = crate::schema::no_default)]
    pub available: i64,
    /// Works whose Degraded condition is True.
    #[serde(default)]
    #[schemars(schema_with = "crate::work::schema::integer", transform = crate::schema::no_default)]
    pub degraded: i64,
    /// Works whose Applied condition is True.
    #[serde(default)]
    #[schemars(schema_with = "crate::work::schema::integer", transform = crate::schema::no_default)]
    pub applied: i64,
    /// Works the rollout will create in the end (upstream's controller never sets it: 0).
    #[serde(default)]
    #[schemars(schema_with = "crate::work::schema::integer", transform = crate::schema::no_default)]
    pub desired_total: i64,
    /// Clusters running the current template (upstream's controller never sets it: 0).
    #[serde(default)]
    #[schemars(schema_with = "crate::work::schema::integer", transform = crate::schema::no_default)]
    pub updated: i64,
}

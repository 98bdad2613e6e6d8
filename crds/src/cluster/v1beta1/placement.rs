//! Placement: chooses managed clusters from the cluster sets bound into its namespace.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, LabelSelector, LabelSelectorRequirement, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::v1::TaintEffect;

/// Which clusters to select, how to rank them, and how to split them into decision groups.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.open-cluster-management.io",
    version = "v1beta1",
    kind = "Placement",
    doc = "Selects managed clusters from the ManagedClusterSets bound into its namespace, filtered by predicates and tolerations and ranked by prioritizers. The result is written to PlacementDecisions.",
    plural = "placements",
    namespaced,
    status = "PlacementStatus",
    printcolumn = r#"{"name":"Succeeded","type":"string","jsonPath":".status.conditions[?(@.type==\"PlacementSatisfied\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"PlacementSatisfied\")].reason"}"#,
    printcolumn = r#"{"name":"SelectedClusters","type":"integer","jsonPath":".status.numberOfSelectedClusters"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSpec {
    /// Bound cluster sets to select from; empty means every set bound into the namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_sets: Vec<String>,
    /// How many clusters to select; absent means all that qualify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_clusters: Option<i32>,
    /// Cluster selectors, ORed; empty means every candidate cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicates: Vec<ClusterPredicate>,
    /// How clusters are ranked when only some of them are selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prioritizer_policy: Option<PrioritizerPolicy>,
    /// How selected clusters are spread over topologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_policy: Option<SpreadPolicy>,
    /// Cluster taints this placement tolerates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// How the selected clusters are split into decision groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_strategy: Option<DecisionStrategy>,
    /// Order of the decisions: by cluster name or by score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "ClusterName"))]
    pub sort_by: Option<PlacementSortByType>,
    /// Least time (`30s`, `1m`, `1h`) between two re-schedules caused by score changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+[hms]$"), extend("default" = "1m"))]
    pub score_rate_limit: Option<String>,
}

/// Order of the decisions of a placement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PlacementSortByType {
    /// Alphabetically by cluster name.
    #[default]
    ClusterName,
    /// Highest score first.
    Score,
}

/// One cluster predicate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPredicate {
    /// Selector a cluster must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_cluster_selector: Option<ClusterSelector>,
}

/// Cluster selector: labels AND claims AND every CEL expression must match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSelector {
    /// Selector over ManagedCluster labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Selector over the cluster claims in the ManagedCluster status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_selector: Option<ClusterClaimSelector>,
    /// CEL expressions over the ManagedCluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel_selector: Option<ClusterCelSelector>,
}

/// CEL expressions a cluster must all satisfy; `managedCluster` is the ManagedCluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCelSelector {
    /// The expressions, each returning a bool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cel_expressions: Vec<String>,
}

/// Selector over cluster claims, with label-selector semantics (claim name as key).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimSelector {
    /// Requirements, ANDed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// Prioritizers and their weights.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizerPolicy {
    /// `Additive` keeps the default prioritizers next to the configured ones; `Exact` uses
    /// only the configured ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Additive"))]
    pub mode: Option<String>,
    /// Prioritizers with their weights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configurations: Vec<PrioritizerConfig>,
}

/// One prioritizer and its weight.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizerConfig {
    /// Where the score comes from.
    pub score_coordinate: ScoreCoordinate,
    /// Weight of the score, from -10 to 10; 0 disables the prioritizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -10, max = 10), extend("default" = 1))]
    pub weight: Option<i32>,
}

/// Source of a prioritizer score: a built-in prioritizer or an AddOnPlacementScore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScoreCoordinate {
    /// Kind of source.
    #[serde(rename = "type")]
    #[schemars(extend("default" = "BuiltIn"))]
    pub type_: ScoreCoordinateType,
    /// Name of the built-in prioritizer (`Balance`, `Steady`, `ResourceAllocatableCPU`,
    /// `ResourceAllocatableMemory`, `Spread`) when the type is `BuiltIn`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub built_in: String,
    /// The addon score when the type is `AddOn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on: Option<AddOnScore>,
}

/// Kind of score source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ScoreCoordinateType {
    /// A prioritizer built into the scheduler.
    #[default]
    BuiltIn,
    /// A score from an AddOnPlacementScore in the cluster namespace.
    AddOn,
}

/// Reference to a score of an AddOnPlacementScore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnScore {
    /// Name of the AddOnPlacementScore object.
    pub resource_name: String,
    /// Name of the score inside it.
    pub score_name: String,
}

/// Spread of the selected clusters over topologies.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadPolicy {
    /// Spread constraints, at most 8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("maxItems" = 8))]
    pub spread_constraints: Vec<SpreadConstraintsTerm>,
}

/// One spread constraint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraintsTerm {
    /// Label or claim name whose values define the topology domains.
    #[schemars(
        length(max = 316),
        regex(
            pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
        )
    )]
    pub topology_key: String,
    /// Whether `topologyKey` names a label or a claim.
    pub topology_key_type: TopologyKeyType,
    /// Largest allowed difference in selected clusters between two domains, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub max_skew: Option<i32>,
    /// What to do when the skew cannot be kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "ScheduleAnyway"))]
    pub when_unsatisfiable: Option<UnsatisfiableMaxSkewAction>,
}

/// What a spread topology key names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TopologyKeyType {
    /// A ManagedCluster label.
    #[default]
    Label,
    /// A cluster claim.
    Claim,
}

/// Action when a spread constraint cannot be satisfied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UnsatisfiableMaxSkewAction {
    /// Select fewer clusters rather than break the constraint.
    DoNotSchedule,
    /// Select anyway, keeping the skew as small as possible.
    #[default]
    ScheduleAnyway,
}

/// A toleration of cluster taints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// Taint key to match; empty (with `Exists`) matches every key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 316), regex(pattern = crate::schema::QUALIFIED_NAME_PATTERN))]
    pub key: String,
    /// `Equal` (compare the value) or `Exists` (any value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Equal"))]
    pub operator: Option<String>,
    /// Taint value to match with `Equal`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub value: String,
    /// Taint effect to match; absent matches every effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    /// How long, counted from the taint's `timeAdded`, a `NoSelect` taint is tolerated;
    /// absent means forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// How the selected clusters are split into decision groups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionStrategy {
    /// Grouping rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_strategy: Option<GroupStrategy>,
}

/// Grouping rules of a decision strategy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupStrategy {
    /// Named groups, filled first with the selected clusters matching their selectors; the
    /// remaining clusters form unnamed groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_groups: Vec<DecisionGroup>,
    /// Largest group size, as a count or a percentage of the selected clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::cluster::schema::clusters_per_decision_group")]
    pub clusters_per_decision_group: Option<IntOrString>,
}

/// A named decision group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionGroup {
    /// Group name, written to the `decision-group-name` label of its PlacementDecisions.
    #[schemars(regex(pattern = r"^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$"))]
    pub group_name: String,
    /// Which selected clusters belong to the group.
    pub group_cluster_selector: GroupClusterSelector,
}

/// Selector of the clusters of a decision group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupClusterSelector {
    /// Selector over ManagedCluster labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Selector over cluster claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_selector: Option<ClusterClaimSelector>,
}

/// Observed state of a placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStatus {
    /// Number of selected clusters. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub number_of_selected_clusters: i32,
    /// Decision groups and the PlacementDecisions of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_groups: Vec<DecisionGroupStatus>,
    /// `PlacementSatisfied` and `PlacementMisconfigured`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Last time a score change re-ran the scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_score_update_time: Option<Time>,
}

/// One decision group of a placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionGroupStatus {
    /// Group index, written to the `decision-group-index` label. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub decision_group_index: i32,
    /// Group name (empty for unnamed groups). Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub decision_group_name: String,
    /// Names of the group's PlacementDecisions. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub decisions: Vec<String>,
    /// Number of clusters in the group. Always serialized.
    #[serde(default, rename = "clusterCount")]
    #[schemars(extend("default" = 0))]
    pub clusters_count: i32,
}

//! Rollout strategies shared by the workload APIs (ManifestWorkReplicaSet, addon install
//! strategies): how a change reaches the clusters a placement selected, all at once or step
//! by step.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Pattern of a progress deadline: a duration in hours, minutes or seconds, or `None`.
const PROGRESS_DEADLINE_PATTERN: &str = r"^(([0-9])+[h|m|s])|None$";

/// How a workload is rolled out to the clusters a placement selected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// Which rollout to run; absent means `All`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "All"))]
    pub type_: Option<RolloutType>,
    /// Settings of an `All` rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<RolloutAll>,
    /// Settings of a `Progressive` rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive: Option<RolloutProgressive>,
    /// Settings of a `ProgressivePerGroup` rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive_per_group: Option<RolloutProgressivePerGroup>,
}

/// Kind of rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RolloutType {
    /// Every selected cluster at once.
    #[default]
    All,
    /// Cluster by cluster, within a concurrency limit; the next cluster waits for a success.
    Progressive,
    /// Decision group by decision group; the next group waits until the current one succeeded.
    ProgressivePerGroup,
}

/// Timing and failure budget of a rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutConfig {
    /// Soak time (Go duration such as `90m`) to wait after a success before moving on; only
    /// used by progressive rollouts. `0` means move on at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "0"))]
    pub min_success_time: Option<String>,
    /// How long to wait for a cluster to succeed before counting it as failed (`2h`, `90m`,
    /// `360s`), or `None` to wait forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = PROGRESS_DEADLINE_PATTERN), extend("default" = "None"))]
    pub progress_deadline: Option<String>,
    /// Number or percentage of clusters of the current step allowed to fail (or time out)
    /// before the rollout stops. Mandatory groups tolerate no failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::cluster::schema::count_or_percent",
        extend("default" = 0)
    )]
    pub max_failures: Option<IntOrString>,
}

/// Decision groups a rollout handles first, where any failure stops the rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandatoryDecisionGroups {
    /// The groups, by name or index as defined in the placement's decision strategy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mandatory_decision_groups: Vec<MandatoryDecisionGroup>,
}

/// A decision group picked by name (checked first) or by index.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandatoryDecisionGroup {
    /// Value of the `cluster.open-cluster-management.io/decision-group-name` label of the
    /// group's PlacementDecisions.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group_name: String,
    /// Value of the `cluster.open-cluster-management.io/decision-group-index` label of the
    /// group's PlacementDecisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_index: Option<i32>,
}

/// Settings of an `All` rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutAll {
    /// Timing and failure budget.
    #[serde(flatten)]
    pub rollout_config: RolloutConfig,
}

/// Settings of a `ProgressivePerGroup` rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgressivePerGroup {
    /// Timing and failure budget.
    #[serde(flatten)]
    pub rollout_config: RolloutConfig,
    /// Groups rolled out first.
    #[serde(flatten)]
    pub mandatory_decision_groups: MandatoryDecisionGroups,
}

/// Settings of a `Progressive` rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgressive {
    /// Timing and failure budget.
    #[serde(flatten)]
    pub rollout_config: RolloutConfig,
    /// Groups rolled out first.
    #[serde(flatten)]
    pub mandatory_decision_groups: MandatoryDecisionGroups,
    /// Most clusters (number or percentage) updated at the same time; absent means the
    /// placement's `clustersPerDecisionGroup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::cluster::schema::count_or_percent")]
    pub max_concurrency: Option<IntOrString>,
}

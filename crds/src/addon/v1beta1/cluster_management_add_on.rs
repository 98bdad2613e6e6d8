//! ClusterManagementAddOn (v1beta1): the hub-wide registration of an addon, its default
//! configs and how it gets installed on clusters.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AddOnConfig, ConfigSpecHash};
use crate::cluster::v1alpha1::RolloutStrategy;

/// Desired state of an addon hub-wide.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "addon.open-cluster-management.io",
    version = "v1beta1",
    kind = "ClusterManagementAddOn",
    doc = "An addon known to the hub. Its name is the addon name; ManagedClusterAddOns of the same name enable it on clusters. It carries the addon's description, its default configs, and the strategy that decides on which clusters it is installed.",
    plural = "clustermanagementaddons",
    shortname = "cma",
    shortname = "cmas",
    status = "ClusterManagementAddOnStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"DISPLAY NAME","type":"string","jsonPath":".spec.addOnMeta.displayName"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOnSpec {
    /// Display name and description of the addon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_meta: Option<AddOnMeta>,

    /// Default config object per config kind, used when neither the placement nor the
    /// ManagedClusterAddOn names one of that kind. At most one entry per group and resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["group", "resource"]))]
    pub default_configs: Vec<AddOnConfig>,

    /// How the addon is installed on clusters; absent means `Manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"type": "Manual"}))]
    pub install_strategy: Option<InstallStrategy>,
}

/// Human-readable information about an addon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnMeta {
    /// Name to display for the addon.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// Longer description of the addon.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// How an addon is installed on clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallStrategy {
    /// Install strategy kind; absent means `Manual`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Manual"))]
    pub type_: Option<InstallStrategyType>,
    /// With `Placements`: the placements whose selected clusters get the addon. When a
    /// cluster is selected by several, the last one in the list wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["namespace", "name"]))]
    pub placements: Vec<PlacementStrategy>,
}

/// Kind of addon install strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum InstallStrategyType {
    /// ManagedClusterAddOns are created by users; the hub creates none.
    #[default]
    Manual,
    /// The hub creates a ManagedClusterAddOn in every cluster the placements select and
    /// removes it when the cluster is no longer selected.
    Placements,
}

/// A placement whose clusters get the addon, with the configs and rollout used for them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStrategy {
    /// Namespace of the placement.
    #[schemars(length(min = 1))]
    pub namespace: String,
    /// Name of the placement.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Configs for the clusters of this placement; they override the defaults of the same
    /// group and resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<AddOnConfig>,
    /// How config changes reach the clusters of this placement; absent means all at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"type": "All"}))]
    pub rollout_strategy: Option<RolloutStrategy>,
}

/// Observed state of an addon hub-wide.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOnStatus {
    /// Default config objects in effect, with their spec hashes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_config_references: Vec<DefaultConfigReference>,
    /// Per placement of the install strategy: configs in effect and rollout conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_progressions: Vec<InstallProgression>,
}

/// A default config in effect for a config kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultConfigReference {
    /// API group of the config resource; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// Plural resource name of the config kind.
    #[schemars(length(min = 1))]
    pub resource: String,
    /// The config object wanted, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
}

/// Rollout progress of the addon on the clusters of one placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallProgression {
    /// Namespace of the placement.
    #[schemars(length(min = 1))]
    pub namespace: String,
    /// Name of the placement.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Configs of this placement: wanted, last known good and last applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_references: Vec<InstallConfigReference>,
    /// Rollout conditions (`Progressing`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// State of one config kind in a placement's rollout.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfigReference {
    /// API group of the config resource; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// Plural resource name of the config kind.
    #[schemars(length(min = 1))]
    pub resource: String,
    /// The config object wanted, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
    /// The config last rolled out successfully to every cluster of the placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_known_good_config: Option<ConfigSpecHash>,
    /// The config last applied to every cluster of the placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_config: Option<ConfigSpecHash>,
}

//! ClusterManagementAddOn (v1beta1): the hub-wide registration of an addon, its default
//! configs and how it gets installed on clusters.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::AddOnConfig;

/// Shared with v1alpha1: the two versions define these identically.
pub use crate::addon::v1alpha1::{
    AddOnMeta, DefaultConfigReference, InstallConfigReference, InstallProgression, InstallStrategy,
    InstallStrategyType, PlacementStrategy,
};

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

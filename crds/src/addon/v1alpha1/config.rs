//! References to addon configuration objects, shared by ClusterManagementAddOn and
//! ManagedClusterAddOn.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Group and resource of a kind of addon config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigGroupResource {
    /// API group of the config resource; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// Plural resource name of the config kind.
    #[schemars(length(min = 1))]
    pub resource: String,
}

/// Namespace and name of one config object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReferent {
    /// Namespace of the config object; empty for cluster-scoped configs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the config object.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// One config object, by group, resource, namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnConfig {
    /// API group of the config resource; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// Plural resource name of the config kind.
    #[schemars(length(min = 1))]
    pub resource: String,
    /// Namespace of the config object; empty for cluster-scoped configs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the config object.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// A config object together with the hash of its spec at the time it was read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSpecHash {
    /// Namespace of the config object; empty for cluster-scoped configs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the config object.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Hash of the config object's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
}

/// Deprecated single-CRD config of an addon: the CRD and the object of it that configures
/// the addon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigCoordinates {
    /// Name of the CRD of the addon's config kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub crd_name: String,
    /// Name of the cluster-scoped config object of that CRD.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cr_name: String,
    /// Generation of the config object the addon last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_generation: Option<i64>,
}

//! ManagedClusterSetBinding: makes a cluster set usable by Placements in one namespace.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The cluster set this binding brings into its namespace.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.open-cluster-management.io",
    version = "v1beta2",
    kind = "ManagedClusterSetBinding",
    doc = "Binds a ManagedClusterSet into a namespace so that Placements in that namespace can select the set's clusters. The binding's name must equal the set's name, and creating it needs the bind permission on the set.",
    plural = "managedclustersetbindings",
    namespaced,
    shortname = "mclsetbinding",
    shortname = "mclsetbindings",
    status = "ManagedClusterSetBindingStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetBindingSpec {
    /// Name of the bound ManagedClusterSet; must equal the binding's own name.
    #[serde(default)]
    #[schemars(length(min = 1), transform = crate::schema::no_default)]
    pub cluster_set: String,
}

/// Observed state of a cluster set binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetBindingStatus {
    /// The `Bound` condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

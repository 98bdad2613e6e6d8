//! ManagedClusterSet: a named group of managed clusters that placements can select from.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which clusters belong to the set, and the namespaces the set asks its clusters to manage.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.open-cluster-management.io",
    version = "v1beta2",
    kind = "ManagedClusterSet",
    doc = "A group of managed clusters. Members are the clusters carrying the set's label, or the clusters matching a label selector. Bind a set into a namespace with a ManagedClusterSetBinding so Placements there can select its clusters.",
    plural = "managedclustersets",
    shortname = "mclset",
    shortname = "mclsets",
    status = "ManagedClusterSetStatus",
    printcolumn = r#"{"name":"Empty","type":"string","jsonPath":".status.conditions[?(@.type==\"ClusterSetEmpty\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}))]
pub struct ManagedClusterSetSpec {
    /// How member clusters are chosen; absent means by the exclusive cluster set label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"selectorType": "ExclusiveClusterSetLabel"}))]
    pub cluster_selector: Option<ManagedClusterSelector>,
    /// Namespaces every member cluster should create and manage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub managed_namespaces: Vec<ManagedNamespaceConfig>,
}

/// How the members of a cluster set are chosen.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSelector {
    /// Selection mode.
    #[schemars(extend("default" = "ExclusiveClusterSetLabel"))]
    pub selector_type: SelectorType,
    /// Label selector over ManagedClusters; used with `LabelSelector` mode. An empty selector
    /// selects every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// Selection mode of a cluster set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SelectorType {
    /// Members are the clusters labelled `cluster.open-cluster-management.io/clusterset=<set>`;
    /// a cluster can be in only one such set.
    #[default]
    ExclusiveClusterSetLabel,
    /// Members are the clusters matching `labelSelector`; sets may overlap.
    LabelSelector,
}

/// A namespace a cluster set asks its member clusters to manage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedNamespaceConfig {
    /// Namespace name (a DNS-1123 label).
    #[schemars(length(max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
}

/// Observed state of a cluster set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetStatus {
    /// The `ClusterSetEmpty` condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

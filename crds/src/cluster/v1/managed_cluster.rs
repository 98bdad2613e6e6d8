//! ManagedCluster: a cluster that has asked to join (or has joined) the hub.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a managed cluster, written by its agent (client configs) and by the hub
/// admin (acceptance, lease duration, taints).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.open-cluster-management.io",
    version = "v1",
    kind = "ManagedCluster",
    doc = "A cluster that asked to join the hub. Its name is the cluster name, which the hub also uses as the cluster namespace, so it must be a valid namespace name. Joining is double opt-in: the agent creates this object and a CSR, the hub admin accepts.",
    plural = "managedclusters",
    shortname = "mcl",
    shortname = "mcls",
    status = "ManagedClusterStatus",
    printcolumn = r#"{"name":"Hub Accepted","type":"boolean","jsonPath":".spec.hubAcceptsClient"}"#,
    printcolumn = r#"{"name":"Managed Cluster URLs","type":"string","jsonPath":".spec.managedClusterClientConfigs[*].url"}"#,
    printcolumn = r#"{"name":"Joined","type":"string","jsonPath":".status.conditions[?(@.type==\"ManagedClusterJoined\")].status"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"ManagedClusterConditionAvailable\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSpec {
    /// URLs (https) and CA bundles the hub and addons can use to reach the managed cluster's
    /// API server. Informational: the hub never dials the cluster itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_cluster_client_configs: Vec<ClientConfig>,

    /// Whether the hub admin accepts this cluster. Only users allowed to `update` the
    /// `managedclusters/accept` subresource may set it to true. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub hub_accepts_client: bool,

    /// How often, in seconds, the agent renews its lease; the hub marks the cluster
    /// unavailable after five missed periods. 0 or absent means 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 60))]
    pub lease_duration_seconds: Option<i32>,

    /// Taints that keep placements from selecting this cluster unless tolerated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
}

/// One way to reach the managed cluster's API server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientConfig {
    /// API server URL.
    pub url: String,
    /// PEM CA bundle to trust for that URL, base64-encoded on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub ca_bundle: Option<k8s_openapi::ByteString>,
}

/// A taint on a managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// Taint key, a qualified name.
    #[schemars(length(max = 316), regex(pattern = crate::schema::QUALIFIED_NAME_PATTERN))]
    pub key: String,
    /// Taint value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub value: String,
    /// What the taint does to placements that do not tolerate it.
    pub effect: TaintEffect,
    /// When the taint was added; stamped by the hub, never by clients.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::nullable_time")]
    pub time_added: Option<Time>,
}

/// Effect of a cluster taint on placement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TaintEffect {
    /// Clusters with the taint are not selected unless tolerated; selected ones are dropped.
    #[default]
    NoSelect,
    /// Placement tries not to select the cluster; tolerated unconditionally.
    PreferNoSelect,
    /// New selections are refused, clusters already selected stay.
    NoSelectIfNew,
}

/// Observed state of a managed cluster, reported by its agent and the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterStatus {
    /// Joined, accepted, available, clock-synced and deleting conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Sum of node capacity by resource name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::resource_list")]
    pub capacity: BTreeMap<String, Quantity>,
    /// Sum of allocatable resources of schedulable nodes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::resource_list")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// Version of the managed cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ManagedClusterVersion>,
    /// ClusterClaims synced from the managed cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_claims: Vec<ManagedClusterClaim>,
    /// Namespaces the cluster's cluster sets ask it to manage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["clusterSet", "name"]))]
    pub managed_namespaces: Vec<ClusterSetManagedNamespaceConfig>,
}

/// Software versions of a managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterVersion {
    /// Kubernetes version, as the API server's `/version` reports it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes: String,
}

/// A cluster claim as copied into the ManagedCluster status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterClaim {
    /// Claim name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Claim value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1, max = 1024))]
    pub value: String,
}

/// A namespace a cluster set asks its member clusters to manage, with its state there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSetManagedNamespaceConfig {
    /// Namespace name.
    pub name: String,
    /// The cluster set asking for it.
    pub cluster_set: String,
    /// Whether the namespace was applied on the managed cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

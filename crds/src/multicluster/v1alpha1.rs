//! `multicluster.x-k8s.io/v1alpha1`: ClusterProfile.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a ClusterProfile says about its cluster that its maker sets once.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha1",
    kind = "ClusterProfile",
    doc = "A cluster of the fleet as multicluster tools see it (SIG-Multicluster Cluster Inventory API): who manages it, its version, properties, health and how to reach it.",
    plural = "clusterprofiles",
    namespaced,
    status = "ClusterProfileStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileSpec {
    /// Human-readable name of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The fleet manager that owns this profile; immutable.
    pub cluster_manager: ClusterManager,
}

/// The fleet manager of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self == oldSelf",
    "message": "ClusterManager is immutable"
}]))]
pub struct ClusterManager {
    /// Name of the cluster manager; also the value of the `x-k8s.io/cluster-manager` label.
    pub name: String,
}

/// What the fleet manager (and its addons) report about the cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileStatus {
    /// Health conditions: `ControlPlaneHealthy`, and OCM's `Joined`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Versions of the cluster's components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ClusterVersion>,
    /// Name/value properties of the cluster (OCM: its ClusterClaims and ClusterProperties).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub properties: Vec<Property>,
    /// Deprecated name of `accessProviders`; read by consumers, preferred less.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub credential_providers: Vec<AccessProvider>,
    /// Ways to reach the cluster's API server, each named for the credential provider a
    /// consumer configures for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub access_providers: Vec<AccessProvider>,
}

/// Versions of a cluster's components.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterVersion {
    /// Kubernetes version of the cluster's API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
}

/// One property of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Property {
    /// Name of the property.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Value of the property.
    #[schemars(length(min = 1, max = 1024))]
    pub value: String,
    /// When the value was last observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_time: Option<Time>,
}

/// How to reach a cluster through one credential provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccessProvider {
    /// Name of the provider; consumers match it to their provider configuration.
    pub name: String,
    /// The cluster as a kubeconfig's `clusters[].cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<KubeconfigCluster>,
}

/// A kubeconfig cluster entry (`clientcmd/v1` Cluster).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KubeconfigCluster {
    /// URL of the API server.
    pub server: String,
    /// Server name for TLS verification, if not the URL's host.
    #[serde(
        default,
        rename = "tls-server-name",
        skip_serializing_if = "Option::is_none"
    )]
    pub tls_server_name: Option<String>,
    /// Skip verifying the server certificate.
    #[serde(
        default,
        rename = "insecure-skip-tls-verify",
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,
    /// Path of a CA file.
    #[serde(
        default,
        rename = "certificate-authority",
        skip_serializing_if = "Option::is_none"
    )]
    pub certificate_authority: Option<String>,
    /// PEM CA bundle, base64 on the wire.
    #[serde(
        default,
        rename = "certificate-authority-data",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub certificate_authority_data: Option<k8s_openapi::ByteString>,
    /// Proxy for requests to the server.
    #[serde(default, rename = "proxy-url", skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    /// Ask the server not to compress responses.
    #[serde(
        default,
        rename = "disable-compression",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_compression: Option<bool>,
    /// Named extensions; `client.authentication.k8s.io/exec` is handed to exec plugins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<NamedExtension>,
}

/// A named kubeconfig extension.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamedExtension {
    /// Name of the extension.
    pub name: String,
    /// Its content.
    pub extension: crate::schema::PreservedObject,
}

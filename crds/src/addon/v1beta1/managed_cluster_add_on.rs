//! ManagedClusterAddOn (v1beta1): an addon enabled on one managed cluster, in that cluster's
//! namespace on the hub.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AddOnConfig, AddOnMeta, ConfigGroupResource, ConfigSpecHash};
use crate::addon::v1alpha1::SIGNER_NAME_PATTERN;

/// Shared with v1alpha1: the two versions define these identically.
pub use crate::addon::v1alpha1::{HealthCheck, HealthCheckMode, KubeClientDriver, ObjectReference};

/// Desired state of an addon on one cluster.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "addon.open-cluster-management.io",
    version = "v1beta1",
    kind = "ManagedClusterAddOn",
    doc = "An addon enabled on one managed cluster. It lives in the cluster's namespace on the hub and is named after its ClusterManagementAddOn. Its status reports the agent's health, registrations and configs in effect.",
    plural = "managedclusteraddons",
    namespaced,
    shortname = "mca",
    shortname = "mcas",
    status = "ManagedClusterAddOnStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Degraded","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].status"}"#,
    printcolumn = r#"{"name":"Progressing","type":"string","jsonPath":".status.conditions[?(@.type==\"Progressing\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOnSpec {
    /// Configs for this cluster; they override the ClusterManagementAddOn's defaults and
    /// placement configs of the same group and resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<AddOnConfig>,
}

/// Observed state of an addon on one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOnStatus {
    /// Available, Degraded, Progressing, Configured, ManifestApplied, RegistrationApplied and
    /// other conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,

    /// Objects related to the addon, such as its ClusterManagementAddOn and ManifestWorks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_objects: Vec<ObjectReference>,

    /// Display name and description, copied from the ClusterManagementAddOn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_meta: Option<AddOnMeta>,

    /// Config kinds the addon supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["group", "resource"]))]
    pub supported_configs: Vec<ConfigGroupResource>,

    /// Configs in effect on this cluster: wanted and last applied, with spec hashes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_references: Vec<ConfigReference>,

    /// Namespace on the managed cluster the agent is installed in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,

    /// Credentials the agent needs, each becoming a CSR (or token) from the klusterlet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registrations: Vec<RegistrationConfig>,

    /// How the addon's health is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
}

/// A config kind in effect on a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReference {
    /// API group of the config resource; empty for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub group: Option<String>,
    /// Plural resource name of the config kind.
    #[schemars(length(min = 1))]
    pub resource: String,
    /// Deprecated: generation of the config object last observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_generation: Option<i64>,
    /// The config object wanted, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
    /// The config object the agent was last deployed with, with its spec hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_config: Option<ConfigSpecHash>,
}

/// A credential the addon agent needs to reach the hub or another signer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationConfig {
    /// Kind of registration; says which of `kubeClient` and `customSigner` applies.
    #[serde(rename = "type")]
    pub type_: RegistrationType,
    /// Settings of a `kubeClient` registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_client: Option<KubeClientConfig>,
    /// Settings of a `customSigner` registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_signer: Option<CustomSignerConfig>,
}

/// Kind of addon registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RegistrationType {
    /// A client of the hub API server (certificate from `kubernetes.io/kube-apiserver-client`
    /// or a token).
    #[default]
    KubeClient,
    /// A certificate from a custom signer.
    CustomSigner,
}

/// Settings of a hub API client registration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeClientConfig {
    /// Identity to request; absent means the default addon user and groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<KubeClientSubject>,
    /// How the agent authenticates: a CSR-issued certificate or a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<KubeClientDriver>,
}

/// Identity of a hub API client.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeClientSubject {
    /// User name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// Settings of a custom-signer certificate registration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomSignerConfig {
    /// Signer of the certificate (`example.com/signer-name`).
    #[schemars(length(min = 5, max = 571), regex(pattern = SIGNER_NAME_PATTERN))]
    pub signer_name: String,
    /// Subject of the certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
}

/// Subject of a requested certificate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// User name (common name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Groups (organizations).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Organizational units.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub organization_units: Vec<String>,
}

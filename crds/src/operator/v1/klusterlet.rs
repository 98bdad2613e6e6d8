//! Klusterlet: how the agents of a managed cluster (registration and work, or a single
//! agent) are deployed and configured.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    EKS_CLUSTER_ARN_PATTERN, FeatureGate, GenerationStatus, HOSTNAME_PATTERN, NodePlacement,
    RegistrationAuthType, RelatedResourceMeta, ResourceRequirement,
};

/// Pattern of the agent namespace: `open-cluster-management-` and a DNS-label tail.
pub const KLUSTERLET_NAMESPACE_PATTERN: &str = r"^open-cluster-management-[-a-z0-9]*[a-z0-9]$";

/// Pattern of a dotted IPv4 address.
pub const IPV4_PATTERN: &str =
    r"^(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)$";

/// Pattern of a Go duration made of seconds, minutes and hours (`90s`, `1h30m`).
pub const DURATION_PATTERN: &str = r"^([0-9]+(s|m|h))+$";

/// Desired deployment of the agents on a managed cluster.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.open-cluster-management.io",
    version = "v1",
    kind = "Klusterlet",
    doc = "Tells the klusterlet operator how to run the agents that register a managed cluster with a hub and apply its work. The agents need the bootstrap-hub-kubeconfig secret in the agent namespace; in Hosted mode they run on a management cluster and also need the external-managed-kubeconfig secret to reach the managed cluster.",
    plural = "klusterlets",
    status = "KlusterletStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct KlusterletSpec {
    /// Namespace of the agents on the managed cluster (addons go to
    /// `open-cluster-management-agent-addon`, whatever this is);
    /// absent means `open-cluster-management-agent`. In Hosted mode it still holds the
    /// agents' service accounts and RBAC on the managed cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 57), regex(pattern = KLUSTERLET_NAMESPACE_PATTERN))]
    pub namespace: String,

    /// Image of the registration agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub registration_image_pull_spec: String,

    /// Image of the work agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub work_image_pull_spec: String,

    /// Image of the single agent, used in the Singleton modes only.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_pull_spec: String,

    /// Name of the ManagedCluster to register; absent means the agent picks (or discovers)
    /// one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub cluster_name: String,

    /// API server URLs of the managed cluster reachable from outside, copied into the
    /// ManagedCluster's client configs.
    #[serde(
        default,
        rename = "externalServerURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub external_server_urls: Vec<ServerUrl>,

    /// Node selector and tolerations for the agent pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,

    /// How the agents are deployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_option: Option<KlusterletDeployOption>,

    /// Settings of the registration agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_configuration: Option<RegistrationConfiguration>,

    /// Settings of the work agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_configuration: Option<WorkAgentConfiguration>,

    /// Hosts-file entry for the hub API server, added to the agent pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_api_server_host_alias: Option<HubApiServerHostAlias>,

    /// QoS class and resources of every container the operator deploys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_requirement: Option<ResourceRequirement>,

    /// PriorityClass of the agent pods; ignored where the PriorityClass API is missing.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// An externally reachable API server URL of the managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerUrl {
    /// API server URL.
    pub url: String,
    /// PEM CA bundle for that URL, base64-encoded on the wire; absent means system roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub ca_bundle: Option<k8s_openapi::ByteString>,
}

/// A static IP-to-host-name mapping for the hub API server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HubApiServerHostAlias {
    /// IPv4 address.
    #[schemars(regex(pattern = IPV4_PATTERN))]
    pub ip: String,
    /// Host name that resolves to `ip`.
    #[schemars(regex(pattern = HOSTNAME_PATTERN))]
    pub hostname: String,
}

/// How the klusterlet agents are deployed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KlusterletDeployOption {
    /// `Default`, `Hosted`, `Singleton` or `SingletonHosted` (see
    /// [`crate::operator::names::install_modes`]); empty means `Default`. Not enforced by the
    /// schema. Must not be changed once set. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub mode: String,

    /// `Enable`: the klusterlet reports where its agents run — `spec.clusterName`, or in the
    /// Hosted modes `hosted.managementClusterName` — as the ClusterClaim
    /// `hosting-cluster.open-cluster-management.io`, against which the hub checks hosted
    /// addons. Absent or `Disable`: nothing is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(Enable|Disable)$"))]
    pub report_hosting_cluster: Option<String>,

    /// Settings of the Hosted modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted: Option<KlusterletHostedConfiguration>,
}

/// Settings of a klusterlet whose agents run on a separate management cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KlusterletHostedConfiguration {
    /// Name (as the hub knows it) of the managed cluster the agents run on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub management_cluster_name: String,
}

/// Settings of the registration agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationConfiguration {
    /// Requested lifetime of the client certificate; absent or 0 lets the hub decide. The hub
    /// caps it at its maximum signing duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert_expiration_seconds: Option<i32>,

    /// Feature gates of the registration agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<FeatureGate>,

    /// Annotations (prefix `agent.open-cluster-management.io`) put on the ManagedCluster when
    /// the agent creates it; not kept in sync afterwards.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cluster_annotations: BTreeMap<String, String>,

    /// Labels put on the ManagedCluster when the agent creates it; not kept in sync afterwards.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cluster_labels: BTreeMap<String, String>,

    /// Queries per second to the managed cluster's API server; absent means 50.
    #[serde(
        default,
        rename = "kubeAPIQPS",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = 50))]
    pub kube_api_qps: Option<i32>,

    /// Burst towards the managed cluster's API server; absent means 100.
    #[serde(
        default,
        rename = "kubeAPIBurst",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = 100))]
    pub kube_api_burst: Option<i32>,

    /// Ordered bootstrap kubeconfigs to fall back on when the agent loses the current hub
    /// (MultipleHubs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_kube_configs: Option<BootstrapKubeConfigs>,

    /// How the agent authenticates to the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_driver: Option<RegistrationDriver>,

    /// How addons get hub credentials for kubeClient-type registrations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_kube_client_registration_driver: Option<AddOnRegistrationDriver>,

    /// Limits on custom ClusterClaims (ClusterClaim gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_claim_configuration: Option<ClusterClaimConfiguration>,
}

/// Limits on the ClusterClaims synced to the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimConfiguration {
    /// Most custom claims synced to the ManagedCluster status (default 20).
    #[schemars(extend("default" = 20))]
    pub max_custom_cluster_claims: i32,
    /// Extra claim name suffixes treated as reserved (not counted as custom).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10), inner(length(min = 1, max = 64)))]
    pub reserved_cluster_claim_suffixes: Vec<String>,
}

/// How the registration agent authenticates to the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationDriver {
    /// Auth type; also decides how the work agent pulls from the hub.
    #[schemars(extend("default" = "csr"))]
    pub auth_type: RegistrationAuthType,
    /// EKS identities, required with `awsirsa`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_irsa: Option<AwsIrsa>,
}

/// EKS cluster identities for the AWS IRSA driver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwsIrsa {
    /// ARN of the hub EKS cluster, where the hub creates IAM identities for this cluster.
    #[schemars(length(min = 1), regex(pattern = EKS_CLUSTER_ARN_PATTERN))]
    pub hub_cluster_arn: String,
    /// ARN of this managed EKS cluster; its hash suffixes the IAM role the agent assumes.
    #[schemars(length(min = 1), regex(pattern = EKS_CLUSTER_ARN_PATTERN))]
    pub managed_cluster_arn: String,
}

/// How kubeClient-type addon registrations get hub credentials.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnRegistrationDriver {
    /// Credential kind; absent means CSR-issued certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_type: Option<AddOnRegistrationAuthType>,
    /// Settings of the token driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<TokenConfig>,
}

/// Credential kind for kubeClient-type addon registrations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AddOnRegistrationAuthType {
    /// Client certificates through CSRs.
    #[default]
    #[serde(rename = "csr")]
    Csr,
    /// ServiceAccount tokens.
    #[serde(rename = "token")]
    Token,
}

/// Settings of the token addon-registration driver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenConfig {
    /// Token lifetime in seconds; absent or 0 means the hub's certificate lifetime. Use at
    /// least 3600 outside tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_seconds: Option<i64>,
}

/// Bootstrap kubeconfigs the agent may switch between.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapKubeConfigs {
    /// Where the kubeconfigs come from.
    #[schemars(extend("default" = "None"))]
    pub r#type: BootstrapKubeConfigsType,
    /// The local secrets, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_secrets_config: Option<LocalSecretsConfig>,
}

/// Source of the ordered bootstrap kubeconfigs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BootstrapKubeConfigsType {
    /// No ordered list; only `bootstrap-hub-kubeconfig` is used.
    #[default]
    None,
    /// Secrets in the agent namespace, listed in `localSecretsConfig`.
    LocalSecrets,
}

/// Ordered bootstrap kubeconfig secrets in the agent namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalSecretsConfig {
    /// The secrets, first preferred. Upstream documents at least two, but its schema does not
    /// enforce it (the marker is misspelt), so neither does this one.
    pub kube_config_secrets: Vec<KubeConfigSecret>,
    /// Seconds without a working hub connection before the agent rebootstraps with the next
    /// kubeconfig; absent means 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 180), extend("default" = 600))]
    pub hub_connection_timeout_seconds: Option<i32>,
}

/// A secret holding a bootstrap kubeconfig.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigSecret {
    /// Secret name.
    pub name: String,
}

/// Settings of the work agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkAgentConfiguration {
    /// Feature gates of the work agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<FeatureGate>,

    /// Queries per second to the managed cluster's API server; absent means 50.
    #[serde(
        default,
        rename = "kubeAPIQPS",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = 50))]
    pub kube_api_qps: Option<i32>,

    /// Burst towards the managed cluster's API server; absent means 100.
    #[serde(
        default,
        rename = "kubeAPIBurst",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = 100))]
    pub kube_api_burst: Option<i32>,

    /// Queries per second to the hub API server; absent means 50.
    #[serde(
        default,
        rename = "hubKubeAPIQPS",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = 50))]
    pub hub_kube_api_qps: Option<i32>,

    /// Burst towards the hub API server; absent means 100.
    #[serde(
        default,
        rename = "hubKubeAPIBurst",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = 100))]
    pub hub_kube_api_burst: Option<i32>,

    /// How long the work agent keeps an AppliedManifestWork no longer managed (its ManifestWork
    /// gone from the hub, or of a hub the agent moved away from) before deleting it and what
    /// only it applied (Go duration, e.g. `60m`; 100 years or more: never); absent means the
    /// agent default, 60 minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub applied_manifest_work_eviction_grace_period: Option<String>,

    /// How often the agent checks the status of applied resources (Go duration, 5s to 1h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub status_sync_interval: Option<String>,
}

/// Observed state of the klusterlet agents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KlusterletStatus {
    /// Generation of the spec the operator last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Applied, ready-to-apply, available and degraded conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Generations of the objects the operator applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generations: Vec<GenerationStatus>,
    /// Objects the operator created for the agents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_resources: Vec<RelatedResourceMeta>,
}

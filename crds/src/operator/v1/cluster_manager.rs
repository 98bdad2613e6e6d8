//! ClusterManager: how the hub components (registration, work, placement, addon manager,
//! gRPC server) are deployed and configured.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    FeatureGate, GenerationStatus, NodePlacement, RegistrationAuthType, RelatedResourceMeta,
    ResourceRequirement,
};

/// Pattern of a DNS host name or dotted IPv4 address (webhook addresses, host aliases).
pub const HOSTNAME_PATTERN: &str = r"^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])$";

/// Pattern of the ARN of an EKS cluster.
pub const EKS_CLUSTER_ARN_PATTERN: &str =
    r"^arn:aws:eks:([a-zA-Z0-9-]+):(\d{12}):cluster/([a-zA-Z0-9-]+)$";

/// Desired deployment of the hub components.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.open-cluster-management.io",
    version = "v1",
    kind = "ClusterManager",
    doc = "Tells the cluster-manager operator how to run the hub: the registration, work, placement and addon-manager controllers and webhooks that managed clusters (through their Klusterlets) connect to. In Default mode they run in the open-cluster-management-hub namespace; in Hosted mode they run on a management cluster, in a namespace named after this object.",
    plural = "clustermanagers",
    status = "ClusterManagerStatus"
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"deployOption": {"mode": "Default"}}))]
pub struct ClusterManagerSpec {
    /// Image of the registration controller and webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/registration"))]
    pub registration_image_pull_spec: Option<String>,

    /// Image of the work webhook and controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/work"))]
    pub work_image_pull_spec: Option<String>,

    /// Image of the placement controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/placement"))]
    pub placement_image_pull_spec: Option<String>,

    /// Image of the addon manager controller and webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "quay.io/open-cluster-management/addon-manager"))]
    pub add_on_manager_image_pull_spec: Option<String>,

    /// Node selector and tolerations for the hub pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,

    /// Whether the hub runs in place (Default) or on a management cluster (Hosted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"mode": "Default"}))]
    pub deploy_option: Option<ClusterManagerDeployOption>,

    /// Settings of the hub registration controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_configuration: Option<RegistrationHubConfiguration>,

    /// Settings of the hub work components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"workDriver": "kube"}))]
    pub work_configuration: Option<WorkConfiguration>,

    /// Settings of the addon manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on_manager_configuration: Option<AddOnManagerConfiguration>,

    /// Settings of the placement controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_configuration: Option<PlacementConfiguration>,

    /// Settings of the hub's gRPC/HTTPS server (used by the grpc registration and work drivers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_configuration: Option<ServerConfiguration>,

    /// QoS class and resources of every container the operator deploys on the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_requirement: Option<ResourceRequirement>,
}

/// Deployment mode of the hub and its per-mode settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagerDeployOption {
    /// Deployment mode. Must not be changed once set.
    #[schemars(extend("default" = "Default"))]
    pub mode: ClusterManagerInstallMode,

    /// Settings used in Default mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<DefaultClusterManagerConfiguration>,

    /// Settings used in Hosted mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted: Option<HostedClusterManagerConfiguration>,
}

/// Where the hub components run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ClusterManagerInstallMode {
    /// Everything runs on the hub cluster itself.
    #[default]
    Default,
    /// Only CRDs and configuration go on the hub; the controllers run on a management cluster
    /// and reach the hub through the `external-hub-kubeconfig` secret.
    Hosted,
}

/// Webhook server settings in Default mode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultClusterManagerConfiguration {
    /// Registration webhook server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_webhook_configuration: Option<DefaultWebhookConfiguration>,
    /// Work webhook server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_webhook_configuration: Option<DefaultWebhookConfiguration>,
    /// Addon webhook server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addon_webhook_configuration: Option<DefaultWebhookConfiguration>,
}

/// Webhook server settings in Hosted mode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterManagerConfiguration {
    /// Registration webhook server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_webhook_configuration: Option<HostedWebhookConfiguration>,
    /// Work webhook server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_webhook_configuration: Option<HostedWebhookConfiguration>,
}

/// A webhook server running next to the hub (Default mode).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultWebhookConfiguration {
    /// Ports and networking of the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_configuration: Option<BindConfiguration>,
}

/// A webhook server running on the management cluster (Hosted mode), which the hub's API
/// server must be able to reach.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedWebhookConfiguration {
    /// Host name or IPv4 address under which the hub API server reaches the webhook.
    #[schemars(regex(pattern = HOSTNAME_PATTERN))]
    pub address: String,
    /// Port under which the hub API server reaches the webhook; absent means 443.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 443))]
    pub port: Option<i32>,
    /// Ports and networking of the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_configuration: Option<BindConfiguration>,
}

/// Ports a server listens on, and whether it uses the host network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindConfiguration {
    /// Main serving port; absent means 9443.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 9443))]
    pub port: Option<i32>,
    /// Health probe port; absent means 8000, zero or less turns the probes off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 8000))]
    pub health_probe_port: Option<i32>,
    /// Metrics port; absent means 8080, zero or less turns metrics off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65535), extend("default" = 8080))]
    pub metrics_port: Option<i32>,
    /// Run the pods in the host network namespace (needed e.g. on EKS with Calico).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<bool>,
}

/// Settings of the hub registration controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationHubConfiguration {
    /// Users whose bootstrap CSRs are approved and whose clusters are accepted automatically
    /// (needs the ManagedClusterAutoApproval gate). Superseded by the per-driver identities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_approve_users: Vec<String>,
    /// Feature gates of the registration controller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<FeatureGate>,
    /// Registration drivers the hub accepts, one per auth type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["authType"]))]
    pub registration_drivers: Vec<RegistrationDriverHub>,
    /// Settings of the cluster importer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importer_configuration: Option<ImporterConfiguration>,
}

/// Settings of the cluster importer (ClusterImporter gate).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImporterConfiguration {
    /// Import renderers to use, e.g. `render-auto`, `render-from-config-secret`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renderers: Vec<String>,
}

/// One registration driver the hub serves, with its settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationDriverHub {
    /// Auth type of the driver; the list key.
    #[schemars(extend("default" = "csr"))]
    pub auth_type: RegistrationAuthType,
    /// Settings of the CSR driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csr: Option<CsrConfig>,
    /// Settings of the AWS IRSA driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awsirsa: Option<AwsIrsaConfig>,
    /// Settings of the gRPC driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcRegistrationConfig>,
}

/// Settings of the CSR registration driver on the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsrConfig {
    /// Users whose bootstrap CSRs are approved and whose clusters are accepted automatically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_approved_identities: Vec<String>,
}

/// Settings of the AWS IRSA registration driver on the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwsIrsaConfig {
    /// ARN of the hub EKS cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(regex(pattern = EKS_CLUSTER_ARN_PATTERN))]
    pub hub_cluster_arn: String,
    /// ARN patterns of managed clusters accepted automatically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_approved_identities: Vec<String>,
    /// Tags put on the AWS resources the hub creates for a registration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Settings of the gRPC registration driver on the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcRegistrationConfig {
    /// Users whose CSRs are approved and whose clusters are accepted automatically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_approved_identities: Vec<String>,
}

/// Settings of the hub work components.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkConfiguration {
    /// Feature gates of the work webhook and controller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<FeatureGate>,
    /// How works travel to the agents; non-kube drivers read their settings from the
    /// `work-driver-config` secret and need the same driver on the klusterlets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "kube"))]
    pub work_driver: Option<WorkDriverType>,
}

/// Transport between the hub work components and the work agents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WorkDriverType {
    /// ManifestWorks stored in the hub API server.
    #[default]
    #[serde(rename = "kube")]
    Kube,
    /// CloudEvents over an MQTT broker.
    #[serde(rename = "mqtt")]
    Mqtt,
    /// CloudEvents over gRPC.
    #[serde(rename = "grpc")]
    Grpc,
}

/// Settings of the addon manager.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnManagerConfiguration {
    /// Feature gates of the addon manager.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<FeatureGate>,
}

/// Settings of the placement controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementConfiguration {
    /// Feature gates of the placement controller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<FeatureGate>,
}

/// Settings of the hub's gRPC/HTTPS server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerConfiguration {
    /// Image of the server.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_pull_spec: String,
    /// Feature gates of the server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<FeatureGate>,
    /// How the server's endpoints are exposed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints_exposure: Vec<EndpointExposure>,
}

/// One exposed endpoint of the hub server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointExposure {
    /// Who uses the endpoint: `agentToHub` (klusterlet agents) or `consumer` (external clients).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub usage: String,
    /// Protocol served on the endpoint.
    #[schemars(extend("default" = "grpc"))]
    pub protocol: EndpointProtocol,
    /// Exposure of the gRPC endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<Endpoint>,
    /// Exposure of the HTTPS endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<Endpoint>,
}

/// Protocol of a hub server endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum EndpointProtocol {
    /// gRPC.
    #[default]
    #[serde(rename = "grpc")]
    Grpc,
    /// HTTPS.
    #[serde(rename = "https")]
    Https,
}

/// How one endpoint is exposed outside the hub.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// Exposure mechanism; the matching field below carries its settings.
    #[schemars(extend("default" = "hostname"))]
    pub r#type: EndpointExposureType,
    /// A fixed host name agents connect to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<HostnameConfig>,
    /// Settings of a LoadBalancer service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerConfig>,
    /// Settings of an OpenShift route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteConfig>,
}

/// Mechanism exposing a hub server endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum EndpointExposureType {
    /// A fixed host name set up by the admin.
    #[default]
    #[serde(rename = "hostname")]
    Hostname,
    /// A Service of type LoadBalancer.
    #[serde(rename = "loadBalancer")]
    LoadBalancer,
    /// An OpenShift Route.
    #[serde(rename = "route")]
    Route,
}

/// A fixed host name for an endpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostnameConfig {
    /// Host name of the endpoint.
    pub host: String,
    /// PEM CA bundle that verifies the endpoint, base64-encoded on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub ca_bundle: Option<k8s_openapi::ByteString>,
}

/// Overrides for an endpoint exposed through a LoadBalancer service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerConfig {
    /// Host name to advertise instead of the load balancer's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// PEM CA bundle that verifies the endpoint, base64-encoded on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub ca_bundle: Option<k8s_openapi::ByteString>,
}

/// Overrides for an endpoint exposed through an OpenShift route.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteConfig {
    /// Host name of the route.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// PEM CA bundle that verifies the endpoint, base64-encoded on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub ca_bundle: Option<k8s_openapi::ByteString>,
}

/// Observed state of the hub components.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagerStatus {
    /// Generation of the spec the operator last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Applied, degraded, progressing and migration conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Generations of the objects the operator applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generations: Vec<GenerationStatus>,
    /// Objects the operator created for the hub.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_resources: Vec<RelatedResourceMeta>,
}

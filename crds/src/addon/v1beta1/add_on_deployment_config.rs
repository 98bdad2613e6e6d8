//! AddOnDeploymentConfig (v1beta1): deployment settings an addon agent is rendered with. Same
//! schema as v1alpha1.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::addon::v1alpha1::OPTIONAL_NAMESPACE_PATTERN;
/// The nested types are the same in both versions.
pub use crate::addon::v1alpha1::{
    ContainerResourceRequirements, CustomizedVariable, ImageMirror, NodePlacement, ProxyConfig,
};

/// Settings used to render an addon's agent manifests.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "addon.open-cluster-management.io",
    version = "v1beta1",
    kind = "AddOnDeploymentConfig",
    doc = "Deployment settings for an addon agent: template variables, node placement, image mirrors, proxy, install namespace and container resources. Referenced as a config by ClusterManagementAddOns and ManagedClusterAddOns.",
    plural = "addondeploymentconfigs",
    namespaced,
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct AddOnDeploymentConfigSpec {
    /// Name/value pairs the addon's manifest templates can use. Names are unique.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub customized_variables: Vec<CustomizedVariable>,

    /// Node selector and tolerations for the agent's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,

    /// Image mirrors: images whose name starts with a source are pulled from the mirror.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<ImageMirror>,

    /// HTTP(S) proxy settings for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_config: Option<ProxyConfig>,

    /// Namespace on the managed cluster to install the agent in. Empty lets template addons
    /// use the namespace their manifests name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 63),
        regex(pattern = OPTIONAL_NAMESPACE_PATTERN),
        extend("default" = "open-cluster-management-agent-addon")
    )]
    pub agent_install_namespace: Option<String>,

    /// Resource requests and limits for containers of the agent's workloads, matched by
    /// container id. Ids are unique.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["containerID"]))]
    pub resource_requirements: Vec<ContainerResourceRequirements>,
}

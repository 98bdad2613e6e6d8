//! AddOnDeploymentConfig (v1alpha1): deployment settings an addon agent is rendered with.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ResourceRequirements, Toleration};
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// Pattern of an optional namespace name: empty, or a DNS-1123 label.
pub(crate) const OPTIONAL_NAMESPACE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$";

/// Pattern of a customized variable name.
pub(crate) const VARIABLE_NAME_PATTERN: &str = r"^[a-zA-Z_][_a-zA-Z0-9]*$";

/// Pattern of a container id: `<workload resource>:<namespace>:<name>` or `*` for the
/// resource.
pub(crate) const CONTAINER_ID_PATTERN: &str =
    r"^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\*):.+:.+$";

/// Settings used to render an addon's agent manifests.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "addon.open-cluster-management.io",
    version = "v1alpha1",
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

/// Requests and limits for the containers a container id matches.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerResourceRequirements {
    /// `<resource>:<namespace>:<name>` of the containers, e.g.
    /// `deployments:agent:manager`; each part may be `*`.
    #[serde(rename = "containerID")]
    #[schemars(regex(pattern = CONTAINER_ID_PATTERN))]
    pub container_id: String,
    /// Requests and limits to set.
    #[schemars(schema_with = "crate::addon::v1alpha1::resource_requirements_schema")]
    pub resources: ResourceRequirements,
}

/// A template variable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizedVariable {
    /// Variable name.
    #[schemars(length(max = 255), regex(pattern = VARIABLE_NAME_PATTERN))]
    pub name: String,
    /// Variable value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub value: Option<String>,
}

/// Where the agent's pods may run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePlacement {
    /// Node labels the pods' nodes must have.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pods tolerate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

/// An image mirror.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageMirror {
    /// Registry (and optional path) to pull from instead.
    pub mirror: String,
    /// Image name prefix to replace; absent means every image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Proxy settings of the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyConfig {
    /// HTTP proxy URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub http_proxy: String,
    /// HTTPS proxy URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub https_proxy: String,
    /// PEM CA bundle of the HTTPS proxy, base64-encoded on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub ca_bundle: Option<k8s_openapi::ByteString>,
    /// Comma-separated hosts, domains and CIDRs reached without the proxy.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub no_proxy: String,
}

/// Schema of a container's `resources` as upstream CRDs spell it: `claims` as a list-map keyed
/// by `name`, `limits` and `requests` as quantity maps.
pub(crate) fn resource_requirements_schema(generator: &mut SchemaGenerator) -> Schema {
    let quantities = crate::schema::resource_list(generator);
    json_schema!({
        "type": "object",
        "properties": {
            "claims": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "request": {"type": "string"}
                    }
                }
            },
            "limits": quantities.clone(),
            "requests": quantities
        }
    })
}

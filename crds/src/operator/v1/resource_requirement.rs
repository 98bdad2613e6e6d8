//! Resource QoS settings applied to every container an operator deploys.

use k8s_openapi::api::core::v1::ResourceRequirements;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// Resource requests and limits for all containers of the deployed components.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirement {
    /// Which QoS class to give the containers; absent means `Default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Default"))]
    pub r#type: Option<ResourceQosClass>,
    /// Requests and limits to use when the type is `ResourceRequirement`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "resource_requirements")]
    pub resource_requirements: Option<ResourceRequirements>,
}

/// QoS class of the deployed containers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ResourceQosClass {
    /// The built-in manifests' settings: requests, no limits.
    #[default]
    Default,
    /// No requests and no limits.
    BestEffort,
    /// The requests and limits given in `resourceRequirements`.
    ResourceRequirement,
}

/// Schema of a core/v1 ResourceRequirements as kube-apiserver validates it: quantities as
/// int-or-string with the quantity pattern, claims as a list-map keyed by name.
fn resource_requirements(generator: &mut SchemaGenerator) -> Schema {
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

//! Status entries shared by ClusterManager and Klusterlet: what the operator applied.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The generation of one object the operator applied, so it can tell when that object was
/// changed behind its back and must be re-applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerationStatus {
    /// API group of the object.
    pub group: String,
    /// API version of the object.
    pub version: String,
    /// Resource (plural) of the object.
    pub resource: String,
    /// Namespace of the object; empty for cluster-scoped objects. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub namespace: String,
    /// Name of the object.
    pub name: String,
    /// `metadata.generation` the operator last applied.
    pub last_generation: i64,
}

/// One object the operator created and owns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedResourceMeta {
    /// API group of the object.
    pub group: String,
    /// API version of the object.
    pub version: String,
    /// Resource (plural) of the object.
    pub resource: String,
    /// Namespace of the object; empty for cluster-scoped objects. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub namespace: String,
    /// Name of the object.
    pub name: String,
}

//! AppliedManifestWork: the managed cluster's record of a ManifestWork the agent applied.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which hub and which ManifestWork an AppliedManifestWork stands for.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "work.open-cluster-management.io",
    version = "v1",
    kind = "AppliedManifestWork",
    doc = "The managed cluster's record of a ManifestWork its agent applied, named `<hubHash>-<work name>`. It owns the applied objects; deleting it deletes those only it owns, which lets a cluster admin clean up after the agent is gone. The agent evicts (deletes) its records no longer managed — of another hub than the one it now works for, or whose ManifestWork is gone — after its eviction grace period.",
    plural = "appliedmanifestworks",
    status = "AppliedManifestWorkStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct AppliedManifestWorkSpec {
    /// Hash of the hub's API server URL, identifying the hub the work came from.
    pub hub_hash: String,
    /// ID of the work agent handling this record; the same on every hub the agent moves to,
    /// so that it evicts the records of a hub it left. Always serialized.
    #[serde(default, rename = "agentID")]
    #[schemars(transform = crate::schema::no_default)]
    pub agent_id: String,
    /// Name of the ManifestWork on the hub.
    pub manifest_work_name: String,
}

/// What the agent applied for the work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedManifestWorkStatus {
    /// The objects applied and still owned; an object that leaves the work is deleted and
    /// then dropped from this list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_resources: Vec<AppliedManifestResourceMeta>,
    /// When the agent found this record no longer managed (its ManifestWork gone from the
    /// hub, or the agent now working for another hub); it is deleted once the eviction grace
    /// period has passed since, and the mark is cleared if it is managed again before that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_start_time: Option<Time>,
}

/// An object that was applied: its group, version, resource, namespace, name and UID. The
/// identifying fields are always serialized, as the agent writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedManifestResourceMeta {
    /// API group (empty for core).
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource (plural) name.
    pub resource: String,
    /// Namespace (empty for cluster-scoped objects).
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// UID of the object the agent created or adopted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

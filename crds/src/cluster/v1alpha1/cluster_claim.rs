//! ClusterClaim: a fact about a managed cluster, published on the managed cluster itself and
//! copied by the agent into the ManagedCluster status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The claimed value.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cluster.open-cluster-management.io",
    version = "v1alpha1",
    kind = "ClusterClaim",
    doc = "A name/value fact about the managed cluster it is created on (for example its id or platform). The registration agent reports claims in the ManagedCluster status so placements can select on them.",
    plural = "clusterclaims"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimSpec {
    /// Value of the claim.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1, max = 1024))]
    pub value: String,
}

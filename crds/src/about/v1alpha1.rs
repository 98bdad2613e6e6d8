//! `about.k8s.io/v1alpha1`: ClusterProperty.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The property's value.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "about.k8s.io",
    version = "v1alpha1",
    kind = "ClusterProperty",
    doc = "A name/value property of the cluster it is created on (SIG-Multicluster About API). With the ClusterProperty feature gate the registration agent reports properties in the ManagedCluster status, as it does ClusterClaims.",
    plural = "clusterproperties",
    status = "ClusterPropertyStatus",
    printcolumn = r#"{"name":"value","type":"string","jsonPath":".spec.value"}"#,
    printcolumn = r#"{"name":"age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPropertySpec {
    /// Value of the property.
    #[schemars(length(min = 1))]
    pub value: String,
}

/// Observed state of a ClusterProperty (empty).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterPropertyStatus {}

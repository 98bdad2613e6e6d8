//! `operator.open-cluster-management.io`: ClusterManager and Klusterlet.

pub mod names;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// API group name.
pub const GROUP: &str = "operator.open-cluster-management.io";

/// CRDs of this group installed on the hub.
pub fn hub_crds() -> Vec<CustomResourceDefinition> {
    Vec::new()
}

/// CRDs of this group installed on a managed cluster.
pub fn klusterlet_crds() -> Vec<CustomResourceDefinition> {
    Vec::new()
}

//! `operator.open-cluster-management.io`: ClusterManager and Klusterlet.

pub mod names;
pub mod v1;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// API group name.
pub const GROUP: &str = "operator.open-cluster-management.io";

/// CRDs of this group installed on the hub.
pub fn hub_crds() -> Vec<CustomResourceDefinition> {
    vec![v1::ClusterManager::crd()]
}

/// CRDs of this group installed on a managed cluster.
pub fn klusterlet_crds() -> Vec<CustomResourceDefinition> {
    vec![v1::Klusterlet::crd()]
}

//! `cluster.open-cluster-management.io`: managed clusters, cluster sets, claims, placements.

pub mod names;
mod schema;
pub mod v1;
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// API group name.
pub const GROUP: &str = "cluster.open-cluster-management.io";

/// CRDs of this group installed on the hub.
pub fn hub_crds() -> Vec<CustomResourceDefinition> {
    vec![
        v1::ManagedCluster::crd(),
        v1beta2::ManagedClusterSet::crd(),
        v1beta2::ManagedClusterSetBinding::crd(),
        v1beta1::Placement::crd(),
        v1beta1::PlacementDecision::crd(),
        v1alpha1::AddOnPlacementScore::crd(),
    ]
}

/// CRDs of this group installed on a managed cluster.
pub fn klusterlet_crds() -> Vec<CustomResourceDefinition> {
    vec![v1alpha1::ClusterClaim::crd()]
}

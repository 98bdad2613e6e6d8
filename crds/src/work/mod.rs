//! `work.open-cluster-management.io`: ManifestWork, AppliedManifestWork, ManifestWorkReplicaSet.

pub mod names;
mod schema;
pub mod v1;
pub mod v1alpha1;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// API group name.
pub const GROUP: &str = "work.open-cluster-management.io";

/// CRDs of this group installed on the hub.
pub fn hub_crds() -> Vec<CustomResourceDefinition> {
    vec![
        v1::ManifestWork::crd(),
        v1alpha1::ManifestWorkReplicaSet::crd(),
    ]
}

/// CRDs of this group installed on a managed cluster.
pub fn klusterlet_crds() -> Vec<CustomResourceDefinition> {
    vec![v1::AppliedManifestWork::crd()]
}

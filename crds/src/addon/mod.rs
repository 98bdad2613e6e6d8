//! `addon.open-cluster-management.io`: ClusterManagementAddOn, ManagedClusterAddOn,
//! AddOnDeploymentConfig, AddOnTemplate.
//!
//! ClusterManagementAddOn, ManagedClusterAddOn and AddOnDeploymentConfig are served in
//! [`v1alpha1`] (the storage version) and [`v1beta1`]; [`conversion`] turns objects of one
//! version into the other. AddOnTemplate exists in v1alpha1 only.

pub mod conversion;
pub mod names;
pub mod v1alpha1;
pub mod v1beta1;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// API group name.
pub const GROUP: &str = "addon.open-cluster-management.io";

/// The version objects of multi-version kinds are stored in.
pub const STORAGE_VERSION: &str = "v1alpha1";

/// CRDs of this group installed on the hub.
pub fn hub_crds() -> Vec<CustomResourceDefinition> {
    vec![
        merged(vec![
            v1alpha1::ClusterManagementAddOn::crd(),
            v1beta1::ClusterManagementAddOn::crd(),
        ]),
        merged(vec![
            v1alpha1::ManagedClusterAddOn::crd(),
            v1beta1::ManagedClusterAddOn::crd(),
        ]),
        merged(vec![
            v1alpha1::AddOnDeploymentConfig::crd(),
            v1beta1::AddOnDeploymentConfig::crd(),
        ]),
        v1alpha1::AddOnTemplate::crd(),
    ]
}

/// CRDs of this group installed on a managed cluster.
pub fn klusterlet_crds() -> Vec<CustomResourceDefinition> {
    Vec::new()
}

/// One CRD serving every version of a kind, stored as [`STORAGE_VERSION`].
fn merged(crds: Vec<CustomResourceDefinition>) -> CustomResourceDefinition {
    match kube::core::crd::merge_crds(crds, STORAGE_VERSION) {
        Ok(crd) => crd,
        // Only possible if the versions of one kind disagree on group, kind or scope, which
        // the unit test below catches.
        Err(e) => panic!("merging addon CRD versions: {e}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_multi_version_crd_merges_with_v1alpha1_stored() {
        for crd in super::hub_crds()
            .into_iter()
            .filter(|crd| crd.spec.names.kind != "AddOnTemplate")
        {
            let stored: Vec<_> = crd
                .spec
                .versions
                .iter()
                .filter(|v| v.storage)
                .map(|v| v.name.as_str())
                .collect();
            assert_eq!(stored, ["v1alpha1"], "{:?}", crd.metadata.name);
            assert!(crd.spec.versions.iter().all(|v| v.served));
        }
    }
}

//! `about.k8s.io`: the SIG-Multicluster About API (KEP-2149). Its ClusterProperty is the
//! Kubernetes-wide form of a ClusterClaim; with the registration agent's `ClusterProperty`
//! feature gate on, the agent reports ClusterProperties in the ManagedCluster status beside
//! the ClusterClaims (a property wins over a claim of the same name).

pub mod v1alpha1;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// API group name.
pub const GROUP: &str = "about.k8s.io";

/// Annotation the upstream About API CRD carries (an API in a `*.k8s.io` group must name the
/// enhancement that approved it).
pub const API_APPROVED_ANNOTATION: &str = crate::approval::API_APPROVED_ANNOTATION;

/// The enhancement that approved the About API.
pub const API_APPROVED_BY: &str = "https://github.com/kubernetes/enhancements/pull/3084";

/// CRDs of this group, installed on a managed cluster by a Klusterlet whose registration has
/// the `ClusterProperty` feature gate on.
pub fn klusterlet_crds() -> Vec<CustomResourceDefinition> {
    vec![crate::approval::api_approved(
        v1alpha1::ClusterProperty::crd(),
        API_APPROVED_BY,
    )]
}

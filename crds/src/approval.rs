//! The approval annotation Kubernetes asks of CRDs in its own (`*.k8s.io`) groups.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Annotation a CRD of a `*.k8s.io` group must carry: the enhancement that approved its API.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// `crd` annotated as approved by `enhancement` (see [`API_APPROVED_ANNOTATION`]).
pub fn api_approved(
    mut crd: CustomResourceDefinition,
    enhancement: &str,
) -> CustomResourceDefinition {
    crd.metadata
        .annotations
        .get_or_insert_default()
        .insert(API_APPROVED_ANNOTATION.to_owned(), enhancement.to_owned());
    crd
}

//! What the operators' Deployments have in common — pure: the replica rule, container
//! resources from a `resourceRequirement`, the restricted security context, and which image a
//! component runs.

use ocm_api::operator::v1::{ResourceQosClass, ResourceRequirement};
use serde_json::{Value, json};

/// Upstream's replica rule: 1 on a cluster with at most one control-plane node, else 3.
pub fn replicas(control_plane_nodes: usize) -> i64 {
    if control_plane_nodes <= 1 { 1 } else { 3 }
}

/// Container resources per a `resourceRequirement`: Default asks for a little CPU and
/// memory, BestEffort for nothing, ResourceRequirement for what it gives.
pub fn container_resources(requirement: Option<&ResourceRequirement>) -> Value {
    match requirement.and_then(|r| r.r#type).unwrap_or_default() {
        ResourceQosClass::Default => json!({"requests": {"cpu": "2m", "memory": "16Mi"}}),
        ResourceQosClass::BestEffort => json!({}),
        ResourceQosClass::ResourceRequirement => requirement
            .and_then(|r| r.resource_requirements.as_ref())
            .and_then(|r| serde_json::to_value(r).ok())
            .unwrap_or_else(|| json!({})),
    }
}

/// The security context of every container the operators run: non-root, read-only root
/// filesystem, no privilege escalation, no capabilities.
pub fn restricted_security_context() -> Value {
    json!({"allowPrivilegeEscalation": false, "runAsNonRoot": true,
           "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}})
}

/// The image a component runs: `named` when set to something other than one of the CRD's
/// defaults (upstream's images, which mean "not chosen"), else the `ocm` image.
pub fn chosen_image(named: Option<&str>, crd_defaults: &[&str], ocm_image: &str) -> String {
    named
        .filter(|image| !image.is_empty() && !crd_defaults.contains(image))
        .unwrap_or(ocm_image)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_default_images_mean_the_ocm_image() {
        let defaults = ["quay.io/open-cluster-management/registration"];
        let pick = |named| chosen_image(named, &defaults, "ocm:1");
        assert_eq!(pick(None), "ocm:1");
        assert_eq!(pick(Some("")), "ocm:1");
        assert_eq!(pick(Some(defaults[0])), "ocm:1");
        assert_eq!(pick(Some("example.com/r:2")), "example.com/r:2");
        assert_eq!(replicas(0), 1);
        assert_eq!(replicas(3), 3);
    }
}

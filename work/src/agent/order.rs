//! The order the agent applies a work's manifests in: upstream's kind ranks (namespaces and
//! CRDs first, workloads late, webhooks last), stable within a rank.

/// Rank of a kind; lower is applied first.
pub fn kind_rank(group: &str, kind: &str) -> u32 {
    match (group, kind) {
        ("scheduling.k8s.io", "PriorityClass")
        | ("", "Namespace")
        | ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("storage.k8s.io", "StorageClass")
        | ("", "PersistentVolume")
        | ("policy", "PodSecurityPolicy") => 0,
        (
            "rbac.authorization.k8s.io",
            "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding",
        ) => 1,
        ("networking.k8s.io", "NetworkPolicy")
        | ("", "ResourceQuota" | "LimitRange" | "ServiceAccount")
        | ("policy", "PodDisruptionBudget") => 2,
        ("", "Secret" | "ConfigMap" | "PersistentVolumeClaim") => 3,
        ("", "Service") => 4,
        ("apps", "DaemonSet" | "ReplicaSet" | "Deployment" | "StatefulSet")
        | ("", "Pod" | "ReplicationController")
        | ("autoscaling", "HorizontalPodAutoscaler")
        | ("batch", "Job" | "CronJob") => 5,
        ("apiregistration.k8s.io", "APIService")
        | (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration"
            | "ValidatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding",
        ) => 6,
        _ => 1000,
    }
}

/// Indexes of `manifests` ((group, kind) each) in apply order.
pub fn apply_order(manifests: &[(String, String)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..manifests.len()).collect();
    order.sort_by_key(|&i| kind_rank(&manifests[i].0, &manifests[i].1));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_and_crds_first_workloads_late_unknown_last_and_stable() {
        let m = |g: &str, k: &str| (g.to_owned(), k.to_owned());
        let manifests = vec![
            m("example.com", "Widget"),
            m("apps", "Deployment"),
            m("", "ConfigMap"),
            m("apiextensions.k8s.io", "CustomResourceDefinition"),
            m("", "Namespace"),
            m("", "Secret"),
        ];
        assert_eq!(apply_order(&manifests), vec![3, 4, 2, 5, 1, 0]);
    }
}

//! The operators' own install manifests, from code (so no hand-kept copy drifts) — pure.
//!
//! Hub: namespace `open-cluster-management`, ServiceAccount `cluster-manager`, a ClusterRole
//! holding every rule the operator grants the hub components (RBAC lets it grant only what it
//! holds) plus what it needs to install them, its binding, and the Deployment running
//! `ocm operator hub --image <image>`. The ClusterManager CRD is passed in (it comes from
//! `ocm_api::crds`).

use serde_json::{Value, json};

use crate::cluster_manager::rbac::cluster_rules;
use crate::cluster_manager::render::Component;

/// Namespace of the operators.
pub const OPERATOR_NAMESPACE: &str = "open-cluster-management";

/// Name of the hub operator's ServiceAccount, ClusterRole, binding and Deployment.
pub const HUB_OPERATOR: &str = "cluster-manager";

/// The rules of the hub operator's ClusterRole.
pub fn hub_operator_rules() -> Value {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| json!({"apiGroups": groups, "resources": resources, "verbs": verbs});
    let all = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    let mut rules = vec![
        rule(
            &["operator.open-cluster-management.io"],
            &["clustermanagers"],
            &["get", "list", "watch", "update", "patch"],
        ),
        rule(
            &["operator.open-cluster-management.io"],
            &["clustermanagers/status", "clustermanagers/finalizers"],
            &["update", "patch"],
        ),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            &all,
        ),
        rule(
            &["admissionregistration.k8s.io"],
            &[
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
            ],
            &all,
        ),
        rule(
            &[""],
            &["namespaces", "serviceaccounts", "services", "secrets"],
            &all,
        ),
        rule(&["apps"], &["deployments"], &all),
        rule(
            &["rbac.authorization.k8s.io"],
            &[
                "clusterroles",
                "clusterrolebindings",
                "roles",
                "rolebindings",
            ],
            &all,
        ),
        rule(&[""], &["nodes"], &["list"]),
        // The components' leader-election Roles.
        rule(
            &["coordination.k8s.io"],
            &["leases"],
            &["get", "create", "update"],
        ),
    ];
    for component in [
        Component::Registration,
        Component::Placement,
        Component::Work,
        Component::AddonManager,
        Component::Webhook,
    ] {
        if let Value::Array(granted) = cluster_rules(component) {
            rules.extend(granted);
        }
    }
    Value::Array(rules)
}

/// The hub operator's install manifests, `crd` (the ClusterManager CRD) first.
pub fn hub_operator(image: &str, crd: Value) -> Vec<Value> {
    let labels = json!({"app": HUB_OPERATOR});
    vec![
        crd,
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": OPERATOR_NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": HUB_OPERATOR, "namespace": OPERATOR_NAMESPACE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": HUB_OPERATOR}, "rules": hub_operator_rules()}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": HUB_OPERATOR},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": HUB_OPERATOR},
               "subjects": [{"kind": "ServiceAccount", "name": HUB_OPERATOR,
                             "namespace": OPERATOR_NAMESPACE}]}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": HUB_OPERATOR, "namespace": OPERATOR_NAMESPACE,
                     "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"serviceAccountName": HUB_OPERATOR,
                                       "containers": [{
                                           "name": HUB_OPERATOR, "image": image,
                                           "args": ["operator", "hub", format!("--image={image}")],
                                           "securityContext": {
                                               "allowPrivilegeEscalation": false,
                                               "runAsNonRoot": true,
                                               "readOnlyRootFilesystem": true,
                                               "capabilities": {"drop": ["ALL"]}},
                                       }]}}}}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hub_operator_holds_every_rule_it_grants() {
        let held = hub_operator_rules();
        let held = held.as_array().unwrap();
        for component in [
            Component::Registration,
            Component::Placement,
            Component::Work,
            Component::AddonManager,
            Component::Webhook,
        ] {
            for rule in cluster_rules(component).as_array().unwrap() {
                assert!(held.contains(rule), "{component:?}: {rule}");
            }
        }
        let objects = hub_operator(
            "example.com/ocm:1",
            json!({"kind": "CustomResourceDefinition"}),
        );
        assert_eq!(objects[0]["kind"], "CustomResourceDefinition");
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["operator", "hub", "--image=example.com/ocm:1"])
        );
    }
}

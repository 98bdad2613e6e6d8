//! The operators' own install manifests, from code (so no hand-kept copy drifts) — pure.
//!
//! Klusterlet (managed cluster): namespace `open-cluster-management`, ServiceAccount,
//! ClusterRole and binding `klusterlet` (every rule it grants the agents, `bind` and
//! `escalate` for the `admin` role it binds, and what it needs to install them), and the
//! Deployment running `ocm operator klusterlet --image <image>`, after the Klusterlet CRD.
//!
//! Hub: namespace `open-cluster-management`, ServiceAccount `cluster-manager`, a ClusterRole
//! holding every rule the operator grants the hub components (RBAC lets it grant only what it
//! holds) plus what it needs to install them, its binding, and the Deployment running
//! `ocm operator hub --image <image>`. The ClusterManager CRD is passed in (it comes from
//! `ocm_api::crds`).

use serde_json::{Value, json};

use crate::cluster_manager::rbac::cluster_rules;
use crate::cluster_manager::render::{Component, WebhookKind};

/// Namespace of the operators.
pub const OPERATOR_NAMESPACE: &str = "open-cluster-management";

/// Name of the hub operator's ServiceAccount, ClusterRole, binding and Deployment.
pub const HUB_OPERATOR: &str = "cluster-manager";

/// Every verb on a kind but the special ones.
const ALL: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// A ClusterRole rule.
fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// The rules of the hub operator's ClusterRole.
pub fn hub_operator_rules() -> Value {
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
            &ALL,
        ),
        rule(
            &["admissionregistration.k8s.io"],
            &[
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
            ],
            &ALL,
        ),
        rule(
            &[""],
            &[
                "namespaces",
                "serviceaccounts",
                "services",
                "secrets",
                "configmaps",
            ],
            &ALL,
        ),
        rule(&["apps"], &["deployments"], &ALL),
        rule(
            &["rbac.authorization.k8s.io"],
            &[
                "clusterroles",
                "clusterrolebindings",
                "roles",
                "rolebindings",
            ],
            &ALL,
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
        Component::Webhook(WebhookKind::Registration),
        Component::Dashboard,
    ] {
        if let Value::Array(granted) = cluster_rules(component) {
            rules.extend(granted);
        }
    }
    // Granted to the registration controller with the ClusterProfile gate.
    rules.extend(crate::cluster_manager::rbac::cluster_profile_rules());
    Value::Array(rules)
}

/// Name of the klusterlet operator's ServiceAccount, ClusterRole, binding and Deployment.
pub const KLUSTERLET_OPERATOR: &str = "klusterlet";

/// The rules of the klusterlet operator's ClusterRole.
pub fn klusterlet_operator_rules() -> Value {
    use crate::klusterlet::rbac;
    let mut rules = vec![
        rule(
            &["operator.open-cluster-management.io"],
            &["klusterlets"],
            &["get", "list", "watch", "update", "patch"],
        ),
        rule(
            &["operator.open-cluster-management.io"],
            &["klusterlets/status", "klusterlets/finalizers"],
            &["update", "patch"],
        ),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            &ALL,
        ),
        rule(&[""], &["namespaces", "serviceaccounts", "secrets"], &ALL),
        rule(&["apps"], &["deployments"], &ALL),
        rule(
            &["rbac.authorization.k8s.io"],
            &[
                "clusterroles",
                "clusterrolebindings",
                "roles",
                "rolebindings",
            ],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete", "escalate", "bind",
            ],
        ),
        rule(&[""], &["nodes"], &["list"]),
        rule(
            &["work.open-cluster-management.io"],
            &["appliedmanifestworks"],
            &["list", "patch", "delete"],
        ),
        // The hosting-cluster self-report (reportHostingCluster: Enable).
        rule(
            &["cluster.open-cluster-management.io"],
            &["clusterclaims"],
            &["get", "create", "patch", "update"],
        ),
    ];
    for granted in [
        rbac::registration_rules(),
        rbac::work_rules(),
        rbac::work_namespace_rules(),
        rbac::execution_rules(),
    ] {
        if let Value::Array(granted) = granted {
            rules.extend(granted);
        }
    }
    Value::Array(rules)
}

/// The klusterlet operator's install manifests, `crd` (the Klusterlet CRD) first.
pub fn klusterlet_operator(image: &str, crd: Value) -> Vec<Value> {
    operator_manifests(
        KLUSTERLET_OPERATOR,
        klusterlet_operator_rules(),
        &["operator", "klusterlet"],
        image,
        crd,
    )
}

/// The hub operator's install manifests, `crd` (the ClusterManager CRD) first.
pub fn hub_operator(image: &str, crd: Value) -> Vec<Value> {
    operator_manifests(
        HUB_OPERATOR,
        hub_operator_rules(),
        &["operator", "hub"],
        image,
        crd,
    )
}

/// An operator's CRD, namespace, ServiceAccount, ClusterRole (`rules`), binding and
/// Deployment running `ocm <command…> --image=<image>`, all named `name`.
fn operator_manifests(
    name: &str,
    rules: Value,
    command: &[&str],
    image: &str,
    crd: Value,
) -> Vec<Value> {
    let labels = json!({"app": name});
    let mut args: Vec<String> = command.iter().map(|c| (*c).to_owned()).collect();
    args.push(format!("--image={image}"));
    vec![
        crd,
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": OPERATOR_NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": name,
                             "namespace": OPERATOR_NAMESPACE}]}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"serviceAccountName": name,
                                       "containers": [{
                                           "name": name, "image": image, "args": args,
                                           "securityContext":
                                               crate::pod::restricted_security_context(),
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
            Component::Webhook(WebhookKind::Registration),
            Component::Dashboard,
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

    #[test]
    fn the_klusterlet_operator_holds_every_rule_it_grants() {
        use crate::klusterlet::rbac;
        let held = klusterlet_operator_rules();
        let held = held.as_array().unwrap();
        for granted in [
            rbac::registration_rules(),
            rbac::work_rules(),
            rbac::work_namespace_rules(),
            rbac::execution_rules(),
        ] {
            for rule in granted.as_array().unwrap() {
                assert!(held.contains(rule), "{rule}");
            }
        }
        let objects = klusterlet_operator(
            "example.com/ocm:1",
            json!({"kind": "CustomResourceDefinition"}),
        );
        let deployment = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(deployment["metadata"]["name"], "klusterlet");
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["operator", "klusterlet", "--image=example.com/ocm:1"])
        );
    }
}

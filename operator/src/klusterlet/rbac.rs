//! The agents' permissions on their managed cluster — pure.
//!
//! Registration agent (`open-cluster-management:<klusterlet>-registration:agent`): its own and
//! the addons' secrets (addon agents' credentials go to the addons' install namespaces, so
//! Secrets across the cluster), namespaces (the cluster sets' managed namespaces), nodes,
//! ClusterClaims and ClusterProperties (status), Leases (addon health), events.
//!
//! Work agent (`open-cluster-management:<klusterlet>-work:agent`): AppliedManifestWorks,
//! SubjectAccessReviews (executor checks), events; a Role in the agent namespace to read the
//! hub kubeconfig secret. What it may apply: the `admin` ClusterRole
//! (`…-work:execution-admin`), plus `…-work:execution` for the cluster-scoped kinds works
//! commonly carry (namespaces, CRDs, RBAC), plus `…-work:aggregate`, which gathers every
//! ClusterRole labelled `open-cluster-management.io/aggregate-to-work: "true"` — label a
//! ClusterRole to let works apply more.

use serde_json::{Value, json};

use super::agents::{Agent, REGISTRATION_SA, WORK_SA};

/// Label of ClusterRoles aggregated into what the work agent may apply.
pub const AGGREGATE_TO_WORK_LABEL: &str = "open-cluster-management.io/aggregate-to-work";

const ALL: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// Rules of the registration agent's ClusterRole.
pub fn registration_rules() -> Value {
    json!([
        rule(&[""], &["secrets"], &ALL),
        // Managed namespaces of the hub's cluster sets (and addon install namespaces).
        rule(
            &[""],
            &["namespaces"],
            &["create", "get", "list", "update", "watch", "patch"]
        ),
        rule(&[""], &["nodes"], &["get", "list", "watch"]),
        rule(
            &["coordination.k8s.io"],
            &["leases"],
            &["get", "list", "watch"]
        ),
        rule(
            &["cluster.open-cluster-management.io"],
            &["clusterclaims"],
            &["get", "list", "watch"]
        ),
        rule(
            &["about.k8s.io"],
            &["clusterproperties"],
            &["get", "list", "watch"]
        ),
        rule(
            &["", "events.k8s.io"],
            &["events"],
            &["create", "patch", "update"]
        ),
    ])
}

/// Rules of the work agent's ClusterRole.
pub fn work_rules() -> Value {
    json!([
        rule(
            &["work.open-cluster-management.io"],
            &["appliedmanifestworks"],
            &ALL
        ),
        rule(
            &["work.open-cluster-management.io"],
            &[
                "appliedmanifestworks/status",
                "appliedmanifestworks/finalizers"
            ],
            &["update", "patch"]
        ),
        rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
            &["create"]
        ),
        rule(
            &["", "events.k8s.io"],
            &["events"],
            &["create", "patch", "update"]
        ),
    ])
}

/// Rules of the work agent's Role in the agent namespace.
pub fn work_namespace_rules() -> Value {
    json!([rule(&[""], &["secrets"], &["get", "list", "watch"])])
}

/// Rules of `…-work:execution`: cluster-scoped kinds beyond `admin` that works apply.
pub fn execution_rules() -> Value {
    let mut rbac_verbs: Vec<&str> = ALL.to_vec();
    rbac_verbs.extend(["escalate", "bind"]);
    json!([
        rule(&[""], &["namespaces"], &ALL),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            &ALL
        ),
        rule(
            &["rbac.authorization.k8s.io"],
            &[
                "clusterroles",
                "clusterrolebindings",
                "roles",
                "rolebindings"
            ],
            &rbac_verbs
        ),
    ])
}

fn cluster_role(name: &str, rules: Value, label: &Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name, "labels": label}, "rules": rules})
}

/// A binding of `subjects` to `role_kind` `role`: a RoleBinding in `namespace`, else a
/// ClusterRoleBinding.
fn binding(
    name: &str,
    namespace: Option<&str>,
    (role_kind, role): (&str, &str),
    subjects: &Value,
    label: &Value,
) -> Value {
    let mut metadata = json!({"name": name, "labels": label});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    let kind = match namespace {
        Some(_) => "RoleBinding",
        None => "ClusterRoleBinding",
    };
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": subjects})
}

/// The RBAC objects of one agent of Klusterlet `owner` whose agents live in `namespace`.
pub fn objects(owner: &str, namespace: &str, agent: Agent, label: &Value) -> Vec<Value> {
    let account = agent.service_account();
    let subjects = json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}]);
    let mut out = Vec::new();
    let grant = |role: String, rules: Value, out: &mut Vec<Value>| {
        out.push(cluster_role(&role, rules, label));
        out.push(binding(
            &role,
            None,
            ("ClusterRole", &role),
            &subjects,
            label,
        ));
    };
    if agent.registers() {
        grant(
            format!("open-cluster-management:{owner}-registration:agent"),
            registration_rules(),
            &mut out,
        );
    }
    if agent.works() {
        let work = format!("open-cluster-management:{owner}-work:agent");
        grant(work.clone(), work_rules(), &mut out);
        out.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                        "metadata": {"name": work, "namespace": namespace, "labels": label},
                        "rules": work_namespace_rules()}),
        );
        out.push(binding(
            &work,
            Some(namespace),
            ("Role", &work),
            &subjects,
            label,
        ));
        let admin = format!("open-cluster-management:{owner}-work:execution-admin");
        out.push(binding(
            &admin,
            None,
            ("ClusterRole", "admin"),
            &subjects,
            label,
        ));
        grant(
            format!("open-cluster-management:{owner}-work:execution"),
            execution_rules(),
            &mut out,
        );
        let aggregate = format!("open-cluster-management:{owner}-work:aggregate");
        out.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": aggregate, "labels": label},
                        // No rules: the aggregation controller fills them in.
                        "aggregationRule": {"clusterRoleSelectors": [
                            {"matchLabels": {AGGREGATE_TO_WORK_LABEL: "true"}}]}}),
        );
        out.push(binding(
            &aggregate,
            None,
            ("ClusterRole", &aggregate),
            &subjects,
            label,
        ));
    }
    debug_assert!(account == REGISTRATION_SA || account == WORK_SA);
    out
}

/// The RBAC objects of one Hosted agent, on the management cluster: its secrets in the agent
/// namespace, and for the registration agent the credentials and Leases of the cluster's
/// hosted addons (which run on the management cluster); nothing else (the managed cluster it
/// reaches with the external kubeconfig).
pub fn hosted_objects(owner: &str, namespace: &str, agent: Agent, label: &Value) -> Vec<Value> {
    let account = agent.service_account();
    let subjects = json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}]);
    let verbs: &[&str] = if agent.registers() {
        &ALL
    } else {
        &["get", "list", "watch"]
    };
    let role = format!(
        "open-cluster-management:management:{owner}-{}:agent",
        match agent {
            Agent::Registration => "registration",
            Agent::Work => "work",
            Agent::Singleton => "agent",
        }
    );
    let mut out = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": role, "namespace": namespace, "labels": label},
               "rules": [rule(&[""], &["secrets"], verbs)]}),
        binding(&role, Some(namespace), ("Role", &role), &subjects, label),
    ];
    if agent.registers() {
        // Hosted addons of this cluster run their agents here: the registration agent writes
        // their credentials into their install namespaces and watches their Leases.
        let addons =
            format!("open-cluster-management:management:{owner}-registration:addon-management");
        out.push(cluster_role(
            &addons,
            json!([
                rule(&[""], &["secrets"], &ALL),
                rule(&[""], &["namespaces"], &["get", "create"]),
                rule(
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["get", "list", "watch"]
                ),
            ]),
            label,
        ));
        out.push(binding(
            &addons,
            None,
            ("ClusterRole", &addons),
            &subjects,
            label,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_gets_its_roles_bound_to_its_account() {
        let label = json!({});
        let registration = objects("k", "ns", Agent::Registration, &label);
        assert_eq!(registration.len(), 2);
        assert_eq!(registration[1]["subjects"][0]["name"], REGISTRATION_SA);
        let work = objects("k", "ns", Agent::Work, &label);
        let names: Vec<&str> = work
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        assert!(names.contains(&"open-cluster-management:k-work:execution-admin"));
        let admin = work
            .iter()
            .find(|o| o["metadata"]["name"] == "open-cluster-management:k-work:execution-admin")
            .unwrap();
        assert_eq!(admin["roleRef"]["name"], "admin");
        let role = work.iter().find(|o| o["kind"] == "Role").unwrap();
        assert_eq!(role["metadata"]["namespace"], "ns");
        assert!(
            work.iter()
                .all(|o| o["subjects"].is_null() || o["subjects"][0]["name"] == WORK_SA)
        );
        let singleton = objects("k", "ns", Agent::Singleton, &label);
        assert_eq!(singleton.len(), registration.len() + work.len());
    }
}

//! The permissions of each hub component — pure.
//!
//! From an audit of every API call the components make (`docs/design/hub-component-permissions.md`):
//! a ClusterRole per component with what it uses across the cluster, and for the controller
//! components a Role in the hub namespace for leader election (create Leases, get and update
//! its own). The registration controller's role also holds every rule it grants to agents
//! (the per-cluster and shared roles it writes), because RBAC lets a subject grant only what
//! it holds — it needs neither `escalate` nor `bind` that way.
//!
//! Not granted: `execute-as` for the work controller on named executors (a
//! ManifestWorkReplicaSet whose template names an executor needs it, narrowed to those service
//! accounts by the admin), and `get` on addon config kinds other than AddOnDeploymentConfig
//! (add per kind the hub's addons use). The work controller and the addon manager may
//! `execute-as` the work agent's default service account
//! (`system:serviceaccount::klusterlet-work-sa`, upstream's executor-admin role): with the
//! `NilExecutorValidating` gate, the works they write without an executor are checked against
//! it.
//!
//! The dashboard (when a ClusterManager asks for it) watches what its pages show and does what
//! its Accept and Deny buttons do (`ocm_dashboard::actions`, i.e. `ocm accept`): read a
//! ManagedCluster and patch `hubAcceptsClient` (with the accept right the hub's admission
//! asks about), read its CSRs and write their approval for the client signer; it asks the hub
//! with SelfSubjectAccessReviews whether to offer those buttons. Its lease watch names the
//! clusters' lease, so it may list only leases of that name.

use serde_json::{Value, json};

use super::component::Component;

const CLUSTER: &str = "cluster.open-cluster-management.io";
const ADDON: &str = "addon.open-cluster-management.io";
const WORK: &str = "work.open-cluster-management.io";
const REGISTER: &str = "register.open-cluster-management.io";

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn named(groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs, "resourceNames": names})
}

/// Writing a CSR's approval, and approving for the `kubernetes.io/kube-apiserver-client`
/// signer (kube-apiserver checks both when a CSR is approved or denied): the registration
/// controller's and the dashboard's Accept and Deny.
fn approve_client_csrs() -> [Value; 2] {
    [
        rule(
            &["certificates.k8s.io"],
            &["certificatesigningrequests/approval"],
            &["update"],
        ),
        named(
            &["certificates.k8s.io"],
            &["signers"],
            &["approve"],
            &["kubernetes.io/kube-apiserver-client"],
        ),
    ]
}

/// `execute-as` on the work agent's default service account only: works written without an
/// executor pass the `NilExecutorValidating` check.
fn default_executor() -> Value {
    named(
        &[WORK],
        &["manifestworks"],
        &["execute-as"],
        &[ocm_api::work::names::hub_feature_gates::DEFAULT_EXECUTOR],
    )
}

/// What the registration controller needs with the `ClusterProfile` gate: to keep
/// ClusterProfiles and their status.
pub fn cluster_profile_rules() -> Vec<Value> {
    let group = ocm_api::multicluster::GROUP;
    vec![
        rule(
            &[group],
            &["clusterprofiles"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
        rule(&[group], &["clusterprofiles/status"], &["update", "patch"]),
        // Profiles are made only in namespaces that exist and are not terminating.
        rule(&[""], &["namespaces"], &["get"]),
    ]
}

/// The rules of a component's ClusterRole.
pub fn cluster_rules(component: Component) -> Value {
    let mut rules = match component {
        Component::Registration => vec![
            rule(
                &[CLUSTER],
                &["managedclusters"],
                &["get", "list", "watch", "patch", "update"],
            ),
            rule(
                &[CLUSTER],
                &["managedclusters/status"],
                &["patch", "update"],
            ),
            rule(&[REGISTER], &["managedclusters/accept"], &["update"]),
            rule(
                &[REGISTER],
                &["managedclusters/clientcertificates"],
                &["renew"],
            ),
            rule(
                &[CLUSTER],
                &["managedclustersets"],
                &["get", "list", "watch", "create"],
            ),
            named(
                &[CLUSTER],
                &["managedclustersets"],
                &["update"],
                &["default", "global"],
            ),
            rule(&[CLUSTER], &["managedclustersets/status"], &["patch"]),
            named(
                &[CLUSTER],
                &["managedclustersets/join"],
                &["create"],
                &["default"],
            ),
            rule(
                &[CLUSTER],
                &["managedclustersetbindings"],
                &["list", "watch"],
            ),
            rule(
                &[CLUSTER],
                &["managedclustersetbindings/status"],
                &["patch"],
            ),
            rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
                &["get", "list", "watch", "create"],
            ),
            rule(
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
                &["create"],
            ),
            rule(
                &["coordination.k8s.io"],
                &["leases"],
                &["get", "list", "watch", "create", "update"],
            ),
            rule(&[""], &["namespaces"], &["create", "patch"]),
            rule(
                &["rbac.authorization.k8s.io"],
                &["clusterroles", "clusterrolebindings"],
                &["list", "watch", "create", "patch", "delete"],
            ),
            rule(
                &["rbac.authorization.k8s.io"],
                &["rolebindings"],
                &["get", "list", "watch", "create", "patch", "delete"],
            ),
            rule(
                &[WORK],
                &["manifestworks"],
                &["get", "list", "watch", "update", "patch", "delete"],
            ),
            rule(&[WORK], &["manifestworks/status"], &["patch", "update"]),
            rule(
                &[ADDON],
                &["managedclusteraddons"],
                &["get", "list", "watch", "delete"],
            ),
            rule(
                &[ADDON],
                &["managedclusteraddons/status"],
                &["patch", "update"],
            ),
            rule(
                &["", "events.k8s.io"],
                &["events"],
                &["create", "patch", "update"],
            ),
        ],
        Component::Placement => vec![
            rule(
                &[CLUSTER],
                &[
                    "managedclusters",
                    "managedclustersets",
                    "managedclustersetbindings",
                    "addonplacementscores",
                    "placements",
                    "placementdecisions",
                ],
                &["list", "watch"],
            ),
            rule(
                &[CLUSTER],
                &["placementdecisions"],
                &["create", "patch", "delete"],
            ),
            rule(
                &[CLUSTER],
                &["placementdecisions/status", "placements/status"],
                &["patch"],
            ),
            rule(&[CLUSTER], &["placements/finalizers"], &["update"]),
            rule(&["events.k8s.io"], &["events"], &["create", "patch"]),
            // The placement debugger: its callers' tokens and rights, and the placement asked
            // about.
            rule(&[CLUSTER], &["placements"], &["get"]),
            rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
            rule(
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
                &["create"],
            ),
        ],
        Component::Work => vec![
            rule(
                &[WORK],
                &["manifestworkreplicasets"],
                &["list", "watch", "patch"],
            ),
            rule(&[WORK], &["manifestworkreplicasets/status"], &["patch"]),
            rule(
                &[WORK],
                &["manifestworks"],
                &["list", "watch", "create", "patch", "delete"],
            ),
            default_executor(),
            rule(
                &[CLUSTER],
                &["placements", "placementdecisions", "managedclusters"],
                &["list", "watch"],
            ),
        ],
        Component::AddonManager => vec![
            rule(
                &[ADDON],
                &["clustermanagementaddons", "addondeploymentconfigs"],
                &["get", "list", "watch"],
            ),
            rule(&[ADDON], &["clustermanagementaddons/status"], &["patch"]),
            rule(
                &[ADDON],
                &["managedclusteraddons"],
                &["list", "watch", "create", "delete"],
            ),
            rule(&[ADDON], &["managedclusteraddons/status"], &["patch"]),
            // The CSR approval reads the cluster a CSR is for.
            rule(
                &[CLUSTER],
                &["placementdecisions", "managedclusters"],
                &["get", "list", "watch"],
            ),
            // Template addons: the addon manager renders AddOnTemplates into ManifestWorks,
            // adopts and finalizes their addons, approves and signs their agents' CSRs (custom
            // signers with the CA Secret a template names) and binds their hub roles.
            rule(&[ADDON], &["addontemplates"], &["get", "list", "watch"]),
            // Warning Events on addons no ClusterManagementAddOn stands for.
            rule(&["events.k8s.io"], &["events"], &["create", "patch"]),
            rule(
                &[ADDON],
                &["clustermanagementaddons", "managedclusteraddons"],
                &["get", "update", "patch"],
            ),
            rule(
                &[WORK],
                &["manifestworks"],
                &[
                    "get", "list", "watch", "create", "update", "patch", "delete",
                ],
            ),
            default_executor(),
            rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
                &["get", "list", "watch"],
            ),
            rule(
                &["certificates.k8s.io"],
                &[
                    "certificatesigningrequests/approval",
                    "certificatesigningrequests/status",
                ],
                &["update"],
            ),
            rule(&["certificates.k8s.io"], &["signers"], &["approve", "sign"]),
            rule(&[""], &["secrets"], &["get"]),
            rule(
                &["rbac.authorization.k8s.io"],
                &["rolebindings"],
                &[
                    "get", "list", "watch", "create", "update", "patch", "delete",
                ],
            ),
            rule(
                &["rbac.authorization.k8s.io"],
                &["roles", "clusterroles"],
                &["bind"],
            ),
            // Token-based addon registration: each such addon agent's ServiceAccount in its
            // cluster namespace, and a Role (with its binding) letting the cluster's agent
            // request its tokens — which the addon manager may grant only holding it. It
            // watches the three kinds (label-selected) to repair them when they are deleted.
            rule(
                &[""],
                &["serviceaccounts"],
                &["get", "list", "watch", "create", "patch", "delete"],
            ),
            rule(&[""], &["serviceaccounts/token"], &["create"]),
            rule(
                &["rbac.authorization.k8s.io"],
                &["roles"],
                &["get", "list", "watch", "create", "patch", "delete"],
            ),
        ],
        Component::Webhook(_) => vec![
            rule(
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
                &["create"],
            ),
            rule(&[""], &["namespaces"], &["get"]),
        ],
        Component::Dashboard => dashboard_rules(),
    };
    if matches!(component, Component::Registration | Component::Dashboard) {
        rules.extend(approve_client_csrs());
    }
    Value::Array(rules)
}

/// What the dashboard watches (one watch per kind its pages show) and writes (accepting and
/// denying join requests; the CSR approval rules are added by [`cluster_rules`]).
fn dashboard_rules() -> Vec<Value> {
    vec![
        rule(
            &[CLUSTER],
            &[
                "managedclusters",
                "managedclustersets",
                "managedclustersetbindings",
                "placements",
                "placementdecisions",
                "addonplacementscores",
            ],
            &["list", "watch"],
        ),
        rule(
            &[WORK],
            &["manifestworks", "manifestworkreplicasets"],
            &["list", "watch"],
        ),
        rule(
            &[ADDON],
            &["clustermanagementaddons", "managedclusteraddons"],
            &["list", "watch"],
        ),
        named(
            &["coordination.k8s.io"],
            &["leases"],
            &["list", "watch"],
            &[ocm_api::cluster::names::MANAGED_CLUSTER_LEASE],
        ),
        rule(
            &["certificates.k8s.io"],
            &["certificatesigningrequests"],
            &["get", "list", "watch"],
        ),
        // Accept: what `ocm accept` does.
        rule(&[CLUSTER], &["managedclusters"], &["get", "patch"]),
        rule(&[REGISTER], &["managedclusters/accept"], &["update"]),
        // Whether to offer the buttons.
        rule(
            &["authorization.k8s.io"],
            &["selfsubjectaccessreviews"],
            &["create"],
        ),
    ]
}

/// The rules of a controller component's Role in the hub namespace (leader election on
/// `lease`); `None` for the webhook server and the dashboard, which elect no leader.
pub fn lease_rules(component: Component, lease: &str) -> Option<Value> {
    (!matches!(component, Component::Webhook(_) | Component::Dashboard)).then(|| {
        json!([
            rule(&["coordination.k8s.io"], &["leases"], &["create"]),
            // `watch` by name: a waiting candidate sees a released Lease at once.
            named(
                &["coordination.k8s.io"],
                &["leases"],
                &["get", "update", "watch"],
                &[lease]
            ),
        ])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster_manager::component::WebhookKind;

    fn allows(rules: &Value, group: &str, resource: &str, verb: &str) -> bool {
        rules.as_array().unwrap().iter().any(|r| {
            let has = |field: &str, value: &str| {
                r[field]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|x| x == value || x == "*"))
            };
            has("apiGroups", group) && has("resources", resource) && has("verbs", verb)
        })
    }

    /// Whether `rules` may approve and deny CSRs for the client signer.
    fn approves_client_csrs(rules: &Value) -> bool {
        allows(
            rules,
            "certificates.k8s.io",
            "certificatesigningrequests/approval",
            "update",
        ) && allows(rules, "certificates.k8s.io", "signers", "approve")
    }

    #[test]
    fn registration_holds_what_it_grants_without_escalate_or_bind() {
        let rules = cluster_rules(Component::Registration);
        // Its own work: approve CSRs with the client signer, make namespaces and roles.
        assert!(approves_client_csrs(&rules));
        assert!(allows(&rules, "", "namespaces", "create"));
        assert!(allows(
            &rules,
            "rbac.authorization.k8s.io",
            "clusterroles",
            "create"
        ));
        // What it grants agents.
        assert!(allows(
            &rules,
            REGISTER,
            "managedclusters/clientcertificates",
            "renew"
        ));
        assert!(allows(&rules, WORK, "manifestworks/status", "update"));
        assert!(allows(&rules, "events.k8s.io", "events", "create"));
        assert!(!allows(
            &rules,
            "rbac.authorization.k8s.io",
            "clusterroles",
            "escalate"
        ));
        assert!(!allows(
            &rules,
            "rbac.authorization.k8s.io",
            "clusterroles",
            "bind"
        ));
        assert!(!allows(&rules, "", "secrets", "get"));
    }

    #[test]
    fn the_other_components_get_only_their_kinds() {
        let placement = cluster_rules(Component::Placement);
        assert!(allows(&placement, CLUSTER, "placementdecisions", "create"));
        assert!(!allows(&placement, WORK, "manifestworks", "create"));
        let work = cluster_rules(Component::Work);
        assert!(allows(&work, WORK, "manifestworks", "create"));
        // `execute-as` only on the default executor (works without one, NilExecutorValidating).
        let execute_as: Vec<&Value> = work
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["verbs"] == json!(["execute-as"]))
            .collect();
        assert_eq!(execute_as.len(), 1);
        assert_eq!(
            execute_as[0]["resourceNames"],
            json!(["system:serviceaccount::klusterlet-work-sa"])
        );
        let addons = cluster_rules(Component::AddonManager);
        assert!(allows(&addons, ADDON, "managedclusteraddons", "create"));
        assert!(!allows(&addons, CLUSTER, "managedclusters", "patch"));
        // What the addon manager reads one by one: the cluster of an addon CSR, a config.
        assert!(allows(&addons, CLUSTER, "managedclusters", "get"));
        assert!(allows(&addons, ADDON, "addondeploymentconfigs", "get"));
        // Token-based addon registration.
        assert!(allows(&addons, "", "serviceaccounts", "create"));
        assert!(allows(&addons, "", "serviceaccounts/token", "create"));
        // The token infrastructure's watches.
        assert!(allows(&addons, "", "serviceaccounts", "watch"));
        for resource in ["roles", "rolebindings"] {
            assert!(allows(
                &addons,
                "rbac.authorization.k8s.io",
                resource,
                "list"
            ));
            assert!(allows(
                &addons,
                "rbac.authorization.k8s.io",
                resource,
                "watch"
            ));
        }
        assert!(allows(
            &addons,
            "rbac.authorization.k8s.io",
            "roles",
            "create"
        ));
        let webhook = cluster_rules(Component::Webhook(WebhookKind::Work));
        assert!(allows(
            &webhook,
            "authorization.k8s.io",
            "subjectaccessreviews",
            "create"
        ));
        assert_eq!(webhook.as_array().unwrap().len(), 2);
        assert!(lease_rules(Component::Webhook(WebhookKind::Addon), "x").is_none());
        let lease = lease_rules(
            Component::Placement,
            "cluster-manager-placement-controller-lock",
        )
        .unwrap();
        assert_eq!(
            lease[1]["resourceNames"][0],
            "cluster-manager-placement-controller-lock"
        );
    }

    #[test]
    fn the_dashboard_watches_its_kinds_and_may_accept_and_deny_but_nothing_more() {
        let rules = cluster_rules(Component::Dashboard);
        for (group, resource) in [
            (CLUSTER, "managedclusters"),
            (CLUSTER, "placementdecisions"),
            (WORK, "manifestworkreplicasets"),
            (ADDON, "managedclusteraddons"),
            ("certificates.k8s.io", "certificatesigningrequests"),
        ] {
            assert!(allows(&rules, group, resource, "watch"), "{resource}");
        }
        // Leases: only the clusters' lease, by name.
        let leases: Vec<&Value> = rules
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["resources"] == json!(["leases"]))
            .collect();
        assert_eq!(leases.len(), 1);
        assert_eq!(leases[0]["resourceNames"], json!(["managed-cluster-lease"]));
        // Accept and deny, as `ocm accept`.
        assert!(allows(&rules, CLUSTER, "managedclusters", "patch"));
        assert!(allows(&rules, REGISTER, "managedclusters/accept", "update"));
        assert!(approves_client_csrs(&rules));
        assert!(allows(
            &rules,
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "create"
        ));
        // Nothing else is written.
        for (group, resource) in [
            (CLUSTER, "managedclusters"),
            (WORK, "manifestworks"),
            (ADDON, "managedclusteraddons"),
            ("certificates.k8s.io", "certificatesigningrequests"),
        ] {
            for verb in ["create", "update", "delete"] {
                assert!(!allows(&rules, group, resource, verb), "{verb} {resource}");
            }
        }
        assert!(!allows(&rules, CLUSTER, "managedclusters/status", "patch"));
        assert!(!allows(&rules, "", "secrets", "get"));
        assert!(lease_rules(Component::Dashboard, "x").is_none());
    }
}

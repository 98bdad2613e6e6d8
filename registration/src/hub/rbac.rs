//! The hub-side permissions of a managed cluster's agents, as plain objects.
//!
//! The agents of cluster `c` authenticate with a client certificate whose organisation is
//! `system:open-cluster-management:c` (and, for older agents, the group
//! `open-cluster-management:c`). What those groups may do on the hub is granted here:
//!
//! - ClusterRole + ClusterRoleBinding `open-cluster-management:managedcluster:<c>`: the
//!   cluster's own ManagedCluster and certificate renewal. Accepted and not-accepted (denied)
//!   forms differ.
//! - RoleBindings `open-cluster-management:managedcluster:<c>:registration` and `...:work` in
//!   the cluster namespace, bound to the two common ClusterRoles
//!   [`REGISTRATION_CLUSTER_ROLE`] and [`WORK_CLUSTER_ROLE`]; they exist only while the cluster
//!   is accepted. The work RoleBinding carries the ManifestWork finalizer so the work agent
//!   keeps its permissions until every ManifestWork in the namespace is gone.
//!
//! Everything here is pure: the controllers apply these objects with server-side apply.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use ocm_api::cluster::names::{REGISTER_GROUP, SUBRESOURCE_CLIENT_CERTIFICATES};
use ocm_api::work::names::MANIFEST_WORK_FINALIZER;

/// Prefix of the user and group names of managed cluster agents:
/// user `system:open-cluster-management:<cluster>:<agent>`, group
/// `system:open-cluster-management:<cluster>`.
pub const SUBJECT_PREFIX: &str = "system:open-cluster-management:";

/// Group every managed cluster agent may also carry in its certificate (kept for backward
/// compatibility; it grants nothing by itself).
pub const MANAGED_CLUSTERS_GROUP: &str = "system:open-cluster-management:managed-clusters";

/// Prefix of the per-cluster RBAC object names: `open-cluster-management:managedcluster:`.
pub const NAME_PREFIX: &str = "open-cluster-management:managedcluster:";

/// Common ClusterRole of registration agents, bound in each accepted cluster's namespace.
pub const REGISTRATION_CLUSTER_ROLE: &str = "open-cluster-management:managedcluster:registration";

/// Common ClusterRole of work agents, bound in each accepted cluster's namespace.
pub const WORK_CLUSTER_ROLE: &str = "open-cluster-management:managedcluster:work";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";
const WORK_GROUP: &str = "work.open-cluster-management.io";
const ADDON_GROUP: &str = "addon.open-cluster-management.io";

/// Name of the per-cluster ClusterRole and ClusterRoleBinding:
/// `open-cluster-management:managedcluster:<cluster>`.
pub fn cluster_role_name(cluster: &str) -> String {
    format!("{NAME_PREFIX}{cluster}")
}

/// Name of the registration RoleBinding in the cluster namespace:
/// `open-cluster-management:managedcluster:<cluster>:registration`.
pub fn registration_role_binding_name(cluster: &str) -> String {
    format!("{NAME_PREFIX}{cluster}:registration")
}

/// Name of the work RoleBinding in the cluster namespace:
/// `open-cluster-management:managedcluster:<cluster>:work`.
pub fn work_role_binding_name(cluster: &str) -> String {
    format!("{NAME_PREFIX}{cluster}:work")
}

/// The group of the agents of `cluster`: `system:open-cluster-management:<cluster>`.
pub fn cluster_group(cluster: &str) -> String {
    format!("{SUBJECT_PREFIX}{cluster}")
}

/// The groups the cluster's RBAC is bound to: `system:open-cluster-management:<cluster>` and
/// `open-cluster-management:<cluster>`.
pub fn cluster_subjects(cluster: &str) -> Vec<Subject> {
    [
        cluster_group(cluster),
        format!("open-cluster-management:{cluster}"),
    ]
    .into_iter()
    .map(|name| Subject {
        kind: "Group".to_owned(),
        api_group: Some(RBAC_GROUP.to_owned()),
        name,
        namespace: None,
    })
    .collect()
}

fn labels_with(extra: &BTreeMap<String, String>, cluster: &str) -> BTreeMap<String, String> {
    let mut labels = extra.clone();
    labels.insert(CLUSTER_NAME.to_owned(), cluster.to_owned());
    labels
}

fn rule(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        resource_names: (!names.is_empty()).then(|| strings(names)),
        verbs: strings(verbs),
        non_resource_urls: None,
    }
}

/// The rules of the per-cluster ClusterRole. Accepted: create/get/list/watch CSRs, `renew` on
/// `register.open-cluster-management.io` managedclusters/clientcertificates, get/list/update/
/// watch its own ManagedCluster and patch/update its status. Not accepted: only get/list/watch
/// its own ManagedCluster.
pub fn cluster_role_rules(cluster: &str, accepted: bool) -> Vec<PolicyRule> {
    if accepted {
        vec![
            rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
                &[],
                &["create", "get", "list", "watch"],
            ),
            rule(
                &[REGISTER_GROUP],
                &[SUBRESOURCE_CLIENT_CERTIFICATES],
                &[],
                &["renew"],
            ),
            rule(
                &[CLUSTER_GROUP],
                &["managedclusters"],
                &[cluster],
                &["get", "list", "update", "watch"],
            ),
            rule(
                &[CLUSTER_GROUP],
                &["managedclusters/status"],
                &[cluster],
                &["patch", "update"],
            ),
        ]
    } else {
        vec![rule(
            &[CLUSTER_GROUP],
            &["managedclusters"],
            &[cluster],
            &["get", "list", "watch"],
        )]
    }
}

/// The per-cluster ClusterRole `open-cluster-management:managedcluster:<cluster>`.
pub fn cluster_role(
    cluster: &str,
    accepted: bool,
    extra_labels: &BTreeMap<String, String>,
) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(cluster_role_name(cluster)),
            labels: Some(labels_with(extra_labels, cluster)),
            ..ObjectMeta::default()
        },
        rules: Some(cluster_role_rules(cluster, accepted)),
        aggregation_rule: None,
    }
}

/// The per-cluster ClusterRoleBinding, binding [`cluster_role`] to [`cluster_subjects`].
pub fn cluster_role_binding(
    cluster: &str,
    extra_labels: &BTreeMap<String, String>,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(cluster_role_name(cluster)),
            labels: Some(labels_with(extra_labels, cluster)),
            ..ObjectMeta::default()
        },
        role_ref: cluster_role_ref(&cluster_role_name(cluster)),
        subjects: Some(cluster_subjects(cluster)),
    }
}

fn cluster_role_ref(name: &str) -> RoleRef {
    RoleRef {
        api_group: RBAC_GROUP.to_owned(),
        kind: "ClusterRole".to_owned(),
        name: name.to_owned(),
    }
}

/// The registration RoleBinding in the cluster namespace, binding
/// [`REGISTRATION_CLUSTER_ROLE`] to the cluster's groups.
pub fn registration_role_binding(
    cluster: &str,
    extra_labels: &BTreeMap<String, String>,
) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(registration_role_binding_name(cluster)),
            namespace: Some(cluster.to_owned()),
            labels: Some(labels_with(extra_labels, cluster)),
            ..ObjectMeta::default()
        },
        role_ref: cluster_role_ref(REGISTRATION_CLUSTER_ROLE),
        subjects: Some(cluster_subjects(cluster)),
    }
}

/// The work RoleBinding in the cluster namespace, binding [`WORK_CLUSTER_ROLE`] to the
/// cluster's groups, with the ManifestWork finalizer
/// (`cluster.open-cluster-management.io/manifest-work-cleanup`).
pub fn work_role_binding(cluster: &str, extra_labels: &BTreeMap<String, String>) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(work_role_binding_name(cluster)),
            namespace: Some(cluster.to_owned()),
            labels: Some(labels_with(extra_labels, cluster)),
            finalizers: Some(vec![MANIFEST_WORK_FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        role_ref: cluster_role_ref(WORK_CLUSTER_ROLE),
        subjects: Some(cluster_subjects(cluster)),
    }
}

/// The rules of [`REGISTRATION_CLUSTER_ROLE`]: leases get/list/watch/update (any name);
/// managedclusteraddons get/list/watch; managedclusteraddons/status patch/update;
/// `events.k8s.io` events create.
pub fn registration_cluster_role_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &["coordination.k8s.io"],
            &["leases"],
            &[],
            &["get", "list", "watch", "update"],
        ),
        rule(
            &[ADDON_GROUP],
            &["managedclusteraddons"],
            &[],
            &["get", "list", "watch"],
        ),
        rule(
            &[ADDON_GROUP],
            &["managedclusteraddons/status"],
            &[],
            &["patch", "update"],
        ),
        rule(&["events.k8s.io"], &["events"], &[], &["create"]),
    ]
}

/// The rules of [`WORK_CLUSTER_ROLE`]: core and `events.k8s.io` events create/patch/update;
/// manifestworks get/list/watch/update/patch; manifestworks/status patch/update.
pub fn work_cluster_role_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &["", "events.k8s.io"],
            &["events"],
            &[],
            &["create", "patch", "update"],
        ),
        rule(
            &[WORK_GROUP],
            &["manifestworks"],
            &[],
            &["get", "list", "watch", "update", "patch"],
        ),
        rule(
            &[WORK_GROUP],
            &["manifestworks/status"],
            &[],
            &["patch", "update"],
        ),
    ]
}

fn common_cluster_role(
    name: &str,
    rules: Vec<PolicyRule>,
    extra_labels: &BTreeMap<String, String>,
) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            // Upstream labels the common roles with an empty cluster name.
            labels: Some(labels_with(extra_labels, "")),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
        aggregation_rule: None,
    }
}

/// The common ClusterRole [`REGISTRATION_CLUSTER_ROLE`].
pub fn registration_cluster_role(extra_labels: &BTreeMap<String, String>) -> ClusterRole {
    common_cluster_role(
        REGISTRATION_CLUSTER_ROLE,
        registration_cluster_role_rules(),
        extra_labels,
    )
}

/// The common ClusterRole [`WORK_CLUSTER_ROLE`].
pub fn work_cluster_role(extra_labels: &BTreeMap<String, String>) -> ClusterRole {
    common_cluster_role(WORK_CLUSTER_ROLE, work_cluster_role_rules(), extra_labels)
}

/// The cluster namespace `<cluster>`, labelled with the extra labels and
/// `open-cluster-management.io/cluster-name=<cluster>`.
pub fn cluster_namespace(cluster: &str, extra_labels: &BTreeMap<String, String>) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(cluster.to_owned()),
            labels: Some(labels_with(extra_labels, cluster)),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Flat = (Vec<String>, Vec<String>, Vec<String>, Vec<String>);

    fn flat(rules: &[PolicyRule]) -> Vec<Flat> {
        rules
            .iter()
            .map(|r| {
                (
                    r.api_groups.clone().unwrap_or_default(),
                    r.resources.clone().unwrap_or_default(),
                    r.resource_names.clone().unwrap_or_default(),
                    r.verbs.clone(),
                )
            })
            .collect()
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn accepted_cluster_role_has_exactly_upstreams_rules() {
        let role = cluster_role("c1", true, &BTreeMap::new());
        assert_eq!(
            role.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:c1")
        );
        assert_eq!(
            role.metadata
                .labels
                .unwrap()
                .get(CLUSTER_NAME)
                .map(String::as_str),
            Some("c1")
        );
        assert_eq!(
            flat(&role.rules.unwrap()),
            vec![
                (
                    s(&["certificates.k8s.io"]),
                    s(&["certificatesigningrequests"]),
                    vec![],
                    s(&["create", "get", "list", "watch"])
                ),
                (
                    s(&["register.open-cluster-management.io"]),
                    s(&["managedclusters/clientcertificates"]),
                    vec![],
                    s(&["renew"])
                ),
                (
                    s(&["cluster.open-cluster-management.io"]),
                    s(&["managedclusters"]),
                    s(&["c1"]),
                    s(&["get", "list", "update", "watch"])
                ),
                (
                    s(&["cluster.open-cluster-management.io"]),
                    s(&["managedclusters/status"]),
                    s(&["c1"]),
                    s(&["patch", "update"])
                ),
            ]
        );
    }

    #[test]
    fn denied_cluster_role_only_reads_its_own_cluster() {
        let role = cluster_role("c2", false, &BTreeMap::new());
        assert_eq!(
            flat(&role.rules.unwrap()),
            vec![(
                s(&["cluster.open-cluster-management.io"]),
                s(&["managedclusters"]),
                s(&["c2"]),
                s(&["get", "list", "watch"])
            )]
        );
    }

    #[test]
    fn bindings_name_the_roles_and_both_cluster_groups() {
        let extra = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        let crb = cluster_role_binding("c1", &extra);
        assert_eq!(
            crb.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:c1")
        );
        assert_eq!(crb.role_ref.kind, "ClusterRole");
        assert_eq!(crb.role_ref.api_group, "rbac.authorization.k8s.io");
        assert_eq!(
            crb.role_ref.name,
            "open-cluster-management:managedcluster:c1"
        );
        let labels = crb.metadata.labels.unwrap();
        assert_eq!(labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(labels.get(CLUSTER_NAME).map(String::as_str), Some("c1"));
        let groups: Vec<_> = crb
            .subjects
            .unwrap()
            .into_iter()
            .map(|s| (s.kind, s.api_group.unwrap_or_default(), s.name))
            .collect();
        let expected = vec![
            (
                "Group".to_owned(),
                "rbac.authorization.k8s.io".to_owned(),
                "system:open-cluster-management:c1".to_owned(),
            ),
            (
                "Group".to_owned(),
                "rbac.authorization.k8s.io".to_owned(),
                "open-cluster-management:c1".to_owned(),
            ),
        ];
        assert_eq!(groups, expected);

        let reg = registration_role_binding("c1", &extra);
        assert_eq!(
            reg.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:c1:registration")
        );
        assert_eq!(reg.metadata.namespace.as_deref(), Some("c1"));
        assert_eq!(
            reg.role_ref.name,
            "open-cluster-management:managedcluster:registration"
        );
        assert!(reg.metadata.finalizers.is_none());
        assert_eq!(reg.subjects.unwrap().len(), 2);

        let work = work_role_binding("c1", &extra);
        assert_eq!(
            work.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:c1:work")
        );
        assert_eq!(work.metadata.namespace.as_deref(), Some("c1"));
        assert_eq!(
            work.role_ref.name,
            "open-cluster-management:managedcluster:work"
        );
        assert_eq!(
            work.metadata.finalizers,
            Some(vec![
                "cluster.open-cluster-management.io/manifest-work-cleanup".to_owned()
            ])
        );
        assert_eq!(
            work.metadata
                .labels
                .unwrap()
                .get(CLUSTER_NAME)
                .map(String::as_str),
            Some("c1")
        );
    }

    #[test]
    fn common_registration_role_rules() {
        let role = registration_cluster_role(&BTreeMap::new());
        assert_eq!(
            role.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:registration")
        );
        assert_eq!(
            role.metadata
                .labels
                .unwrap()
                .get(CLUSTER_NAME)
                .map(String::as_str),
            Some("")
        );
        assert_eq!(
            flat(&role.rules.unwrap()),
            vec![
                (
                    s(&["coordination.k8s.io"]),
                    s(&["leases"]),
                    vec![],
                    s(&["get", "list", "watch", "update"])
                ),
                (
                    s(&["addon.open-cluster-management.io"]),
                    s(&["managedclusteraddons"]),
                    vec![],
                    s(&["get", "list", "watch"])
                ),
                (
                    s(&["addon.open-cluster-management.io"]),
                    s(&["managedclusteraddons/status"]),
                    vec![],
                    s(&["patch", "update"])
                ),
                (
                    s(&["events.k8s.io"]),
                    s(&["events"]),
                    vec![],
                    s(&["create"])
                ),
            ]
        );
    }

    #[test]
    fn common_work_role_rules() {
        let role = work_cluster_role(&BTreeMap::new());
        assert_eq!(
            role.metadata.name.as_deref(),
            Some("open-cluster-management:managedcluster:work")
        );
        assert_eq!(
            flat(&role.rules.unwrap()),
            vec![
                (
                    s(&["", "events.k8s.io"]),
                    s(&["events"]),
                    vec![],
                    s(&["create", "patch", "update"])
                ),
                (
                    s(&["work.open-cluster-management.io"]),
                    s(&["manifestworks"]),
                    vec![],
                    s(&["get", "list", "watch", "update", "patch"])
                ),
                (
                    s(&["work.open-cluster-management.io"]),
                    s(&["manifestworks/status"]),
                    vec![],
                    s(&["patch", "update"])
                ),
            ]
        );
    }

    #[test]
    fn namespace_carries_extra_labels_and_cluster_name_wins() {
        let extra = BTreeMap::from([
            ("env".to_owned(), "prod".to_owned()),
            (CLUSTER_NAME.to_owned(), "spoofed".to_owned()),
        ]);
        let ns = cluster_namespace("c9", &extra);
        assert_eq!(ns.metadata.name.as_deref(), Some("c9"));
        let labels = ns.metadata.labels.unwrap();
        assert_eq!(labels.get("env").map(String::as_str), Some("prod"));
        assert_eq!(labels.get(CLUSTER_NAME).map(String::as_str), Some("c9"));
    }
}

//! Registration defaults and the registration part of a ManagedClusterAddOn's status: the
//! subject upstream gives an addon's agent, the default CSR approval check, and the
//! `status.registrations` entries the registration agent on the cluster acts on.

use ocm_api::addon::names::KUBE_APISERVER_CLIENT_SIGNER;
use ocm_api::addon::v1beta1::{
    CustomSignerConfig, KubeClientConfig, KubeClientSubject, RegistrationConfig as StatusConfig,
    RegistrationType, Subject,
};

use serde_json::{Value, json};

use crate::agent::{CsrInfo, RegistrationConfig};

/// Upstream's default user of an addon agent:
/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>`.
pub fn default_user(cluster: &str, addon: &str, agent: &str) -> String {
    format!("system:open-cluster-management:cluster:{cluster}:addon:{addon}:agent:{agent}")
}

/// Upstream's default groups of an addon agent: the per-cluster addon group and the addon
/// group.
pub fn default_groups(cluster: &str, addon: &str) -> Vec<String> {
    vec![
        cluster_addon_group(cluster, addon),
        format!("system:open-cluster-management:addon:{addon}"),
    ]
}

/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>`: the group an addon's
/// agent on one cluster is in (hub permissions are bound to it).
pub fn cluster_addon_group(cluster: &str, addon: &str) -> String {
    format!("system:open-cluster-management:cluster:{cluster}:addon:{addon}")
}

/// One kube-client registration with upstream's default subject.
pub fn default_kube_client(cluster: &str, addon: &str) -> RegistrationConfig {
    RegistrationConfig::KubeClient {
        user: default_user(cluster, addon, addon),
        groups: default_groups(cluster, addon),
    }
}

/// Upstream's default approval: a kube-apiserver-client CSR whose CN is the addon's default
/// user prefix for this cluster and addon, and whose O includes the cluster's addon group.
pub fn default_approve(cluster: &str, addon: &str, csr: &CsrInfo) -> bool {
    let prefix = format!("system:open-cluster-management:cluster:{cluster}:addon:{addon}:agent:");
    csr.signer_name == KUBE_APISERVER_CLIENT_SIGNER
        && csr.common_name.starts_with(&prefix)
        && csr.common_name.len() > prefix.len()
        && csr
            .organizations
            .iter()
            .any(|o| *o == cluster_addon_group(cluster, addon))
}

/// Hub permissions for an addon's agent on one cluster: a Role with `rules` in the cluster
/// namespace and a RoleBinding of it to the cluster's addon group
/// ([`cluster_addon_group`]) — what an addon's `permissions` usually returns.
pub fn agent_role_in_cluster_namespace(cluster: &str, addon: &str, rules: Value) -> Vec<Value> {
    let name = format!("open-cluster-management:{addon}:agent");
    vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": cluster,
                         "labels": {ocm_api::addon::names::labels::ADDON_NAME: addon}},
            "rules": rules,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": cluster,
                         "labels": {ocm_api::addon::names::labels::ADDON_NAME: addon}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                          "name": cluster_addon_group(cluster, addon)}],
        }),
    ]
}

/// RBAC rules for the addon's Role in its cluster namespace (see
/// [`agent_role_in_cluster_namespace`]) that let `addon`'s agent read its own
/// ManagedClusterAddOn and write that object's status — by name, so they reach no other
/// addon's object. (The hub's admission policy further keeps the agent to its own
/// `status.conditions`.)
pub fn own_addon_rules(addon: &str) -> Value {
    json!([
        {"apiGroups": [ocm_api::addon::GROUP], "resources": ["managedclusteraddons"],
         "resourceNames": [addon], "verbs": ["get"]},
        {"apiGroups": [ocm_api::addon::GROUP], "resources": ["managedclusteraddons/status"],
         "resourceNames": [addon], "verbs": ["get", "patch", "update"]},
    ])
}

/// The `status.registrations` entries for `configs` (v1beta1 form), defaults filled in.
pub fn status_registrations(
    cluster: &str,
    addon: &str,
    configs: &[RegistrationConfig],
) -> Vec<StatusConfig> {
    configs
        .iter()
        .map(|config| match config {
            RegistrationConfig::KubeClient { user, groups } => StatusConfig {
                type_: RegistrationType::KubeClient,
                kube_client: Some(KubeClientConfig {
                    subject: Some(KubeClientSubject {
                        user: Some(if user.is_empty() {
                            default_user(cluster, addon, addon)
                        } else {
                            user.clone()
                        }),
                        groups: if groups.is_empty() {
                            default_groups(cluster, addon)
                        } else {
                            groups.clone()
                        },
                    }),
                    driver: None,
                }),
                custom_signer: None,
            },
            RegistrationConfig::CustomSigner {
                signer_name,
                user,
                groups,
                organization_units,
            } => StatusConfig {
                type_: RegistrationType::CustomSigner,
                kube_client: None,
                custom_signer: Some(CustomSignerConfig {
                    signer_name: signer_name.clone(),
                    subject: Some(Subject {
                        user: Some(user.clone()),
                        groups: groups.clone(),
                        organization_units: organization_units.clone(),
                    }),
                }),
            },
        })
        .collect()
}

/// The RBAC subjects of the agent of `mca`'s `kubeClient` registration as its status says
/// (user, then groups but `system:authenticated`), as upstream binds hub permissions: with the
/// token driver the agent's ServiceAccount, which no addon group covers. Empty until the
/// status names a subject.
pub fn registered_subjects(mca: &ocm_api::addon::v1beta1::ManagedClusterAddOn) -> Vec<Value> {
    let Some(subject) = mca
        .status
        .as_ref()
        .and_then(|s| {
            s.registrations
                .iter()
                .find(|r| r.type_ == RegistrationType::KubeClient)
        })
        .and_then(|r| r.kube_client.as_ref()?.subject.clone())
    else {
        return Vec::new();
    };
    let user = subject
        .user
        .filter(|u| !u.is_empty())
        .map(|u| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}));
    let groups = subject
        .groups
        .into_iter()
        .filter(|g| g != "system:authenticated")
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}));
    user.into_iter().chain(groups).collect()
}

/// `wanted` (from [`status_registrations`]) with what the registration agent on the cluster
/// wrote into the existing `status.registrations` kept, as upstream's framework keeps it: each
/// `kubeClient` entry (matched by its place among the `kubeClient` entries) keeps the agent's
/// `driver`; with the `token` driver also the subject the agent set (its ServiceAccount), or
/// no subject until the agent sets one.
pub fn keep_agent_choices(
    mut wanted: Vec<StatusConfig>,
    existing: &[StatusConfig],
) -> Vec<StatusConfig> {
    let mut existing_kube_clients = existing
        .iter()
        .filter(|r| r.type_ == RegistrationType::KubeClient);
    for entry in wanted
        .iter_mut()
        .filter(|r| r.type_ == RegistrationType::KubeClient)
    {
        let before = existing_kube_clients
            .next()
            .and_then(|r| r.kube_client.as_ref());
        let Some(driver) = before.and_then(|k| k.driver) else {
            continue;
        };
        let config = entry
            .kube_client
            .get_or_insert_with(KubeClientConfig::default);
        config.driver = Some(driver);
        if driver == ocm_api::addon::v1beta1::KubeClientDriver::Token {
            config.subject = before.and_then(|k| k.subject.clone());
        }
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_addon_rules_name_only_the_addon() {
        let rules = own_addon_rules("alpha");
        let rules = rules.as_array().map(Vec::as_slice).unwrap_or_default();
        assert_eq!(rules.len(), 2);
        for rule in rules {
            assert_eq!(rule["resourceNames"], json!(["alpha"]));
        }
    }

    #[test]
    fn registered_subjects_are_the_status_subject() {
        let mca: ocm_api::addon::v1beta1::ManagedClusterAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn", "metadata": {"name": "hello"}, "spec": {},
            "status": {"registrations": [
                {"type": "customSigner", "customSigner": {"signerName": "x", "subject": {"user": "no"}}},
                {"type": "kubeClient", "kubeClient": {"subject": {"user": "u",
                    "groups": ["g", "system:authenticated"]}}}]}}))
        .unwrap();
        assert_eq!(
            registered_subjects(&mca),
            vec![
                json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "u"}),
                json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "g"}),
            ]
        );
        let mut bare = mca.clone();
        bare.status = None;
        assert!(registered_subjects(&bare).is_empty());
    }

    #[test]
    fn the_agents_driver_and_token_subject_are_kept() {
        use ocm_api::addon::v1beta1::KubeClientDriver;
        let wanted = status_registrations(
            "c1",
            "hello",
            &[
                RegistrationConfig::KubeClient {
                    user: String::new(),
                    groups: Vec::new(),
                },
                RegistrationConfig::CustomSigner {
                    signer_name: "example.com/s".into(),
                    user: "u".into(),
                    groups: Vec::new(),
                    organization_units: Vec::new(),
                },
            ],
        );
        // Nothing from the agent yet: as wanted.
        assert_eq!(keep_agent_choices(wanted.clone(), &[]), wanted);
        // The csr driver: kept, with the wanted subject.
        let mut csr = wanted.clone();
        csr[0].kube_client.as_mut().unwrap().driver = Some(KubeClientDriver::Csr);
        assert_eq!(keep_agent_choices(wanted.clone(), &csr), csr);
        // The token driver: kept with the agent's subject, or none until it sets one.
        let mut token = wanted.clone();
        let sa = KubeClientSubject {
            user: Some("system:serviceaccount:c1:hello-agent".into()),
            groups: Vec::new(),
        };
        token[0].kube_client = Some(KubeClientConfig {
            subject: Some(sa.clone()),
            driver: Some(KubeClientDriver::Token),
        });
        let kept = keep_agent_choices(wanted.clone(), &token);
        assert_eq!(kept[0].kube_client.as_ref().unwrap().subject, Some(sa));
        assert_eq!(kept[1], wanted[1]);
        token[0].kube_client.as_mut().unwrap().subject = None;
        let kept = keep_agent_choices(wanted.clone(), &token);
        assert_eq!(kept[0].kube_client.as_ref().unwrap().subject, None);
    }

    fn csr(cn: &str, orgs: &[&str], signer: &str) -> CsrInfo {
        CsrInfo {
            name: "x".into(),
            signer_name: signer.into(),
            username: "u".into(),
            common_name: cn.into(),
            organizations: orgs.iter().map(|o| (*o).to_owned()).collect(),
            request_pem: String::new(),
        }
    }

    #[test]
    fn defaults_are_upstreams() {
        assert_eq!(
            default_user("c1", "hello", "hello"),
            "system:open-cluster-management:cluster:c1:addon:hello:agent:hello"
        );
        assert_eq!(
            default_groups("c1", "hello"),
            vec![
                "system:open-cluster-management:cluster:c1:addon:hello".to_owned(),
                "system:open-cluster-management:addon:hello".to_owned()
            ]
        );
    }

    #[test]
    fn the_default_check_approves_only_this_clusters_addon() {
        let group = cluster_addon_group("c1", "hello");
        let good = csr(
            &default_user("c1", "hello", "a1"),
            &[&group],
            KUBE_APISERVER_CLIENT_SIGNER,
        );
        assert!(default_approve("c1", "hello", &good));
        let other_cluster = csr(
            &default_user("c2", "hello", "a1"),
            &[&group],
            KUBE_APISERVER_CLIENT_SIGNER,
        );
        assert!(!default_approve("c1", "hello", &other_cluster));
        let other_addon = csr(
            &default_user("c1", "other", "a1"),
            &[&cluster_addon_group("c1", "other")],
            KUBE_APISERVER_CLIENT_SIGNER,
        );
        assert!(!default_approve("c1", "hello", &other_addon));
        let other_signer = csr(
            &default_user("c1", "hello", "a1"),
            &[&group],
            "example.com/x",
        );
        assert!(!default_approve("c1", "hello", &other_signer));
    }

    #[test]
    fn agent_roles_bind_the_clusters_addon_group() {
        let objects = agent_role_in_cluster_namespace(
            "c1",
            "hello",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]),
        );
        assert_eq!(objects[0]["metadata"]["namespace"], "c1");
        assert_eq!(
            objects[1]["subjects"][0]["name"],
            "system:open-cluster-management:cluster:c1:addon:hello"
        );
    }

    #[test]
    fn status_entries_fill_in_defaults() {
        let entries = status_registrations(
            "c1",
            "hello",
            &[RegistrationConfig::KubeClient {
                user: String::new(),
                groups: Vec::new(),
            }],
        );
        let subject = entries[0]
            .kube_client
            .as_ref()
            .and_then(|k| k.subject.as_ref())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            subject.user.as_deref(),
            Some("system:open-cluster-management:cluster:c1:addon:hello:agent:hello")
        );
        assert_eq!(subject.groups.len(), 2);
    }
}

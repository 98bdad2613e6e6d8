//! What an AddOnTemplate's `registration` means on one cluster — pure: the credentials its
//! agent gets, which CSRs are approved, and the hub RoleBindings of its `hubPermissions`.
//!
//! As upstream: kube-client credentials and custom-signer credentials without a subject use
//! the default user `…:agent:<addon>-agent` and the default groups. Hub permissions are
//! RoleBindings named `open-cluster-management:<addon>:<role kind, lower case>:agent`:
//! `CurrentCluster` binds the ClusterRole in the cluster's namespace to that cluster's agent
//! (its user and per-cluster addon group — never the addon-wide group, so one cluster's agent
//! cannot read another's namespace), owned by the ManagedClusterAddOn; `SingleNamespace`
//! binds the role in its namespace to the addon-wide group
//! `system:open-cluster-management:addon:<addon>` (every cluster's agent), labelled so that
//! the hub removes it with the addon.

use ocm_api::addon::names::KUBE_APISERVER_CLIENT_SIGNER;
use ocm_api::addon::names::labels::{ADDON_NAME, ADDON_TEMPLATE_NAME};
use ocm_api::addon::v1alpha1::{
    AddOnTemplateSpec, CustomSignerRegistrationConfig, HubPermissionsBindingType, RegistrationType,
};
use serde_json::{Value, json};

use crate::agent::{CsrInfo, PermissionError, RegistrationConfig};
use crate::registration::{cluster_addon_group, default_approve, default_groups, default_user};

/// The agent name in a template addon's default user: `<addon>-agent`.
pub fn agent_name(addon: &str) -> String {
    format!("{addon}-agent")
}

/// The group every cluster's agent of `addon` is in.
pub fn addon_group(addon: &str) -> String {
    format!("system:open-cluster-management:addon:{addon}")
}

/// The credentials the template's agent gets on `cluster`.
pub fn configurations(
    template: &AddOnTemplateSpec,
    cluster: &str,
    addon: &str,
) -> Vec<RegistrationConfig> {
    let user = default_user(cluster, addon, &agent_name(addon));
    let groups = default_groups(cluster, addon);
    template
        .registration
        .iter()
        .filter_map(|registration| match registration.type_ {
            RegistrationType::KubeClient => Some(RegistrationConfig::KubeClient {
                user: user.clone(),
                groups: groups.clone(),
            }),
            RegistrationType::CustomSigner => {
                let signer = registration.custom_signer.as_ref()?;
                Some(match &signer.subject {
                    Some(subject) => RegistrationConfig::CustomSigner {
                        signer_name: signer.signer_name.clone(),
                        user: subject.user.clone().unwrap_or_default(),
                        groups: subject.groups.clone(),
                        organization_units: subject.organization_units.clone(),
                    },
                    None => RegistrationConfig::CustomSigner {
                        signer_name: signer.signer_name.clone(),
                        user: user.clone(),
                        groups: groups.clone(),
                        organization_units: Vec::new(),
                    },
                })
            }
        })
        .collect()
}

/// The template's custom signer called `signer_name`, if it has one.
pub fn custom_signer<'a>(
    template: &'a AddOnTemplateSpec,
    signer_name: &str,
) -> Option<&'a CustomSignerRegistrationConfig> {
    template
        .registration
        .iter()
        .filter(|r| r.type_ == RegistrationType::CustomSigner)
        .filter_map(|r| r.custom_signer.as_ref())
        .find(|s| s.signer_name == signer_name)
}

/// Whether a CSR of the template's agent on `cluster` is approved: a kube-client CSR when the
/// template has a kube-client registration and the CSR carries the default subject; a
/// custom-signer CSR when the template names that signer.
pub fn approve(template: &AddOnTemplateSpec, cluster: &str, addon: &str, csr: &CsrInfo) -> bool {
    if csr.signer_name == KUBE_APISERVER_CLIENT_SIGNER {
        return template
            .registration
            .iter()
            .any(|r| r.type_ == RegistrationType::KubeClient)
            && default_approve(cluster, addon, csr);
    }
    custom_signer(template, &csr.signer_name).is_some()
}

/// The hub RoleBindings of the template's `hubPermissions` for the agent on `cluster`, the
/// ManagedClusterAddOn (`addon_uid`) owning the ones in the cluster's namespace. With the token
/// driver the agent is `token_user` (its ServiceAccount, as the registration says), bound in
/// the cluster's namespace too; a `SingleNamespace` binding, shared by every cluster's agent,
/// stays bound to the addon group (tokens do not carry it).
pub fn permissions(
    template: &AddOnTemplateSpec,
    cluster: &str,
    addon: &str,
    addon_uid: &str,
    token_user: Option<&str>,
) -> Result<Vec<Value>, PermissionError> {
    let mut out = Vec::new();
    let kube_clients = template
        .registration
        .iter()
        .filter(|r| r.type_ == RegistrationType::KubeClient)
        .filter_map(|r| r.kube_client.as_ref());
    for permission in kube_clients.flat_map(|k| &k.hub_permissions) {
        match permission.type_ {
            HubPermissionsBindingType::CurrentCluster => {
                let Some(current) = &permission.current_cluster else {
                    return Err(PermissionError::Failed(
                        "currentCluster is required when the hub permission type is CurrentCluster"
                            .into(),
                    ));
                };
                let mut subjects = vec![
                    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                           "name": default_user(cluster, addon, &agent_name(addon))}),
                    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                           "name": cluster_addon_group(cluster, addon)}),
                ];
                if let Some(user) = token_user.filter(|u| !u.is_empty()) {
                    subjects.push(json!({"apiGroup": "rbac.authorization.k8s.io",
                                         "kind": "User", "name": user}));
                }
                let mut binding = role_binding(
                    addon,
                    cluster,
                    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": current.cluster_role_name}),
                    Value::Array(subjects),
                );
                binding["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": "addon.open-cluster-management.io/v1beta1",
                    "kind": "ManagedClusterAddOn", "name": addon, "uid": addon_uid}]);
                out.push(binding);
            }
            HubPermissionsBindingType::SingleNamespace => {
                let Some(single) = &permission.single_namespace else {
                    return Err(PermissionError::Failed(
                        "singleNamespace is required when the hub permission type is SingleNamespace"
                            .into(),
                    ));
                };
                out.push(role_binding(
                    addon,
                    &single.namespace,
                    json!(single.role_ref),
                    json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                            "name": addon_group(addon)}]),
                ));
            }
        }
    }
    Ok(out)
}

fn role_binding(addon: &str, namespace: &str, role_ref: Value, subjects: Value) -> Value {
    let kind = role_ref["kind"].as_str().unwrap_or_default().to_lowercase();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": format!("open-cluster-management:{addon}:{kind}:agent"),
            "namespace": namespace,
            "labels": {ADDON_NAME: addon, ADDON_TEMPLATE_NAME: ""},
        },
        "roleRef": role_ref,
        "subjects": subjects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(registration: Value) -> AddOnTemplateSpec {
        serde_json::from_value(json!({"addonName": "hello", "agentSpec": {},
            "registration": registration}))
        .unwrap()
    }

    fn csr(signer: &str, cn: &str, orgs: &[&str]) -> CsrInfo {
        CsrInfo {
            name: "c".into(),
            signer_name: signer.into(),
            username: "agent".into(),
            common_name: cn.into(),
            organizations: orgs.iter().map(|o| o.to_string()).collect(),
            request_pem: String::new(),
        }
    }

    #[test]
    fn registrations_use_the_default_subject_unless_given() {
        let t = template(json!([
            {"type": "KubeClient", "kubeClient": {}},
            {"type": "CustomSigner", "customSigner": {"signerName": "example.com/a",
                "signingCA": {"name": "ca"}}},
            {"type": "CustomSigner", "customSigner": {"signerName": "example.com/b",
                "signingCA": {"name": "ca"}, "subject": {"user": "u", "groups": ["g"],
                "organizationUnit": ["ou"]}}}
        ]));
        let configs = configurations(&t, "c1", "hello");
        let user = "system:open-cluster-management:cluster:c1:addon:hello:agent:hello-agent";
        assert_eq!(
            configs[0],
            RegistrationConfig::KubeClient {
                user: user.into(),
                groups: default_groups("c1", "hello")
            }
        );
        assert!(matches!(&configs[1],
            RegistrationConfig::CustomSigner { user: u, .. } if u == user));
        assert!(matches!(&configs[2],
            RegistrationConfig::CustomSigner { user, groups, .. } if user == "u" && groups == &["g"]));
    }

    #[test]
    fn approval_follows_the_declared_registrations() {
        let group = cluster_addon_group("c1", "hello");
        let cn = "system:open-cluster-management:cluster:c1:addon:hello:agent:hello-agent";
        let kube = csr(KUBE_APISERVER_CLIENT_SIGNER, cn, &[&group]);
        let custom = csr("example.com/a", "anyone", &[]);
        let with_both = template(json!([{"type": "KubeClient"},
            {"type": "CustomSigner", "customSigner": {"signerName": "example.com/a",
                "signingCA": {"name": "ca"}}}]));
        assert!(approve(&with_both, "c1", "hello", &kube));
        assert!(approve(&with_both, "c1", "hello", &custom));
        assert!(!approve(&with_both, "c2", "hello", &kube));
        assert!(!approve(
            &with_both,
            "c1",
            "hello",
            &csr("example.com/other", "x", &[])
        ));
        assert!(!approve(&template(json!([])), "c1", "hello", &kube));
    }

    #[test]
    fn hub_permissions_become_scoped_role_bindings() {
        let t = template(
            json!([{"type": "KubeClient", "kubeClient": {"hubPermissions": [
                {"type": "CurrentCluster", "currentCluster": {"clusterRoleName": "hello-reader"}},
                {"type": "SingleNamespace", "singleNamespace": {"namespace": "shared",
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}}
            ]}}]),
        );
        let bindings = permissions(&t, "c1", "hello", "uid-1", None).unwrap();
        assert_eq!(bindings.len(), 2);
        let current = &bindings[0];
        assert_eq!(
            current["metadata"]["name"],
            "open-cluster-management:hello:clusterrole:agent"
        );
        assert_eq!(current["metadata"]["namespace"], "c1");
        assert_eq!(current["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(
            current["subjects"][1]["name"],
            cluster_addon_group("c1", "hello")
        );
        assert_eq!(current["subjects"].as_array().unwrap().len(), 2);
        let single = &bindings[1];
        assert_eq!(
            single["metadata"]["name"],
            "open-cluster-management:hello:role:agent"
        );
        assert_eq!(single["metadata"]["namespace"], "shared");
        assert_eq!(
            single["subjects"][0]["name"],
            "system:open-cluster-management:addon:hello"
        );
        assert!(single["metadata"].get("ownerReferences").is_none());
        let broken = template(
            json!([{"type": "KubeClient", "kubeClient": {"hubPermissions": [
            {"type": "CurrentCluster"}]}}]),
        );
        // The token driver's ServiceAccount is bound in the cluster's namespace too.
        let token = permissions(
            &t,
            "c1",
            "hello",
            "uid-1",
            Some("system:serviceaccount:c1:hello-agent"),
        )
        .unwrap();
        assert_eq!(
            token[0]["subjects"][2],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                   "name": "system:serviceaccount:c1:hello-agent"})
        );
        assert_eq!(token[1]["subjects"], single["subjects"]);
        assert!(matches!(
            permissions(&broken, "c1", "hello", "u", None),
            Err(PermissionError::Failed(m)) if m.contains("currentCluster is required")
        ));
    }
}

//! The hub side of token-based addon registration (upstream's token infrastructure
//! controller): for every ManagedClusterAddOn whose `kubeClient` registration says
//! `driver: token` (the cluster's agent declares it), the addon agent's ServiceAccount
//! `<addon>-agent` in the cluster namespace, a Role `<addon>-token-role` that may create its
//! tokens, and a RoleBinding of that Role to the cluster's agent (groups
//! `system:open-cluster-management:<cluster>` and `open-cluster-management:<cluster>`) — all
//! labelled `addon.open-cluster-management.io/token-infrastructure: "true"` and
//! `addon.open-cluster-management.io/name: <addon>`, owned by the ManagedClusterAddOn. The
//! addon's condition `TokenInfrastructureReady` then says
//! `ServiceAccount <cluster>/<addon>-agent (UID: <uid>) is ready` (the agent checks its
//! tokens against that UID), or False `TokenInfrastructureApplyFailed`. When the addon stops
//! using tokens the objects and the condition go; a deleted addon's go with it.
//!
//! Objects are applied when the condition is not True yet, this process has not applied
//! them yet, the ServiceAccount the condition names is gone or replaced, or the Role or
//! RoleBinding is gone or no longer grants what the hub wrote ([`in_place`]). The install
//! controller watches the three kinds (selected by the token-infrastructure label), so an
//! object deleted or changed by hand is repaired at once: deleting the ServiceAccount
//! (`kubectl delete serviceaccount <addon>-agent -n <cluster>`) revokes every token of it, the
//! hub makes a new one and the condition names its UID, and the agent requests a token of the
//! new one; a deleted Role or RoleBinding is made again.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use ocm_api::addon::names::conditions::TOKEN_INFRASTRUCTURE_READY;
use ocm_api::addon::names::labels::{TOKEN_INFRASTRUCTURE, TOKEN_INFRASTRUCTURE_ADDON};
use ocm_api::addon::v1beta1::{KubeClientDriver, ManagedClusterAddOn, RegistrationType};
use ocm_runtime::conditions::{condition, find_condition, set_condition};
use serde_json::{Value, json};

/// Field manager of the token infrastructure objects.
const FIELD_MANAGER: &str = "addon-token-infrastructure";

/// Whether `mca`'s `kubeClient` registration uses the token driver.
pub fn uses_token(mca: &ManagedClusterAddOn) -> bool {
    mca.status
        .as_ref()
        .map(|s| s.registrations.as_slice())
        .unwrap_or_default()
        .iter()
        .find(|r| r.type_ == RegistrationType::KubeClient)
        .and_then(|r| r.kube_client.as_ref())
        .is_some_and(|k| k.driver == Some(KubeClientDriver::Token))
}

/// `<addon>-agent`.
fn account(addon: &str) -> String {
    format!("{addon}-agent")
}

/// `<addon>-token-role`.
fn role(addon: &str) -> String {
    format!("{addon}-token-role")
}

/// The ServiceAccount, Role and RoleBinding of `addon`'s token infrastructure in `cluster`'s
/// namespace, owned by the addon (uid `owner_uid`) — pure.
pub fn objects(cluster: &str, addon: &str, owner_uid: &str) -> [Value; 3] {
    let metadata = |name: String| {
        json!({"name": name, "namespace": cluster,
               "labels": {TOKEN_INFRASTRUCTURE_ADDON: addon, TOKEN_INFRASTRUCTURE: "true"},
               "ownerReferences": [{"apiVersion": "addon.open-cluster-management.io/v1beta1",
                                    "kind": "ManagedClusterAddOn", "name": addon,
                                    "uid": owner_uid}]})
    };
    [
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(account(addon))}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": metadata(role(addon)),
               "rules": [{"apiGroups": [""], "resources": ["serviceaccounts/token"],
                          "resourceNames": [account(addon)], "verbs": ["create"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": metadata(role(addon)),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": role(addon)},
               "subjects": [
                   {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                    "name": format!("system:open-cluster-management:{cluster}")},
                   {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                    "name": format!("open-cluster-management:{cluster}")}]}),
    ]
}

/// The message of `TokenInfrastructureReady` True.
pub fn ready_message(cluster: &str, addon: &str, uid: &str) -> String {
    format!(
        "ServiceAccount {cluster}/{} (UID: {uid}) is ready",
        account(addon)
    )
}

/// Whether the ServiceAccount the addon's `TokenInfrastructureReady` `message` names (by
/// UID) is `account`, the one on the hub — false once it was deleted or replaced (tokens of
/// it revoked), so that the objects are applied again and the condition names the new UID.
pub fn account_current(message: &str, account: Option<&ServiceAccount>) -> bool {
    account
        .and_then(|a| a.metadata.uid.as_deref())
        .is_some_and(|uid| message.contains(&format!("(UID: {uid})")))
}

/// Whether `addon`'s token infrastructure in `cluster`'s namespace is as the hub wants it —
/// pure: `ready` (its `TokenInfrastructureReady` condition) True and naming `account`, the
/// ServiceAccount on the hub, and `role` and `binding` (those on the hub, if any) granting
/// what [`objects`] writes.
pub fn in_place(
    cluster: &str,
    addon: &str,
    ready: Option<&Condition>,
    account: Option<&ServiceAccount>,
    role: Option<&Role>,
    binding: Option<&RoleBinding>,
) -> bool {
    let [_, wanted_role, wanted_binding] = objects(cluster, addon, "");
    let same =
        |value: Result<Value, serde_json::Error>, wanted: &Value| value.is_ok_and(|v| v == *wanted);
    ready.is_some_and(|c| c.status == "True" && account_current(&c.message, account))
        && role.is_some_and(|r| same(serde_json::to_value(&r.rules), &wanted_role["rules"]))
        && binding.is_some_and(|b| {
            same(
                serde_json::to_value(&b.role_ref),
                &wanted_binding["roleRef"],
            ) && same(
                serde_json::to_value(&b.subjects),
                &wanted_binding["subjects"],
            )
        })
}

/// The hub's token infrastructure objects the pass reads: label-selected caches of the
/// ServiceAccounts, Roles and RoleBindings.
pub(crate) struct TokenCaches<'a> {
    /// The addon agents' ServiceAccounts.
    pub(crate) accounts: &'a Store<ServiceAccount>,
    /// The Roles that may create their tokens.
    pub(crate) roles: &'a Store<Role>,
    /// The bindings of those Roles to the clusters' agents.
    pub(crate) bindings: &'a Store<RoleBinding>,
}

/// What the token infrastructure pass remembers.
#[derive(Debug, Default)]
pub(crate) struct TokenInfra {
    /// UIDs of the addons whose objects this process applied.
    applied: BTreeSet<String>,
}

impl TokenInfra {
    /// One pass over `mcas`, with `caches` the token infrastructure objects on the hub; the
    /// (addon, cluster) of those whose objects or condition could not be written.
    pub(crate) async fn pass<'a>(
        &mut self,
        client: &kube::Client,
        mcas: impl Iterator<Item = &'a std::sync::Arc<ManagedClusterAddOn>>,
        caches: &TokenCaches<'_>,
    ) -> Vec<(String, String)> {
        let mut failed = Vec::new();
        for mca in mcas {
            let (Some(addon), Some(cluster)) = (&mca.metadata.name, &mca.metadata.namespace) else {
                continue;
            };
            let uid = mca.metadata.uid.clone().unwrap_or_default();
            let conditions = mca
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default();
            let reported = find_condition(&conditions, TOKEN_INFRASTRUCTURE_READY);
            if mca.metadata.deletion_timestamp.is_some() || !uses_token(mca) {
                self.applied.remove(&uid);
                if reported.is_some() {
                    // The owner references take the objects with a deleted addon; an addon
                    // that stopped using tokens loses them here.
                    if let Err(err) = delete(client, cluster, addon).await {
                        tracing::debug!(addon, cluster, %err, "token infrastructure not removed yet");
                        failed.push((addon.clone(), cluster.clone()));
                        continue;
                    }
                    if mca.metadata.deletion_timestamp.is_none() {
                        let mut kept = conditions.clone();
                        kept.retain(|c| c.type_ != TOKEN_INFRASTRUCTURE_READY);
                        if !write_conditions(client, mca, kept).await {
                            failed.push((addon.clone(), cluster.clone()));
                        }
                    }
                }
                continue;
            }
            let account = caches
                .accounts
                .get(&ObjectRef::new(&account(addon)).within(cluster));
            let role_object = caches
                .roles
                .get(&ObjectRef::new(&role(addon)).within(cluster));
            let binding = caches
                .bindings
                .get(&ObjectRef::new(&role(addon)).within(cluster));
            if self.applied.contains(&uid)
                && in_place(
                    cluster,
                    addon,
                    reported,
                    account.as_deref(),
                    role_object.as_deref(),
                    binding.as_deref(),
                )
            {
                continue;
            }
            let wanted = match apply(client, cluster, addon, &uid).await {
                Ok(account_uid) => {
                    self.applied.insert(uid);
                    condition(
                        TOKEN_INFRASTRUCTURE_READY,
                        "True",
                        "TokenInfrastructureReady",
                        &ready_message(cluster, addon, &account_uid),
                        None,
                    )
                }
                Err(err) => {
                    failed.push((addon.clone(), cluster.clone()));
                    condition(
                        TOKEN_INFRASTRUCTURE_READY,
                        "False",
                        "TokenInfrastructureApplyFailed",
                        &format!("Failed to apply token infrastructure: {err}"),
                        None,
                    )
                }
            };
            let mut updated = conditions.clone();
            if set_condition(&mut updated, wanted) && !write_conditions(client, mca, updated).await
            {
                failed.push((addon.clone(), cluster.clone()));
            }
        }
        failed
    }
}

/// Applies the objects; the ServiceAccount's UID.
async fn apply(
    client: &kube::Client,
    cluster: &str,
    addon: &str,
    owner_uid: &str,
) -> Result<String, kube::Error> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let [account_object, role_object, binding_object] = objects(cluster, addon, owner_uid);
    let written = Api::<ServiceAccount>::namespaced(client.clone(), cluster)
        .patch(&account(addon), &params, &Patch::Apply(&account_object))
        .await?;
    Api::<Role>::namespaced(client.clone(), cluster)
        .patch(&role(addon), &params, &Patch::Apply(&role_object))
        .await?;
    Api::<RoleBinding>::namespaced(client.clone(), cluster)
        .patch(&role(addon), &params, &Patch::Apply(&binding_object))
        .await?;
    Ok(written.metadata.uid.unwrap_or_default())
}

/// Deletes the objects (those already gone are fine).
async fn delete(client: &kube::Client, cluster: &str, addon: &str) -> Result<(), kube::Error> {
    let gone = |r: Result<(), kube::Error>| match r {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        other => other,
    };
    let dp = DeleteParams::default();
    gone(
        Api::<RoleBinding>::namespaced(client.clone(), cluster)
            .delete(&role(addon), &dp)
            .await
            .map(|_| ()),
    )?;
    gone(
        Api::<Role>::namespaced(client.clone(), cluster)
            .delete(&role(addon), &dp)
            .await
            .map(|_| ()),
    )?;
    gone(
        Api::<ServiceAccount>::namespaced(client.clone(), cluster)
            .delete(&account(addon), &dp)
            .await
            .map(|_| ()),
    )
}

/// Writes `conditions` as the addon's (conditional on the resourceVersion read); false when
/// that failed.
async fn write_conditions(
    client: &kube::Client,
    mca: &ManagedClusterAddOn,
    conditions: Vec<Condition>,
) -> bool {
    let name = mca.metadata.name.as_deref().unwrap_or_default();
    let namespace = mca.metadata.namespace.as_deref().unwrap_or_default();
    if let Err(err) = crate::mca_status::patch_conditions(client, mca, &conditions).await {
        tracing::debug!(addon = name, cluster = namespace, %err, "token infrastructure condition not written yet");
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_service_account_may_be_asked_for_tokens_by_the_clusters_agent() {
        let [account, role, binding] = objects("c1", "hello", "uid-1");
        assert_eq!(account["metadata"]["name"], "hello-agent");
        assert_eq!(account["metadata"]["namespace"], "c1");
        assert_eq!(
            account["metadata"]["labels"],
            json!({"addon.open-cluster-management.io/name": "hello",
                   "addon.open-cluster-management.io/token-infrastructure": "true"})
        );
        assert_eq!(account["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(role["metadata"]["name"], "hello-token-role");
        assert_eq!(
            role["rules"],
            json!([{"apiGroups": [""], "resources": ["serviceaccounts/token"],
                    "resourceNames": ["hello-agent"], "verbs": ["create"]}])
        );
        assert_eq!(binding["roleRef"]["name"], "hello-token-role");
        assert_eq!(
            binding["subjects"][0]["name"],
            "system:open-cluster-management:c1"
        );
        assert_eq!(binding["subjects"][1]["name"], "open-cluster-management:c1");
        assert_eq!(
            ready_message("c1", "hello", "u-9"),
            "ServiceAccount c1/hello-agent (UID: u-9) is ready"
        );
    }

    #[test]
    fn a_deleted_or_replaced_service_account_is_not_current() {
        let message = ready_message("c1", "tok", "uid-1");
        let account = |uid: &str| -> ServiceAccount {
            serde_json::from_value(json!({"metadata": {"name": "tok-agent", "uid": uid}})).unwrap()
        };
        assert!(account_current(&message, Some(&account("uid-1"))));
        assert!(!account_current(&message, Some(&account("uid-2"))));
        assert!(!account_current(&message, None));
    }

    #[test]
    fn a_missing_or_changed_role_or_binding_is_not_in_place() {
        let [account, role, binding] = objects("c1", "tok", "uid-1");
        let mut account: ServiceAccount = serde_json::from_value(account).unwrap();
        account.metadata.uid = Some("sa-1".into());
        let role: Role = serde_json::from_value(role).unwrap();
        let binding: RoleBinding = serde_json::from_value(binding).unwrap();
        let ready = |status: &str| {
            condition(
                TOKEN_INFRASTRUCTURE_READY,
                status,
                "TokenInfrastructureReady",
                &ready_message("c1", "tok", "sa-1"),
                None,
            )
        };
        let check = |ready: &Condition, role: Option<&Role>, binding: Option<&RoleBinding>| {
            in_place("c1", "tok", Some(ready), Some(&account), role, binding)
        };
        assert!(check(&ready("True"), Some(&role), Some(&binding)));
        assert!(!check(&ready("False"), Some(&role), Some(&binding)));
        assert!(!in_place(
            "c1",
            "tok",
            None,
            Some(&account),
            Some(&role),
            Some(&binding)
        ));
        // Deleted by hand.
        assert!(!check(&ready("True"), None, Some(&binding)));
        assert!(!check(&ready("True"), Some(&role), None));
        // Changed by hand: another verb, another ServiceAccount, a subject less.
        let mut widened = role.clone();
        widened.rules.as_mut().unwrap()[0].verbs.push("get".into());
        assert!(!check(&ready("True"), Some(&widened), Some(&binding)));
        let mut other = role.clone();
        other.rules.as_mut().unwrap()[0].resource_names = Some(vec!["other-agent".into()]);
        assert!(!check(&ready("True"), Some(&other), Some(&binding)));
        let mut narrowed = binding.clone();
        narrowed.subjects.as_mut().unwrap().pop();
        assert!(!check(&ready("True"), Some(&role), Some(&narrowed)));
        // Another cluster's or addon's objects are not this one's.
        assert!(!in_place(
            "c2",
            "tok",
            Some(&ready("True")),
            Some(&account),
            Some(&role),
            Some(&binding)
        ));
    }

    #[test]
    fn only_token_registrations_need_it() {
        let mca = |registrations: Value| -> ManagedClusterAddOn {
            serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ManagedClusterAddOn", "metadata": {"name": "hello", "namespace": "c1"},
                "spec": {}, "status": {"registrations": registrations}}))
            .unwrap()
        };
        assert!(uses_token(&mca(json!([
            {"type": "kubeClient", "kubeClient": {"driver": "token"}}]))));
        assert!(!uses_token(&mca(json!([
            {"type": "kubeClient", "kubeClient": {"driver": "csr"}}]))));
        assert!(!uses_token(&mca(
            json!([{"type": "kubeClient", "kubeClient": {}}])
        )));
        assert!(!uses_token(&mca(json!([]))));
    }
}

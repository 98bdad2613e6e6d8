//! Escalation prevention on writes of Roles, ClusterRoles and their bindings, as kube-apiserver's
//! RBAC storage enforces it:
//!
//! * a Role/ClusterRole may be created or updated only with rules the requester already holds
//!   (in that namespace), unless it is in `system:masters` or has `escalate` on the role
//!   resource; a ClusterRole with an `aggregationRule` additionally needs full authority;
//! * a RoleBinding/ClusterRoleBinding may be written only for a role whose rules the requester
//!   holds, unless it is in `system:masters` or has `bind` on the referenced role;
//! * an update that only changes `ownerReferences`, `finalizers`, `selfLink` or `managedFields`
//!   (what the garbage collector touches) is never checked.

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::Value;

use super::attributes::Attributes;
use super::authorizer::{SYSTEM_MASTERS, aggregate_errors};
use super::forbidden::Forbidden;
use super::policy::{Policy, RBAC_GROUP};
use super::rules::{compact_rules, compact_string, covers, rule};
use crate::Identity;
use ocm_apiserver_validation::go_quote;

/// A write of an RBAC object, as the request path sees it.
#[derive(Clone, Copy, Debug)]
pub struct RbacWrite<'a> {
    /// The resource written: `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`
    /// (anything else is not checked).
    pub resource: &'a str,
    /// The namespace from the URL; empty for the cluster-scoped kinds.
    pub namespace: &'a str,
    /// The object name from the URL: empty on create (kube checks `escalate` with the request's
    /// name, so a name-restricted `escalate` grant only helps updates).
    pub request_name: &'a str,
    /// The object to be stored (after a patch is applied, for PATCH).
    pub object: &'a Value,
    /// The stored object for an update or patch; `None` on create.
    pub old_object: Option<&'a Value>,
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    let items: Vec<String> = v?
        .as_array()?
        .iter()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect();
    Some(items)
}

/// The rules of a Role/ClusterRole JSON object, read leniently (non-string entries are skipped).
pub fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    let Some(rules) = obj.get("rules").and_then(Value::as_array) else {
        return Vec::new();
    };
    rules
        .iter()
        .map(|r| PolicyRule {
            verbs: strings(r.get("verbs")).unwrap_or_default(),
            api_groups: strings(r.get("apiGroups")),
            resources: strings(r.get("resources")),
            resource_names: strings(r.get("resourceNames")),
            non_resource_urls: strings(r.get("nonResourceURLs")),
        })
        .collect()
}

fn object_name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// kube's `IsOnlyMutatingGCFields`: the new object equals the old one once `ownerReferences`,
/// `finalizers`, `selfLink` and `managedFields` are copied over from the old one.
pub fn only_gc_fields_changed(new: &Value, old: &Value) -> bool {
    let mut copy = new.clone();
    let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    for field in ["ownerReferences", "finalizers", "selfLink", "managedFields"] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(v) => {
                meta.insert(field.to_owned(), v.clone());
            }
            None => {
                meta.remove(field);
            }
        }
    }
    copy == *old
}

/// Refuses an RBAC write that would grant permissions the requester does not hold; `Ok` for
/// every other resource. The error is kube's 403, e.g.
/// `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`.
pub fn check_escalation(
    policy: &Policy,
    user: &Identity,
    write: &RbacWrite<'_>,
) -> Result<(), Forbidden> {
    let is_role = matches!(write.resource, "roles" | "clusterroles");
    let is_binding = matches!(write.resource, "rolebindings" | "clusterrolebindings");
    if !is_role && !is_binding {
        return Ok(());
    }
    if user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
        return Ok(());
    }
    if let Some(old) = write.old_object
        && only_gc_fields_changed(write.object, old)
    {
        return Ok(());
    }
    let name = object_name(write.object);
    let forbidden = |err: String| Forbidden::new(RBAC_GROUP, write.resource, name, err);
    if is_role {
        let escalate = Attributes::resource(
            user.clone(),
            "escalate",
            RBAC_GROUP,
            write.resource,
            write.namespace,
        )
        .with_name(write.request_name);
        if policy.allows(&escalate) {
            return Ok(());
        }
        confirm_no_escalation(policy, user, write.namespace, &rules_of(write.object))
            .map_err(forbidden)?;
        let aggregated = write
            .object
            .get("aggregationRule")
            .is_some_and(|a| !a.is_null());
        if write.resource == "clusterroles" && aggregated {
            let full = [
                rule(&["*"], &["*"], &["*"], &[], &[]),
                rule(&["*"], &[], &[], &[], &["*"]),
            ];
            confirm_no_escalation(policy, user, write.namespace, &full).map_err(|_| {
                forbidden("must have cluster-admin privileges to use the aggregationRule".into())
            })?;
        }
        return Ok(());
    }
    let role_ref = role_ref_of(write.object);
    if binding_authorized(policy, user, &role_ref, write.namespace) {
        return Ok(());
    }
    let rules = policy
        .role_ref_rules(&role_ref, write.namespace)
        .map_err(&forbidden)?
        .to_vec();
    confirm_no_escalation(policy, user, write.namespace, &rules).map_err(forbidden)
}

fn role_ref_of(obj: &Value) -> RoleRef {
    let field = |k: &str| {
        obj.pointer(&format!("/roleRef/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    RoleRef {
        api_group: field("apiGroup"),
        kind: field("kind"),
        name: field("name"),
    }
}

/// kube's `BindingAuthorized`: `bind` on the referenced role (`roles` or `clusterroles`, by
/// name) in the binding's namespace.
fn binding_authorized(
    policy: &Policy,
    user: &Identity,
    role_ref: &RoleRef,
    namespace: &str,
) -> bool {
    let resource = match role_ref.kind.as_str() {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => return false,
    };
    let attrs = Attributes::resource(
        user.clone(),
        "bind",
        &role_ref.api_group,
        resource,
        namespace,
    )
    .with_name(&role_ref.name);
    policy.allows(&attrs)
}

/// kube's `ConfirmNoEscalation`: the requester's rules in `namespace` must cover `rules`;
/// otherwise the message naming what is missing.
pub fn confirm_no_escalation(
    policy: &Policy,
    user: &Identity,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owned, errors) = policy.rules_for(user, namespace);
    let (ok, missing) = covers(&owned, rules);
    if ok {
        return Ok(());
    }
    let mut lines: Vec<String> = compact_rules(&missing).iter().map(compact_string).collect();
    lines.sort();
    lines.dedup();
    let groups: Vec<String> = user.groups.iter().map(|g| go_quote(g)).collect();
    let mut msg = format!(
        "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.user),
        groups.join(" "),
        lines.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!(
            "; resolution errors: [{}]",
            aggregate_errors(&errors)
        ));
    }
    Err(msg)
}

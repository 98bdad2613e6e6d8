//! Who may write which part of a ManagedClusterAddOn — pure.
//!
//! The hub hands out two kinds of credentials that are tied to one place in the fleet:
//!
//! - a cluster's registration agent: user `system:open-cluster-management:<cluster>:<agent>`
//!   in group `system:open-cluster-management:<cluster>`;
//! - an addon's agent on one cluster: user
//!   `system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>` or group
//!   `system:open-cluster-management:cluster:<cluster>:addon:<addon>` (the subject the addon
//!   framework registers by default), or, with the token driver, the ServiceAccount
//!   `<addon>-agent` in the cluster namespace (`system:serviceaccount:<cluster>:<addon>-agent`).
//!
//! RBAC alone cannot keep such a credential to its own object and fields: the registration
//! agent's Role lets it patch the status of every addon in its namespace, and an addon's
//! permissions are whatever its author granted. So, for a request by one of these identities,
//! [`admit_managed_cluster_addon`] adds:
//!
//! | identity | may write |
//! |---|---|
//! | registration agent of cluster C | the `status` subresource of any addon in namespace C, but only `status.conditions` and `status.registrations` (the driver and token subject it declares) |
//! | agent of addon A on cluster C | the `status` subresource of ManagedClusterAddOn `C/A` only, and there only `status.conditions` — not the conditions the framework and the registration agent own ([`FRAMEWORK_CONDITIONS`]) |
//!
//! Neither may create, update (spec, labels, annotations, finalizers) or delete a
//! ManagedClusterAddOn; that is for the addon manager and hub admins, whose identities are none
//! of the above and whose rights RBAC states. Any other identity is likewise left to RBAC.
//! A refusal is 403 Forbidden naming the identity, the object and the field.
//!
//! Reading is RBAC's alone (admission does not see reads): the framework's helpers bind an
//! addon's hub Role to that addon's per-cluster group only, and
//! `ocm_addon_framework::registration::own_addon_rules` grants access to the addon's own
//! ManagedClusterAddOn by name.
//!
//! Limits: an addon agent registered with a custom user and custom groups (none of the names
//! above) is not recognised and is held by RBAC alone; any hub ServiceAccount named
//! `<name>-agent` is taken for addon `<name>`'s token-driver agent on the cluster named like
//! its namespace.
//!
//! Upstream OCM's reference lists no such admission check (its addon webhook converts
//! versions; who writes an addon is RBAC's business), so there an addon credential granted
//! broad `managedclusteraddons/status` rights can rewrite other addons' health; here it
//! cannot.

use serde_json::{Map, Value};

use crate::request::{Denial, Operation, Review};

/// Conditions of a ManagedClusterAddOn set by the addon framework (hub) and the cluster's
/// registration agent; an addon's own agent may not add, change or remove them.
pub const FRAMEWORK_CONDITIONS: &[&str] = {
    use ocm_api::addon::names::conditions as c;
    &[
        c::AVAILABLE,
        c::CONFIGURED,
        c::PROGRESSING,
        c::MANIFEST_APPLIED,
        c::HOOK_MANIFEST_COMPLETED,
        c::HOSTING_MANIFEST_APPLIED,
        c::HOSTING_CLUSTER_VALIDITY,
        c::REGISTRATION_APPLIED,
        c::CLUSTER_CERTIFICATE_ROTATED,
        c::TOKEN_INFRASTRUCTURE_READY,
        c::TOKEN_REFRESHED,
    ]
};

/// The status fields the registration agent of a cluster may change.
const REGISTRATION_AGENT_FIELDS: &[&str] = &["conditions", "registrations"];
/// The status fields an addon's agent may change.
const ADDON_AGENT_FIELDS: &[&str] = &["conditions"];

const PREFIX: &str = "system:open-cluster-management:";

/// An identity tied to one place in the fleet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// The registration agent of a cluster.
    ClusterAgent {
        /// The cluster.
        cluster: String,
    },
    /// An addon's agent on a cluster.
    AddonAgent {
        /// The cluster.
        cluster: String,
        /// The addon.
        addon: String,
    },
}

/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>[:agent:<agent>]` →
/// (cluster, addon).
fn addon_subject(name: &str, with_agent: bool) -> Option<(String, String)> {
    let rest = name.strip_prefix(PREFIX)?;
    let parts: Vec<&str> = rest.split(':').collect();
    let fits = match (with_agent, parts.as_slice()) {
        (false, ["cluster", c, "addon", a]) => Some((c, a)),
        (true, ["cluster", c, "addon", a, "agent", agent]) if !agent.is_empty() => Some((c, a)),
        _ => None,
    };
    fits.filter(|(c, a)| !c.is_empty() && !a.is_empty())
        .map(|(c, a)| ((*c).to_owned(), (*a).to_owned()))
}

/// The places in the fleet `user` in `groups` is tied to (empty for hub users, controllers
/// and admins).
pub fn scopes(user: &str, groups: &[String]) -> Vec<Scope> {
    let mut out = Vec::new();
    let mut addon_agent = |(cluster, addon): (String, String)| {
        let scope = Scope::AddonAgent { cluster, addon };
        if !out.contains(&scope) {
            out.push(scope);
        }
    };
    if let Some(found) = addon_subject(user, true) {
        addon_agent(found);
    }
    for group in groups {
        if let Some(found) = addon_subject(group, false) {
            addon_agent(found);
        }
    }
    if let Some(rest) = user.strip_prefix("system:serviceaccount:")
        && let Some((namespace, account)) = rest.split_once(':')
        && let Some(addon) = account.strip_suffix("-agent")
        && !addon.is_empty()
        && !namespace.is_empty()
    {
        addon_agent((namespace.to_owned(), addon.to_owned()));
    }
    // A registration agent: its user names its cluster and it is in that cluster's group.
    if let Some(rest) = user.strip_prefix(PREFIX)
        && let [cluster, agent] = rest.split(':').collect::<Vec<_>>().as_slice()
        && !cluster.is_empty()
        && !agent.is_empty()
        && *cluster != "cluster"
        && groups.iter().any(|g| g == &format!("{PREFIX}{cluster}"))
    {
        out.push(Scope::ClusterAgent {
            cluster: (*cluster).to_owned(),
        });
    }
    out
}

fn forbidden(review: &Review, message: String) -> Denial {
    Denial {
        code: 403,
        message,
        resource: (review.subresource == "status")
            .then(|| "managedclusteraddons/status".to_owned()),
        name: None,
    }
}

fn verb(review: &Review) -> &'static str {
    match review.operation {
        Some(Operation::Create) => "create",
        Some(Operation::Delete) => "delete",
        _ if review.subresource == "status" => "write the status of",
        _ => "update",
    }
}

/// Decides a write (create, update, delete; main resource or `status`) of ManagedClusterAddOn
/// `review.namespace/review.name` by `review.user` in `review.groups`.
pub fn admit_managed_cluster_addon(review: &Review) -> Result<(), Denial> {
    for scope in scopes(&review.user, &review.groups) {
        check(review, &scope)?;
    }
    Ok(())
}

fn check(review: &Review, scope: &Scope) -> Result<(), Denial> {
    let user = &review.user;
    let target = format!("{}/{}", review.namespace, review.name);
    let (cluster, who, allowed_fields) = match scope {
        Scope::ClusterAgent { cluster } => (
            cluster,
            format!("the registration agent of cluster {cluster}"),
            REGISTRATION_AGENT_FIELDS,
        ),
        Scope::AddonAgent { cluster, addon } => (
            cluster,
            format!("the agent of addon {addon} on cluster {cluster}"),
            ADDON_AGENT_FIELDS,
        ),
    };
    let elsewhere = match scope {
        _ if review.namespace != *cluster => Some("cluster"),
        Scope::AddonAgent { addon, .. } if review.name != *addon => Some("addon"),
        _ => None,
    };
    if let Some(owner) = elsewhere {
        return Err(forbidden(
            review,
            format!(
                "user \"{user}\" is {who} and may not {} ManagedClusterAddOn {target}, which \
                 belongs to another {owner}",
                verb(review)
            ),
        ));
    }
    if review.subresource != "status" || review.operation != Some(Operation::Update) {
        return Err(forbidden(
            review,
            format!(
                "user \"{user}\" is {who} and may not {} ManagedClusterAddOn {target}: only \
                 the addon manager and hub admins may; it may write the object's status",
                verb(review)
            ),
        ));
    }
    let empty = Map::new();
    let status = |object: Option<&Value>| {
        object
            .and_then(|o| o.get("status"))
            .and_then(Value::as_object)
            .unwrap_or(&empty)
            .clone()
    };
    let new = status(review.object.as_ref());
    let old = status(review.old_object.as_ref());
    let mut changed: Vec<&String> = new
        .keys()
        .chain(old.keys())
        .filter(|k| !allowed_fields.contains(&k.as_str()))
        .filter(|k| {
            let present = |m: &Map<String, Value>| m.get(*k).filter(|v| !v.is_null()).cloned();
            present(&new) != present(&old)
        })
        .collect();
    changed.sort();
    if let Some(field) = changed.first() {
        return Err(forbidden(
            review,
            format!(
                "user \"{user}\" is {who} and may not change status.{field} of \
                 ManagedClusterAddOn {target}: it may change only {}",
                allowed_fields
                    .iter()
                    .map(|f| format!("status.{f}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        ));
    }
    if matches!(scope, Scope::AddonAgent { .. }) {
        let condition = |status: &Map<String, Value>, type_: &str| {
            status
                .get("conditions")
                .and_then(Value::as_array)
                .and_then(|list| {
                    list.iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
                })
                .cloned()
        };
        if let Some(type_) = FRAMEWORK_CONDITIONS
            .iter()
            .find(|t| condition(&new, t) != condition(&old, t))
        {
            return Err(forbidden(
                review,
                format!(
                    "user \"{user}\" is {who} and may not change condition {type_} of \
                     ManagedClusterAddOn {target}: the addon framework and the cluster's \
                     registration agent set it"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const ALPHA_C1: &str = "system:open-cluster-management:cluster:c1:addon:alpha:agent:alpha";

    fn alpha_groups() -> Vec<String> {
        vec![
            "system:open-cluster-management:cluster:c1:addon:alpha".into(),
            "system:open-cluster-management:addon:alpha".into(),
            "system:authenticated".into(),
        ]
    }

    fn agent_groups() -> Vec<String> {
        vec![
            "system:open-cluster-management:c1".into(),
            "system:open-cluster-management:managed-clusters".into(),
        ]
    }

    fn mca(ns: &str, name: &str, status: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": ns},
               "spec": {"installNamespace": "open-cluster-management-agent-addon"},
               "status": status})
    }

    fn condition(type_: &str, status: &str) -> Value {
        json!({"type": type_, "status": status, "reason": "R", "message": "m",
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    fn status_write(
        user: &str,
        groups: Vec<String>,
        ns: &str,
        name: &str,
        old: Value,
        new: Value,
    ) -> Review {
        Review {
            operation: Some(Operation::Update),
            group: ocm_api::addon::GROUP.into(),
            resource: "managedclusteraddons".into(),
            subresource: "status".into(),
            namespace: ns.into(),
            name: name.into(),
            object: Some(mca(ns, name, new)),
            old_object: Some(mca(ns, name, old)),
            user: user.into(),
            groups,
        }
    }

    fn denied(review: &Review) -> String {
        let denial = admit_managed_cluster_addon(review).unwrap_err();
        assert_eq!(denial.code, 403);
        assert_eq!(denial.reason(), "Forbidden");
        denial.message
    }

    #[test]
    fn identities_are_recognised_by_user_and_group() {
        assert_eq!(
            scopes(ALPHA_C1, &alpha_groups()),
            vec![Scope::AddonAgent {
                cluster: "c1".into(),
                addon: "alpha".into()
            }]
        );
        // The group alone (a custom user name) is enough.
        assert_eq!(scopes("someone", &alpha_groups()).len(), 1);
        assert_eq!(
            scopes("system:open-cluster-management:c1:agent1", &agent_groups()),
            vec![Scope::ClusterAgent {
                cluster: "c1".into()
            }]
        );
        assert_eq!(
            scopes("system:serviceaccount:c1:alpha-agent", &[]),
            vec![Scope::AddonAgent {
                cluster: "c1".into(),
                addon: "alpha".into()
            }]
        );
        // Hub users, controllers and admins are RBAC's business.
        for (user, groups) in [
            ("admin", vec!["system:masters".to_owned()]),
            (
                "system:serviceaccount:open-cluster-management-hub:addon-manager",
                vec![],
            ),
            ("system:open-cluster-management:c1:agent1", vec![]),
            ("system:open-cluster-management:addon:alpha", vec![]),
        ] {
            assert!(scopes(user, &groups).is_empty(), "{user}");
        }
    }

    #[test]
    fn an_addon_agent_writes_its_own_conditions() {
        let old = json!({"conditions": [condition("Available", "True")]});
        let new = json!({"conditions": [condition("Available", "True"),
                                        condition("AlphaSynced", "True")]});
        let own = status_write(ALPHA_C1, alpha_groups(), "c1", "alpha", old, new);
        assert_eq!(admit_managed_cluster_addon(&own), Ok(()));
    }

    #[test]
    fn an_addon_agent_may_not_touch_other_addons_or_clusters() {
        let old = json!({"conditions": []});
        let new = json!({"conditions": [condition("Degraded", "True")]});
        let other_addon = status_write(
            ALPHA_C1,
            alpha_groups(),
            "c1",
            "beta",
            old.clone(),
            new.clone(),
        );
        assert_eq!(
            denied(&other_addon),
            "user \"system:open-cluster-management:cluster:c1:addon:alpha:agent:alpha\" is the \
             agent of addon alpha on cluster c1 and may not write the status of \
             ManagedClusterAddOn c1/beta, which belongs to another addon"
        );
        let denial = admit_managed_cluster_addon(&other_addon).unwrap_err();
        assert_eq!(
            denial.resource.as_deref(),
            Some("managedclusteraddons/status")
        );
        let other_cluster = status_write(ALPHA_C1, alpha_groups(), "c2", "alpha", old, new);
        assert!(denied(&other_cluster).contains("which belongs to another cluster"));
    }

    #[test]
    fn an_addon_agent_may_not_write_framework_fields_or_conditions() {
        let old = json!({"conditions": [condition("Available", "False")],
                         "namespace": "open-cluster-management-agent-addon"});
        let forged = json!({"conditions": [condition("Available", "True")],
                            "namespace": "open-cluster-management-agent-addon"});
        let review = status_write(ALPHA_C1, alpha_groups(), "c1", "alpha", old.clone(), forged);
        assert!(denied(&review).contains("may not change condition Available"));
        let removed = json!({"conditions": [], "namespace": "open-cluster-management-agent-addon"});
        let review = status_write(
            ALPHA_C1,
            alpha_groups(),
            "c1",
            "alpha",
            old.clone(),
            removed,
        );
        assert!(denied(&review).contains("condition Available"));
        let moved = json!({"conditions": [condition("Available", "False")], "namespace": "x"});
        let review = status_write(ALPHA_C1, alpha_groups(), "c1", "alpha", old, moved);
        assert!(
            denied(&review).contains(
                "may not change status.namespace of ManagedClusterAddOn \
                                      c1/alpha: it may change only status.conditions"
            ),
            "{}",
            denied(&review)
        );
    }

    #[test]
    fn agents_do_not_write_the_main_resource() {
        for operation in [Operation::Create, Operation::Update, Operation::Delete] {
            let mut review = status_write(
                ALPHA_C1,
                alpha_groups(),
                "c1",
                "alpha",
                json!({}),
                json!({}),
            );
            review.subresource = String::new();
            review.operation = Some(operation);
            let message = denied(&review);
            assert!(
                message.contains("only the addon manager and hub admins may"),
                "{message}"
            );
            let denial = admit_managed_cluster_addon(&review).unwrap_err();
            assert_eq!(denial.resource, None);
            review.user = "system:open-cluster-management:c1:agent1".into();
            review.groups = agent_groups();
            assert!(denied(&review).contains("registration agent of cluster c1"));
        }
    }

    #[test]
    fn the_registration_agent_writes_conditions_and_registrations_in_its_namespace() {
        let user = "system:open-cluster-management:c1:agent1";
        let old = json!({"conditions": [], "registrations": [{"signerName": "s"}],
                         "namespace": "ns"});
        let new = json!({"conditions": [condition("Available", "True")],
                         "registrations": [{"signerName": "s", "kubeClient": {"driver": "token"}}],
                         "namespace": "ns"});
        let own = status_write(user, agent_groups(), "c1", "beta", old.clone(), new.clone());
        assert_eq!(admit_managed_cluster_addon(&own), Ok(()));
        let other = status_write(user, agent_groups(), "c2", "beta", old.clone(), new);
        assert!(denied(&other).contains("belongs to another cluster"));
        let moved = json!({"conditions": [], "registrations": [{"signerName": "s"}],
                           "namespace": "elsewhere"});
        let review = status_write(user, agent_groups(), "c1", "beta", old, moved);
        assert!(denied(&review).contains("status.namespace"));
    }

    #[test]
    fn hub_users_are_left_to_rbac() {
        let review = status_write(
            "admin",
            vec!["system:masters".into()],
            "c2",
            "beta",
            json!({}),
            json!({"namespace": "x", "conditions": [condition("Available", "True")]}),
        );
        assert_eq!(admit_managed_cluster_addon(&review), Ok(()));
    }
}

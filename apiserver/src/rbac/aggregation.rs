//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation` controller
//! computes it: a ClusterRole with `aggregationRule.clusterRoleSelectors` gets, as its
//! `rules`, the rules of every other ClusterRole matching any selector (selectors in order,
//! matching roles by name, duplicates dropped).
//!
//! The controller re-runs whenever any ClusterRole changes, so aggregation chains (`view` →
//! `edit` → `admin`) converge; [`aggregate_to_fixed_point`] does that in memory.

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use serde_json::Value;

use super::policy::Policy;
use crate::selector::{LabelSelector, SelectorError};

/// The rules `role` should have given `all` ClusterRoles (one controller pass), or `None` when
/// the role has no aggregation rule. An unparsable selector is an error (kube's controller
/// logs it and retries).
pub fn aggregated_rules<'a>(
    role: &ClusterRole,
    all: impl IntoIterator<Item = &'a ClusterRole> + Clone,
) -> Result<Option<Vec<PolicyRule>>, SelectorError> {
    let Some(rule) = &role.aggregation_rule else {
        return Ok(None);
    };
    let own_name = role.metadata.name.as_deref().unwrap_or("");
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in rule.cluster_role_selectors.as_deref().unwrap_or(&[]) {
        let as_json = serde_json::to_value(selector).unwrap_or(Value::Null);
        let selector = LabelSelector::from_structured(&as_json)?;
        let mut matching: Vec<&ClusterRole> = all
            .clone()
            .into_iter()
            .filter(|r| r.metadata.name.as_deref().unwrap_or("") != own_name)
            .filter(|r| {
                let labels = r.metadata.labels.clone().unwrap_or_default();
                selector.matches(&labels)
            })
            .collect();
        matching.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for other in matching {
            for r in other.rules.as_deref().unwrap_or(&[]) {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Ok(Some(rules))
}

impl Policy {
    /// One controller pass: every aggregated ClusterRole whose stored rules differ from what
    /// its selectors gather, with the rules it should get. The core writes each (as an update
    /// of `rules` by the server's own identity); the resulting change re-triggers the pass
    /// until it returns nothing. Roles with bad selectors are skipped.
    pub fn pending_aggregations(&self) -> Vec<(String, Vec<PolicyRule>)> {
        let mut out = Vec::new();
        for role in self.cluster_roles.values() {
            match aggregated_rules(role, self.cluster_roles.values()) {
                Ok(Some(rules)) => {
                    let current = role.rules.as_deref().unwrap_or(&[]);
                    if current != rules.as_slice() {
                        out.push((role.metadata.name.clone().unwrap_or_default(), rules));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(role = ?role.metadata.name, error = %e, "bad clusterRoleSelector");
                }
            }
        }
        out
    }

    /// Applies [`Policy::pending_aggregations`] in memory until nothing changes (bounded by
    /// the number of ClusterRoles + 1 passes); returns the names of the roles changed.
    pub fn aggregate_to_fixed_point(&mut self) -> Vec<String> {
        let mut changed: Vec<String> = Vec::new();
        for _ in 0..=self.cluster_roles.len() {
            let pending = self.pending_aggregations();
            if pending.is_empty() {
                break;
            }
            for (name, rules) in pending {
                if let Some(role) = self.cluster_roles.get_mut(&name) {
                    role.rules = Some(rules);
                }
                if !changed.contains(&name) {
                    changed.push(name);
                }
            }
        }
        changed
    }
}

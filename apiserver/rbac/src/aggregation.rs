//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation` controller
//! computes it: a ClusterRole with `aggregationRule.clusterRoleSelectors` gets, as its
//! `rules`, the rules of every other ClusterRole matching any selector (selectors in order,
//! matching roles by name, duplicates dropped).
//!
//! The controller re-runs whenever any ClusterRole changes, so aggregation chains (`view` →
//! `edit` → `admin`) converge; [`aggregate_to_fixed_point`] does that in memory.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use serde_json::Value;

use super::policy::Policy;
use ocm_apiserver_selector::{LabelSelector, SelectorError};

/// The rules `role` should have given `all` ClusterRoles (one controller pass), or `None` when
/// the role has no aggregation rule. An unparsable selector is an error (kube's controller
/// logs it and retries).
pub fn aggregated_rules<'a>(
    role: &ClusterRole,
    all: impl IntoIterator<Item = &'a ClusterRole> + Clone,
) -> Result<Option<Vec<PolicyRule>>, SelectorError> {
    if role.aggregation_rule.is_none() {
        return Ok(None);
    }
    let own_name = role.metadata.name.as_deref().unwrap_or("");
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors_of(role)? {
        let mut matching: Vec<&ClusterRole> = all
            .clone()
            .into_iter()
            .filter(|r| r.metadata.name.as_deref().unwrap_or("") != own_name)
            .filter(|r| selector.matches(labels_of(r)))
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

/// The parsed `clusterRoleSelectors` of a role (none without an aggregation rule).
fn selectors_of(role: &ClusterRole) -> Result<Vec<LabelSelector>, SelectorError> {
    let Some(rule) = &role.aggregation_rule else {
        return Ok(Vec::new());
    };
    rule.cluster_role_selectors
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .map(|selector| {
            let as_json = serde_json::to_value(selector).unwrap_or(Value::Null);
            LabelSelector::from_structured(&as_json)
        })
        .collect()
}

fn labels_of(role: &ClusterRole) -> &BTreeMap<String, String> {
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    role.metadata.labels.as_ref().unwrap_or(&NONE)
}

/// The selectors of one cluster's aggregating ClusterRoles, to tell which ClusterRole changes
/// can move aggregated rules. Most cannot: in a fleet hub nearly every ClusterRole is a
/// per-cluster role that aggregates nothing and that no selector picks, so its writes need no
/// aggregation pass over every role.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Aggregators {
    /// Aggregating role name → its selectors (empty when they do not parse: such a role is
    /// skipped by aggregation until it is fixed, and fixing it is itself a relevant change).
    selectors: BTreeMap<String, Vec<LabelSelector>>,
}

impl Aggregators {
    /// The aggregators among `roles`.
    pub fn of<'a>(roles: impl IntoIterator<Item = &'a ClusterRole>) -> Self {
        let mut out = Aggregators::default();
        for role in roles {
            out.record(role.metadata.name.as_deref().unwrap_or(""), Some(role));
        }
        out
    }

    /// Records the role `name` as it now is (`None`: deleted).
    pub fn record(&mut self, name: &str, role: Option<&ClusterRole>) {
        match role.filter(|r| r.aggregation_rule.is_some()) {
            Some(role) => {
                let selectors = selectors_of(role).unwrap_or_default();
                self.selectors.insert(name.to_owned(), selectors);
            }
            None => {
                self.selectors.remove(name);
            }
        }
    }

    /// Whether changing the role `name` from `before` to `after` (`None`: absent) can change
    /// the rules of any aggregated role: it aggregates (before or after), or a selector of
    /// another aggregating role picks it (before or after).
    pub fn affected_by(
        &self,
        name: &str,
        before: Option<&ClusterRole>,
        after: Option<&ClusterRole>,
    ) -> bool {
        [before, after].into_iter().flatten().any(|role| {
            role.aggregation_rule.is_some()
                || self
                    .selectors
                    .iter()
                    .filter(|(aggregator, _)| aggregator.as_str() != name)
                    .any(|(_, selectors)| selectors.iter().any(|s| s.matches(labels_of(role))))
        })
    }
}

impl Policy {
    /// One controller pass: every aggregated ClusterRole whose stored rules differ from what
    /// its selectors gather, with the rules it should get. The core writes each (as an update
    /// of `rules` by the server's own identity); the resulting change re-triggers the pass
    /// until it returns nothing. Roles with bad selectors are skipped.
    pub fn pending_aggregations(&self) -> Vec<(String, Vec<PolicyRule>)> {
        let mut out = Vec::new();
        let all: Vec<&ClusterRole> = self.cluster_roles.values().collect();
        for role in &all {
            match aggregated_rules(role, all.iter().copied()) {
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
        self.aggregate_counting_passes().changed
    }

    /// [`Policy::aggregate_to_fixed_point`], also telling how many passes changed rules
    /// before none was pending, or that the bound stopped it first.
    ///
    /// A cycle of aggregating roles that carries a rule none of them gathers (e.g. the
    /// stored rules of a role that both aggregates and is picked) moves that rule one role
    /// along per pass forever: there is no fixed point, and where the rule ends up depends
    /// on the bound, i.e. on how many ClusterRoles there are.
    pub fn aggregate_counting_passes(&mut self) -> Aggregation {
        let mut changed: Vec<String> = Vec::new();
        let bound = self.cluster_roles.len() + 1;
        for pass in 0..bound {
            let pending = self.pending_aggregations();
            if pending.is_empty() {
                return Aggregation {
                    changed,
                    passes: Some(pass),
                };
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
        Aggregation {
            changed,
            passes: None,
        }
    }
}

/// How an in-memory aggregation ([`Policy::aggregate_counting_passes`]) ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aggregation {
    /// The roles whose rules changed, in the order they first changed.
    pub changed: Vec<String>,
    /// How many passes changed rules before nothing was pending; `None` when the bound (the
    /// number of ClusterRoles + 1 passes) was used up without checking that nothing was
    /// pending, so the result may not be a fixed point and then depends on that bound.
    pub passes: Option<usize>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn role(value: Value) -> ClusterRole {
        serde_json::from_value(value).unwrap()
    }

    fn plain(name: &str, labels: Value) -> ClusterRole {
        role(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        }))
    }

    fn view() -> ClusterRole {
        role(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "view", "labels": {"rbac.example/aggregate-to-view": "true"}},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"rbac.example/aggregate-to-view": "true"}}
            ]},
        }))
    }

    #[test]
    fn a_role_no_selector_picks_does_not_affect_aggregation() {
        let aggregators = Aggregators::of([&view()]);
        let before = plain("open-cluster-management:managedcluster:c1", json!({}));
        let after = plain(
            "open-cluster-management:managedcluster:c1",
            json!({"x": "y"}),
        );
        let name = "open-cluster-management:managedcluster:c1";
        assert!(!aggregators.affected_by(name, None, Some(&after)));
        assert!(!aggregators.affected_by(name, Some(&before), Some(&after)));
        assert!(!aggregators.affected_by(name, Some(&after), None));
    }

    #[test]
    fn a_picked_role_affects_aggregation_when_it_joins_changes_or_leaves() {
        let aggregators = Aggregators::of([&view()]);
        let picked = plain(
            "pods-reader",
            json!({"rbac.example/aggregate-to-view": "true"}),
        );
        let unpicked = plain("pods-reader", json!({}));
        assert!(aggregators.affected_by("pods-reader", None, Some(&picked)));
        assert!(aggregators.affected_by("pods-reader", Some(&picked), Some(&picked)));
        assert!(aggregators.affected_by("pods-reader", Some(&picked), Some(&unpicked)));
        assert!(aggregators.affected_by("pods-reader", Some(&picked), None));
    }

    #[test]
    fn an_aggregating_role_always_affects_aggregation_but_not_through_its_own_labels() {
        let mut aggregators = Aggregators::of([&view()]);
        assert!(aggregators.affected_by("view", Some(&view()), Some(&view())));
        // Without its rule, `view` is picked by no other selector (its own does not count).
        let bare = plain("view", json!({"rbac.example/aggregate-to-view": "true"}));
        assert!(aggregators.affected_by("view", Some(&view()), Some(&bare)));
        aggregators.record("view", Some(&bare));
        assert_eq!(aggregators, Aggregators::default());
        assert!(!aggregators.affected_by("view", Some(&bare), Some(&bare)));
    }
    #[test]
    fn a_chain_settles_but_a_cycle_carrying_a_stray_rule_never_does() {
        let aggregating = |name: &str, label: &str, selects: &str| {
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": {label: "true"}},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selects: "true"}}]},
            })
        };
        let leaf = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "leaf", "labels": {"to-a": "true"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        });
        // leaf → a → b → c: one pass per link, then nothing is pending.
        let chain = [
            leaf.clone(),
            aggregating("a", "to-b", "to-a"),
            aggregating("b", "to-c", "to-b"),
            aggregating("c", "none", "to-c"),
        ];
        let mut policy = Policy::from_values(&chain).unwrap();
        assert_eq!(policy.aggregate_counting_passes().passes, Some(3));
        assert_eq!(policy.aggregate_counting_passes().passes, Some(0));
        // a → b → c → a, and `a` starts with a rule that no role gathers: it goes round.
        let mut a = aggregating("a", "to-b", "to-c");
        a["rules"] = json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]);
        let cycle = [
            a,
            aggregating("b", "to-c", "to-a"),
            aggregating("c", "to-a", "to-b"),
        ];
        let mut policy = Policy::from_values(&cycle).unwrap();
        assert_eq!(policy.aggregate_counting_passes().passes, None);
        assert!(!policy.pending_aggregations().is_empty());
    }
}

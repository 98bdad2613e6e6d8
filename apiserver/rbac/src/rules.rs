//! Policy-rule matching and coverage, as kube-apiserver's RBAC evaluates them.
//!
//! * [`rule_allows`] — does one rule allow one request?
//! * [`covers`] — does a set of rules cover every permission of another set (escalation check)?
//! * [`compact_rules`] and [`compact_string`] — the compact form of missing rules in escalation
//!   messages (`{APIGroups:["" ], Resources:["secrets"], Verbs:["get" "list"]}`).

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::attributes::{Attributes, Target};
use ocm_apiserver_validation::go_quote;

/// `*`: every verb, group, resource or non-resource URL.
pub const ALL: &str = "*";

/// The entries of an optional list field (`None` is empty).
pub(crate) fn list(field: &Option<Vec<String>>) -> &[String] {
    field.as_deref().unwrap_or(&[])
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

/// Whether the rule's verbs contain `verb` or `*`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// Whether the rule's apiGroups contain `group` (`""` is core) or `*`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    list(&rule.api_groups)
        .iter()
        .any(|g| g == ALL || g == group)
}

/// Whether the rule's resources match `resource[/subresource]`: `*`, the exact combined name, or
/// `*/subresource` for a subresource request.
pub fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    list(&rule.resources).iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// Whether the rule's resourceNames are empty or contain `name`. A request without a name
/// (create, list, watch, deletecollection) never matches a name-restricted rule.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = list(&rule.resource_names);
    names.is_empty() || has(names, name)
}

/// Whether the rule's nonResourceURLs match `path`: `*`, exact, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    list(&rule.non_resource_urls)
        .iter()
        .any(|u| u == ALL || u == path || url_prefix_matches(u, path))
}

fn url_prefix_matches(owner: &str, path: &str) -> bool {
    owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*'))
}

/// Whether `rule` allows the request described by `attrs`.
pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if !verb_matches(rule, &attrs.verb) {
        return false;
    }
    match &attrs.target {
        Target::Resource(r) => {
            let combined = r.combined_resource();
            api_group_matches(rule, &r.group)
                && resource_matches(rule, &combined, &r.subresource)
                && resource_name_matches(rule, &r.name)
        }
        Target::NonResource { path } => non_resource_url_matches(rule, path),
    }
}

/// A rule with the given parts (empty lists become `None`, as the API server stores them).
pub fn rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    names: &[&str],
    urls: &[&str],
) -> PolicyRule {
    let opt = |v: &[&str]| -> Option<Vec<String>> {
        (!v.is_empty()).then(|| v.iter().map(|s| (*s).to_owned()).collect())
    };
    PolicyRule {
        verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
        api_groups: opt(groups),
        resources: opt(resources),
        resource_names: opt(names),
        non_resource_urls: opt(urls),
    }
}

/// Splits a rule into rules with at most one verb, group, resource and resource name each (or
/// one non-resource URL and one verb), as kube's `BreakdownRule` does.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    out.push(self::rule(&[verb], &[group], &[resource], &[], &[]));
                } else {
                    for name in names {
                        out.push(self::rule(&[verb], &[group], &[resource], &[name], &[]));
                    }
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            out.push(self::rule(&[verb], &[], &[], &[], &[url]));
        }
    }
    out
}

fn resource_covers_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        if has(owner, path) {
            return true;
        }
        match path.split_once('/') {
            Some((_, sub)) => has(owner, &format!("*/{sub}")),
            None => false,
        }
    })
}

fn non_resource_urls_cover_all(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|path| {
        owner
            .iter()
            .any(|o| o == path || url_prefix_matches(o, path))
    })
}

/// Whether `owner` (any rule) covers `sub` (a rule from [`breakdown_rule`]).
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(list(&owner.api_groups), ALL)
        || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = resource_covers_all(list(&owner.resources), list(&sub.resources));
    let urls =
        non_resource_urls_cover_all(list(&owner.non_resource_urls), list(&sub.non_resource_urls));
    let owner_names = list(&owner.resource_names);
    let sub_names = list(&sub.resource_names);
    let names = if sub_names.is_empty() {
        owner_names.is_empty()
    } else {
        owner_names.is_empty() || has_all(owner_names, sub_names)
    };
    verbs && groups && resources && names && urls
}

/// Whether `owner` covers every permission in `wanted`; when not, the uncovered atomic rules
/// (kube's `validation.Covers`).
pub fn covers(owner: &[PolicyRule], wanted: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> = wanted
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// Merges rules that name one group and one resource (and at most one resource name) and
/// differ only in verbs, as kube's `CompactRules` does for escalation messages.
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut compacted = Vec::new();
    let mut simple: BTreeMap<(String, String, Option<String>), PolicyRule> = BTreeMap::new();
    let mut order = Vec::new();
    for r in rules {
        let groups = list(&r.api_groups);
        let resources = list(&r.resources);
        let names = list(&r.resource_names);
        let is_simple = names.len() <= 1
            && list(&r.non_resource_urls).is_empty()
            && groups.len() == 1
            && resources.len() == 1;
        if !is_simple {
            compacted.push(r.clone());
            continue;
        }
        let key = (
            groups[0].clone(),
            resources[0].clone(),
            names.first().cloned(),
        );
        match simple.get_mut(&key) {
            Some(existing) => existing.verbs.extend(r.verbs.iter().cloned()),
            None => {
                order.push(key.clone());
                simple.insert(key, r.clone());
            }
        }
    }
    for key in order {
        if let Some(r) = simple.remove(&key) {
            compacted.push(r);
        }
    }
    compacted
}

fn go_string_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// A rule in kube's compact form, e.g. `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    let fields: [(&str, &[String]); 5] = [
        ("APIGroups", list(&rule.api_groups)),
        ("Resources", list(&rule.resources)),
        ("NonResourceURLs", list(&rule.non_resource_urls)),
        ("ResourceNames", list(&rule.resource_names)),
        ("Verbs", &rule.verbs),
    ];
    for (name, values) in fields {
        if !values.is_empty() {
            parts.push(format!("{name}:{}", go_string_list(values)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_subresource_matches_only_subresource_requests() {
        let r = rule(&["get"], &[""], &["*/status"], &[], &[]);
        assert!(resource_matches(&r, "pods/status", "status"));
        assert!(!resource_matches(&r, "pods", ""));
        assert!(!resource_matches(&r, "pods/log", "log"));
        // "*/status" must not match a subresource that merely ends in "status".
        assert!(!resource_matches(&r, "pods/xstatus", "xstatus"));
    }

    #[test]
    fn url_prefix_and_exact() {
        let r = rule(&["get"], &[], &[], &[], &["/apis/*", "/version"]);
        assert!(non_resource_url_matches(&r, "/apis/apps/v1"));
        assert!(non_resource_url_matches(&r, "/apis/"));
        assert!(!non_resource_url_matches(&r, "/apis"));
        assert!(non_resource_url_matches(&r, "/version"));
        assert!(!non_resource_url_matches(&r, "/version/"));
    }

    #[test]
    fn covers_reports_missing_atomic_rules() {
        let owner = vec![rule(&["get", "list"], &[""], &["pods"], &[], &[])];
        let wanted = vec![rule(&["get", "delete"], &[""], &["pods"], &[], &[])];
        let (ok, missing) = covers(&owner, &wanted);
        assert!(!ok);
        assert_eq!(missing, vec![rule(&["delete"], &[""], &["pods"], &[], &[])]);
    }

    #[test]
    fn named_owner_does_not_cover_unnamed() {
        let owner = vec![rule(&["get"], &[""], &["secrets"], &["a"], &[])];
        assert!(!covers(&owner, &[rule(&["get"], &[""], &["secrets"], &[], &[])]).0);
        assert!(covers(&owner, &[rule(&["get"], &[""], &["secrets"], &["a"], &[])]).0);
        assert!(!covers(&owner, &[rule(&["get"], &[""], &["secrets"], &["b"], &[])]).0);
    }

    #[test]
    fn star_subresource_owner_covers_subresources() {
        let owner = vec![rule(&["update"], &["*"], &["*/status"], &[], &[])];
        assert!(
            covers(
                &owner,
                &[rule(
                    &["update"],
                    &["apps"],
                    &["deployments/status"],
                    &[],
                    &[]
                )]
            )
            .0
        );
        assert!(
            !covers(
                &owner,
                &[rule(&["update"], &["apps"], &["deployments"], &[], &[])]
            )
            .0
        );
    }

    #[test]
    fn resource_owner_does_not_cover_urls() {
        let owner = vec![rule(&["*"], &["*"], &["*"], &[], &[])];
        assert!(!covers(&owner, &[rule(&["get"], &[], &[], &[], &["/healthz"])]).0);
        let urls = vec![rule(&["get"], &[], &[], &[], &["/health*"])];
        assert!(covers(&urls, &[rule(&["get"], &[], &[], &[], &["/healthz"])]).0);
    }

    #[test]
    fn compact_merges_verbs_and_formats_like_go() {
        let missing = vec![
            rule(&["get"], &[""], &["secrets"], &[], &[]),
            rule(&["list"], &[""], &["secrets"], &[], &[]),
            rule(&["get"], &[], &[], &[], &["/metrics"]),
        ];
        let compact: Vec<String> = compact_rules(&missing).iter().map(compact_string).collect();
        assert_eq!(
            compact,
            vec![
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#.to_owned(),
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#.to_owned(),
            ]
        );
    }
}

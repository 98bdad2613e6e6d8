//! Which webhooks a request reaches: rules (with `matchPolicy: Equivalent`, also through the
//! other versions and groups serving the same objects), namespace and object selectors, and
//! `matchConditions` (CEL). Pure functions of the request and the webhook.

use serde_json::{Map, Value};

use super::config::{MatchCondition, Rule};
use ocm_apiserver_selector::LabelSelector;

/// The request as rules see it.
#[derive(Clone, Copy, Debug)]
pub struct RequestAttributes<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// API group.
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, empty for the main resource.
    pub subresource: &'a str,
    /// Namespace of the request; for a Namespace object, its own name (as kube-apiserver sets
    /// it); empty for other cluster-scoped objects.
    pub namespace: &'a str,
}

impl RequestAttributes<'_> {
    /// The `apiVersion` of the request's objects.
    pub fn api_version(&self) -> String {
        crate::registry::api_version(self.group, self.version)
    }

    fn is_namespace_object(&self) -> bool {
        self.group.is_empty() && self.resource == "namespaces"
    }
}

/// Whether writes of this kind never reach admission webhooks or policies: kube-apiserver
/// exempts its admission configuration objects, so a broken webhook or policy cannot lock
/// itself in.
pub fn is_exempt_configuration(group: &str, kind: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            kind,
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
        )
}

fn listed(values: &[String], want: &str) -> bool {
    values.iter().any(|v| v == "*" || v == want)
}

/// Whether one rule covers the request (operation, group, version, resource/subresource,
/// scope).
pub fn rule_matches(rule: &Rule, attrs: &RequestAttributes<'_>) -> bool {
    if !listed(&rule.operations, attrs.operation)
        || !listed(&rule.api_groups, attrs.group)
        || !listed(&rule.api_versions, attrs.version)
    {
        return false;
    }
    let resource = rule.resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
        (res == "*" || res == attrs.resource) && (sub == "*" || sub == attrs.subresource)
    });
    if !resource {
        return false;
    }
    match rule.scope.as_str() {
        "Cluster" => attrs.is_namespace_object() || attrs.namespace.is_empty(),
        "Namespaced" => !attrs.is_namespace_object() && !attrs.namespace.is_empty(),
        _ => true,
    }
}

/// Whether any of the rules (a webhook's, or a policy's `resourceRules`) covers the request.
pub fn rules_match(rules: &[Rule], attrs: &RequestAttributes<'_>) -> bool {
    rules.iter().any(|r| rule_matches(r, attrs))
}

/// Another group and version serving the objects of the request's resource, as kube-apiserver
/// counts them equivalent: each other served version of a custom resource, and the Events of
/// `events.k8s.io` for core Events (and back).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Equivalent {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Kind in that group and version.
    pub kind: String,
}

impl Equivalent {
    /// The `apiVersion` of objects in this group and version.
    pub fn api_version(&self) -> String {
        crate::registry::api_version(&self.group, &self.version)
    }
}

/// How a webhook's or a policy's rules cover a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleMatch<'e> {
    /// Not at all.
    No,
    /// As sent.
    Exact,
    /// Only through an equivalent group and version: the hook sees the request (kind,
    /// resource, objects) there.
    Equivalent(&'e Equivalent),
}

/// Which way `rules` cover the request: as sent, or — with `match_equivalent`
/// (`matchPolicy: Equivalent`) — through the first equivalent that a rule covers, trying the
/// rules in order and each rule against the equivalents in order.
pub fn match_rules<'e>(
    rules: &[Rule],
    attrs: &RequestAttributes<'_>,
    match_equivalent: bool,
    equivalents: &'e [Equivalent],
) -> RuleMatch<'e> {
    match_rules_by(rules, rule_matches, attrs, match_equivalent, equivalents)
}

/// [`match_rules`] for any kind of rule, `covers` saying whether one rule covers a request.
pub fn match_rules_by<'e, R>(
    rules: &[R],
    covers: impl Fn(&R, &RequestAttributes<'_>) -> bool,
    attrs: &RequestAttributes<'_>,
    match_equivalent: bool,
    equivalents: &'e [Equivalent],
) -> RuleMatch<'e> {
    if rules.iter().any(|r| covers(r, attrs)) {
        return RuleMatch::Exact;
    }
    if !match_equivalent {
        return RuleMatch::No;
    }
    for rule in rules {
        for e in equivalents {
            if e.group == attrs.group && e.version == attrs.version && e.resource == attrs.resource
            {
                continue;
            }
            let seen = RequestAttributes {
                group: &e.group,
                version: &e.version,
                resource: &e.resource,
                ..*attrs
            };
            if covers(rule, &seen) {
                return RuleMatch::Equivalent(e);
            }
        }
    }
    RuleMatch::No
}

/// Whether the namespace selector needs the labels of the request's Namespace object
/// (namespaced requests with a selector that is not `{}`).
pub fn needs_namespace_labels(selector: &LabelSelector, attrs: &RequestAttributes<'_>) -> bool {
    !selector.is_everything() && !attrs.namespace.is_empty() && !attrs.is_namespace_object()
}

/// The namespace selector: cluster-scoped objects other than namespaces always match; a
/// Namespace object is selected by its own labels (the new object's, or the old one's on
/// delete); others by `namespace_labels`, the labels of their Namespace.
pub fn namespace_selector_matches(
    selector: &LabelSelector,
    attrs: &RequestAttributes<'_>,
    object: Option<&Value>,
    old_object: Option<&Value>,
    namespace_labels: Option<&Map<String, Value>>,
) -> bool {
    if selector.is_everything() {
        return true;
    }
    if attrs.is_namespace_object() {
        return object
            .or(old_object)
            .is_some_and(|o| selector.matches_value(o));
    }
    if attrs.namespace.is_empty() {
        return true;
    }
    selector.matches_map(namespace_labels.unwrap_or(&Map::new()))
}

/// The object selector: matches when the object's or the old object's labels match.
pub fn object_selector_matches(
    selector: &LabelSelector,
    object: Option<&Value>,
    old_object: Option<&Value>,
) -> bool {
    selector.is_everything()
        || object.is_some_and(|o| selector.matches_value(o))
        || old_object.is_some_and(|o| selector.matches_value(o))
}

/// Evaluates `matchConditions` over `object`, `oldObject` and `request`: `Ok(true)` when all
/// are true (or there are none), `Ok(false)` when one is false, `Err` when one cannot be
/// evaluated or is over kube's runtime cost limits (then the failure policy decides).
pub fn match_conditions(
    conditions: &[MatchCondition],
    object: Option<&Value>,
    old_object: Option<&Value>,
    request: &Value,
    authorizer: &kube_cel::cel::Value,
) -> Result<bool, String> {
    if conditions.is_empty() {
        return Ok(true);
    }
    use kube_cel::KubeCelExt as _;
    use kube_cel::cel;
    let mut ctx = cel::Context::default().with_all();
    crate::admission_cel::authorizer::register(&mut ctx);
    if let Err(never) = ctx.add_variable("authorizer", authorizer.clone()) {
        match never {}
    }
    let null = Value::Null;
    let bound = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", old_object.unwrap_or(&null)),
        ("request", request),
    ];
    for (name, value) in bound {
        ctx.add_variable(name, value)
            .map_err(|err| format!("cannot bind {name}: {err}"))?;
    }
    // kube's runtime cost limits, checked before each condition runs.
    let sizes = ocm_apiserver_schema::cel_cost::ValueSizes::new(bound.to_vec());
    let mut budget = ocm_apiserver_schema::cel_cost::Budget::new(
        ocm_apiserver_schema::cel_cost::MATCH_CONDITIONS_BUDGET,
    );
    let mut errors = Vec::new();
    for condition in conditions {
        let program = match cel::Program::compile(&condition.expression) {
            Ok(p) => p,
            Err(err) => {
                errors.push(format!(
                    "matchCondition {}: compilation failed: {err}",
                    condition.name
                ));
                continue;
            }
        };
        let cost = ocm_apiserver_schema::cel_cost::estimate(program.expression(), &sizes);
        if let Err(err) = budget.charge(cost) {
            if budget.exhausted() {
                return Err(err.to_owned());
            }
            errors.push(format!("matchCondition {}: {err}", condition.name));
            continue;
        }
        match program.execute(&ctx) {
            Ok(cel::Value::Bool(true)) => {}
            // A false condition skips the webhook, even when another one errs.
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(other) => errors.push(format!(
                "matchCondition {}: expression must evaluate to bool, got {other:?}",
                condition.name
            )),
            Err(err) => errors.push(format!("matchCondition {}: {err}", condition.name)),
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(errors.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn widgets(version: &str) -> Equivalent {
        Equivalent {
            group: "example.com".into(),
            version: version.into(),
            resource: "widgets".into(),
            kind: "Widget".into(),
        }
    }

    #[test]
    fn equivalent_versions_match_only_under_the_equivalent_policy() {
        let rule = Rule::from_value(
            &json!({"operations": ["CREATE"], "apiGroups": ["example.com"],
            "apiVersions": ["v1"], "resources": ["widgets"]}),
        );
        let attrs = RequestAttributes {
            operation: "CREATE",
            group: "example.com",
            version: "v2",
            resource: "widgets",
            subresource: "",
            namespace: "ns",
        };
        let equivalents = [widgets("v2"), widgets("v1"), widgets("v3")];
        let rules = std::slice::from_ref(&rule);
        assert_eq!(
            match_rules(rules, &attrs, true, &equivalents),
            RuleMatch::Equivalent(&equivalents[1])
        );
        assert_eq!(
            match_rules(rules, &attrs, false, &equivalents),
            RuleMatch::No
        );
        let v1 = RequestAttributes {
            version: "v1",
            ..attrs
        };
        assert_eq!(
            match_rules(rules, &v1, true, &equivalents),
            RuleMatch::Exact
        );
        let delete = RequestAttributes {
            operation: "DELETE",
            ..attrs
        };
        assert_eq!(
            match_rules(rules, &delete, true, &equivalents),
            RuleMatch::No
        );
        assert_eq!(equivalents[1].api_version(), "example.com/v1");
    }

    #[test]
    fn earlier_rules_win_over_earlier_equivalents() {
        let rule = |v: &str| {
            Rule::from_value(&json!({"operations": ["*"], "apiGroups": ["example.com"],
                "apiVersions": [v], "resources": ["widgets"]}))
        };
        let rules = [rule("v3"), rule("v1")];
        let attrs = RequestAttributes {
            operation: "UPDATE",
            group: "example.com",
            version: "v2",
            resource: "widgets",
            subresource: "",
            namespace: "",
        };
        let equivalents = [widgets("v1"), widgets("v3")];
        assert_eq!(
            match_rules(&rules, &attrs, true, &equivalents),
            RuleMatch::Equivalent(&equivalents[1])
        );
    }

    use super::super::config::{Webhook, parse_configuration};
    use super::*;

    fn webhook(extra: Value) -> Webhook {
        let mut h = json!({
            "name": "a.example.com",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:1/x"},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.com"], "apiVersions": ["*"], "resources": ["widgets", "widgets/status"]}],
        });
        if let (Some(h), Some(extra)) = (h.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                h.insert(k.clone(), v.clone());
            }
        }
        parse_configuration(&json!({"metadata": {"name": "c"}, "webhooks": [h]}), false).remove(0)
    }

    fn attrs<'a>(
        op: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
    ) -> RequestAttributes<'a> {
        RequestAttributes {
            operation: op,
            group: "example.com",
            version: "v1",
            resource,
            subresource: sub,
            namespace: ns,
        }
    }

    #[test]
    fn rules_cover_operations_resources_and_subresources() {
        let w = webhook(json!({}));
        assert!(rules_match(&w.rules, &attrs("CREATE", "widgets", "", "ns")));
        assert!(rules_match(
            &w.rules,
            &attrs("UPDATE", "widgets", "status", "ns")
        ));
        assert!(!rules_match(
            &w.rules,
            &attrs("DELETE", "widgets", "", "ns")
        ));
        assert!(!rules_match(
            &w.rules,
            &attrs("UPDATE", "widgets", "scale", "ns")
        ));
        assert!(!rules_match(
            &w.rules,
            &attrs("CREATE", "gadgets", "", "ns")
        ));
        let all = webhook(
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]}),
        );
        assert!(rules_match(&all.rules, &attrs("DELETE", "gadgets", "", "")));
        assert!(rules_match(
            &all.rules,
            &attrs("UPDATE", "gadgets", "status", "")
        ));
        let main = webhook(
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}),
        );
        assert!(!rules_match(
            &main.rules,
            &attrs("UPDATE", "gadgets", "status", "")
        ));
        let status = webhook(
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/status"]}]}),
        );
        assert!(rules_match(
            &status.rules,
            &attrs("UPDATE", "gadgets", "status", "")
        ));
        assert!(!rules_match(
            &status.rules,
            &attrs("UPDATE", "gadgets", "", "")
        ));
    }

    #[test]
    fn scope_separates_cluster_and_namespaced() {
        let cluster = webhook(
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}]}),
        );
        assert!(rules_match(
            &cluster.rules,
            &attrs("CREATE", "widgets", "", "")
        ));
        assert!(!rules_match(
            &cluster.rules,
            &attrs("CREATE", "widgets", "", "ns")
        ));
        let ns_obj = RequestAttributes {
            group: "",
            resource: "namespaces",
            ..attrs("CREATE", "", "", "ns1")
        };
        assert!(rules_match(&cluster.rules, &ns_obj));
        let namespaced = webhook(
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}]}),
        );
        assert!(!rules_match(&namespaced.rules, &ns_obj));
        assert!(rules_match(
            &namespaced.rules,
            &attrs("CREATE", "widgets", "", "ns")
        ));
    }

    #[test]
    fn admission_configuration_is_exempt() {
        let group = "admissionregistration.k8s.io";
        assert!(is_exempt_configuration(
            group,
            "ValidatingAdmissionPolicyBinding"
        ));
        assert!(is_exempt_configuration(
            group,
            "MutatingWebhookConfiguration"
        ));
        assert!(!is_exempt_configuration(group, "Other"));
        assert!(!is_exempt_configuration(
            "",
            "ValidatingWebhookConfiguration"
        ));
    }

    #[test]
    fn selectors() {
        let w = webhook(
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}, "objectSelector": {"matchLabels": {"x": "1"}}}),
        );
        let a = attrs("CREATE", "widgets", "", "ns");
        assert!(needs_namespace_labels(&w.namespace_selector, &a));
        let labels = json!({"team": "a"});
        assert!(namespace_selector_matches(
            &w.namespace_selector,
            &a,
            None,
            None,
            labels.as_object()
        ));
        assert!(!namespace_selector_matches(
            &w.namespace_selector,
            &a,
            None,
            None,
            None
        ));
        // Cluster-scoped objects are never excluded by the namespace selector.
        assert!(namespace_selector_matches(
            &w.namespace_selector,
            &attrs("CREATE", "widgets", "", ""),
            None,
            None,
            None
        ));
        let with = json!({"metadata": {"labels": {"x": "1"}}});
        let without = json!({"metadata": {}});
        assert!(object_selector_matches(
            &w.object_selector,
            Some(&with),
            None
        ));
        assert!(object_selector_matches(
            &w.object_selector,
            Some(&without),
            Some(&with)
        ));
        assert!(!object_selector_matches(
            &w.object_selector,
            Some(&without),
            None
        ));
    }

    const NULL: kube_cel::cel::Value = kube_cel::cel::Value::Null;

    #[test]
    fn match_conditions_evaluate_cel() {
        let w = webhook(json!({"matchConditions": [
            {"name": "not-skipped", "expression": "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"},
            {"name": "create", "expression": "request.operation == 'CREATE'"},
        ]}));
        let req = json!({"operation": "CREATE"});
        let plain = json!({"metadata": {"name": "a"}});
        let skip = json!({"metadata": {"name": "a", "labels": {"skip": "yes"}}});
        assert_eq!(
            match_conditions(&w.match_conditions, Some(&plain), None, &req, &NULL),
            Ok(true)
        );
        assert_eq!(
            match_conditions(&w.match_conditions, Some(&skip), None, &req, &NULL),
            Ok(false)
        );
        let bad = webhook(
            json!({"matchConditions": [{"name": "bad", "expression": "object.nope.deeper"}]}),
        );
        assert!(match_conditions(&bad.match_conditions, Some(&plain), None, &req, &NULL).is_err());
    }

    #[test]
    fn match_conditions_over_the_cost_limit_are_errors_before_they_run() {
        let w = webhook(json!({"matchConditions": [{"name": "pairs",
            "expression": "object.items.all(x, object.items.all(y, x != y || x == y))"}]}));
        let req = json!({"operation": "CREATE"});
        let few = json!({"items": [1, 2, 3]});
        let many = json!({"items": (0..2000).collect::<Vec<i64>>()});
        assert_eq!(
            match_conditions(&w.match_conditions, Some(&few), None, &req, &NULL),
            Ok(true)
        );
        assert_eq!(
            match_conditions(&w.match_conditions, Some(&many), None, &req, &NULL),
            Err("matchCondition pairs: operation cancelled: actual cost limit exceeded".to_owned())
        );
    }
}

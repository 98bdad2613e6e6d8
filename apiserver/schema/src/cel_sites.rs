//! Where a custom resource's compiled schema has `x-kubernetes-validations` rules, so that
//! evaluating them visits only the parts of an object that lead to a rule.
//!
//! kube-cel's walk turns the value under every schema node it visits into a CEL value, rules
//! or not: for a ManifestWork, whose only rules sit on `conditionRules` items, each write
//! converted the whole object, then `spec` and `status` again, and so on down — the largest
//! single source of allocations of an addon rollout. Here the walk goes down to the topmost
//! nodes that carry rules without converting anything and hands kube-cel only those
//! subtrees. Objects arrive defaulted (the server applies schema defaults first), so
//! starting kube-cel below the root finds the same values and the same errors.

use std::collections::HashMap;

use kube_cel::{CompiledSchema, ValidationError};
use serde_json::Value;

/// The rule-bearing parts of a [`CompiledSchema`], node for node.
#[derive(Debug, Default)]
pub(crate) struct RuleSites {
    /// Whether the node itself has rules.
    here: bool,
    /// Properties with rules at or below them.
    properties: HashMap<String, RuleSites>,
    /// The items schema, when it leads to rules.
    items: Option<Box<RuleSites>>,
    /// The `additionalProperties` schema, when it leads to rules.
    additional: Option<Box<RuleSites>>,
    /// `allOf`, `oneOf` and `anyOf` branches in that order, `None` for those without rules.
    branches: Vec<Option<RuleSites>>,
}

impl RuleSites {
    /// The sites of `compiled`, or `None` when it has no rules at all.
    pub(crate) fn of(compiled: &CompiledSchema) -> Option<RuleSites> {
        let sites = RuleSites {
            here: !compiled.validations.is_empty(),
            properties: compiled
                .properties
                .iter()
                .filter_map(|(name, child)| Some((name.clone(), RuleSites::of(child)?)))
                .collect(),
            items: compiled
                .items
                .as_deref()
                .and_then(RuleSites::of)
                .map(Box::new),
            additional: compiled
                .additional_properties
                .as_deref()
                .and_then(RuleSites::of)
                .map(Box::new),
            branches: branches(compiled).map(RuleSites::of).collect(),
        };
        let any = sites.here
            || !sites.properties.is_empty()
            || sites.items.is_some()
            || sites.additional.is_some()
            || sites.branches.iter().any(Option::is_some);
        any.then_some(sites)
    }

    /// The sites below property `name`, when it leads to rules.
    pub(crate) fn property(&self, name: &str) -> Option<&RuleSites> {
        self.properties.get(name)
    }

    /// The items' sites.
    pub(crate) fn items(&self) -> Option<&RuleSites> {
        self.items.as_deref()
    }

    /// The `additionalProperties` sites.
    pub(crate) fn additional(&self) -> Option<&RuleSites> {
        self.additional.as_deref()
    }

    /// The sites of branch `i` of [`branches`].
    pub(crate) fn branch(&self, i: usize) -> Option<&RuleSites> {
        self.branches.get(i).and_then(Option::as_ref)
    }
}

/// `allOf`, `oneOf` and `anyOf` of a node, in the order kube-cel walks them.
pub(crate) fn branches(compiled: &CompiledSchema) -> impl Iterator<Item = &CompiledSchema> {
    compiled
        .all_of
        .iter()
        .chain(&compiled.one_of)
        .chain(&compiled.any_of)
}

/// Evaluates the rules of `compiled` (whose sites are `sites`) on `value` at `path`,
/// appending kube-cel's errors with their paths from the root, in kube-cel's order.
pub(crate) fn evaluate(
    compiled: &CompiledSchema,
    sites: &RuleSites,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<ValidationError>,
) {
    if sites.here {
        if let Err(errors) = kube_cel::validate_compiled(compiled, value, old) {
            out.extend(errors.into_iter().map(|mut e| {
                e.field_path = rooted(path, &e.field_path);
                e
            }));
        }
        return;
    }
    if let Some(obj) = value.as_object() {
        // kube-cel's order: the compiled schema's properties as its map iterates.
        for (name, child) in &compiled.properties {
            if let (Some(child_sites), Some(v)) = (sites.property(name), obj.get(name)) {
                let o = old.and_then(|o| o.get(name));
                evaluate(child, child_sites, v, o, &join(path, name), out);
            }
        }
    }
    if let (Some(items), Some(item_sites), Some(list)) =
        (compiled.items.as_deref(), sites.items(), value.as_array())
    {
        for (i, v) in list.iter().enumerate() {
            let o = old.and_then(Value::as_array).and_then(|a| a.get(i));
            evaluate(items, item_sites, v, o, &format!("{path}[{i}]"), out);
        }
    }
    if !compiled.preserve_unknown_fields
        && let (Some(values), Some(value_sites), Some(obj)) = (
            compiled.additional_properties.as_deref(),
            sites.additional(),
            value.as_object(),
        )
    {
        for (name, v) in obj {
            if compiled.properties.contains_key(name) {
                continue;
            }
            let o = old.and_then(|o| o.get(name));
            evaluate(values, value_sites, v, o, &join(path, name), out);
        }
    }
    for (i, branch) in branches(compiled).enumerate() {
        if let Some(branch_sites) = sites.branch(i) {
            evaluate(branch, branch_sites, value, old, path, out);
        }
    }
}

/// `base.segment`, or `segment` at the root.
pub(crate) fn join(base: &str, segment: &str) -> String {
    if base.is_empty() {
        segment.to_owned()
    } else {
        format!("{base}.{segment}")
    }
}

/// A path kube-cel reported relative to the subtree at `base`, from the root.
fn rooted(base: &str, relative: &str) -> String {
    if base.is_empty() {
        relative.to_owned()
    } else if relative.is_empty() {
        base.to_owned()
    } else if relative.starts_with('[') || relative.starts_with('.') {
        format!("{base}{relative}")
    } else {
        format!("{base}.{relative}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "plain": {"type": "object", "properties": {"x": {"type": "string"}}},
                "rules": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"type": {"type": "string"}, "condition": {"type": "string"}},
                    "x-kubernetes-validations": [
                        {"rule": "self.type != 'CEL' || self.condition != ''",
                         "message": "Condition is required for CEL rules"},
                        {"rule": "self.condition != 'x'", "fieldPath": ".condition"}]}},
                "labels": {"type": "object", "additionalProperties": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self.size() < 4"}]}}}},
            "status": {"type": "object", "properties": {"n": {"type": "integer"}}}}})
    }

    fn errors_both_ways(obj: &Value, old: Option<&Value>) -> (Vec<String>, Vec<String>) {
        let compiled = kube_cel::compile_schema(&schema());
        let sites = RuleSites::of(&compiled).expect("the schema has rules");
        let mut ours = Vec::new();
        evaluate(&compiled, &sites, obj, old, "", &mut ours);
        let whole = kube_cel::validate_compiled(&compiled, obj, old)
            .err()
            .map(|e| e.into_iter().collect::<Vec<_>>())
            .unwrap_or_default();
        let show = |errors: Vec<ValidationError>| -> Vec<String> {
            let mut v: Vec<String> = errors
                .into_iter()
                .map(|e| format!("{}: {}", e.field_path, e.message))
                .collect();
            v.sort();
            v
        };
        (show(ours), show(whole))
    }

    #[test]
    fn a_schema_without_rules_has_no_sites() {
        let compiled = kube_cel::compile_schema(
            &json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        );
        assert!(RuleSites::of(&compiled).is_none());
    }

    #[test]
    fn only_branches_that_lead_to_rules_are_kept() {
        let compiled = kube_cel::compile_schema(&schema());
        let sites = RuleSites::of(&compiled).expect("rules");
        let spec = sites.property("spec").expect("spec leads to rules");
        assert!(sites.property("status").is_none());
        assert!(spec.property("plain").is_none());
        assert!(spec.property("rules").and_then(RuleSites::items).is_some());
        assert!(
            spec.property("labels")
                .and_then(RuleSites::additional)
                .is_some()
        );
    }

    #[test]
    fn errors_match_a_walk_of_the_whole_object() {
        let obj = json!({"spec": {
            "plain": {"x": "y"},
            "rules": [{"type": "CEL", "condition": ""}, {"type": "WellKnown", "condition": "x"},
                      {"type": "CEL", "condition": "ok"}],
            "labels": {"a": "short", "b": "ok"}},
            "status": {"n": 3}});
        let (ours, whole) = errors_both_ways(&obj, None);
        assert_eq!(ours.len(), 3, "{ours:?}");
        assert_eq!(ours, whole);
        assert!(ours.contains(&"spec.rules[0]: Condition is required for CEL rules".to_owned()));
        assert!(
            ours.iter()
                .any(|e| e.starts_with("spec.rules[1].condition: "))
        );
        assert!(ours.iter().any(|e| e.starts_with("spec.labels.a: ")));
    }

    #[test]
    fn a_valid_object_and_its_update_have_no_errors() {
        let obj = json!({"spec": {"rules": [{"type": "CEL", "condition": "ok"}]}});
        assert_eq!(errors_both_ways(&obj, Some(&obj)), (vec![], vec![]));
    }

    #[test]
    fn paths_reported_below_a_subtree_are_rooted() {
        assert_eq!(rooted("", "a.b"), "a.b");
        assert_eq!(rooted("spec", ""), "spec");
        assert_eq!(rooted("spec", "[2]"), "spec[2]");
        assert_eq!(rooted("spec", ".x"), "spec.x");
        assert_eq!(rooted("spec", "x[1]"), "spec.x[1]");
    }
}

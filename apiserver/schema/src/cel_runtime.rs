//! kube's runtime cost limits on a custom resource's `x-kubernetes-validations` rules: one
//! evaluation may cost at most `PerCallLimit`, all evaluations for one object together at
//! most `RuntimeCELCostBudget`.
//!
//! The interpreter cannot be stopped mid-evaluation, so before any rule runs every rule is
//! costed against the values it will see (see [`crate::cel_cost`]) in the order they will
//! run; the first one over a limit is reported as kube reports it, and no rule is evaluated
//! then. An estimate from the actual sizes is an upper bound (it does not count
//! short-circuits), so a rule kube stops is stopped here too, and one that kube lets finish
//! only on early exit may be stopped here.

use kube_cel::{CompilationResult, CompiledSchema};
use serde_json::Value;

use super::cel_sites::{RuleSites, branches, join};
use crate::cel_cost::{self, BUDGET_ERROR, CALL_LIMIT_ERROR, PER_CALL_LIMIT, RUNTIME_BUDGET};

/// A rule that would go over a limit: where (a kube-cel path, `spec.items[0]`) and kube's
/// detail.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OverLimit {
    /// The path of the value the rule is on (empty for the root).
    pub path: String,
    /// kube's message.
    pub detail: String,
}

/// The first rule of `compiled` that evaluating `obj` (against `old`) would stop for cost.
pub(crate) fn over_limit(
    compiled: &CompiledSchema,
    sites: &RuleSites,
    obj: &Value,
    old: Option<&Value>,
) -> Option<OverLimit> {
    let mut remaining = RUNTIME_BUDGET;
    let at = Site {
        compiled,
        sites,
        path: String::new(),
    };
    walk(at, obj, old, &mut remaining).err()
}

/// A schema node that leads to rules, and where it is.
struct Site<'a> {
    compiled: &'a CompiledSchema,
    sites: &'a RuleSites,
    path: String,
}

/// kube's name for a rule in errors: its message, else its expression.
fn rule_name(cr: &CompilationResult) -> &str {
    match cr.rule.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m,
        _ => cr.rule.rule.trim(),
    }
}

fn charge(
    cr: &CompilationResult,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    remaining: &mut u64,
) -> Result<(), OverLimit> {
    if cr.is_transition_rule && old.is_none() && cr.rule.optional_old_self != Some(true) {
        return Ok(());
    }
    let mut vars = vec![("self", value)];
    if let Some(old) = old {
        vars.push(("oldSelf", old));
    }
    let sizes = cel_cost::ValueSizes::new(vars);
    let cost = cel_cost::estimate(cr.program.expression(), &sizes);
    let over = |detail: String| OverLimit {
        path: path.to_owned(),
        detail,
    };
    if cost > PER_CALL_LIMIT && PER_CALL_LIMIT <= *remaining {
        return Err(over(format!(
            "'{CALL_LIMIT_ERROR}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            rule_name(cr)
        )));
    }
    if cost > *remaining {
        return Err(over(BUDGET_ERROR.to_owned()));
    }
    *remaining -= cost;
    Ok(())
}

/// Charges the rules at and below `at` (only the parts of the schema that lead to rules).
fn walk(
    at: Site<'_>,
    value: &Value,
    old: Option<&Value>,
    remaining: &mut u64,
) -> Result<(), OverLimit> {
    let Site {
        compiled,
        sites,
        path,
    } = at;
    // Rules validate values, not nulls.
    if value.is_null() {
        return Ok(());
    }
    for cr in compiled.validations.iter().flatten() {
        charge(cr, value, old, &path, remaining)?;
    }
    if let Some(obj) = value.as_object() {
        // In name order, so the same object always stops at the same rule.
        let mut properties: Vec<_> = compiled
            .properties
            .iter()
            .filter_map(|(name, child)| Some((name, child, sites.property(name)?)))
            .collect();
        properties.sort_by_key(|(name, _, _)| *name);
        for (name, child, child_sites) in properties {
            if let Some(v) = obj.get(name) {
                let o = old.and_then(|o| o.get(name));
                let at = Site {
                    compiled: child,
                    sites: child_sites,
                    path: join(&path, name),
                };
                walk(at, v, o, remaining)?;
            }
        }
        if let (Some(values), Some(value_sites)) = (
            compiled
                .additional_properties
                .as_deref()
                .filter(|_| !compiled.preserve_unknown_fields),
            sites.additional(),
        ) {
            for (name, v) in obj {
                if compiled.properties.contains_key(name) {
                    continue;
                }
                let o = old.and_then(|o| o.get(name));
                let at = Site {
                    compiled: values,
                    sites: value_sites,
                    path: join(&path, name),
                };
                walk(at, v, o, remaining)?;
            }
        }
    }
    if let (Some(items), Some(item_sites), Some(list)) =
        (compiled.items.as_deref(), sites.items(), value.as_array())
    {
        for (i, v) in list.iter().enumerate() {
            let o = old.and_then(|o| o.get(i));
            let at = Site {
                compiled: items,
                sites: item_sites,
                path: format!("{path}[{i}]"),
            };
            walk(at, v, o, remaining)?;
        }
    }
    for (i, branch) in branches(compiled).enumerate() {
        if let Some(branch_sites) = sites.branch(i) {
            let at = Site {
                compiled: branch,
                sites: branch_sites,
                path: path.clone(),
            };
            walk(at, value, old, remaining)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(rule: &str, extra: Value) -> CompiledSchema {
        let mut items = json!({"type": "object", "properties": {"v": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": rule}]});
        if let Value::Object(extra) = extra {
            for (k, v) in extra {
                items["x-kubernetes-validations"][0][k] = v;
            }
        }
        kube_cel::compile_schema(&json!({"type": "object", "properties": {
            "items": {"type": "array", "items": items}}}))
    }

    fn over_limit_of(s: &CompiledSchema, obj: &Value, old: Option<&Value>) -> Option<OverLimit> {
        let sites = RuleSites::of(s).expect("the schema has rules");
        over_limit(s, &sites, obj, old)
    }

    fn values(n: usize) -> Value {
        let v: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
        json!(v)
    }

    #[test]
    fn an_expensive_call_is_stopped_before_it_runs() {
        let s = schema(
            "self.v.all(x, self.v.filter(y, y == x).size() == 1)",
            json!({"message": " values must be unique "}),
        );
        let small = json!({"items": [{"v": values(10)}]});
        assert_eq!(over_limit_of(&s, &small, None), None);
        let big = json!({"items": [{"v": values(10)}, {"v": values(400)}]});
        assert_eq!(
            over_limit_of(&s, &big, None),
            Some(OverLimit {
                path: "items[1]".to_owned(),
                detail: "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: values must be unique".to_owned(),
            })
        );
    }

    #[test]
    fn the_object_budget_is_shared_by_all_rules() {
        let s = schema(
            "self.v.all(x, self.v.filter(y, y == x).size() == 1)",
            json!({}),
        );
        // Each item costs 3 + 240 * (18 + 16 * 240) = 925_923, under the per-call limit;
        // eleven of them exceed the budget.
        let item = json!({"v": values(240)});
        let ten = json!({"items": vec![item.clone(); 10]});
        assert_eq!(over_limit_of(&s, &ten, None), None);
        let eleven = json!({"items": vec![item; 11]});
        let over = over_limit_of(&s, &eleven, None).expect("over budget");
        assert_eq!(over.detail, BUDGET_ERROR);
        assert_eq!(over.path, "items[10]");
    }

    #[test]
    fn transition_rules_cost_nothing_on_create() {
        let s = schema("self.v.all(x, oldSelf.v.all(y, x != y))", json!({}));
        let big = json!({"items": [{"v": values(2000)}]});
        assert_eq!(over_limit_of(&s, &big, None), None);
        assert!(over_limit_of(&s, &big, Some(&big)).is_some());
    }
}

//! PodDisruptionBudgets: kube's validation (policy/v1 has no defaults).

use serde_json::{Value, json};

use super::str_at;
use crate::validation::{BadValue, Cause};

const EVICTION_POLICIES: [&str; 2] = ["AlwaysAllow", "IfHealthyBudget"];

/// An int-or-percent budget at `field`: a non-negative number, or a percent no more than 100%.
fn validate_budget(value: &Value, field: &str, causes: &mut Vec<Cause>) {
    match value {
        Value::Number(n) => {
            let n = n.as_i64().unwrap_or(0);
            if n < 0 {
                causes.push(Cause::invalid(
                    field,
                    n,
                    "must be greater than or equal to 0",
                ));
            }
        }
        Value::String(s) => {
            let digits = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
            match digits {
                None => causes.push(Cause::invalid(
                    field,
                    s.as_str(),
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )),
                Some(d) if d.parse::<u64>().map_or(true, |p| p > 100) => {
                    causes.push(Cause::invalid(field, s.as_str(), "must not be greater than 100%"))
                }
                Some(_) => {}
            }
        }
        _ => {}
    }
}

/// kube's text for the spec of a PodDisruptionBudget that sets both budgets: the internal
/// struct as JSON (Go field names, absent pointers `null`).
fn spec_as_go(spec: &Value) -> BadValue {
    let field = |k: &str| crate::validation::go_json(spec.get(k).unwrap_or(&Value::Null));
    BadValue::Printed(format!(
        "{{\"MinAvailable\":{},\"Selector\":{},\"MaxUnavailable\":{},\"UnhealthyPodEvictionPolicy\":{}}}",
        field("minAvailable"),
        field("selector"),
        field("maxUnavailable"),
        field("unhealthyPodEvictionPolicy"),
    ))
}

/// `ValidatePodDisruptionBudget`: budgets, selector, eviction policy.
pub(super) fn validate_pdb(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let min = spec.get("minAvailable").filter(|v| !v.is_null());
    let max = spec.get("maxUnavailable").filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        causes.push(Cause::invalid(
            "spec",
            spec_as_go(&spec),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    if let Some(min) = min {
        validate_budget(min, "spec.minAvailable", &mut causes);
    }
    if let Some(max) = max {
        validate_budget(max, "spec.maxUnavailable", &mut causes);
    }
    causes.extend(super::selector::validate_label_selector(
        spec.get("selector"),
        "spec.selector",
    ));
    let policy = str_at(&spec, "/unhealthyPodEvictionPolicy");
    if !policy.is_empty() && !EVICTION_POLICIES.contains(&policy) {
        causes.push(Cause::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            policy,
            &EVICTION_POLICIES,
        ));
    }
    super::non_negative_status(
        obj,
        &[
            "currentHealthy",
            "desiredHealthy",
            "expectedPods",
            "disruptionsAllowed",
        ],
        &mut causes,
    );
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        let texts = |pdb: Value| -> Vec<String> {
            validate_pdb(&pdb).iter().map(ToString::to_string).collect()
        };
        assert!(texts(json!({"spec": {"minAvailable": "50%"}})).is_empty());
        assert_eq!(
            texts(json!({"spec": {"minAvailable": -1}})),
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            texts(json!({"spec": {"maxUnavailable": "120%"}})),
            ["spec.maxUnavailable: Invalid value: \"120%\": must not be greater than 100%"]
        );
        let both = texts(json!({"spec": {"minAvailable": 1, "maxUnavailable": 1}}));
        assert_eq!(both.len(), 1);
        assert!(both[0].ends_with("minAvailable and maxUnavailable cannot be both set"));
    }
}

//! kube's `ValidateLabelSelector` (metav1 validation): match labels and match expressions.

use serde_json::Value;

use crate::validation::{Cause, validate_label_key, validate_label_value, validate_labels};

/// The causes of a bad label selector at `field` (nothing when the selector is absent).
pub(super) fn validate_label_selector(selector: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return causes;
    };
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        causes.extend(validate_labels(labels, &format!("{field}.matchLabels")));
    }
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, expr) in expressions.iter().enumerate() {
        let at = format!("{field}.matchExpressions[{i}]");
        let values = expr
            .get("values")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let operator = expr.get("operator").and_then(Value::as_str).unwrap_or("");
        match operator {
            "In" | "NotIn" if values.is_empty() => causes.push(Cause::required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(Cause::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push(Cause::invalid(
                format!("{at}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
        causes.extend(validate_label_key(key, &format!("{at}.key")));
        for (j, value) in values.iter().enumerate() {
            if let Some(value) = value.as_str() {
                causes.extend(validate_label_value(value, &format!("{at}.values[{j}]")));
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn operators_and_values() {
        let sel = json!({"matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Near", "values": ["x"]},
            {"key": "d", "operator": "In", "values": ["ok"]},
        ]});
        let texts: Vec<String> = validate_label_selector(Some(&sel), "spec.selector")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            texts,
            [
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "spec.selector.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator",
            ]
        );
        assert!(validate_label_selector(None, "spec.selector").is_empty());
    }
}

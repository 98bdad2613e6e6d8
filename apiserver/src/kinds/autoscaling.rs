//! HorizontalPodAutoscalers (autoscaling/v2): kube's defaults and validation.

use serde_json::{Value, json};

use super::{array_at, default_field, str_at};
use crate::validation::{Cause, path_segment_name_errors};

const METRIC_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const SELECT_POLICIES: [&str; 3] = ["Disabled", "Max", "Min"];
const POLICY_TYPES: [&str; 2] = ["Percent", "Pods"];

/// `SetDefaults_HorizontalPodAutoscaler`: `minReplicas: 1`, a CPU utilization target of 80 %
/// when no metric is given, and the scaling rules of a `behavior` that is given.
pub(super) fn default_hpa(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    default_field(spec, "minReplicas", json!(1));
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics {
        spec["metrics"] = json!([{
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }]);
    }
    if let Some(behavior) = spec.get_mut("behavior").filter(|b| b.is_object()) {
        let up = behavior.get("scaleUp").cloned().unwrap_or(Value::Null);
        behavior["scaleUp"] = scaling_rules(
            up,
            Some(0),
            json!([
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ]),
        );
        let down = behavior.get("scaleDown").cloned().unwrap_or(Value::Null);
        behavior["scaleDown"] = scaling_rules(
            down,
            None,
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

/// One direction's rules with kube's defaults filled in where the user left them out.
fn scaling_rules(given: Value, window: Option<i64>, policies: Value) -> Value {
    let mut rules = if given.is_object() { given } else { json!({}) };
    if let Some(window) = window {
        default_field(&mut rules, "stabilizationWindowSeconds", json!(window));
    }
    default_field(&mut rules, "selectPolicy", json!("Max"));
    default_field(&mut rules, "policies", policies);
    rules
}

/// A metric target at `field`: its type and the value it needs.
fn validate_target(
    target: Option<&Value>,
    field: &str,
    utilization: bool,
    causes: &mut Vec<Cause>,
) {
    let target = target.cloned().unwrap_or_else(|| json!({}));
    let ty = str_at(&target, "/type");
    match ty {
        "" => causes.push(Cause::required(
            format!("{field}.type"),
            "must specify a metric target type",
        )),
        "Utilization" | "Value" | "AverageValue" => {}
        other => causes.push(Cause::invalid(
            format!("{field}.type"),
            other,
            "must be either Utilization, Value, or AverageValue",
        )),
    }
    if let Some(u) = target.get("averageUtilization").and_then(Value::as_i64)
        && u <= 0
    {
        causes.push(Cause::invalid(
            format!("{field}.averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    let has_util = target
        .get("averageUtilization")
        .is_some_and(|v| !v.is_null());
    let has_avg = target.get("averageValue").is_some_and(|v| !v.is_null());
    let has_value = target.get("value").is_some_and(|v| !v.is_null());
    if utilization {
        if !has_util && !has_avg {
            causes.push(Cause::required(
                format!("{field}.averageUtilization"),
                "must set either a target raw value or a target utilization",
            ));
        }
        if has_util && has_avg {
            causes.push(Cause::forbidden(
                format!("{field}.averageValue"),
                "may not set both a target raw value and a target utilization",
            ));
        }
    } else if !has_avg && !has_value && !has_util {
        causes.push(Cause::required(
            format!("{field}.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
}

/// One entry of `spec.metrics` at `field`.
fn validate_metric(metric: &Value, field: &str, causes: &mut Vec<Cause>) {
    let ty = str_at(metric, "/type");
    if ty.is_empty() {
        causes.push(Cause::required(
            format!("{field}.type"),
            "must specify a metric source type",
        ));
        return;
    }
    if !METRIC_TYPES.contains(&ty) {
        causes.push(Cause::not_supported(
            format!("{field}.type"),
            ty,
            &METRIC_TYPES,
        ));
        return;
    }
    let key = match ty {
        "ContainerResource" => "containerResource",
        "External" => "external",
        "Object" => "object",
        "Pods" => "pods",
        _ => "resource",
    };
    for other in [
        "containerResource",
        "external",
        "object",
        "pods",
        "resource",
    ] {
        if other != key && metric.get(other).is_some_and(|v| !v.is_null()) {
            causes.push(Cause::forbidden(
                format!("{field}.{other}"),
                "must populate the given metric source only",
            ));
        }
    }
    let Some(source) = metric.get(key).filter(|v| !v.is_null()) else {
        causes.push(Cause::required(
            format!("{field}.{key}"),
            "must populate information for the given metric source",
        ));
        return;
    };
    let at = format!("{field}.{key}");
    match key {
        "resource" | "containerResource" => {
            if str_at(source, "/name").is_empty() {
                causes.push(Cause::required(
                    format!("{at}.name"),
                    "must specify a resource name",
                ));
            }
            if key == "containerResource" && str_at(source, "/container").is_empty() {
                causes.push(Cause::required(
                    format!("{at}.container"),
                    "must specify a container",
                ));
            }
            validate_target(source.get("target"), &format!("{at}.target"), true, causes);
        }
        "pods" => {
            if source.pointer("/target/averageValue").is_none() {
                causes.push(Cause::required(
                    format!("{at}.target.averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        _ => validate_target(source.get("target"), &format!("{at}.target"), false, causes),
    }
}

/// One direction of `spec.behavior` at `field`.
fn validate_rules(rules: &Value, field: &str, causes: &mut Vec<Cause>) {
    if let Some(w) = rules
        .get("stabilizationWindowSeconds")
        .and_then(Value::as_i64)
    {
        if w < 0 {
            causes.push(Cause::invalid(
                format!("{field}.stabilizationWindowSeconds"),
                w,
                "must be greater than or equal to zero",
            ));
        } else if w > 3600 {
            causes.push(Cause::invalid(
                format!("{field}.stabilizationWindowSeconds"),
                w,
                "must be less than or equal to 3600",
            ));
        }
    }
    let select = str_at(rules, "/selectPolicy");
    if !select.is_empty() && !SELECT_POLICIES.contains(&select) {
        causes.push(Cause::not_supported(
            format!("{field}.selectPolicy"),
            select,
            &SELECT_POLICIES,
        ));
    }
    let policies = array_at(rules, "/policies");
    if policies.is_empty() {
        causes.push(Cause::required(
            format!("{field}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, policy) in policies.iter().enumerate() {
        let at = format!("{field}.policies[{i}]");
        let ty = str_at(policy, "/type");
        if !POLICY_TYPES.contains(&ty) {
            causes.push(Cause::not_supported(
                format!("{at}.type"),
                ty,
                &POLICY_TYPES,
            ));
        }
        let value = policy.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value <= 0 {
            causes.push(Cause::invalid(
                format!("{at}.value"),
                value,
                "must be greater than zero",
            ));
        }
        let period = policy
            .get("periodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if period <= 0 {
            causes.push(Cause::invalid(
                format!("{at}.periodSeconds"),
                period,
                "must be greater than zero",
            ));
        } else if period > 1800 {
            causes.push(Cause::invalid(
                format!("{at}.periodSeconds"),
                period,
                "must be less than or equal to 1800",
            ));
        }
    }
}

/// `ValidateHorizontalPodAutoscaler`: replicas bounds, target reference, metrics, behavior.
pub(super) fn validate_hpa(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if let Some(min) = min
        && min < 1
    {
        causes.push(Cause::invalid(
            "spec.minReplicas",
            min,
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if let Some(min) = min
        && max < min
    {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    for key in ["kind", "name"] {
        let value = str_at(&spec, &format!("/scaleTargetRef/{key}"));
        let at = format!("spec.scaleTargetRef.{key}");
        if value.is_empty() {
            causes.push(Cause::required(at, ""));
        } else {
            for msg in path_segment_name_errors(value) {
                causes.push(Cause::invalid(at.as_str(), value, &msg));
            }
        }
    }
    for (i, metric) in array_at(&spec, "/metrics").iter().enumerate() {
        validate_metric(metric, &format!("spec.metrics[{i}]"), &mut causes);
    }
    for direction in ["scaleUp", "scaleDown"] {
        if let Some(rules) = spec
            .pointer(&format!("/behavior/{direction}"))
            .filter(|v| !v.is_null())
        {
            validate_rules(rules, &format!("spec.behavior.{direction}"), &mut causes);
        }
    }
    super::non_negative_status(obj, &["currentReplicas", "desiredReplicas"], &mut causes);
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_cpu_target_and_given_behavior() {
        let mut hpa = json!({"spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
        default_hpa(&mut hpa);
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(
            hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert_eq!(
            hpa["spec"]["behavior"]["scaleUp"]["policies"][0]["value"],
            4
        );
        assert_eq!(
            hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
            60
        );
        assert_eq!(hpa["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
        assert!(validate_hpa(&hpa).is_empty(), "{:?}", validate_hpa(&hpa));
        let mut plain = json!({"spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "Deployment", "name": "web"}}});
        default_hpa(&mut plain);
        assert!(plain["spec"].get("behavior").is_none());
    }

    #[test]
    fn replica_bounds() {
        let hpa = json!({"spec": {"minReplicas": 5, "maxReplicas": 2, "scaleTargetRef": {"kind": "Deployment"}}});
        let texts: Vec<String> = validate_hpa(&hpa).iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
                "spec.scaleTargetRef.name: Required value",
            ]
        );
    }
}

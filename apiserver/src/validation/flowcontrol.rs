//! kube-apiserver's validation of `flowcontrol.apiserver.k8s.io/v1` FlowSchemas and
//! PriorityLevelConfigurations (`pkg/apis/flowcontrol/validation`), on the defaulted object:
//! spec ranges and cross-field rules, the fixed specs of the mandatory `exempt` and
//! `catch-all` objects, and the uniqueness of status condition types.

use serde_json::{Map, Value, json};

use crate::flowcontrol::{Kind, mandatory_spec};
use ocm_apiserver_validation::{
    BadValue, Cause, child, dns1123_label_errors, dns1123_subdomain_errors, index,
};

const SUPPORTED_VERBS: [&str; 9] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const MAX_QUEUES: i64 = 10_000_000;
const MAX_HASH_BITS: f64 = 60.0;
const NS_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn int_at(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn strings_at(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// Go's `encoding/json` of a struct: fields in declaration order (the order of `v`'s keys),
/// where [`super::go_json`] sorts keys as Go does for maps.
fn go_struct_json(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        super::go_json(&Value::String(k.clone())),
                        go_struct_json(v)
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_struct_json).collect();
            format!("[{}]", items.join(","))
        }
        other => super::go_json(other),
    }
}

fn struct_value(v: &Value) -> BadValue {
    BadValue::Printed(go_struct_json(v))
}

fn list_value(list: &[String]) -> BadValue {
    BadValue::Json(json!(list))
}

/// Go's JSON of a value of the internal (untagged) types: Go field names, nil pointers and
/// slices as `null`.
fn go_opt_int(v: &Value, key: &str) -> Value {
    v.get(key)
        .and_then(Value::as_i64)
        .map_or(Value::Null, |i| json!(i))
}

fn go_list(v: &Value, key: &str) -> Value {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(Value::Null, |a| Value::Array(a.clone()))
}

fn go_named(v: &Value, key: &str, fields: &[(&str, &str)]) -> Value {
    match v.get(key) {
        Some(inner) if inner.is_object() => {
            let mut out = Map::new();
            for (go, json_name) in fields {
                out.insert((*go).to_owned(), json!(str_at(inner, json_name)));
            }
            Value::Object(out)
        }
        _ => Value::Null,
    }
}

fn go_pl_spec(spec: &Value) -> Value {
    let limited = spec.get("limited").filter(|l| l.is_object()).map(|l| {
        let response = l.get("limitResponse").cloned().unwrap_or(Value::Null);
        let queuing = response
            .get("queuing")
            .filter(|q| q.is_object())
            .map_or(Value::Null, |q| {
                json!({"Queues": int_at(q, "queues"), "HandSize": int_at(q, "handSize"),
                       "QueueLengthLimit": int_at(q, "queueLengthLimit")})
            });
        json!({
            "NominalConcurrencyShares": int_at(l, "nominalConcurrencyShares"),
            "LimitResponse": {"Type": str_at(&response, "type"), "Queuing": queuing},
            "LendablePercent": go_opt_int(l, "lendablePercent"),
            "BorrowingLimitPercent": go_opt_int(l, "borrowingLimitPercent"),
        })
    });
    let exempt = spec.get("exempt").filter(|e| e.is_object()).map(|e| {
        json!({"NominalConcurrencyShares": go_opt_int(e, "nominalConcurrencyShares"),
               "LendablePercent": go_opt_int(e, "lendablePercent")})
    });
    json!({"Type": str_at(spec, "type"), "Limited": limited, "Exempt": exempt})
}

fn go_fs_spec(spec: &Value) -> Value {
    let rules: Option<Vec<Value>> = spec.get("rules").and_then(Value::as_array).map(|rules| {
        rules
            .iter()
            .map(|r| {
                let subjects = r.get("subjects").and_then(Value::as_array).map(|s| {
                    s.iter()
                        .map(|s| {
                            json!({
                                "Kind": str_at(s, "kind"),
                                "User": go_named(s, "user", &[("Name", "name")]),
                                "Group": go_named(s, "group", &[("Name", "name")]),
                                "ServiceAccount": go_named(s, "serviceAccount",
                                    &[("Namespace", "namespace"), ("Name", "name")]),
                            })
                        })
                        .collect::<Vec<_>>()
                });
                let resource_rules = r.get("resourceRules").and_then(Value::as_array).map(|rr| {
                    rr.iter()
                        .map(|x| {
                            json!({
                                "Verbs": go_list(x, "verbs"),
                                "APIGroups": go_list(x, "apiGroups"),
                                "Resources": go_list(x, "resources"),
                                "ClusterScope": x.get("clusterScope").and_then(Value::as_bool).unwrap_or(false),
                                "Namespaces": go_list(x, "namespaces"),
                            })
                        })
                        .collect::<Vec<_>>()
                });
                let non_resource = r
                    .get("nonResourceRules")
                    .and_then(Value::as_array)
                    .map(|nr| {
                        nr.iter()
                            .map(|x| {
                                json!({"Verbs": go_list(x, "verbs"),
                                       "NonResourceURLs": go_list(x, "nonResourceURLs")})
                            })
                            .collect::<Vec<_>>()
                    });
                json!({"Subjects": subjects, "ResourceRules": resource_rules,
                       "NonResourceRules": non_resource})
            })
            .collect()
    });
    json!({
        "PriorityLevelConfiguration": {"Name": spec.pointer("/priorityLevelConfiguration/name")
            .and_then(Value::as_str).unwrap_or("")},
        "MatchingPrecedence": int_at(spec, "matchingPrecedence"),
        "DistinguisherMethod": go_named(spec, "distinguisherMethod", &[("Type", "type")]),
        "Rules": rules,
    })
}

/// `ValidateFlowSchema` without the metadata checks (done for every kind): the spec, the
/// fixed spec of a mandatory FlowSchema, and the status conditions.
pub fn validate_flow_schema(obj: &Value) -> Vec<Cause> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut causes = flow_schema_spec(name, &spec);
    if let Some(fixed) = mandatory_spec(Kind::FlowSchema, name)
        && !crate::flowcontrol::spec_equal(Kind::FlowSchema, &spec, &fixed)
    {
        causes.push(Cause::invalid(
            "spec",
            struct_value(&go_fs_spec(&spec)),
            &format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    causes.extend(validate_flowcontrol_status(obj));
    causes
}

fn flow_schema_spec(name: &str, spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let precedence = int_at(spec, "matchingPrecedence");
    let path = "spec.matchingPrecedence";
    if precedence <= 0 {
        causes.push(Cause::invalid(path, precedence, "must be a positive value"));
    }
    if precedence > 10000 {
        causes.push(Cause::invalid(
            path,
            precedence,
            "must not be greater than 10000",
        ));
    }
    if precedence == 1 && name != "exempt" {
        causes.push(Cause::invalid(
            path,
            precedence,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if present(spec, "distinguisherMethod") {
        let method = spec.get("distinguisherMethod").unwrap_or(&Value::Null);
        if !matches!(str_at(method, "type"), "ByNamespace" | "ByUser") {
            causes.push(Cause::not_supported(
                "spec.distinguisherMethod.type",
                struct_value(&go_named(spec, "distinguisherMethod", &[("Type", "type")])),
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    let level = spec
        .pointer("/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let level_path = "spec.priorityLevelConfiguration.name";
    if level.is_empty() {
        causes.push(Cause::required(
            level_path,
            "must reference a priority level",
        ));
    } else {
        for msg in dns1123_subdomain_errors(level) {
            causes.push(Cause::invalid(level_path, level, &msg));
        }
    }
    for (i, rule) in items(spec, "rules").iter().enumerate() {
        causes.extend(policy_rules(rule, &index("spec.rules", i)));
    }
    causes
}

fn policy_rules(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let subjects = items(rule, "subjects");
    if subjects.is_empty() {
        causes.push(Cause::required(
            child(path, "subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        causes.extend(validate_subject(
            subject,
            &index(&child(path, "subjects"), i),
        ));
    }
    let resource_rules = items(rule, "resourceRules");
    let non_resource_rules = items(rule, "nonResourceRules");
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        causes.push(Cause::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        causes.extend(resource_rule(r, &index(&child(path, "resourceRules"), i)));
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        causes.extend(non_resource_rule(
            r,
            &index(&child(path, "nonResourceRules"), i),
        ));
    }
    causes
}

fn validate_subject(subject: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = str_at(subject, "kind");
    let (own, others): (&str, [&str; 2]) = match kind {
        "ServiceAccount" => ("serviceAccount", ["user", "group"]),
        "User" => ("user", ["serviceAccount", "group"]),
        "Group" => ("group", ["serviceAccount", "user"]),
        _ => {
            causes.push(Cause::not_supported(
                child(path, "kind"),
                kind,
                &["Group", "ServiceAccount", "User"],
            ));
            return causes;
        }
    };
    let own_path = child(path, own);
    match subject.get(own).filter(|v| !v.is_null()) {
        None => causes.push(Cause::required(
            own_path,
            &format!("{own} is required when subject kind is '{kind}'"),
        )),
        Some(value) => {
            let name = str_at(value, "name");
            if name.is_empty() {
                causes.push(Cause::required(child(&own_path, "name"), ""));
            } else if own == "serviceAccount" && name != "*" {
                for msg in dns1123_subdomain_errors(name) {
                    causes.push(Cause::invalid(child(&own_path, "name"), name, &msg));
                }
            }
            if own == "serviceAccount" {
                let namespace = str_at(value, "namespace");
                let ns_path = child(&own_path, "namespace");
                if namespace.is_empty() {
                    causes.push(Cause::required(
                        ns_path,
                        "must specify namespace for service account",
                    ));
                } else {
                    for msg in dns1123_label_errors(namespace) {
                        causes.push(Cause::invalid(ns_path.clone(), namespace, &msg));
                    }
                }
            }
        }
    }
    for other in others {
        if present(subject, other) {
            let kind_name = match other {
                "serviceAccount" => "ServiceAccount",
                "user" => "User",
                _ => "Group",
            };
            causes.push(Cause::forbidden(
                child(path, other),
                &format!("{other} is forbidden when subject kind is not '{kind_name}'"),
            ));
        }
    }
    causes
}

/// kube's rule for lists where `*` means "all": it may not come with other members.
fn lone_wildcard(list: &[String], path: &str, what: &str) -> Option<Cause> {
    (list.len() > 1 && list.iter().any(|v| v == "*")).then(|| {
        Cause::invalid(
            path,
            list_value(list),
            &format!("if '*' is present, must not specify other {what}"),
        )
    })
}

fn verbs(rule: &Value, path: &str, causes: &mut Vec<Cause>) {
    let verbs = strings_at(rule, "verbs");
    let verbs_path = child(path, "verbs");
    if verbs.is_empty() {
        causes.push(Cause::required(
            verbs_path,
            "verbs must contain at least one value",
        ));
    } else if verbs.iter().any(|v| v == "*") {
        causes.extend(lone_wildcard(&verbs, &verbs_path, "verbs"));
    } else if !verbs.iter().all(|v| SUPPORTED_VERBS.contains(&v.as_str())) {
        causes.push(Cause::not_supported(
            verbs_path,
            list_value(&verbs),
            &SUPPORTED_VERBS,
        ));
    }
}

fn non_resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    verbs(rule, path, &mut causes);
    let urls = strings_at(rule, "nonResourceURLs");
    let urls_path = child(path, "nonResourceURLs");
    if urls.is_empty() {
        causes.push(Cause::required(
            urls_path,
            "nonResourceURLs must contain at least one value",
        ));
    } else if urls.iter().any(|u| u == "*") {
        causes.extend(lone_wildcard(&urls, &urls_path, "non-resource URLs"));
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(detail) = non_resource_url_error(url) {
                causes.push(Cause::invalid(index(&urls_path, i), url.as_str(), detail));
            }
        }
    }
    causes
}

/// `ValidateNonResourceURLPath`: why `path` cannot be a non-resource URL of a rule.
fn non_resource_url_error(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = path.matches('*').count();
    if stars > 1 || (stars == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

fn resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    verbs(rule, path, &mut causes);
    for (key, what) in [("apiGroups", "api group"), ("resources", "resource")] {
        let list = strings_at(rule, key);
        if list.is_empty() {
            causes.push(Cause::required(
                child(path, key),
                &format!("resource rules must supply at least one {what}"),
            ));
        } else {
            causes.extend(lone_wildcard(&list, &child(path, key), &format!("{what}s")));
        }
    }
    let namespaces = strings_at(rule, "namespaces");
    let ns_path = child(path, "namespaces");
    let cluster_scope = rule
        .get("clusterScope")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if namespaces.is_empty() && !cluster_scope {
        causes.push(Cause::required(
            ns_path,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if namespaces.iter().any(|n| n == "*") {
        causes.extend(lone_wildcard(&namespaces, &ns_path, "namespaces"));
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for msg in dns1123_label_errors(ns) {
                causes.push(Cause::invalid(
                    index(&ns_path, i),
                    ns.as_str(),
                    &format!("{NS_INTRO}{msg}"),
                ));
            }
        }
    }
    causes
}

/// `ValidatePriorityLevelConfiguration` without the metadata checks: the spec, the fixed spec
/// of a mandatory priority level (the `exempt` level may change only `spec.exempt`), and the
/// status conditions.
pub fn validate_priority_level(obj: &Value) -> Vec<Cause> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut causes = priority_level_spec(name, &spec);
    if let Some(fixed) = mandatory_spec(Kind::PriorityLevel, name) {
        let detail = if name == "exempt" {
            // Only the `exempt` field of the exempt level may differ.
            let mut have = spec.clone();
            if let (Some(map), Some(exempt)) = (have.as_object_mut(), fixed.get("exempt")) {
                map.insert("exempt".to_owned(), exempt.clone());
            }
            (!crate::flowcontrol::spec_equal(Kind::PriorityLevel, &have, &fixed)).then(|| {
                format!(
                    "spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
                )
            })
        } else {
            (!crate::flowcontrol::spec_equal(Kind::PriorityLevel, &spec, &fixed))
                .then(|| format!("spec of '{name}' must equal the fixed value"))
        };
        if let Some(detail) = detail {
            causes.push(Cause::invalid(
                "spec",
                struct_value(&go_pl_spec(&spec)),
                &detail,
            ));
        }
    }
    causes.extend(validate_flowcontrol_status(obj));
    causes
}

fn priority_level_spec(name: &str, spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = str_at(spec, "type");
    if (name == "exempt") != (kind == "Exempt") {
        causes.push(Cause::invalid(
            "spec.type",
            kind,
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match kind {
        "Exempt" => {
            if present(spec, "limited") {
                causes.push(Cause::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(exempt) = spec.get("exempt").filter(|e| e.is_object()) {
                causes.extend(shares_error(exempt, "spec.exempt"));
                causes.extend(lendable_error(exempt, "spec.exempt"));
            }
        }
        "Limited" => {
            if present(spec, "exempt") {
                causes.push(Cause::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match spec.get("limited").filter(|l| l.is_object()) {
                None => causes.push(Cause::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(limited) => causes.extend(limited_level(limited)),
            }
        }
        _ => causes.push(Cause::not_supported(
            "spec.type",
            kind,
            &["Exempt", "Limited"],
        )),
    }
    causes
}

/// `nominalConcurrencyShares` of an exempt or limited level: not negative.
fn shares_error(level: &Value, path: &str) -> Option<Cause> {
    let shares = level
        .get("nominalConcurrencyShares")
        .and_then(Value::as_i64)?;
    (shares < 0).then(|| {
        Cause::invalid(
            child(path, "nominalConcurrencyShares"),
            shares,
            "must be a non-negative integer",
        )
    })
}

/// `lendablePercent` of an exempt or limited level: 0 to 100.
fn lendable_error(level: &Value, path: &str) -> Option<Cause> {
    let lendable = level.get("lendablePercent").and_then(Value::as_i64)?;
    (!(0..=100).contains(&lendable)).then(|| {
        Cause::invalid(
            child(path, "lendablePercent"),
            lendable,
            "must be between 0 and 100, inclusive",
        )
    })
}

fn limited_level(limited: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let path = "spec.limited";
    causes.extend(shares_error(limited, path));
    let response = limited.get("limitResponse").cloned().unwrap_or(Value::Null);
    let response_path = child(path, "limitResponse");
    match str_at(&response, "type") {
        "Reject" => {
            if present(&response, "queuing") {
                causes.push(Cause::forbidden(
                    child(&response_path, "queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match response.get("queuing").filter(|q| q.is_object()) {
            None => causes.push(Cause::required(
                child(&response_path, "queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(queuing) => {
                causes.extend(queuing_errors(queuing, &child(&response_path, "queuing")))
            }
        },
        other => causes.push(Cause::not_supported(
            child(&response_path, "type"),
            other,
            &["Queue", "Reject"],
        )),
    }
    causes.extend(lendable_error(limited, path));
    if let Some(limit) = limited.get("borrowingLimitPercent").and_then(Value::as_i64)
        && limit < 0
    {
        causes.push(Cause::invalid(
            child(path, "borrowingLimitPercent"),
            limit,
            "if specified, must be a non-negative integer",
        ));
    }
    causes
}

/// `ceil(handSize * log2(queues))`: the hash bits shuffle sharding needs.
fn required_entropy_bits(queues: i64, hand_size: i64) -> f64 {
    (hand_size as f64 * (queues as f64).log2()).ceil()
}

fn queuing_errors(queuing: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let limit = int_at(queuing, "queueLengthLimit");
    if limit <= 0 {
        causes.push(Cause::invalid(
            child(path, "queueLengthLimit"),
            limit,
            "must be positive",
        ));
    }
    let queues = int_at(queuing, "queues");
    if queues <= 0 {
        causes.push(Cause::invalid(
            child(path, "queues"),
            queues,
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        causes.push(Cause::invalid(
            child(path, "queues"),
            queues,
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand_size = int_at(queuing, "handSize");
    let hand_path = child(path, "handSize");
    if hand_size <= 0 {
        causes.push(Cause::invalid(hand_path, hand_size, "must be positive"));
    } else if hand_size > queues {
        causes.push(Cause::invalid(
            hand_path,
            hand_size,
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if required_entropy_bits(queues, hand_size) > MAX_HASH_BITS {
        causes.push(Cause::invalid(
            hand_path,
            hand_size,
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand_size} should not be greater than {MAX_HASH_BITS}"
            ),
        ));
    }
    causes
}

/// `ValidateFlowSchemaStatus` / `ValidatePriorityLevelConfigurationStatus`: condition types
/// are set and unique. This is all a `/status` write of either kind is checked for.
pub fn validate_flowcontrol_status(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let conditions = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, condition) in conditions.iter().enumerate() {
        let path = index("status.conditions", i);
        let kind = str_at(condition, "type");
        if seen.contains(&kind) {
            causes.push(Cause::duplicate(child(&path, "type"), kind));
        }
        seen.push(kind);
        if kind.is_empty() {
            causes.push(Cause::required(child(&path, "type"), "must not be empty"));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    fn schema(spec: Value) -> Value {
        json!({"metadata": {"name": "s"}, "spec": spec})
    }

    fn level(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn precedence_and_reference() {
        let causes = validate_flow_schema(&schema(json!({
            "matchingPrecedence": 10001, "distinguisherMethod": {"type": "ByGroup"}})));
        assert_eq!(
            messages(&causes),
            [
                "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000",
                "spec.distinguisherMethod.type: Unsupported value: {\"Type\":\"ByGroup\"}: supported values: \"ByNamespace\", \"ByUser\"",
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            ]
        );
        let one = validate_flow_schema(&schema(json!({"matchingPrecedence": 1,
            "priorityLevelConfiguration": {"name": "x"}})));
        assert_eq!(
            messages(&one),
            [
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"
            ]
        );
    }

    #[test]
    fn rules_and_subjects() {
        let causes = validate_flow_schema(&schema(json!({
        "matchingPrecedence": 50, "priorityLevelConfiguration": {"name": "x"},
        "rules": [
            {"subjects": [{"kind": "User", "group": {"name": "g"}},
                          {"kind": "ServiceAccount", "serviceAccount": {"name": "a"}},
                          {"kind": "Robot"}],
             "resourceRules": [{"verbs": ["get", "fly"], "apiGroups": ["*", "apps"],
                                "resources": [], "namespaces": ["-x"]}],
             "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["/a*", "b"]}]},
            {"subjects": []},
        ]})));
        assert_eq!(
            messages(&causes),
            [
                "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'",
                "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'",
                "spec.rules[0].subjects[1].serviceAccount.namespace: Required value: must specify namespace for service account",
                "spec.rules[0].subjects[2].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
                "spec.rules[0].resourceRules[0].verbs: Unsupported value: [\"get\",\"fly\"]: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"",
                "spec.rules[0].resourceRules[0].apiGroups: Invalid value: [\"*\",\"apps\"]: if '*' is present, must not specify other api groups",
                "spec.rules[0].resourceRules[0].resources: Required value: resource rules must supply at least one resource",
                "spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: \"-x\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"/a*\": wildcard can only do suffix matching",
                "spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"b\": must start with slash",
                "spec.rules[1].subjects: Required value: subjects must contain at least one value",
                "spec.rules[1]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
            ]
        );
    }

    #[test]
    fn mandatory_flow_schema_is_fixed() {
        let fixed = mandatory_spec(Kind::FlowSchema, "catch-all").unwrap();
        let ok = json!({"metadata": {"name": "catch-all"}, "spec": fixed});
        assert!(validate_flow_schema(&ok).is_empty());
        let mut changed = ok.clone();
        changed["spec"]["matchingPrecedence"] = json!(9000);
        let causes = validate_flow_schema(&changed);
        assert_eq!(causes.len(), 1);
        assert!(
            causes[0]
                .to_string()
                .ends_with("spec of 'catch-all' must equal the fixed value")
        );
        assert!(causes[0].message.contains("\"MatchingPrecedence\":9000"));
    }

    #[test]
    fn priority_level_rules() {
        let causes = validate_priority_level(&level(
            "l",
            json!({"type": "Limited", "exempt": {}, "limited": {
            "nominalConcurrencyShares": -1, "lendablePercent": 101, "borrowingLimitPercent": -2,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 10,
                                                          "queueLengthLimit": 0}}}}),
        ));
        assert_eq!(
            messages(&causes),
            [
                "spec.exempt: Forbidden: must be nil if the type is Limited",
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 10: required entropy bits of deckSize 128 and handSize 10 should not be greater than 60",
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
                "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
            ]
        );
        let reject = validate_priority_level(&level(
            "l",
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject",
            "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}),
        ));
        assert_eq!(
            messages(&reject),
            [
                "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"
            ]
        );
        let hand = validate_priority_level(&level(
            "l",
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
            "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": 1}}}}),
        ));
        assert_eq!(
            messages(&hand),
            [
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)"
            ]
        );
        let bad_type = validate_priority_level(&level("l", json!({"type": "Open"})));
        assert_eq!(
            messages(&bad_type),
            ["spec.type: Unsupported value: \"Open\": supported values: \"Exempt\", \"Limited\""]
        );
    }

    #[test]
    fn mandatory_levels() {
        let tuned = level(
            "exempt",
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 10}}),
        );
        assert!(validate_priority_level(&tuned).is_empty());
        let repurposed = validate_priority_level(&level(
            "exempt",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 42,
            "limitResponse": {"type": "Reject"}}}),
        ));
        assert_eq!(
            messages(&repurposed),
            [
                "spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec: Invalid value: {\"Type\":\"Limited\",\"Limited\":{\"NominalConcurrencyShares\":42,\"LimitResponse\":{\"Type\":\"Reject\",\"Queuing\":null},\"LendablePercent\":null,\"BorrowingLimitPercent\":null},\"Exempt\":null}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
            ]
        );
        let catch_all = validate_priority_level(&level(
            "catch-all",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
            "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}),
        ));
        assert!(catch_all.is_empty(), "{catch_all:?}");
        let changed = validate_priority_level(&level(
            "catch-all",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 6,
            "limitResponse": {"type": "Reject"}}}),
        ));
        assert!(
            changed[0]
                .to_string()
                .ends_with("spec of 'catch-all' must equal the fixed value")
        );
    }

    #[test]
    fn status_conditions() {
        let obj = json!({"status": {"conditions": [{"type": "Dangling"}, {"type": "Dangling"},
                                                   {"type": ""}]}});
        assert_eq!(
            messages(&validate_flowcontrol_status(&obj)),
            [
                "status.conditions[1].type: Duplicate value: \"Dangling\"",
                "status.conditions[2].type: Required value: must not be empty",
            ]
        );
    }
}

//! Write-time validation of ValidatingAdmissionPolicies and their bindings, with
//! kube-apiserver's field paths and messages (`pkg/apis/admissionregistration/validation`).
//! Expressions are compiled, and must name only declared variables. Pure functions.

use std::collections::HashSet;

use serde_json::Value;

use super::spec::{str_of, strings};
use crate::admission_cel::{check, declared};
use crate::validation::{BadValue, Cause};
use ocm_apiserver_selector::validate_structured_label_selector;

/// The `reason`s a validation may give.
const REASONS: &[&str] = &[
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];
/// At most this many `auditAnnotations`.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// The longest `valueExpression` of an audit annotation.
const MAX_VALUE_EXPRESSION: usize = 5 * 1024;

fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn enum_field(v: &Value, key: &str, path: &str, supported: &[&str], causes: &mut Vec<Cause>) {
    match v.get(key).and_then(Value::as_str) {
        None => causes.push(Cause::required(format!("{path}.{key}"), "")),
        Some(s) if !supported.contains(&s) => causes.push(Cause::not_supported(
            format!("{path}.{key}"),
            BadValue::Str(s.to_owned()),
            supported,
        )),
        Some(_) => {}
    }
}

/// Compiles `expression` at `field`; a failure is kube's `Invalid` cause.
fn compile_check(expression: &str, field: String, names: &[&str], causes: &mut Vec<Cause>) {
    if let Err(detail) = check(expression, names) {
        causes.push(Cause::invalid(field, expression, &detail));
    }
}

/// Validates a (defaulted) ValidatingAdmissionPolicy's spec; returns the causes of a 422.
pub fn validate_policy(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let path = "spec";
    enum_field(
        spec,
        "failurePolicy",
        path,
        &["Fail", "Ignore"],
        &mut causes,
    );
    let param_kind = spec.get("paramKind").filter(|p| !p.is_null());
    if let Some(pk) = param_kind {
        validate_param_kind(pk, "spec.paramKind", &mut causes);
    }
    let has_params = param_kind.is_some();
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => causes.push(Cause::required("spec.matchConstraints", "")),
        Some(mc) => {
            validate_match_resources(mc, "spec.matchConstraints", &mut causes);
            if items(mc.get("resourceRules")).is_empty() {
                causes.push(Cause::required("spec.matchConstraints.resourceRules", ""));
            }
        }
    }
    let names = declared(has_params);
    let compile = |expression: &str| check(expression.trim(), &names);
    crate::webhook::config::validate_match_conditions(spec, "spec", &compile, &mut causes);
    for (i, variable) in items(spec.get("variables")).iter().enumerate() {
        let p = format!("spec.variables[{i}]");
        let name = str_of(variable, "name");
        if name.trim().is_empty() {
            causes.push(Cause::required(
                format!("{p}.name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(name) {
            causes.push(Cause::invalid(
                format!("{p}.name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        let expression = str_of(variable, "expression");
        if expression.trim().is_empty() {
            causes.push(Cause::required(
                format!("{p}.expression"),
                "expression is not specified",
            ));
        } else {
            compile_check(expression, format!("{p}.expression"), &names, &mut causes);
        }
    }
    let validations = items(spec.get("validations"));
    let annotations = items(spec.get("auditAnnotations"));
    if validations.is_empty() && annotations.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        causes.push(Cause::required("spec.validations", why));
        causes.push(Cause::required("spec.auditAnnotations", why));
        return causes;
    }
    for (i, validation) in validations.iter().enumerate() {
        validate_validation(
            validation,
            &format!("spec.validations[{i}]"),
            has_params,
            &mut causes,
        );
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        causes.push(Cause::invalid(
            "spec.auditAnnotations",
            BadValue::Omit,
            &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let policy_name = crate::meta::meta_str(obj, "name");
    let mut keys = HashSet::new();
    for (i, annotation) in annotations.iter().enumerate() {
        let p = format!("spec.auditAnnotations[{i}]");
        let key = str_of(annotation, "key");
        if policy_name.is_empty() {
            causes.push(Cause::invalid(
                format!("{p}.key"),
                key,
                "requires metadata.name be non-empty",
            ));
        } else {
            let qualified = format!("{policy_name}/{key}");
            for msg in crate::validation::qualified_name_errors(&qualified) {
                causes.push(Cause::invalid(format!("{p}.key"), qualified.as_str(), &msg));
            }
        }
        let value = str_of(annotation, "valueExpression").trim();
        if value.is_empty() {
            causes.push(Cause::required(
                format!("{p}.valueExpression"),
                "valueExpression is not specified",
            ));
        } else if value.len() > MAX_VALUE_EXPRESSION {
            causes.push(Cause::required(
                format!("{p}.valueExpression"),
                &format!("must not exceed {MAX_VALUE_EXPRESSION} bytes in length"),
            ));
        } else {
            compile_check(value, format!("{p}.valueExpression"), &names, &mut causes);
        }
        if !keys.insert(key.to_owned()) {
            causes.push(Cause::duplicate(format!("{p}.key"), key));
        }
    }
    causes
}

fn validate_validation(v: &Value, p: &str, has_params: bool, causes: &mut Vec<Cause>) {
    let expression = str_of(v, "expression");
    if expression.trim().is_empty() {
        causes.push(Cause::required(
            format!("{p}.expression"),
            "expression is not specified",
        ));
    } else {
        compile_check(
            expression,
            format!("{p}.expression"),
            &declared(has_params),
            causes,
        );
    }
    let message_expression = str_of(v, "messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        causes.push(Cause::invalid(
            format!("{p}.messageExpression"),
            message_expression,
            "must be non-empty if specified",
        ));
    } else if !message_expression.is_empty() {
        let names: Vec<&str> = declared(has_params)
            .into_iter()
            .filter(|n| *n != "authorizer")
            .collect();
        compile_check(
            message_expression,
            format!("{p}.messageExpression"),
            &names,
            causes,
        );
    }
    let message = str_of(v, "message");
    if !message.is_empty() && message.trim().is_empty() {
        causes.push(Cause::invalid(
            format!("{p}.message"),
            message,
            "message must be non-empty if specified",
        ));
    } else if message.trim().contains(['\n', '\r']) {
        causes.push(Cause::invalid(
            format!("{p}.message"),
            message,
            "message must not contain line breaks",
        ));
    }
    if let Some(reason) = v.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        causes.push(Cause::not_supported(
            format!("{p}.reason"),
            BadValue::Str(reason.to_owned()),
            REASONS,
        ));
    }
}

fn validate_param_kind(pk: &Value, path: &str, causes: &mut Vec<Cause>) {
    let api_version = str_of(pk, "apiVersion");
    let field = format!("{path}.apiVersion");
    if api_version.is_empty() {
        causes.push(Cause::required(field, ""));
    } else if api_version.matches('/').count() > 1 {
        causes.push(Cause::invalid(
            field,
            api_version,
            &format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if !group.is_empty() {
            let errs = crate::validation::dns1123_subdomain_errors(group);
            if !errs.is_empty() {
                causes.push(Cause::invalid(field.clone(), group, &errs.join(",")));
            }
        }
        if version.is_empty() {
            causes.push(Cause::invalid(
                field,
                api_version,
                "version must be specified",
            ));
        } else {
            let errs = crate::validation::dns1035_label_errors(version);
            if !errs.is_empty() {
                causes.push(Cause::invalid(field, version, &errs.join(",")));
            }
        }
    }
    let kind = str_of(pk, "kind");
    if kind.is_empty() {
        causes.push(Cause::required(format!("{path}.kind"), ""));
    } else {
        let errs = crate::validation::dns1035_label_errors(&kind.to_lowercase());
        if !errs.is_empty() {
            causes.push(Cause::invalid(
                format!("{path}.kind"),
                kind,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errs.join(",")
                ),
            ));
        }
    }
}

/// Validates a (defaulted) `matchResources` / `matchConstraints` at `path`.
fn validate_match_resources(mc: &Value, path: &str, causes: &mut Vec<Cause>) {
    enum_field(mc, "matchPolicy", path, &["Equivalent", "Exact"], causes);
    for key in ["namespaceSelector", "objectSelector"] {
        let field = format!("{path}.{key}");
        match mc.get(key).filter(|s| !s.is_null()) {
            None => causes.push(Cause::required(field, "")),
            Some(selector) => causes.extend(validate_structured_label_selector(selector, &field)),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(mc.get(key)).iter().enumerate() {
            let p = format!("{path}.{key}[{i}]");
            let mut seen = HashSet::new();
            for (j, name) in strings(rule.get("resourceNames")).iter().enumerate() {
                let field = format!("{p}.resourceNames[{j}]");
                for msg in crate::validation::path_segment_name_errors(name) {
                    causes.push(Cause::invalid(field.clone(), name.as_str(), &msg));
                }
                if !seen.insert(name.clone()) {
                    causes.push(Cause::duplicate(field, name.as_str()));
                }
            }
            crate::webhook::config::validate_rule(rule, &p, causes);
        }
    }
}

/// Validates a (defaulted) ValidatingAdmissionPolicyBinding's spec; returns the causes of a
/// 422.
pub fn validate_binding(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let policy = str_of(spec, "policyName");
    if policy.is_empty() {
        causes.push(Cause::required("spec.policyName", ""));
    } else {
        for msg in crate::validation::dns1123_subdomain_errors(policy) {
            causes.push(Cause::invalid("spec.policyName", policy, &msg));
        }
    }
    if let Some(pr) = spec.get("paramRef").filter(|p| !p.is_null()) {
        validate_param_ref(pr, "spec.paramRef", &mut causes);
    }
    if let Some(mr) = spec.get("matchResources").filter(|m| !m.is_null()) {
        validate_match_resources(mr, "spec.matchResources", &mut causes);
    }
    let actions = strings(spec.get("validationActions"));
    let field = "spec.validationActions";
    let mut seen = HashSet::new();
    for (i, action) in actions.iter().enumerate() {
        if !["Audit", "Deny", "Warn"].contains(&action.as_str()) {
            causes.push(Cause::not_supported(
                format!("{field}[{i}]"),
                BadValue::Str(action.clone()),
                &["Audit", "Deny", "Warn"],
            ));
        }
        if !seen.insert(action.as_str()) {
            causes.push(Cause::duplicate(format!("{field}[{i}]"), action.as_str()));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        causes.push(Cause::invalid(
            field,
            BadValue::StringList(actions.clone()),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        causes.push(Cause::required(
            field,
            "at least one validation action is required",
        ));
    }
    causes
}

fn validate_param_ref(pr: &Value, path: &str, causes: &mut Vec<Cause>) {
    let name = str_of(pr, "name");
    let selector = pr.get("selector").filter(|s| !s.is_null());
    let exclusive = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for msg in crate::validation::path_segment_name_errors(name) {
            causes.push(Cause::invalid(format!("{path}.name"), name, &msg));
        }
        if selector.is_some() {
            causes.push(Cause::forbidden(format!("{path}.name"), exclusive));
        }
    }
    if let Some(selector) = selector {
        causes.extend(validate_structured_label_selector(
            selector,
            &format!("{path}.selector"),
        ));
        if !name.is_empty() {
            causes.push(Cause::forbidden(format!("{path}.selector"), exclusive));
        }
    }
    if name.is_empty() && selector.is_none() {
        causes.push(Cause::required(
            path.to_owned(),
            "one of name or selector must be specified",
        ));
    }
    match pr.get("parameterNotFoundAction").and_then(Value::as_str) {
        None | Some("") => causes.push(Cause::required(
            format!("{path}.parameterNotFoundAction"),
            "",
        )),
        Some(a) if a != "Deny" && a != "Allow" => causes.push(Cause::not_supported(
            format!("{path}.parameterNotFoundAction"),
            BadValue::Str(a.to_owned()),
            &["Deny", "Allow"],
        )),
        Some(_) => {}
    }
}

/// Whether `name` is a CEL identifier that is not a reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !ocm_apiserver_schema::CEL_RESERVED.contains(&name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::spec::{apply_binding_defaults, apply_policy_defaults};
    use super::*;

    fn rendered(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn policy(spec: Value) -> Vec<String> {
        let mut obj = json!({"metadata": {"name": "p"}, "spec": spec});
        apply_policy_defaults(&mut obj);
        rendered(&validate_policy(&obj))
    }

    fn binding(spec: Value) -> Vec<String> {
        let mut obj = json!({"metadata": {"name": "b"}, "spec": spec});
        apply_binding_defaults(&mut obj);
        rendered(&validate_binding(&obj))
    }

    fn rules() -> Value {
        json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]})
    }

    #[test]
    fn a_valid_policy_and_binding_have_no_causes() {
        let got = policy(
            json!({"matchConstraints": rules(), "validations": [{"expression": "object.data.size() < 3", "reason": "Forbidden"}]}),
        );
        assert!(got.is_empty(), "{got:?}");
        assert!(
            binding(json!({"policyName": "p", "validationActions": ["Deny", "Audit"]})).is_empty()
        );
    }

    #[test]
    fn policies_need_constraints_and_validations() {
        assert_eq!(
            policy(json!({})),
            [
                "spec.matchConstraints: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
        let got = policy(
            json!({"matchConstraints": {}, "validations": [{"expression": "x ==", "reason": "Nope"}]}),
        );
        assert_eq!(
            got[0],
            "spec.matchConstraints.resourceRules: Required value"
        );
        assert!(
            got[1].starts_with("spec.validations[0].expression: Invalid value: \"x ==\": compilation failed: ERROR: <input>:1:"),
            "{got:?}"
        );
        assert_eq!(
            got[2],
            "spec.validations[0].reason: Unsupported value: \"Nope\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\""
        );
        let got = policy(
            json!({"matchConstraints": rules(), "validations": [{"expression": "params.x == 1"}]}),
        );
        assert_eq!(
            got,
            [
                "spec.validations[0].expression: Invalid value: \"params.x == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.x == 1\n | ^"
            ]
        );
    }

    #[test]
    fn param_kinds_variables_and_messages_are_checked() {
        let got = policy(json!({
            "matchConstraints": rules(),
            "paramKind": {"apiVersion": "a/b/c", "kind": "Not_A_Kind"},
            "variables": [{"name": "1x", "expression": "true"}, {"name": "ok", "expression": ""}],
            "validations": [{"expression": "true", "message": "two\nlines", "messageExpression": " "}],
        }));
        assert_eq!(
            got,
            [
                "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "spec.paramKind.kind: Invalid value: \"Not_A_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.variables[0].name: Invalid value: \"1x\": name is not a valid CEL identifier",
                "spec.variables[1].expression: Required value: expression is not specified",
                "spec.validations[0].messageExpression: Invalid value: \" \": must be non-empty if specified",
                "spec.validations[0].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
            ]
        );
    }

    #[test]
    fn bindings_need_a_policy_and_actions() {
        assert_eq!(
            binding(json!({})),
            [
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is required"
            ]
        );
        assert_eq!(
            binding(
                json!({"policyName": "p", "validationActions": ["Deny", "Warn", "Deny", "Nope"]})
            ),
            [
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions[3]: Unsupported value: \"Nope\": supported values: \"Audit\", \"Deny\", \"Warn\"",
                "spec.validationActions: Invalid value: [\"Deny\",\"Warn\",\"Deny\",\"Nope\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
        assert_eq!(
            binding(json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {}})),
            ["spec.paramRef: Required value: one of name or selector must be specified"]
        );
    }
}

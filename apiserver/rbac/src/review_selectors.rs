//! The `fieldSelector` / `labelSelector` of an access review's `spec.resourceAttributes`
//! (kube's `AuthorizeWithSelectors`): their validation, with kube's messages, and their
//! conversion into the selector attributes handed to the authorizer.

use serde_json::{Value, json};

use super::attributes::SelectorAttributes;
use ocm_apiserver_selector::{
    FieldSelector, FieldTerm, LabelSelector, SelectorError, operator_value_causes,
    validate_label_requirement,
};
use ocm_apiserver_validation::Cause;

/// Kube's check of `spec.resourceAttributes.fieldSelector` and `.labelSelector`: each, when
/// present, needs exactly one of `rawSelector` and `requirements`, and each requirement is
/// validated as a selector requirement (operators kube does not know are let through, for
/// newer clients).
pub fn selector_causes(resource_attributes: Option<&Value>) -> Vec<Cause> {
    let Some(attrs) = resource_attributes else {
        return Vec::new();
    };
    let mut causes = Vec::new();
    for (key, requirement_causes) in [
        (
            "fieldSelector",
            field_requirement_causes as RequirementCheck,
        ),
        ("labelSelector", label_requirement_causes),
    ] {
        let Some(selector) = attrs.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let path = format!("spec.resourceAttributes.{key}");
        let raw = selector
            .get("rawSelector")
            .and_then(Value::as_str)
            .unwrap_or("");
        let requirements = requirements_of(selector);
        if !raw.is_empty() && !requirements.is_empty() {
            causes.push(Cause::invalid(
                format!("{path}.rawSelector"),
                raw,
                "may not specified at the same time as requirements",
            ));
        }
        if raw.is_empty() && requirements.is_empty() {
            causes.push(Cause::required(
                format!("{path}.requirements"),
                &format!("when {path} is specified, requirements or rawSelector is required"),
            ));
        }
        for (i, r) in requirements.iter().enumerate() {
            causes.extend(requirement_causes(r, &format!("{path}.requirements[{i}]")));
        }
    }
    causes
}

/// The validation of one requirement at a path.
type RequirementCheck = fn(&Value, &str) -> Vec<Cause>;

fn requirements_of(selector: &Value) -> &[Value] {
    selector
        .get("requirements")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn values_of(requirement: &Value) -> Vec<&str> {
    requirement
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

fn field_requirement_causes(requirement: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if requirement
        .get("key")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        causes.push(Cause::required(format!("{path}.key"), "must be specified"));
    }
    let op = requirement
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or("");
    causes.extend(operator_value_causes(
        op,
        values_of(requirement).len(),
        path,
    ));
    causes
}

fn label_requirement_causes(requirement: &Value, path: &str) -> Vec<Cause> {
    validate_label_requirement(requirement, path, true)
}

/// The selector attributes of a (valid) review's resource attributes, as kube's
/// `ResourceAttributesFrom` builds them: `requirements` converted when given, else
/// `rawSelector` parsed. A requirement that does not convert makes the selector an error
/// (kube keeps the requirements that did convert beside the error; RBAC ignores both).
pub fn review_selectors(resource_attributes: &Value) -> SelectorAttributes {
    let raw = |key: &str| {
        resource_attributes
            .pointer(&format!("/{key}/rawSelector"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut out = SelectorAttributes::parse(&raw("fieldSelector"), &raw("labelSelector"));
    if let Some(reqs) = resource_attributes.pointer("/fieldSelector/requirements")
        && let Some(reqs) = reqs.as_array().filter(|r| !r.is_empty())
    {
        out.field = Some(field_selector_from(reqs));
    }
    if let Some(reqs) = resource_attributes.pointer("/labelSelector/requirements")
        && let Some(reqs) = reqs.as_array().filter(|r| !r.is_empty())
    {
        out.label = Some(LabelSelector::from_structured(
            &json!({"matchExpressions": reqs}),
        ));
    }
    out
}

/// Kube's conversion of structured field requirements: `In` one value is `=`, `NotIn` one
/// value is `!=`; anything else is an error with kube's message.
fn field_selector_from(requirements: &[Value]) -> Result<FieldSelector, SelectorError> {
    let mut terms = Vec::new();
    let mut errors = Vec::new();
    for r in requirements {
        let values = values_of(r);
        let op = r.get("operator").and_then(Value::as_str).unwrap_or("");
        if values.len() > 1 {
            errors.push("fieldSelectors do not yet support multiple values".to_owned());
            continue;
        }
        let negated = match op {
            "In" => false,
            "NotIn" => true,
            "Exists" | "DoesNotExist" => {
                errors.push(format!("fieldSelectors do not yet support {op}"));
                continue;
            }
            other => {
                errors.push(format!("{other:?} is not a valid field selector operator"));
                continue;
            }
        };
        let Some(value) = values.first() else {
            let which = if negated { "not in" } else { "in" };
            errors.push(format!("fieldSelectors {which} must have one value"));
            continue;
        };
        terms.push(FieldTerm {
            field: r
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            value: (*value).to_owned(),
            negated,
        });
    }
    match errors.len() {
        0 => Ok(FieldSelector::from_terms(terms)),
        1 => Err(SelectorError::new(errors.concat())),
        _ => Err(SelectorError::new(format!("[{}]", errors.join(", ")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(attrs: Value) -> Vec<String> {
        selector_causes(Some(&attrs))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn kube_validation_messages() {
        assert_eq!(
            messages(
                json!({"fieldSelector": {"rawSelector": "foo", "requirements": [{"key": "a", "operator": "In", "values": ["b"]}]}})
            ),
            [
                r#"spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "foo": may not specified at the same time as requirements"#
            ]
        );
        assert_eq!(
            messages(json!({"labelSelector": {}})),
            [
                "spec.resourceAttributes.labelSelector.requirements: Required value: when spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required"
            ]
        );
        assert_eq!(
            messages(json!({"fieldSelector": {"requirements": [{"key": ""}]}})),
            [
                "spec.resourceAttributes.fieldSelector.requirements[0].key: Required value: must be specified"
            ]
        );
        assert_eq!(
            messages(
                json!({"fieldSelector": {"requirements": [{"key": "k", "operator": "DoesNotExist", "values": ["v"]}]}})
            ),
            [
                "spec.resourceAttributes.fieldSelector.requirements[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            ]
        );
        assert_eq!(
            messages(
                json!({"labelSelector": {"requirements": [{"key": "k", "operator": "In", "values": []}]}})
            ),
            [
                "spec.resourceAttributes.labelSelector.requirements[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
            ]
        );
        // An empty key also fails the name pattern (kube reports both, this one first).
        assert_eq!(
            messages(json!({"labelSelector": {"requirements": [{"key": ""}]}}))[0],
            r#"spec.resourceAttributes.labelSelector.requirements[0].key: Invalid value: "": name part must be non-empty"#
        );
        // Unknown operators are let through; a raw selector is not parsed by validation.
        assert!(
            messages(
                json!({"labelSelector": {"requirements": [{"key": "k", "operator": "Gt", "values": ["1"]}]},
                       "fieldSelector": {"rawSelector": "=="}})
            )
            .is_empty()
        );
    }

    #[test]
    fn requirements_become_attributes() {
        let sel = review_selectors(&json!({
            "fieldSelector": {"requirements": [
                {"key": "one", "operator": "In", "values": ["apple"]},
                {"key": "two", "operator": "NotIn", "values": ["banana"]}]},
            "labelSelector": {"rawSelector": "app=web"}}));
        let field = sel.field.expect("field").expect("parsed");
        assert_eq!(field.to_string(), "one=apple,two!=banana");
        assert_eq!(
            sel.label.expect("label").expect("parsed").to_string(),
            "app=web"
        );
        let bad = review_selectors(&json!({"fieldSelector": {"requirements": [
            {"key": "one", "operator": "In", "values": ["a", "b"]}]}}));
        assert_eq!(
            bad.field.expect("field").expect_err("error").message,
            "fieldSelectors do not yet support multiple values"
        );
        assert_eq!(review_selectors(&json!({})), SelectorAttributes::default());
    }
}

//! `status.typeChecking` of a ValidatingAdmissionPolicy: each expression is checked against
//! the schema of every kind the policy's `matchConstraints` names explicitly (no `*`), and a
//! field the kind does not have is reported as kube's type checker reports it —
//! `expressionWarnings` of `{fieldRef, warning}` with `apps/v1, Kind=Deployment: ERROR:
//! <input>:1:7: undefined field 'replicas'` and the source line with a caret. Only undefined
//! fields are found (see [`crate::schema`]'s CEL field check); other type errors are not.

use serde_json::{Map, Value, json};

use crate::schema::{CelEnv, undefined_field_errors};

/// Most kinds one policy is checked against (kube's limit too).
pub const MAX_KINDS: usize = 10;

/// A kind a policy is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Kind<'a> {
    /// How kube prints the kind: `apps/v1, Kind=Deployment` (`/v1, Kind=ConfigMap` for core).
    pub gvk: &'a str,
    /// The schema of its objects.
    pub schema: &'a Value,
}

/// The schemas the check needs besides the matched kinds.
#[derive(Clone, Copy, Debug)]
pub struct Schemas<'a> {
    /// The definitions built-in schemas `$ref` (ObjectMeta among them).
    pub definitions: &'a Map<String, Value>,
    /// The ObjectMeta schema (`metadata` of custom resources).
    pub object_meta: &'a Value,
    /// The schema of `params` (the policy's `paramKind`), when it is served.
    pub params: Option<&'a Value>,
    /// The Namespace schema (`namespaceObject`).
    pub namespace: Option<&'a Value>,
}

/// The (group, version, resource) combinations `matchConstraints.resourceRules` name without
/// wildcards or subresources, in order, at most [`MAX_KINDS`].
pub fn named_resources(policy: &Value) -> Vec<(String, String, String)> {
    let strings = |v: &Value, key: &str| crate::webhook::config::strings(v.get(key));
    let mut out = Vec::new();
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for rule in &rules {
        for group in strings(rule, "apiGroups") {
            for version in strings(rule, "apiVersions") {
                for resource in strings(rule, "resources") {
                    let wild = [&group, &version, &resource]
                        .iter()
                        .any(|s| s.contains('*'))
                        || resource.contains('/');
                    let entry = (group.clone(), version.clone(), resource);
                    if !wild && !out.contains(&entry) && out.len() < MAX_KINDS {
                        out.push(entry);
                    }
                }
            }
        }
    }
    out
}

/// Every expression of a policy with its field path, in kube's order.
fn expressions(policy: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut add = |list: &str, key: &str| {
        let items = policy
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array);
        for (i, item) in items.into_iter().flatten().enumerate() {
            if let Some(text) = item.get(key).and_then(Value::as_str) {
                out.push((format!("spec.{list}[{i}].{key}"), text.to_owned()));
            }
        }
    };
    add("matchConditions", "expression");
    add("variables", "expression");
    add("validations", "expression");
    add("validations", "messageExpression");
    add("auditAnnotations", "valueExpression");
    out
}

/// The `expressionWarnings` of `policy` checked against `kinds`.
pub fn expression_warnings(policy: &Value, kinds: &[Kind<'_>], schemas: Schemas<'_>) -> Vec<Value> {
    let mut warnings = Vec::new();
    for (field, expression) in expressions(policy) {
        let mut found = Vec::new();
        for kind in kinds {
            let mut variables = vec![("object", kind.schema), ("oldObject", kind.schema)];
            if let Some(params) = schemas.params {
                variables.push(("params", params));
            }
            if let Some(namespace) = schemas.namespace {
                variables.push(("namespaceObject", namespace));
            }
            let env = CelEnv {
                variables: &variables,
                objects: true,
                metadata: Some(schemas.object_meta),
                definitions: Some(schemas.definitions),
            };
            if let Some(errors) = undefined_field_errors(&expression, &env) {
                found.push(format!("{}: {errors}", kind.gvk));
            }
        }
        if !found.is_empty() {
            warnings.push(json!({"fieldRef": field, "warning": found.join("\n")}));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Value {
        json!({"type": "object", "properties": {
            "metadata": {"$ref": "#/definitions/meta"},
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}})
    }

    fn definitions() -> Map<String, Value> {
        let mut d = Map::new();
        d.insert(
            "meta".into(),
            json!({"type": "object", "properties": {"name": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        );
        d
    }

    #[test]
    fn only_explicit_resources_are_checked() {
        let policy = json!({"spec": {"matchConstraints": {"resourceRules": [
            {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments", "deployments/status", "replicasets"]},
            {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["pods"]},
        ]}}});
        assert_eq!(
            named_resources(&policy),
            [
                ("apps".to_owned(), "v1".to_owned(), "deployments".to_owned()),
                ("apps".to_owned(), "v1".to_owned(), "replicasets".to_owned())
            ]
        );
    }

    #[test]
    fn undefined_fields_warn_per_kind() {
        let policy = json!({"spec": {
            "validations": [
                {"expression": "object.replicas > 1", "messageExpression": "'n=' + string(object.spec.replicas)"},
                {"expression": "object.metadata.labels.a == 'b' && object.metadata.nme != ''"},
            ],
        }});
        let definitions = definitions();
        let schema = deployment();
        let kinds = [
            Kind {
                gvk: "apps/v1, Kind=Deployment",
                schema: &schema,
            },
            Kind {
                gvk: "apps/v1, Kind=ReplicaSet",
                schema: &schema,
            },
        ];
        let schemas = Schemas {
            definitions: &definitions,
            object_meta: &definitions["meta"],
            params: None,
            namespace: None,
        };
        let warnings = expression_warnings(&policy, &kinds, schemas);
        assert_eq!(
            warnings,
            [
                json!({"fieldRef": "spec.validations[0].expression", "warning":
                    "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\napps/v1, Kind=ReplicaSet: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^"}),
                json!({"fieldRef": "spec.validations[1].expression", "warning":
                    "apps/v1, Kind=Deployment: ERROR: <input>:1:51: undefined field 'nme'\n | object.metadata.labels.a == 'b' && object.metadata.nme != ''\n | ..................................................^\napps/v1, Kind=ReplicaSet: ERROR: <input>:1:51: undefined field 'nme'\n | object.metadata.labels.a == 'b' && object.metadata.nme != ''\n | ..................................................^"}),
            ]
        );
    }
}

//! `status.typeChecking` of a ValidatingAdmissionPolicy: each validation's `expression` and
//! `messageExpression` is checked against the schema of every kind the policy's
//! `matchConstraints` names explicitly (no `*`), and the type errors are reported as kube's
//! type checker reports them — `expressionWarnings` of `{fieldRef, warning}` with
//! `apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'` (or
//! `found no matching overload for '_>_' applied to '(string, int)'`, …) and the source line
//! with a caret. What is checked is described in [`ocm_apiserver_schema`]'s CEL type check; as in
//! kube, the result type is not (a policy's expressions may be any type here).

use serde_json::{Map, Value, json};

use ocm_apiserver_schema::{CelEnv, CelVariable, check_cel, unique_type_name};

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
    let strings = |v: &Value, key: &str| crate::meta::strings(v.get(key));
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

/// The expressions kube type-checks, with their field paths, in kube's order: each
/// validation's `expression`, then its `messageExpression`.
fn expressions(policy: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let validations = policy
        .pointer("/spec/validations")
        .and_then(Value::as_array);
    for (i, item) in validations.into_iter().flatten().enumerate() {
        for key in ["expression", "messageExpression"] {
            if let Some(text) = item
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push((format!("spec.validations[{i}].{key}"), text.to_owned()));
            }
        }
    }
    out
}

/// The kind name of a `group/version, Kind=Name` string.
fn kind_name(gvk: &str) -> &str {
    gvk.rsplit_once("Kind=").map_or(gvk, |(_, kind)| kind)
}

/// The `expressionWarnings` of `policy` checked against `kinds`.
pub fn expression_warnings(policy: &Value, kinds: &[Kind<'_>], schemas: Schemas<'_>) -> Vec<Value> {
    let mut warnings = Vec::new();
    for (field, expression) in expressions(policy) {
        let mut found = Vec::new();
        for kind in kinds {
            let object_type = unique_type_name(kind_name(kind.gvk));
            let params_type = unique_type_name(
                policy
                    .pointer("/spec/paramKind/kind")
                    .and_then(Value::as_str)
                    .unwrap_or("params"),
            );
            let variable = |name, schema, type_name| CelVariable {
                name,
                schema,
                type_name,
                optional: false,
            };
            let mut variables = vec![
                variable("object", kind.schema, &object_type),
                variable("oldObject", kind.schema, &object_type),
            ];
            if let Some(params) = schemas.params {
                variables.push(variable("params", params, &params_type));
            }
            if let Some(namespace) = schemas.namespace {
                variables.push(variable(
                    "namespaceObject",
                    namespace,
                    "kubernetes.Namespace",
                ));
            }
            let env = CelEnv {
                variables: &variables,
                objects: true,
                metadata: Some(schemas.object_meta),
                definitions: Some(schemas.definitions),
            };
            if let Some(errors) = check_cel(&expression, &env).errors {
                // kube ends each kind's report with a newline and joins them with another.
                found.push(format!("{}: {errors}\n", kind.gvk));
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
                    "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n\napps/v1, Kind=ReplicaSet: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"}),
                json!({"fieldRef": "spec.validations[1].expression", "warning":
                    "apps/v1, Kind=Deployment: ERROR: <input>:1:51: undefined field 'nme'\n | object.metadata.labels.a == 'b' && object.metadata.nme != ''\n | ..................................................^\n\napps/v1, Kind=ReplicaSet: ERROR: <input>:1:51: undefined field 'nme'\n | object.metadata.labels.a == 'b' && object.metadata.nme != ''\n | ..................................................^\n"}),
            ]
        );
    }
}

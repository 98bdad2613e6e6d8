//! Custom resource definitions for OpenAPI v2: the version's `openAPIV3Schema` converted as
//! kube-apiserver converts it, because v2 has no `nullable`, no junctors, and kubectl's v2
//! validation rejects unknown fields wherever a schema declares properties:
//!
//! * `allOf`, `oneOf`, `anyOf` and `not` are dropped;
//! * a nullable schema loses its type, items and properties (so `null` validates);
//! * a schema preserving unknown fields loses its items and properties, and its type
//!   `object`;
//! * an array without items loses its type;
//! * nullable properties are not required; a map of nullable values requires nothing;
//! * embedded resources (`x-kubernetes-embedded-resource`) get apiVersion, kind and metadata,
//!   unless they preserve unknown fields;
//! * a root that preserves unknown fields publishes just `type: object`.

use serde_json::{Map, Value, json};

use super::builtin::OBJECT_META;
use crate::registry::ResourceInfo;

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";

fn flag(schema: &Map<String, Value>, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The `metadata` property: a reference to ObjectMeta.
fn metadata_property() -> Value {
    json!({"description": super::super::METADATA_DESCRIPTION, "$ref": super::reference(OBJECT_META)})
}

/// The v2 definition of custom resource `res` at `version` with `schema` (its
/// `openAPIV3Schema`, if any).
pub(super) fn definition(res: &ResourceInfo, version: &str, schema: Option<&Value>) -> Value {
    let preserves = schema
        .and_then(Value::as_object)
        .is_some_and(|s| flag(s, PRESERVE));
    match schema {
        Some(schema) if !preserves => {
            let mut schema = schema.clone();
            to_v2(&mut schema);
            add_embedded_properties(&mut schema);
            super::super::kube_native(res, version, &schema, metadata_property())
        }
        _ => json!({
            "type": "object",
            "x-kubernetes-group-version-kind": super::builtin::gvk_extension(&res.group, version, &res.kind),
        }),
    }
}

/// The v2 conversion of one schema node, then of what remains below it.
fn to_v2(schema: &mut Value) {
    let Some(s) = schema.as_object_mut() else {
        return;
    };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        s.remove(junctor);
    }
    if flag(s, "nullable") {
        for key in ["type", "nullable", "items", "properties"] {
            s.remove(key);
        }
    }
    let preserves = flag(s, PRESERVE);
    if preserves {
        s.remove("items");
        s.remove("properties");
    }
    let is_type =
        |s: &Map<String, Value>, t: &str| s.get("type").and_then(Value::as_str) == Some(t);
    if !s.contains_key("items") && is_type(s, "array") {
        s.remove("type");
    }
    if preserves && is_type(s, "object") {
        s.remove("type");
    }
    let nullable_fields: Vec<String> = s
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| p.as_object().is_some_and(|p| flag(p, "nullable")))
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    let nullable_values = s
        .get("additionalProperties")
        .and_then(Value::as_object)
        .is_some_and(|a| flag(a, "nullable"));
    if let Some(required) = s.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| {
            !nullable_values
                && !r
                    .as_str()
                    .is_some_and(|r| nullable_fields.iter().any(|f| f == r))
        });
        if required.is_empty() {
            s.remove("required");
        }
    }
    for child in children(s) {
        to_v2(child);
    }
}

/// The schemas directly below a node: properties, items and additionalProperties.
fn children(s: &mut Map<String, Value>) -> Vec<&mut Value> {
    let mut out = Vec::new();
    for (key, value) in s.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(props)) => out.extend(props.values_mut()),
            ("items" | "additionalProperties", v @ Value::Object(_)) => out.push(v),
            _ => {}
        }
    }
    out
}

/// apiVersion, kind and metadata for embedded resources, innermost first.
fn add_embedded_properties(schema: &mut Value) {
    let Some(s) = schema.as_object_mut() else {
        return;
    };
    for child in children(s) {
        add_embedded_properties(child);
    }
    if flag(s, PRESERVE) || !flag(s, EMBEDDED) {
        return;
    }
    let props = s.entry("properties").or_insert_with(|| json!({}));
    if let Some(props) = props.as_object_mut() {
        props.extend(super::super::type_meta_properties());
        props.insert("metadata".into(), metadata_property());
    }
    let required = s.entry("required").or_insert_with(|| json!([]));
    if let Some(required) = required.as_array_mut() {
        for key in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == key) {
                required.push(json!(key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(mut v: Value) -> Value {
        to_v2(&mut v);
        add_embedded_properties(&mut v);
        v
    }

    #[test]
    fn nullable_and_junctors_go() {
        let v = converted(json!({
            "type": "object",
            "required": ["a", "b"],
            "properties": {
                "a": {"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}},
                "b": {"type": "string", "anyOf": [{"type": "string"}]},
            },
        }));
        assert_eq!(
            v,
            json!({"type": "object", "required": ["b"], "properties": {"a": {}, "b": {"type": "string"}}})
        );
    }

    #[test]
    fn preserved_and_embedded() {
        let v = converted(json!({
            "type": "object",
            "properties": {
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}},
                "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}},
                "res": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
            },
        }));
        assert_eq!(
            v["properties"]["free"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            v["properties"]["list"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        let res = &v["properties"]["res"];
        assert_eq!(res["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            res["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
    }
}

//! Pruning of unknown fields and the rest of kube-apiserver's decode-time coercion of custom
//! resources (`unstructuredSchemaCoercer`): metadata coercion, removal of non-nullable nulls.

use serde_json::Value;

use super::node::Node;
use crate::validation::{Cause, child, coerce_object_meta, index, key};

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

fn is_meta(k: &str) -> bool {
    META_FIELDS.contains(&k)
}

/// Where unknown fields are recorded: dotted paths like `spec.template.foo`, `items[0].x`.
fn unknown_child(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// apiextensions' `prune`: drop fields the schema does not know, except under
/// `x-kubernetes-preserve-unknown-fields` and the `apiVersion`/`kind`/`metadata` of embedded
/// resources (`root` forces the embedded behaviour, as for the object itself).
pub(crate) fn prune(
    x: &mut Value,
    s: Option<&Node>,
    root: bool,
    path: &str,
    unknown: &mut Vec<String>,
) {
    if let Some(n) = s
        && n.preserve_unknown
    {
        skip_prune(x, n, root, path, unknown);
        return;
    }
    let embedded = root || s.is_some_and(|n| n.embedded);
    match x {
        Value::Object(m) => {
            let Some(n) = s else {
                for k in m.keys() {
                    unknown.push(unknown_child(path, k));
                }
                m.clear();
                return;
            };
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && is_meta(&k) {
                    continue;
                }
                let sub = if let Some(p) = n.property(&k) {
                    Some(Some(p))
                } else {
                    n.additional_schema()
                };
                match sub {
                    Some(schema) => {
                        if let Some(v) = m.get_mut(&k) {
                            prune(v, schema, false, &unknown_child(path, &k), unknown);
                        }
                    }
                    None => {
                        if !is_meta(&k) || !path.is_empty() {
                            unknown.push(unknown_child(path, &k));
                        }
                        m.remove(&k);
                    }
                }
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|n| n.items.as_deref());
            for (i, v) in a.iter_mut().enumerate() {
                prune(v, items, false, &format!("{path}[{i}]"), unknown);
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Node, root: bool, path: &str, unknown: &mut Vec<String>) {
    let embedded = root || s.embedded;
    match x {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if embedded && is_meta(k) {
                    continue;
                }
                if let Some(p) = s.property(k) {
                    prune(v, Some(p), false, &unknown_child(path, k), unknown);
                } else if let Some(ap) = s.additional_schema() {
                    prune(v, ap, false, &unknown_child(path, k), unknown);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(v, items, false, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// `PruneNonNullableNullsWithoutDefaults`: a `null` for a field whose schema is neither
/// nullable nor defaulted is dropped (as Go's JSON decoder would for a typed field).
pub(crate) fn prune_nulls(x: &mut Value, s: Option<&Node>) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let schema = s.and_then(|n| n.field_schema(&k));
                let drop = m.get(&k).is_some_and(Value::is_null)
                    && schema.is_some_and(|sc| !sc.nullable && sc.default.is_none());
                if drop {
                    m.remove(&k);
                } else if let Some(v) = m.get_mut(&k) {
                    prune_nulls(v, schema);
                }
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|n| n.items.as_deref());
            for v in a.iter_mut() {
                prune_nulls(v, items);
            }
        }
        _ => {}
    }
}

/// `schemaobjectmeta.Coerce` below the root: embedded resources must have string
/// `apiVersion`/`kind`, and their `metadata` is decoded like `ObjectMeta` (unknown fields
/// dropped and reported). `fpath` is the field path (errors), `upath` the dotted path
/// (unknown fields).
pub(crate) fn coerce_embedded(
    x: &mut Value,
    s: Option<&Node>,
    fpath: &str,
    upath: &str,
    unknown: &mut Vec<String>,
) -> Result<(), Cause> {
    let Some(n) = s else {
        return Ok(());
    };
    match x {
        Value::Object(m) => {
            if n.embedded {
                for k in ["apiVersion", "kind"] {
                    if let Some(v) = m.get(k)
                        && !v.is_string()
                    {
                        return Err(Cause::invalid(child(fpath, k), v, "must be a string"));
                    }
                }
                if m.contains_key("metadata") {
                    let original = m.get("metadata").cloned().unwrap_or(Value::Null);
                    match coerce_object_meta(x, upath) {
                        Ok(paths) => unknown.extend(paths),
                        Err(e) => {
                            return Err(Cause::invalid(child(fpath, "metadata"), &original, &e.0));
                        }
                    }
                }
            }
            let Value::Object(m) = x else {
                return Ok(());
            };
            for (k, v) in m.iter_mut() {
                if let Some(p) = n.property(k) {
                    coerce_embedded(
                        v,
                        Some(p),
                        &child(fpath, k),
                        &unknown_child(upath, k),
                        unknown,
                    )?;
                } else if let Some(ap) = n.additional_schema() {
                    coerce_embedded(v, ap, &key(fpath, k), &unknown_child(upath, k), unknown)?;
                }
            }
            Ok(())
        }
        Value::Array(a) => {
            let items = n.items.as_deref();
            for (i, v) in a.iter_mut().enumerate() {
                coerce_embedded(
                    v,
                    items,
                    &index(fpath, i),
                    &format!("{upath}[{i}]"),
                    unknown,
                )?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: Value) -> Node {
        Node::parse(&v, "s", &mut Vec::new())
    }

    #[test]
    fn prunes_unknown_fields_and_reports_sorted_paths_later() {
        let s = node(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "a": {"type": "string"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"typed": {"type": "object", "properties": {"k": {"type": "string"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}));
        let mut obj = json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"},
            "spec": {"a": "x", "b": 1, "list": [{"x": "1", "y": 2}],
                     "free": {"anything": {"deep": 1}, "typed": {"k": "v", "drop": 1}},
                     "labels": {"any": "thing"}},
            "extra": true});
        let mut unknown = Vec::new();
        prune(&mut obj, Some(&s), true, "", &mut unknown);
        assert_eq!(
            unknown,
            vec!["spec.b", "spec.list[0].y", "spec.free.typed.drop", "extra"]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"},
            "spec": {"a": "x", "list": [{"x": "1"}],
                     "free": {"anything": {"deep": 1}, "typed": {"k": "v"}},
                     "labels": {"any": "thing"}}})
        );
    }

    #[test]
    fn embedded_resources_keep_their_type_meta() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "manifests": {"type": "array", "items": {"type": "object",
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
            "tmpl": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}}}),
        );
        let mut obj = json!({"spec": {
            "manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}],
            "tmpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "b", "z": 1}, "status": {}}}});
        let mut unknown = Vec::new();
        prune(&mut obj, Some(&s), true, "", &mut unknown);
        assert_eq!(unknown, vec!["spec.tmpl.spec.z", "spec.tmpl.status"]);
        assert_eq!(obj["spec"]["manifests"][0]["data"], json!({"k": "v"}));
        assert_eq!(obj["spec"]["tmpl"]["kind"], json!("Pod"));
    }

    #[test]
    fn untyped_subtrees_lose_object_fields() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"any": {"type": "object", "additionalProperties": true}}}}}),
        );
        let mut obj = json!({"spec": {"any": {"a": {"b": 1}}}});
        let mut unknown = Vec::new();
        prune(&mut obj, Some(&s), true, "", &mut unknown);
        assert_eq!(obj, json!({"spec": {"any": {"a": {}}}}));
        assert_eq!(unknown, vec!["spec.any.a.b"]);
    }

    #[test]
    fn drops_non_nullable_nulls_without_defaults() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string", "nullable": true},
            "c": {"type": "string", "default": "x"}, "l": {"type": "array", "items": {"type": "string"}}}}}}),
        );
        let mut obj =
            json!({"spec": {"a": null, "b": null, "c": null, "l": [null], "unknown": null}});
        prune_nulls(&mut obj, Some(&s));
        assert_eq!(
            obj,
            json!({"spec": {"b": null, "c": null, "l": [null], "unknown": null}})
        );
    }

    #[test]
    fn coerces_embedded_metadata() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}}}),
        );
        let mut obj = json!({"spec": {"t": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1, "labels": {}}}}});
        let mut unknown = Vec::new();
        coerce_embedded(&mut obj, Some(&s), "", "", &mut unknown).unwrap();
        assert_eq!(unknown, vec!["spec.t.metadata.bogus"]);
        assert_eq!(obj["spec"]["t"]["metadata"], json!({"name": "p"}));

        let mut bad = json!({"spec": {"t": {"apiVersion": 1, "kind": "Pod"}}});
        let err = coerce_embedded(&mut bad, Some(&s), "", "", &mut unknown).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.t.apiVersion: Invalid value: 1: must be a string"
        );
    }
}

//! Checks that follow the structural schema rather than kube-openapi: the metadata of embedded
//! resources (`schemaobjectmeta.Validate`) and duplicate entries in `x-kubernetes-list-type`
//! `set`/`map` lists (`ValidateListSetsAndMaps`).

use serde_json::{Map, Value};

use super::node::Node;
use crate::validation::{
    BadValue, Cause, NameRule, child, coerce_object_meta, dns1035_label_errors, go_json, index,
    key, validate_meta_at,
};

/// Validate every `x-kubernetes-embedded-resource` object below `x` (not `x` itself unless
/// its schema says so). `path` is a field path (`spec.items[0]`, maps as `spec.m[key]`).
pub(crate) fn validate_embedded(x: &Value, s: Option<&Node>, path: &str, out: &mut Vec<Cause>) {
    let Some(n) = s else {
        return;
    };
    match x {
        Value::Object(m) => {
            if n.embedded {
                embedded_resource(m, path, out);
            }
            for (k, v) in m {
                if let Some(p) = n.property(k) {
                    validate_embedded(v, Some(p), &child(path, k), out);
                } else if let Some(ap) = n.additional_schema() {
                    validate_embedded(v, ap, &key(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                validate_embedded(v, n.items.as_deref(), &index(path, i), out);
            }
        }
        _ => {}
    }
}

fn embedded_resource(m: &Map<String, Value>, path: &str, out: &mut Vec<Cause>) {
    if !m.contains_key("apiVersion") {
        out.push(Cause::required(
            child(path, "apiVersion"),
            "must not be empty",
        ));
    }
    if !m.contains_key("kind") {
        out.push(Cause::required(child(path, "kind"), "must not be empty"));
    }
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" => match v {
                Value::String(s) if s.is_empty() => {
                    out.push(Cause::invalid(child(path, k), "", "must not be empty"));
                }
                Value::String(s) if s != "/" && s.matches('/').count() > 1 => {
                    out.push(Cause::invalid(
                        child(path, k),
                        s,
                        &format!("unexpected GroupVersion string: {s}"),
                    ))
                }
                Value::String(_) => {}
                other => out.push(Cause::invalid(child(path, k), other, "must be a string")),
            },
            "kind" => match v {
                Value::String(s) if s.is_empty() => {
                    out.push(Cause::invalid(child(path, k), "", "must not be empty"));
                }
                Value::String(s) => {
                    let errs = dns1035_label_errors(&s.to_lowercase());
                    if !errs.is_empty() {
                        out.push(Cause::invalid(
                            child(path, k),
                            s,
                            &format!(
                                "may have mixed case, but should otherwise match: {}",
                                errs.join(",")
                            ),
                        ));
                    }
                }
                other => out.push(Cause::invalid(child(path, k), other, "must be a string")),
            },
            "metadata" => {
                let mut probe =
                    Value::Object(Map::from_iter([("metadata".to_string(), v.clone())]));
                match coerce_object_meta(&mut probe, "") {
                    Err(e) => out.push(Cause::invalid(child(path, "metadata"), v, &e.0)),
                    Ok(_) => {
                        let mut meta = probe
                            .get("metadata")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default();
                        if meta
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .is_empty()
                        {
                            meta.insert("name".into(), Value::String("fakename".into()));
                        }
                        let namespaced = meta
                            .get("namespace")
                            .and_then(Value::as_str)
                            .is_some_and(|ns| !ns.is_empty());
                        out.extend(validate_meta_at(
                            &meta,
                            &child(path, "metadata"),
                            NameRule::PathSegment,
                            namespaced,
                        ));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Duplicate items of `set` lists and duplicate keys of `map` lists anywhere below `obj`.
pub(crate) fn validate_list_sets_and_maps(
    obj: &Value,
    s: Option<&Node>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let (Some(n), Value::Object(m)) = (s, obj) else {
        return;
    };
    if let Some(Some(ap)) = n.additional_schema() {
        for (k, v) in m {
            list_value(v, ap, &key(path, k), out);
        }
    }
    for (k, v) in m {
        if let Some(p) = n.property(k) {
            list_value(v, p, &child(path, k), out);
        }
    }
}

fn list_value(v: &Value, s: &Node, path: &str, out: &mut Vec<Cause>) {
    match v {
        Value::Array(a) => list_array(a, s, path, out),
        Value::Object(_) => validate_list_sets_and_maps(v, Some(s), path, out),
        _ => {}
    }
}

fn list_array(a: &[Value], s: &Node, path: &str, out: &mut Vec<Cause>) {
    match s.list_type.as_deref() {
        Some("set") => {
            for i in non_unique(a) {
                out.push(Cause::duplicate(index(path, i), &a[i]));
            }
        }
        Some("map") => list_map(a, s, path, out),
        _ => {}
    }
    if let Some(items) = s.items.as_deref() {
        for (i, v) in a.iter().enumerate() {
            list_value(v, items, &index(path, i), out);
        }
    }
}

/// A key that tells apart what Go's `map[interface{}]int` tells apart: the JSON type matters
/// for scalars (`1` and `1.0` differ), compounds compare by their JSON encoding.
fn identity(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_i64() => format!("i:{n}"),
        Value::Number(n) => format!("f:{}", n.as_f64().unwrap_or(0.0)),
        Value::String(s) => format!("s:{s}"),
        Value::Bool(b) => format!("b:{b}"),
        Value::Null => "n".to_string(),
        other => format!("j:{}", go_json(other)),
    }
}

/// Indices of the second occurrence of each repeated value.
fn non_unique(a: &[Value]) -> Vec<usize> {
    non_unique_ids(&a.iter().map(identity).collect::<Vec<_>>())
}

fn non_unique_ids(ids: &[String]) -> Vec<usize> {
    let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let c = counts.entry(id.as_str()).or_insert(0);
        *c += 1;
        if *c == 2 {
            out.push(i);
        }
    }
    out
}

fn list_map(a: &[Value], s: &Node, path: &str, out: &mut Vec<Cause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(Cause::invalid(
                index(path, i),
                x,
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    if let [key_field] = s.list_map_keys.as_slice() {
        let keys: Vec<Option<&Value>> = a
            .iter()
            .map(|x| x.as_object().and_then(|m| m.get(key_field)))
            .collect();
        let ids: Vec<String> = keys
            .iter()
            .map(|k| k.map_or_else(|| "unspecified".to_string(), identity))
            .collect();
        for i in non_unique_ids(&ids) {
            let shown = match keys[i] {
                None => Value::Object(Map::new()),
                Some(v) => Value::Object(Map::from_iter([(key_field.clone(), v.clone())])),
            };
            out.push(Cause::duplicate(index(path, i), BadValue::Json(shown)));
        }
        return;
    }
    let keys: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut k = Map::new();
            if let Some(m) = x.as_object() {
                for f in &s.list_map_keys {
                    if let Some(v) = m.get(f) {
                        k.insert(f.clone(), v.clone());
                    }
                }
            }
            Value::Object(k)
        })
        .collect();
    let ids: Vec<String> = keys.iter().map(identity).collect();
    for i in non_unique_ids(&ids) {
        out.push(Cause::duplicate(index(path, i), &keys[i]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: Value) -> Node {
        Node::parse(&v, "s", &mut Vec::new())
    }

    fn strings(c: &[Cause]) -> Vec<String> {
        c.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn embedded_resource_metadata_rules() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ms": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                   "x-kubernetes-preserve-unknown-fields": true}}}}}}),
        );
        let obj = json!({"spec": {"ms": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok", "namespace": "ns"}},
            {"metadata": {}},
            {"apiVersion": "a/b/c", "kind": "Bad_Kind", "metadata": {"name": "x/y", "labels": {"-": "v"}}},
            {"apiVersion": "", "kind": "", "metadata": {"labels": 5}}
        ]}});
        let mut out = Vec::new();
        validate_embedded(&obj, Some(&s), "", &mut out);
        let got = strings(&out);
        assert_eq!(
            got[0],
            "spec.ms[1].apiVersion: Required value: must not be empty"
        );
        assert_eq!(got[1], "spec.ms[1].kind: Required value: must not be empty");
        assert_eq!(
            got[2],
            "spec.ms[2].apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c"
        );
        assert!(got[3].starts_with("spec.ms[2].kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label"));
        assert_eq!(
            got[4],
            "spec.ms[2].metadata.name: Invalid value: \"x/y\": may not contain '/'"
        );
        assert!(got[5].starts_with("spec.ms[2].metadata.labels: Invalid value: \"-\""));
        assert_eq!(
            got[6],
            "spec.ms[3].apiVersion: Invalid value: \"\": must not be empty"
        );
        assert_eq!(
            got[7],
            "spec.ms[3].kind: Invalid value: \"\": must not be empty"
        );
        assert_eq!(
            got[8],
            "spec.ms[3].metadata: Invalid value: {\"labels\":5}: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type map[string]string"
        );
        assert_eq!(got.len(), 9);
    }

    #[test]
    fn duplicate_set_and_map_entries() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "nums": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
                "m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "m2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                      "items": {"type": "object"}},
                "bad": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object"}}
            }}}}),
        );
        let obj = json!({"spec": {
            "set": ["a", "b", "a", "a"],
            "nums": [1, 1.0],
            "m": [{"name": "x"}, {"name": "x"}, {}, {}],
            "m2": [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
            "bad": [{"k": 1}, "str"]}});
        let mut out = Vec::new();
        validate_list_sets_and_maps(&obj, Some(&s), "", &mut out);
        assert_eq!(
            strings(&out),
            vec![
                "spec.set[2]: Duplicate value: \"a\"",
                "spec.m[1]: Duplicate value: {\"name\":\"x\"}",
                "spec.m[3]: Duplicate value: {}",
                "spec.m2[1]: Duplicate value: {\"a\":1,\"b\":2}",
                "spec.bad[1]: Invalid value: \"str\": must be an object for an array of list-type map",
            ]
        );
    }
}

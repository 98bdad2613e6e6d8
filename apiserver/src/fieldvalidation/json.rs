//! JSON bodies as they were written: every object's keys in document order, repeated keys
//! included, so duplicates can be reported and unknown fields listed in the order
//! kube-apiserver's strict JSON decoder (`sigs.k8s.io/json`) meets them.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::StrictError;

/// Errors kube's strict JSON decoder keeps at most (`sigs.k8s.io/json` stops saving after 100).
const MAX_STRICT_ERRORS: usize = 100;

/// A JSON value with its objects' entries in document order, duplicates kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Raw {
    /// An object: `(key, value)` pairs as written.
    Object(Vec<(String, Raw)>),
    /// An array.
    Array(Vec<Raw>),
    /// A string, number, boolean or null.
    Scalar(Value),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Scalar(
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Raw>()? {
            items.push(item);
        }
        Ok(Raw::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Raw>()?;
            entries.push((key, value));
        }
        Ok(Raw::Object(entries))
    }
}

/// Parses a JSON document, keeping repeated keys (same grammar and errors as
/// `serde_json::from_slice`).
pub(crate) fn parse(body: &[u8]) -> Result<Raw, serde_json::Error> {
    serde_json::from_slice(body)
}

impl Raw {
    /// The value a decoder keeps. A repeated key's later value wins; with `merge_objects`
    /// (decoding into Go structs and maps, as for built-in kinds) a repeated object is merged
    /// into the earlier one instead, as Go's `encoding/json` does.
    pub(crate) fn to_value(&self, merge_objects: bool) -> Value {
        match self {
            Raw::Scalar(v) => v.clone(),
            Raw::Array(items) => {
                Value::Array(items.iter().map(|i| i.to_value(merge_objects)).collect())
            }
            Raw::Object(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    let v = v.to_value(merge_objects);
                    match map.get_mut(k) {
                        Some(existing) if merge_objects => merge_into(existing, v),
                        Some(existing) => *existing = v,
                        None => {
                            map.insert(k.clone(), v);
                        }
                    }
                }
                Value::Object(map)
            }
        }
    }

    /// Whether this is a JSON object.
    pub(crate) fn is_object(&self) -> bool {
        matches!(self, Raw::Object(_))
    }
}

/// Go's decoding of a repeated object into the same struct or map: fields of `new` are set on
/// `existing` (objects recursively), everything else replaces.
fn merge_into(existing: &mut Value, new: Value) {
    match (existing, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (k, v) in new {
                match old.get_mut(&k) {
                    Some(slot) => merge_into(slot, v),
                    None => {
                        old.insert(k, v);
                    }
                }
            }
        }
        (slot, new) => *slot = new,
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Collects strict errors in document order, deduplicated and capped like `sigs.k8s.io/json`.
struct Collector {
    errors: Vec<StrictError>,
    seen: HashSet<StrictError>,
}

impl Collector {
    fn new() -> Self {
        Collector {
            errors: Vec::new(),
            seen: HashSet::new(),
        }
    }

    fn push(&mut self, err: StrictError) {
        if self.errors.len() >= MAX_STRICT_ERRORS || self.seen.contains(&err) {
            return;
        }
        self.seen.insert(err.clone());
        self.errors.push(err);
    }
}

/// Repeated keys anywhere in the document (decoding into untyped maps, as for custom
/// resources and patches): `duplicate field "spec.a"`, in document order.
pub(crate) fn duplicates(raw: &Raw) -> Vec<StrictError> {
    let mut out = Collector::new();
    walk(raw, "", &HashSet::new(), &mut out);
    out.errors
}

/// The strict errors of decoding `raw` into a typed object whose unknown fields (dotted paths,
/// as found by the typed decoding) are `unknown`: unknown and duplicate fields interleaved in
/// document order. Unknown paths the document does not show (fields the typed decoding
/// dropped for other reasons) follow at the end.
pub(crate) fn typed_errors(raw: &Raw, unknown: &[String]) -> Vec<StrictError> {
    let set: HashSet<&str> = unknown.iter().map(String::as_str).collect();
    let mut out = Collector::new();
    walk(raw, "", &set, &mut out);
    for path in unknown {
        out.push(StrictError::Unknown(path.clone()));
    }
    out.errors
}

fn walk(raw: &Raw, path: &str, unknown: &HashSet<&str>, out: &mut Collector) {
    match raw {
        Raw::Object(entries) => {
            let mut seen: HashSet<&str> = HashSet::new();
            for (k, v) in entries {
                let p = child(path, k);
                if unknown.contains(p.as_str()) {
                    out.push(StrictError::Unknown(p));
                    continue;
                }
                if !seen.insert(k.as_str()) {
                    out.push(StrictError::Duplicate(p.clone()));
                }
                walk(v, &p, unknown, out);
            }
        }
        Raw::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{path}[{i}]"), unknown, out);
            }
        }
        Raw::Scalar(_) => {}
    }
}

/// The strict errors of a JSON patch document (a list of operations decoded into
/// `{op, path, from, value}`), each prefixed `json patch ` as kube-apiserver words them.
pub(crate) fn json_patch_errors(raw: &Raw) -> Vec<String> {
    let mut out = Collector::new();
    if let Raw::Array(ops) = raw {
        for (i, op) in ops.iter().enumerate() {
            let Raw::Object(entries) = op else {
                continue;
            };
            let mut seen: HashSet<&str> = HashSet::new();
            for (k, v) in entries {
                let p = format!("[{i}].{k}");
                if !matches!(k.as_str(), "op" | "path" | "from" | "value") {
                    out.push(StrictError::Unknown(p));
                    continue;
                }
                if !seen.insert(k.as_str()) {
                    out.push(StrictError::Duplicate(p.clone()));
                }
                walk(v, &p, &HashSet::new(), &mut out);
            }
        }
    }
    out.errors
        .into_iter()
        .map(|e| format!("json patch {e}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(errs: &[StrictError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn keeps_repeated_keys_and_decodes_like_go() {
        let raw = parse(br#"{"a":{"x":1},"b":[1],"a":{"y":2},"b":[2]}"#).unwrap();
        assert_eq!(raw.to_value(true), json!({"a": {"x": 1, "y": 2}, "b": [2]}));
        assert_eq!(raw.to_value(false), json!({"a": {"y": 2}, "b": [2]}));
        assert!(parse(b"{not json").is_err());
    }

    #[test]
    fn duplicates_in_document_order() {
        let raw = parse(br#"{"m":{"n":1,"n":2},"s":{"l":[{"k":1,"k":2}]},"m":{}}"#).unwrap();
        assert_eq!(
            texts(&duplicates(&raw)),
            [
                "duplicate field \"m.n\"",
                "duplicate field \"s.l[0].k\"",
                "duplicate field \"m\""
            ]
        );
    }

    #[test]
    fn typed_errors_interleave_unknown_and_duplicate_fields() {
        let raw = parse(
            br#"{"metadata":{"name":"a","name":"a","bogus":1,"bogus":2},"spec":{"x":{"deep":1},"replicas":1}}"#,
        )
        .unwrap();
        let unknown = vec![
            "metadata.bogus".to_owned(),
            "spec.x".to_owned(),
            "status.gone".to_owned(),
        ];
        assert_eq!(
            texts(&typed_errors(&raw, &unknown)),
            [
                "duplicate field \"metadata.name\"",
                "unknown field \"metadata.bogus\"",
                "unknown field \"spec.x\"",
                "unknown field \"status.gone\""
            ]
        );
    }

    #[test]
    fn json_patch_operations() {
        let raw =
            parse(br#"[{"op":"add","op":"add","path":"/a","value":{"v":1,"v":2},"extra":1}]"#)
                .unwrap();
        assert_eq!(
            json_patch_errors(&raw),
            [
                "json patch duplicate field \"[0].op\"",
                "json patch duplicate field \"[0].value.v\"",
                "json patch unknown field \"[0].extra\""
            ]
        );
    }
}

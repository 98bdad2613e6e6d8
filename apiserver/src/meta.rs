//! Small helpers over objects as `serde_json::Value`: metadata access, timestamps, and the
//! comparisons the write path needs.

use serde_json::{Map, Value};

/// The current time as `metav1.Time` (RFC 3339, seconds, `Z`).
pub fn now() -> String {
    format_time(jiff::Timestamp::now())
}

/// The current time as `metav1.MicroTime` (6 fractional digits).
pub fn now_micro() -> String {
    jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%S.%6fZ", jiff::Timestamp::now())
        .unwrap_or_else(|_| now())
}

/// Formats a timestamp as `metav1.Time`.
pub fn format_time(ts: jiff::Timestamp) -> String {
    jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", ts).unwrap_or_default()
}

/// Parses a `metav1.Time`.
pub fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

/// The repository part of an image reference (no tag, no digest): `quay.io/a/b:v1` and
/// `quay.io/a/b@sha256:…` are both `quay.io/a/b`; a registry port stays.
pub fn image_repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    match image.rsplit_once(':') {
        // A colon after the last slash separates the tag; before it, a registry port.
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => image,
    }
}

/// `metadata` of an object, if it is a JSON object.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.as_object()
}

/// `metadata` of an object, created if missing.
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// A string field of `metadata`, or "".
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    metadata(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The string at JSON `pointer`, or `""`.
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The array at JSON `pointer`, or an empty slice.
pub fn array_at<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Sets (or removes, for `None`) a field of `metadata`.
pub fn set_meta(obj: &mut Value, field: &str, value: Option<Value>) {
    if let Some(meta) = metadata_mut(obj) {
        match value {
            Some(v) => {
                meta.insert(field.to_owned(), v);
            }
            None => {
                meta.remove(field);
            }
        }
    }
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    strings(metadata(obj).and_then(|m| m.get("finalizers")))
}

/// Replaces `metadata.finalizers` (removing the field when empty).
pub fn set_finalizers(obj: &mut Value, list: &[String]) {
    if list.is_empty() {
        set_meta(obj, "finalizers", None);
    } else {
        set_meta(obj, "finalizers", Some(Value::from(list.to_vec())));
    }
}

/// `metadata.labels`.
pub fn labels(obj: &Value) -> std::collections::BTreeMap<String, String> {
    metadata(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.generation`, or 0.
pub fn generation(obj: &Value) -> i64 {
    metadata(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    metadata(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// Whether the object's status condition of type `ty` is `True`.
pub fn condition_true(obj: &Value, ty: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Removes empty lists and maps from `metadata`, as Go's `omitempty` does.
pub fn drop_empty_metadata(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|_, v| match v {
            Value::Null => false,
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::String(s) => !s.is_empty(),
            _ => true,
        });
    }
}

/// Whether the object changed outside `metadata` (and outside `status` when `ignore_status`):
/// the rule for bumping `metadata.generation`.
pub fn spec_changed(old: &Value, new: &Value, ignore_status: bool) -> bool {
    let ignored = |key: &str| {
        matches!(key, "metadata" | "apiVersion" | "kind") || (ignore_status && key == "status")
    };
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = new.as_object().unwrap_or(&empty);
    let count = |m: &Map<String, Value>| m.keys().filter(|k| !ignored(k)).count();
    count(old) != count(new)
        || old
            .iter()
            .any(|(key, v)| !ignored(key) && new.get(key) != Some(v))
}

/// Reads a dotted field path such as `spec.nodeName` as the string a field selector compares.
pub fn field_as_string(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for part in path.trim_start_matches('.').split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The object as `PartialObjectMetadata`.
pub fn partial_metadata(obj: &Value) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

/// The string at `key` of an object ("" when absent or not a string).
pub fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The strings of a JSON array (others skipped; none when absent).
pub fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn generation_rule() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let mut b = a.clone();
        b["metadata"]["labels"]["a"] = json!("2");
        b["status"]["y"] = json!(2);
        assert!(!spec_changed(&a, &b, true));
        assert!(spec_changed(&a, &b, false));
        b["spec"]["x"] = json!(2);
        assert!(spec_changed(&a, &b, true));
        // A field added or removed outside metadata counts; kind and apiVersion do not.
        let c = json!({"kind": "K", "metadata": {}, "spec": {"x": 1}, "status": {"y": 1}});
        assert!(!spec_changed(&a, &c, true));
        assert!(spec_changed(
            &a,
            &json!({"metadata": {}, "spec": {"x": 1}, "data": 1}),
            true
        ));
        assert!(spec_changed(&a, &json!({"metadata": {}}), false));
        assert!(!spec_changed(
            &json!("not an object"),
            &json!({"metadata": {}}),
            false
        ));
    }

    #[test]
    fn empty_metadata_dropped() {
        let mut v = json!({"metadata": {"name": "a", "finalizers": [], "labels": {}, "uid": ""}});
        drop_empty_metadata(&mut v);
        assert_eq!(v, json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn time_format() {
        assert_eq!(now().len(), 20);
        assert_eq!(now_micro().len(), 27);
        assert_eq!(
            field_as_string(&json!({"spec": {"a": true}}), "spec.a").as_deref(),
            Some("true")
        );
    }
}

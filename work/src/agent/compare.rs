//! Pure helpers of the `Update` strategy: what a manifest must look like on the cluster, and
//! whether the live object already does.

use serde_json::{Map, Value};

/// Whether every field `desired` sets (outside `metadata` and `status`) has the same value in
/// `live`. Fields the server added (defaults) do not count, so an object that is already right
/// is never written again.
pub fn already_applied(desired: &Value, live: &Value) -> bool {
    let (Some(d), Some(l)) = (desired.as_object(), live.as_object()) else {
        return false;
    };
    d.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
        .all(|(k, v)| l.get(k).is_some_and(|lv| subset(v, lv)))
        && meta_subset(desired, live)
}

/// Labels and annotations of `desired` are present with the same values in `live`, and the
/// owner references of `desired` are there too.
fn meta_subset(desired: &Value, live: &Value) -> bool {
    ["labels", "annotations"].iter().all(|field| {
        let want = desired.pointer(&format!("/metadata/{field}"));
        let have = live.pointer(&format!("/metadata/{field}"));
        match want {
            None | Some(Value::Null) => true,
            Some(w) => have.is_some_and(|h| subset(w, h)),
        }
    }) && has_owner_references(desired, live)
}

fn owner_references(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Whether `live` carries every owner reference of `desired` (by uid).
pub(crate) fn has_owner_references(desired: &Value, live: &Value) -> bool {
    let have = owner_references(live);
    owner_references(desired)
        .iter()
        .all(|o| have.iter().any(|h| h.get("uid") == o.get("uid")))
}

/// The owner references of `live` followed by those of `desired` it lacks (by uid).
pub(crate) fn merged_owner_references(desired: &Value, live: &Value) -> Vec<Value> {
    let mut owners = owner_references(live);
    for o in owner_references(desired) {
        if !owners.iter().any(|h| h.get("uid") == o.get("uid")) {
            owners.push(o);
        }
    }
    owners
}

/// `want` ⊆ `have`: objects by key (recursively), lists element by element with the same
/// length, scalars equal (numbers by value).
fn subset(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w
            .iter()
            .all(|(k, v)| v.is_null() || h.get(k).is_some_and(|hv| subset(v, hv))),
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(a, b)| subset(a, b))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// The object to send for an update: `desired`, with the live object's labels and
/// annotations kept (desired ones win), the owner references merged, the live finalizers and
/// `resourceVersion` kept, and the live `status` untouched.
pub fn merged_for_update(desired: &Value, live: &Value) -> Value {
    let mut out = desired.clone();
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        for field in ["labels", "annotations"] {
            let mut merged = live
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if let Some(want) = meta.get(field).and_then(Value::as_object) {
                for (k, v) in want {
                    merged.insert(k.clone(), v.clone());
                }
            }
            if !merged.is_empty() {
                meta.insert(field.to_owned(), Value::Object(merged));
            }
        }
        let owners = merged_owner_references(desired, live);
        if !owners.is_empty() {
            meta.insert("ownerReferences".into(), Value::Array(owners));
        }
        for field in ["finalizers", "resourceVersion", "uid"] {
            if let Some(v) = live.pointer(&format!("/metadata/{field}")) {
                meta.insert(field.to_owned(), v.clone());
            }
        }
    }
    if let Some(status) = live.get("status") {
        obj.insert("status".into(), status.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_defaults_do_not_count_as_drift() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web", "extra": "x"}, "uid": "u", "resourceVersion": "5"},
            "spec": {"replicas": 2, "strategy": {"type": "RollingUpdate"},
                     "template": {"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always"}]}}},
            "status": {"replicas": 2}});
        assert!(already_applied(&desired, &live));
        let edited = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"replicas": 5,
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert!(!already_applied(&desired, &edited));
        let relabelled =
            json!({"metadata": {"labels": {"app": "other"}}, "spec": live["spec"].clone()});
        assert!(!already_applied(&desired, &relabelled));
    }

    #[test]
    fn missing_owner_reference_is_drift() {
        let desired = json!({"metadata": {"ownerReferences": [{"uid": "a"}]}, "data": {"k": "v"}});
        let live = json!({"metadata": {"ownerReferences": [{"uid": "b"}]}, "data": {"k": "v"}});
        assert!(!already_applied(&desired, &live));
    }

    #[test]
    fn update_keeps_what_others_own() {
        let desired = json!({"metadata": {"name": "x", "labels": {"a": "1"},
            "ownerReferences": [{"uid": "ours"}]}, "data": {"k": "v"}});
        let live = json!({"metadata": {"name": "x", "labels": {"a": "0", "b": "2"},
            "ownerReferences": [{"uid": "theirs"}], "finalizers": ["f"], "resourceVersion": "9"},
            "data": {"k": "old"}});
        let merged = merged_for_update(&desired, &live);
        assert_eq!(merged["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(
            merged["metadata"]["ownerReferences"],
            json!([{"uid": "theirs"}, {"uid": "ours"}])
        );
        assert_eq!(merged["metadata"]["finalizers"], json!(["f"]));
        assert_eq!(merged["metadata"]["resourceVersion"], "9");
        assert_eq!(merged["data"], json!({"k": "v"}));
    }
}

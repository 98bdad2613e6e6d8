//! RFC 7386 JSON merge patch (`application/merge-patch+json`), as kube-apiserver applies it
//! (evanphx/json-patch v4 `MergePatch`): `null` deletes a key, objects merge recursively,
//! anything else (arrays included) replaces; `null` members inside newly added values are
//! dropped.
//!
//! kube-specific edges: a `null` or scalar patch is 400 `Invalid JSON Patch`; an array patch
//! replaces the whole document, which then is not an object (422 Invalid on field `patch`).

use serde_json::{Map, Value};

use super::error::PatchError;

/// kube-apiserver's message for a merge patch that is not an object or array.
const BAD_MERGE_PATCH: &str = "Invalid JSON Patch";

/// Applies the merge patch `patch` to `doc` (an object).
pub fn apply_merge_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    match patch {
        Value::Object(p) => {
            let mut out = match doc {
                Value::Object(d) => Value::Object(d.clone()),
                _ => Value::Object(Map::new()),
            };
            if let Value::Object(d) = &mut out {
                merge_objects(d, p);
            }
            Ok(out)
        }
        Value::Array(_) => {
            let mut replaced = patch.clone();
            prune_nulls(&mut replaced);
            Err(PatchError::NotAnObject {
                document: replaced.to_string(),
            })
        }
        _ => Err(PatchError::BadRequest(BAD_MERGE_PATCH.to_string())),
    }
}

/// Merges `patch` into `doc` in place (both objects).
pub(crate) fn merge_objects(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.shift_remove(key);
            continue;
        }
        match doc.get_mut(key) {
            Some(Value::Object(current)) => match value {
                Value::Object(p) => merge_objects(current, p),
                other => {
                    let mut v = other.clone();
                    prune_nulls(&mut v);
                    doc.insert(key.clone(), v);
                }
            },
            _ => {
                let mut v = value.clone();
                prune_nulls(&mut v);
                doc.insert(key.clone(), v);
            }
        }
    }
}

/// Drops `null` members of objects, recursively (also inside arrays; `null` array elements
/// stay).
fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, child| !child.is_null());
            m.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc7386_examples_and_kube_edges() {
        let cases: Vec<(&str, Value, Value, Value)> = vec![
            (
                "replace a scalar",
                json!({"a": "b"}),
                json!({"a": "c"}),
                json!({"a": "c"}),
            ),
            (
                "add a key",
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (
                "null deletes a key",
                json!({"a": "b"}),
                json!({"a": null}),
                json!({}),
            ),
            (
                "null deletes only that key",
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (
                "arrays replace",
                json!({"a": ["b"]}),
                json!({"a": "c"}),
                json!({"a": "c"}),
            ),
            (
                "scalars replace arrays",
                json!({"a": "c"}),
                json!({"a": ["b"]}),
                json!({"a": ["b"]}),
            ),
            (
                "objects merge recursively",
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                "arrays of objects replace wholesale",
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (
                "nulls inside a new object are dropped",
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
            (
                "nulls inside objects of a new array are dropped, null elements stay",
                json!({}),
                json!({"a": [{"x": null, "y": 1}, null]}),
                json!({"a": [{"y": 1}, null]}),
            ),
            (
                "deleting a missing key is a no-op",
                json!({"a": 1}),
                json!({"z": null}),
                json!({"a": 1}),
            ),
            (
                "empty patch is a no-op",
                json!({"a": 1}),
                json!({}),
                json!({"a": 1}),
            ),
            (
                "labels merge, annotations removed",
                json!({"metadata": {"labels": {"a": "1"}, "annotations": {"x": "y"}}}),
                json!({"metadata": {"labels": {"b": "2"}, "annotations": {"x": null}}}),
                json!({"metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {}}}),
            ),
        ];
        for (name, doc, patch, want) in cases {
            let got = apply_merge_patch(&doc, &patch);
            assert_eq!(got, Ok(want), "{name}");
        }
    }

    #[test]
    fn merge_keeps_existing_key_order() {
        let got = apply_merge_patch(&json!({"a": 1, "b": 2, "c": 3}), &json!({"a": 9, "d": 4}));
        let keys: Vec<String> = match got {
            Ok(Value::Object(m)) => m.keys().cloned().collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(keys, ["a", "b", "c", "d"]);
    }

    #[test]
    fn invalid_merge_patches() {
        for patch in [Value::Null, json!(1), json!("x"), json!(true)] {
            let e = apply_merge_patch(&json!({}), &patch);
            assert_eq!(
                e,
                Err(PatchError::BadRequest("Invalid JSON Patch".into())),
                "{patch}"
            );
        }
        match apply_merge_patch(&json!({"a": 1}), &json!([1, {"x": null}])) {
            Err(e @ PatchError::NotAnObject { .. }) => {
                assert_eq!(e.status_code(), 422);
                assert_eq!(e.causes()[0].field, "patch");
                assert!(e.to_string().contains("[1,{}]"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn applying_a_merge_patch_twice_is_idempotent() {
        let doc = json!({"a": {"b": [1, 2]}, "c": "d"});
        let patch = json!({"a": [{"x": null, "y": 2}], "c": null, "e": {"f": null, "g": 1}});
        let once = apply_merge_patch(&doc, &patch).ok();
        let twice = once
            .as_ref()
            .and_then(|d| apply_merge_patch(d, &patch).ok());
        assert_eq!(once, twice);
        assert_eq!(once, Some(json!({"a": [{"y": 2}], "e": {"g": 1}})));
    }
}

//! `serverSideApply.ignoreFields`: fields the agent leaves to the managed cluster (e.g. the
//! replicas an autoscaler sets, ocm#690). Pure.
//!
//! As upstream's agent: fields under condition `OnSpokePresent` (the default) are removed from
//! what is applied to an object that exists (so they are set only when it is created); a hash of
//! the remaining object, `OnSpokeChange` fields included, goes into the annotation
//! `open-cluster-management.io/config-spec-hash`, and an object already carrying the same hash is
//! not applied again — so edits made on the cluster to `OnSpokeChange` fields (and, as upstream,
//! to any other field) stay until the manifest changes.
//!
//! Fields are named by `jsonPaths` (Kubernetes JSONPath), `jsonPointers` (RFC 6901) or
//! `jqPathExpressions`. JSONPaths and jq paths are accepted as plain field paths: `.a.b`,
//! `.a["b.c"]`, `.a['b']` (no wildcards, filters or indexes); anything else, or a malformed
//! pointer, is an error that fails the manifest with reason
//! `AppliedManifestSSAIgnoreFieldError`.

use ocm_api::work::v1::{IgnoreField, IgnoreFieldsCondition};
use serde_json::Value;

use super::hashes::sha256_hex;

/// Splits a plain field path (`.a.b`, `.a["b.c"]`, `.a['b']`) into its keys.
fn path_keys(path: &str) -> Result<Vec<String>, String> {
    let mut keys = Vec::new();
    let mut rest = path.trim();
    if rest.starts_with('{') && rest.ends_with('}') {
        rest = &rest[1..rest.len() - 1];
    }
    if rest.is_empty() {
        return Err("empty path".into());
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            if key.is_empty() || key.contains(['*', '@', '?', '(', ')']) {
                return Err(format!("unsupported path element near {rest:?}"));
            }
            keys.push(key.to_string());
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let quote = after
                .chars()
                .next()
                .filter(|c| *c == '"' || *c == '\'')
                .ok_or_else(|| {
                    format!("only quoted keys are supported in brackets near {rest:?}")
                })?;
            let inner = &after[1..];
            let close = inner
                .find(quote)
                .ok_or_else(|| format!("unterminated quote near {rest:?}"))?;
            keys.push(inner[..close].to_string());
            rest = inner[close + 1..]
                .strip_prefix(']')
                .ok_or_else(|| format!("missing ] near {rest:?}"))?;
        } else {
            return Err(format!("expected . or [ near {rest:?}"));
        }
    }
    Ok(keys)
}

/// Decodes an RFC 6901 pointer into its keys.
fn pointer_keys(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Err("an empty pointer names the whole object".into());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err("a JSON pointer starts with /".into());
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::new();
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return Err(format!("invalid escape in {token:?}")),
                    }
                } else {
                    out.push(c);
                }
            }
            Ok(out)
        })
        .collect()
}

/// Removes the field at `keys` (object keys; a numeric key indexes a list) if present.
fn remove(value: &mut Value, keys: &[String]) {
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut at = value;
    for key in parents {
        let next = match at {
            Value::Object(map) => map.get_mut(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return,
        }
    }
    match at {
        Value::Object(map) => {
            map.remove(last);
        }
        Value::Array(items) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// `desired` without the fields of `OnSpokePresent` rules.
pub(crate) fn without_ignored(desired: &Value, fields: &[IgnoreField]) -> Result<Value, String> {
    let mut out = desired.clone();
    for field in fields {
        if field.condition != IgnoreFieldsCondition::OnSpokePresent {
            continue;
        }
        for path in &field.json_paths {
            let keys = path_keys(path).map_err(|e| format!("JSONPath error in '{path}': {e}"))?;
            remove(&mut out, &keys);
        }
        for pointer in &field.json_pointers {
            let keys = pointer_keys(pointer)
                .map_err(|e| format!("JSON Pointer error in '{pointer}': {e}"))?;
            remove(&mut out, &keys);
        }
        for expr in &field.jq_path_expressions {
            let keys =
                path_keys(expr).map_err(|e| format!("JQ expression error in '{expr}': {e}"))?;
            remove(&mut out, &keys);
        }
    }
    Ok(out)
}

/// `value` as JSON text with every object's keys sorted, so equal content gives equal text
/// whatever order the keys came in.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The spec hash of what is applied (hex SHA-256 of its canonical JSON).
pub(crate) fn spec_hash(required: &Value) -> String {
    let mut text = String::new();
    canonical(required, &mut text);
    sha256_hex(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(condition: IgnoreFieldsCondition, paths: &[&str], pointers: &[&str]) -> IgnoreField {
        IgnoreField {
            condition,
            json_paths: paths.iter().map(|p| (*p).to_string()).collect(),
            json_pointers: pointers.iter().map(|p| (*p).to_string()).collect(),
            jq_path_expressions: Vec::new(),
        }
    }

    fn deployment() -> Value {
        json!({"metadata": {"name": "web", "annotations": {"a.b/c": "x", "keep": "y"}},
               "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    }

    #[test]
    fn on_spoke_present_fields_are_removed_on_spoke_change_ones_kept() {
        let out = without_ignored(
            &deployment(),
            &[
                rule(
                    IgnoreFieldsCondition::OnSpokePresent,
                    &[".spec.replicas", ".metadata.annotations[\"a.b/c\"]"],
                    &[],
                ),
                rule(
                    IgnoreFieldsCondition::OnSpokeChange,
                    &[".spec.template"],
                    &[],
                ),
            ],
        )
        .unwrap();
        assert_eq!(out["spec"].get("replicas"), None);
        assert_eq!(out["metadata"]["annotations"], json!({"keep": "y"}));
        assert!(out["spec"].get("template").is_some());
    }

    #[test]
    fn pointers_escapes_list_indexes_and_missing_fields() {
        let out = without_ignored(
            &deployment(),
            &[rule(
                IgnoreFieldsCondition::OnSpokePresent,
                &[],
                &[
                    "/metadata/annotations/a.b~1c",
                    "/spec/template/spec/containers/0/image",
                    "/not/there",
                ],
            )],
        )
        .unwrap();
        assert_eq!(out["metadata"]["annotations"], json!({"keep": "y"}));
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0],
            json!({"name": "c"})
        );
    }

    #[test]
    fn bad_paths_and_pointers_are_errors() {
        let err = without_ignored(
            &deployment(),
            &[rule(
                IgnoreFieldsCondition::OnSpokePresent,
                &[],
                &["spec/replicas"],
            )],
        )
        .unwrap_err();
        assert!(
            err.starts_with("JSON Pointer error in 'spec/replicas'"),
            "{err}"
        );
        let err = without_ignored(
            &deployment(),
            &[rule(
                IgnoreFieldsCondition::OnSpokePresent,
                &[".spec.containers[*].image"],
                &[],
            )],
        )
        .unwrap_err();
        assert!(err.starts_with("JSONPath error in"), "{err}");
    }

    #[test]
    fn the_hash_follows_content_only() {
        let a = json!({"b": 1, "a": {"x": [1, 2]}});
        let b = json!({"a": {"x": [1, 2]}, "b": 1});
        assert_eq!(spec_hash(&a), spec_hash(&b));
        assert_ne!(
            spec_hash(&a),
            spec_hash(&json!({"b": 2, "a": {"x": [1, 2]}}))
        );
        assert_eq!(spec_hash(&a).len(), 64);
    }
}

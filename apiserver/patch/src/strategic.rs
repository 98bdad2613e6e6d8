//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds, with
//! the semantics of kube-apiserver's `strategicpatch.StrategicMergeMapPatch`:
//!
//! - like a merge patch, but lists whose field has `patchStrategy: merge` merge: lists of
//!   objects by their `patchMergeKey` (containers by `name`, container ports by
//!   `containerPort`, ...), lists of scalars as sets (finalizers); other lists replace;
//! - `$patch: replace` (an object or list replaces instead of merging), `$patch: delete` (an
//!   object becomes `{}`; a list item is deleted by its merge key), `$retainKeys` (keys of the
//!   original missing from the list are cleared), `$deleteFromPrimitiveList/<field>` (values
//!   removed from a scalar list), `$setElementOrder/<field>` (the order of a merged list);
//! - merged lists put patch items in patch order before original-only items unless
//!   `$setElementOrder` says otherwise, as kube does;
//! - directive keys never reach the result (kube drops them when decoding into the typed
//!   object).
//!
//! Errors: malformed directives are 400 BadRequest; lists of lists and `$retainKeys`
//! mismatches are 422. kube answers the remaining client mistakes (a list item without its
//! merge key, `$patch: merge` in a list, an unknown `$patch` value) with 500; this module
//! answers 400 BadRequest with kube's message, because a client mistake is never a 500 here.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::error::PatchError;
use super::typeinfo::{ObjectType, Smp, TypeRef};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Applies the strategic merge patch `patch` to `original` using the field strategies of
/// `types` (from [`ObjectType::builtin`]).
pub fn apply_strategic_merge_patch(
    original: &Value,
    patch: &Value,
    types: &ObjectType,
) -> Result<Value, PatchError> {
    let patch = match patch {
        // Go unmarshals `null` into the (empty) patch map: a no-op.
        Value::Null => Map::new(),
        Value::Object(p) => p.clone(),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )));
        }
    };
    let original = match original {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    let mut merged = merge_map(original, patch, types.root())?;
    strip_directive_keys(&mut merged);
    Ok(merged)
}

/// An error, classified as kube-apiserver classifies strategic-merge errors.
fn bad(msg: impl Into<String>) -> PatchError {
    PatchError::BadRequest(msg.into())
}

const ERR_BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const ERR_BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const ERR_BAD_SET_ORDER: &str = "invalid patch format of setElementOrder list";
const ERR_NO_LIST_OF_LISTS: &str = "lists of lists are not supported";

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%v` rendering of an unstructured value, for error messages.
fn go_fmt(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(go_fmt).collect::<Vec<_>>().join(" ")
            )
        }
        Value::Object(m) => {
            let mut entries: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_fmt(v)))
                .collect();
            entries.sort();
            format!("map[{}]", entries.join(" "))
        }
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn err_bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    bad(format!(
        "expected a {expected}, but received a {}",
        go_type(actual)
    ))
}

fn err_no_merge_key(m: &Map<String, Value>, key: &str) -> PatchError {
    bad(format!(
        "map: {} does not contain declared merge key: {key}",
        go_fmt(&Value::Object(m.clone()))
    ))
}

fn err_bad_patch_type(t: &Value, m: &Map<String, Value>) -> PatchError {
    let shown = match t {
        Value::String(s) => s.clone(),
        other => go_fmt(other),
    };
    bad(format!(
        "unknown patch type: {shown} in map: {}",
        go_fmt(&Value::Object(m.clone()))
    ))
}

/// `key` without `prefix/`, or the directive's format error.
fn extract_key<'k>(key: &'k str, prefix: &str, err: &str) -> Result<&'k str, PatchError> {
    match key.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest),
        _ => Err(bad(err)),
    }
}

/// The kind of a JSON value as the algorithm distinguishes it (Go's reflect kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    Slice,
    Scalar(u8),
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Object(_) => Kind::Map,
        Value::Array(_) => Kind::Slice,
        Value::Null => Kind::Scalar(0),
        Value::Bool(_) => Kind::Scalar(1),
        Value::Number(_) => Kind::Scalar(2),
        Value::String(_) => Kind::Scalar(3),
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: TypeRef<'_>,
) -> Result<Value, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.shift_remove(DIRECTIVE);
                Ok(Value::Object(patch))
            }
            Some("delete") => Ok(Value::Object(Map::new())),
            _ => Err(err_bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order_lists(&mut original, &mut patch, schema)?;

    for (key, patch_value) in patch {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (
                extract_key(&key, DELETE_FROM_PRIMITIVE_LIST, ERR_BAD_PRIMITIVE_LIST)?.to_string(),
                true,
            )
        } else {
            (key, false)
        };
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let same_kind = original
            .get(&key)
            .map(|o| kind_of(o) == kind_of(&patch_value));
        if same_kind != Some(true) {
            if !is_delete_list {
                let mut v = patch_value;
                discard_nulls(&mut v);
                match remove_directives(v) {
                    Some(v) => {
                        original.insert(key, v);
                    }
                    None => {
                        original.shift_remove(&key);
                    }
                }
            }
            continue;
        }
        let Some(current) = original.get_mut(&key) else {
            continue;
        };
        let (sub, field) = schema.field(&key);
        let smp = field.map(|f| f.smp.clone()).unwrap_or_default();
        let merged = match (std::mem::take(current), patch_value) {
            (Value::Object(o), Value::Object(p)) => {
                if smp.replace {
                    Value::Object(p)
                } else {
                    merge_map(o, p, sub)?
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                Value::Array(merge_slice_handler(o, p, sub, &smp, is_delete_list)?)
            }
            (_, p) => match remove_directives(p) {
                Some(v) => v,
                None => {
                    original.shift_remove(&key);
                    continue;
                }
            },
        };
        original.insert(key, merged);
    }
    Ok(Value::Object(original))
}

/// `$retainKeys`: every non-null patch key must be listed; original keys not listed go.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad(ERR_BAD_RETAIN_KEYS));
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(bad(ERR_BAD_RETAIN_KEYS));
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// Processes each `$setElementOrder/<field>` with its list: merges the list, orders it, and
/// removes both from the patch.
fn merge_set_element_order_lists(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: TypeRef<'_>,
) -> Result<(), PatchError> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in directives {
        let Some(order) = patch.shift_remove(&directive) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(err_bad_arg_type("[]interface {}", &order));
        };
        let key = extract_key(&directive, SET_ELEMENT_ORDER, ERR_BAD_SET_ORDER)?.to_string();
        let original_list = match original.get(&key) {
            None => None,
            Some(Value::Array(l)) => Some(l.clone()),
            Some(other) => return Err(err_bad_arg_type("[]interface {}", other)),
        };
        let patch_list = match patch.get(&key) {
            None => None,
            Some(Value::Array(l)) => Some(l.clone()),
            Some(other) => return Err(err_bad_arg_type("[]interface {}", other)),
        };
        let (sub, field) = schema.field(&key);
        let smp = field.map(|f| f.smp.clone()).unwrap_or_default();
        let merge_key = smp.merge_key.clone().unwrap_or_default();
        validate_patch_with_set_order(patch_list.as_deref().unwrap_or(&[]), &order, &merge_key)?;
        let merged = match (&original_list, &patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => match remove_directives(Value::Array(p.clone())) {
                Some(Value::Array(l)) => l,
                _ => continue,
            },
            (Some(o), Some(p)) => merge_slice_handler(o.clone(), p.clone(), sub, &smp, false)?,
            (None, None) => continue,
        };
        let (patch_items, server_only) = partition(merged, &order, &merge_key)?;
        let kind = slice_element_type(&[
            original_list.as_deref().unwrap_or(&[]),
            patch_list.as_deref().unwrap_or(&[]),
        ])?;
        let ordered = normalize_element_order(
            patch_items,
            server_only,
            &order,
            original_list.as_deref().unwrap_or(&[]),
            &merge_key,
            kind,
        )?;
        original.insert(key.clone(), Value::Array(ordered));
        patch.shift_remove(&key);
    }
    Ok(())
}

fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    list_type: TypeRef<'_>,
    smp: &Smp,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if smp.merge || is_delete_list {
        let merge_key = smp.merge_key.clone().unwrap_or_default();
        merge_slice(
            original,
            patch,
            list_type.items(),
            &merge_key,
            is_delete_list,
        )
    } else {
        Ok(patch)
    }
}

fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: TypeRef<'_>,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = slice_element_type(&[&original, &patch])?;
    let (original, patch, merged) = if kind != Kind::Map {
        if is_delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(patch.iter()) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        (original, patch, merged)
    } else {
        if merge_key.is_empty() {
            return Err(bad("cannot merge lists without merge key for struct"));
        }
        let (original, patch) = merge_slice_special_elements(original, patch, merge_key)?;
        let merged = merge_slice_plain_elements(original.clone(), &patch, merge_key, items)?;
        (original, patch, merged)
    };
    let (patch_items, server_only) = partition(merged, &patch, merge_key)?;
    normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)
}

/// Applies `$patch: delete` and `$patch: replace` items; returns the new original and the
/// patch without directive items.
fn merge_slice_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Value::Object(m) = &item else {
            return Err(err_bad_arg_type("map[string]interface {}", &item));
        };
        match m.get(DIRECTIVE) {
            None => plain.push(item),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let Some(key_value) = m.get(merge_key) else {
                        return Err(err_no_merge_key(m, merge_key));
                    };
                    let mut kept = Vec::with_capacity(original.len());
                    for (i, o) in original.into_iter().enumerate() {
                        let Value::Object(om) = &o else {
                            return Err(bad(format!("value for key {i} is not a map")));
                        };
                        if om.get(merge_key) != Some(key_value) {
                            kept.push(o);
                        }
                    }
                    original = kept;
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(bad("merging lists cannot yet be specified in the patch"));
                }
                _ => return Err(err_bad_patch_type(d, m)),
            },
        }
    }
    if replace {
        Ok((plain, Vec::new()))
    } else {
        Ok((original, plain))
    }
}

/// Merges each patch item into the original item with the same merge key, or appends it.
fn merge_slice_plain_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    items: TypeRef<'_>,
) -> Result<Vec<Value>, PatchError> {
    for item in patch {
        let Value::Object(p) = item else {
            return Err(err_bad_arg_type("map[string]interface {}", item));
        };
        let Some(key_value) = p.get(merge_key) else {
            return Err(err_no_merge_key(p, merge_key));
        };
        let mut found = None;
        for (i, o) in original.iter().enumerate() {
            let Value::Object(om) = o else {
                return Err(bad(format!("value for key {i} is not a map")));
            };
            if om.get(merge_key) == Some(key_value) {
                found = Some(i);
                break;
            }
        }
        match found.and_then(|i| original.get_mut(i).map(|slot| (i, slot))) {
            Some((_, slot)) => {
                let current = match std::mem::take(slot) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                *slot = merge_map(current, p.clone(), items)?;
            }
            None => {
                let mut v = item.clone();
                discard_nulls(&mut v);
                original.push(v);
            }
        }
    }
    Ok(original)
}

/// The common kind of all elements of the slices.
fn slice_element_type(slices: &[&[Value]]) -> Result<Kind, PatchError> {
    let mut kind = None;
    for v in slices.iter().flat_map(|s| s.iter()) {
        let k = kind_of(v);
        match kind {
            None => {
                if k == Kind::Slice {
                    return Err(PatchError::Unprocessable(ERR_NO_LIST_OF_LISTS.into()));
                }
                if v.is_null() {
                    return Err(bad("list elements must not be null"));
                }
                kind = Some(k);
            }
            Some(prev) if prev != k => {
                let shown: Vec<String> = slices
                    .iter()
                    .map(|s| go_fmt(&Value::Array(s.to_vec())))
                    .collect();
                return Err(bad(format!(
                    "list element types are not identical: [{}]",
                    shown.join(" ")
                )));
            }
            Some(_) => {}
        }
    }
    kind.ok_or_else(|| bad("no elements in any of the given slices"))
}

/// Splits `merged` into items present in `by` (by merge key, or by value for scalars) and
/// the rest, keeping order.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut rest = Vec::new();
    for v in merged {
        let found = if merge_key.is_empty() {
            by.contains(&v)
        } else {
            let Value::Object(m) = &v else {
                return Err(err_bad_arg_type("map[string]interface {}", &v));
            };
            let Some(key_value) = m.get(merge_key) else {
                return Err(err_no_merge_key(m, merge_key));
            };
            let mut found = false;
            for (i, b) in by.iter().enumerate() {
                let Value::Object(bm) = b else {
                    return Err(bad(format!("value for key {i} is not a map")));
                };
                if bm.get(merge_key) == Some(key_value) {
                    found = true;
                    break;
                }
            }
            found
        };
        if found { present.push(v) } else { rest.push(v) }
    }
    Ok((present, rest))
}

/// The value identifying an item: its merge key for objects, itself otherwise.
fn identity<'v>(v: &'v Value, merge_key: &str, kind: Kind) -> Option<&'v Value> {
    if kind == Kind::Map {
        v.as_object().and_then(|m| m.get(merge_key))
    } else {
        Some(v)
    }
}

fn index_of(list: &[Value], v: &Value, merge_key: &str, kind: Kind) -> Option<usize> {
    let wanted = identity(v, merge_key, kind);
    list.iter()
        .position(|item| identity(item, merge_key, kind) == wanted)
}

fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted(
        server_only,
        patch_items,
        server_order,
        merge_key,
        kind,
    ))
}

/// Sorts `items` by their position in `order`; `$patch: delete` items go last.
fn normalize_slice_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let (mut keep, deletes) = if kind == Kind::Map {
        for v in items.iter().chain(order.iter()) {
            let Value::Object(m) = v else {
                return Err(err_bad_arg_type("map[string]interface {}", v));
            };
            if !m.contains_key(merge_key) {
                return Err(err_no_merge_key(m, merge_key));
            }
        }
        items
            .into_iter()
            .partition::<Vec<_>, _>(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
    } else {
        (items, Vec::new())
    };
    keep.sort_by_key(|v| index_of(order, v, merge_key, kind).unwrap_or(usize::MAX));
    keep.extend(deletes);
    Ok(keep)
}

/// Interleaves `left` (original-only items) into `right` (patch items) by their positions in
/// `server_order`, as kube's `mergeSortedSlice` does.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index_of(server_order, l, merge_key, kind),
                    index_of(server_order, r, merge_key, kind),
                ) {
                    (Some(li), Some(ri)) => li.cmp(&ri) == Ordering::Less,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Checks that the patch list's items appear in the `$setElementOrder` list in the same
/// relative order.
fn validate_patch_with_set_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut kept = Vec::new();
        for v in patch_list {
            let Value::Object(m) = v else {
                return Err(err_bad_arg_type("map[string]interface {}", v));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                kept.push(v);
            }
        }
        kept
    };
    let (mut p, mut s) = (0, 0);
    while let (Some(item), Some(ordered)) = (non_delete.get(p), order.get(s)) {
        if item.get(DIRECTIVE).is_some() && item.is_object() {
            p += 1;
            continue;
        }
        let equal = if merge_key.is_empty() {
            item == &ordered
        } else {
            let (Value::Object(l), Value::Object(r)) = (item, ordered) else {
                return Err(err_bad_arg_type("map[string]interface {}", ordered));
            };
            let Some(lk) = l.get(merge_key) else {
                return Err(err_no_merge_key(l, merge_key));
            };
            let Some(rk) = r.get(merge_key) else {
                return Err(err_no_merge_key(r, merge_key));
            };
            lk == rk
        };
        if equal {
            p += 1;
        }
        s += 1;
    }
    if p < non_delete.len() && s >= order.len() {
        return Err(bad(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_fmt(&Value::Array(patch_list.to_vec())),
            go_fmt(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

/// Drops `null` members of objects, recursively.
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, c| !c.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Removes objects carrying `$patch` (`None` when `v` itself is one).
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                m.into_iter()
                    .filter_map(|(k, c)| remove_directives(c).map(|c| (k, c)))
                    .collect(),
            ))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE
        || k == RETAIN_KEYS
        || k.starts_with(SET_ELEMENT_ORDER)
        || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// Removes directive keys everywhere (kube's typed decoding drops them as unknown fields).
fn strip_directive_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !is_directive_key(k));
            m.values_mut().for_each(strip_directive_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_directive_keys),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(spec: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"template": {"spec": spec}}
        })
    }

    fn smp(kind: (&str, &str), original: Value, patch: Value) -> Result<Value, PatchError> {
        let Some(types) = ObjectType::builtin(kind.0, kind.1) else {
            panic!("{kind:?} is built in")
        };
        apply_strategic_merge_patch(&original, &patch, &types)
    }

    fn pod_spec(v: Result<Value, PatchError>) -> Value {
        match v {
            Ok(d) => d["spec"]["template"]["spec"].clone(),
            Err(e) => panic!("{e}"),
        }
    }

    const DEPLOY: (&str, &str) = ("apps", "Deployment");

    #[test]
    fn deployment_containers_merge_by_name_and_keep_unnamed_fields() {
        let original = deployment(json!({"containers": [
            {"name": "a", "image": "a:1", "args": ["x"]},
            {"name": "b", "image": "b:1"}
        ]}));
        let patch = deployment(json!({"containers": [{"name": "b", "image": "b:2"}]}));
        let got = pod_spec(smp(DEPLOY, original, patch));
        assert_eq!(
            got,
            json!({"containers": [
                {"name": "a", "image": "a:1", "args": ["x"]},
                {"name": "b", "image": "b:2"}
            ]})
        );
    }

    #[test]
    fn cases() {
        let cases: Vec<(&str, Value, Value, Value)> = vec![
            (
                "a new container goes before the original ones (no $setElementOrder)",
                json!({"containers": [{"name": "a"}]}),
                json!({"containers": [{"name": "b", "image": "b"}]}),
                json!({"containers": [{"name": "b", "image": "b"}, {"name": "a"}]}),
            ),
            (
                "$setElementOrder puts the new container last",
                json!({"containers": [{"name": "a"}]}),
                json!({"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                       "containers": [{"name": "b", "image": "b"}]}),
                json!({"containers": [{"name": "a"}, {"name": "b", "image": "b"}]}),
            ),
            (
                "$setElementOrder reorders existing containers",
                json!({"containers": [{"name": "a"}, {"name": "b"}]}),
                json!({"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}),
                json!({"containers": [{"name": "b"}, {"name": "a"}]}),
            ),
            (
                "env entry deleted with $patch: delete",
                json!({"containers": [{"name": "a", "env": [
                    {"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]}),
                json!({"containers": [{"name": "a", "env": [{"name": "X", "$patch": "delete"}]}]}),
                json!({"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}),
            ),
            (
                "env entries merge by name",
                json!({"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}),
                json!({"containers": [{"name": "a", "env": [{"name": "X", "value": "2"}, {"name": "Z", "value": "3"}]}]}),
                json!({"containers": [{"name": "a", "env": [{"name": "X", "value": "2"}, {"name": "Z", "value": "3"}]}]}),
            ),
            (
                "null deletes a field of a merged item",
                json!({"containers": [{"name": "a", "image": "i", "command": ["c"]}]}),
                json!({"containers": [{"name": "a", "command": null}]}),
                json!({"containers": [{"name": "a", "image": "i"}]}),
            ),
            (
                "container ports merge by containerPort",
                json!({"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]}),
                json!({"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "web"}]}]}),
                json!({"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 443}]}]}),
            ),
            (
                "volumes merge by name, volumeMounts by mountPath",
                json!({"volumes": [{"name": "v", "emptyDir": {}}],
                       "containers": [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/a"}]}]}),
                json!({"volumes": [{"name": "w", "emptyDir": {}}],
                       "containers": [{"name": "a", "volumeMounts": [{"name": "w", "mountPath": "/a"}]}]}),
                json!({"volumes": [{"name": "w", "emptyDir": {}}, {"name": "v", "emptyDir": {}}],
                       "containers": [{"name": "a", "volumeMounts": [{"name": "w", "mountPath": "/a"}]}]}),
            ),
            (
                "$retainKeys clears a volume's other source",
                json!({"volumes": [{"name": "v", "emptyDir": {}}]}),
                json!({"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}),
                json!({"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}),
            ),
            (
                "tolerations have no merge strategy and replace",
                json!({"tolerations": [{"key": "a"}, {"key": "b"}]}),
                json!({"tolerations": [{"key": "c"}]}),
                json!({"tolerations": [{"key": "c"}]}),
            ),
            (
                "imagePullSecrets merge by name",
                json!({"imagePullSecrets": [{"name": "a"}]}),
                json!({"imagePullSecrets": [{"name": "b"}]}),
                json!({"imagePullSecrets": [{"name": "b"}, {"name": "a"}]}),
            ),
            (
                "$patch: replace on a list replaces it",
                json!({"containers": [{"name": "a"}, {"name": "b"}]}),
                json!({"containers": [{"name": "c"}, {"$patch": "replace"}]}),
                json!({"containers": [{"name": "c"}]}),
            ),
            (
                "$patch: replace on an object replaces it",
                json!({"securityContext": {"runAsUser": 1, "runAsGroup": 2}}),
                json!({"securityContext": {"$patch": "replace", "runAsUser": 3}}),
                json!({"securityContext": {"runAsUser": 3}}),
            ),
            (
                "$patch: delete on an existing object empties it",
                json!({"securityContext": {"runAsUser": 1}}),
                json!({"securityContext": {"$patch": "delete"}}),
                json!({"securityContext": {}}),
            ),
            (
                "$patch: delete on a missing object adds nothing",
                json!({}),
                json!({"securityContext": {"$patch": "delete"}}),
                json!({}),
            ),
            (
                "patch order wins for items in the patch (kube test: preserve the order 1)",
                json!({"containers": [{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}]}),
                json!({"containers": [{"name": "3", "image": "c"}, {"name": "1", "image": "a"},
                                      {"name": "2", "workingDir": "x"}]}),
                json!({"containers": [{"name": "3", "image": "c"}, {"name": "1", "image": "a"},
                                      {"name": "2", "image": "b", "workingDir": "x"}]}),
            ),
            (
                "original-only items interleave by original order (preserve the order 2)",
                json!({"containers": [{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}]}),
                json!({"containers": [{"name": "3", "image": "c"}, {"name": "1", "image": "a"}]}),
                json!({"containers": [{"name": "2", "image": "b"}, {"name": "3", "image": "c"},
                                      {"name": "1", "image": "a"}]}),
            ),
            (
                "a new list drops directive items and nulls",
                json!({}),
                json!({"containers": [{"name": "a", "image": null}, {"name": "b", "$patch": "delete"}]}),
                json!({"containers": [{"name": "a"}]}),
            ),
        ];
        for (name, original, patch, want) in cases {
            let got = pod_spec(smp(DEPLOY, deployment(original), deployment(patch)));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn kubectl_client_side_apply_patch() {
        let original = json!({
            "metadata": {"name": "d", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "template": {"spec": {"containers": [{"name": "app", "image": "x:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}}
            }
        });
        let patch = json!({
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":1}"}},
            "spec": {
                "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
                "template": {"spec": {
                    "$setElementOrder/containers": [{"name": "app"}],
                    "containers": [{
                        "$setElementOrder/env": [{"name": "A"}],
                        "env": [{"$patch": "delete", "name": "B"}],
                        "image": "x:2",
                        "name": "app"
                    }]
                }}
            }
        });
        assert_eq!(
            smp(DEPLOY, original, patch),
            Ok(json!({
                "metadata": {"name": "d", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":1}"}},
                "spec": {
                    "strategy": {"type": "Recreate"},
                    "template": {"spec": {"containers": [{"name": "app", "image": "x:2",
                        "env": [{"name": "A", "value": "1"}]}]}}
                }
            }))
        );
    }

    #[test]
    fn metadata_lists() {
        let cases: Vec<(&str, Value, Value, Value)> = vec![
            (
                "finalizers merge as a set in original order",
                json!({"finalizers": ["a", "b"]}),
                json!({"finalizers": ["b", "c"]}),
                json!({"finalizers": ["a", "b", "c"]}),
            ),
            (
                "scalar set keeps patch order (preserve the order of an int list)",
                json!({"finalizers": ["1", "2", "3"]}),
                json!({"finalizers": ["3", "1"]}),
                json!({"finalizers": ["2", "3", "1"]}),
            ),
            (
                "a new finalizer goes first",
                json!({"finalizers": ["a", "b"]}),
                json!({"finalizers": ["c"]}),
                json!({"finalizers": ["c", "a", "b"]}),
            ),
            (
                "$deleteFromPrimitiveList removes finalizers",
                json!({"finalizers": ["a", "b", "c"]}),
                json!({"$deleteFromPrimitiveList/finalizers": ["b"]}),
                json!({"finalizers": ["a", "c"]}),
            ),
            (
                "ownerReferences merge by uid",
                json!({"ownerReferences": [{"uid": "1", "name": "a"}]}),
                json!({"ownerReferences": [{"uid": "2", "name": "b"}]}),
                json!({"ownerReferences": [{"uid": "2", "name": "b"}, {"uid": "1", "name": "a"}]}),
            ),
            (
                "labels merge and null deletes one",
                json!({"labels": {"a": "1", "b": "2"}}),
                json!({"labels": {"a": null, "c": "3"}}),
                json!({"labels": {"b": "2", "c": "3"}}),
            ),
        ];
        for (name, original, patch, want) in cases {
            let got = smp(
                ("", "ConfigMap"),
                json!({"metadata": original}),
                json!({"metadata": patch}),
            );
            assert_eq!(got, Ok(json!({"metadata": want})), "{name}");
        }
    }

    #[test]
    fn status_conditions_merge_by_type() {
        let original = json!({"status": {"conditions": [
            {"type": "Available", "status": "False"},
            {"type": "Progressing", "status": "True"}
        ]}});
        let patch = json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}});
        assert_eq!(
            smp(DEPLOY, original, patch),
            Ok(json!({"status": {"conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Progressing", "status": "True"}
            ]}}))
        );
    }

    #[test]
    fn service_ports_merge_by_port() {
        let original =
            json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
        let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
        assert_eq!(
            smp(("", "Service"), original, patch),
            Ok(json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}}))
        );
    }

    #[test]
    fn rbac_rules_are_atomic() {
        let original = json!({"rules": [{"verbs": ["get"], "resources": ["pods"]}]});
        let patch = json!({"rules": [{"verbs": ["list"], "resources": ["secrets"]}]});
        assert_eq!(
            smp(
                ("rbac.authorization.k8s.io", "Role"),
                original,
                patch.clone()
            ),
            Ok(patch)
        );
    }

    #[test]
    fn configmap_data_merges_like_merge_patch() {
        let original = json!({"data": {"a": "1", "b": "2"}, "metadata": {"name": "x"}});
        let patch = json!({"data": {"a": "9", "b": null}, "metadata": {"annotations": {"k": "v"}}});
        assert_eq!(
            smp(("", "ConfigMap"), original, patch),
            Ok(json!({"data": {"a": "9"}, "metadata": {"name": "x", "annotations": {"k": "v"}}}))
        );
    }

    #[test]
    fn whole_object_directives() {
        let original = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
        assert_eq!(
            smp(
                ("", "ConfigMap"),
                original.clone(),
                json!({"$patch": "replace", "data": {"b": "2"}})
            ),
            Ok(json!({"data": {"b": "2"}}))
        );
        assert_eq!(
            smp(("", "ConfigMap"), original.clone(), Value::Null),
            Ok(original)
        );
    }

    #[test]
    fn errors_carry_kube_codes() {
        let cases: Vec<(&str, Value, Value, u16, &str)> = vec![
            (
                "a patch that is not an object",
                json!({}),
                json!([1]),
                400,
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                "unknown $patch value",
                json!({"spec": {}}),
                json!({"spec": {"$patch": "frob"}}),
                400,
                "unknown patch type: frob in map: map[$patch:frob]",
            ),
            (
                "$patch: delete without the merge key",
                deployment(json!({"containers": [{"name": "a"}]})),
                deployment(json!({"containers": [{"$patch": "delete", "image": "x"}]})),
                400,
                "map: map[$patch:delete image:x] does not contain declared merge key: name",
            ),
            (
                "merge item without the merge key",
                deployment(json!({"containers": [{"name": "a"}]})),
                deployment(json!({"containers": [{"image": "x"}]})),
                400,
                "map: map[image:x] does not contain declared merge key: name",
            ),
            (
                "$patch: merge inside a list",
                deployment(json!({"containers": [{"name": "a"}]})),
                deployment(json!({"containers": [{"$patch": "merge"}]})),
                400,
                "merging lists cannot yet be specified in the patch",
            ),
            (
                "$retainKeys that is not a list",
                json!({"spec": {}}),
                json!({"spec": {"$retainKeys": "x"}}),
                400,
                "invalid patch format of retainKeys",
            ),
            (
                "$retainKeys missing a patched key",
                json!({"spec": {}}),
                json!({"spec": {"$retainKeys": ["a"], "b": 1}}),
                400,
                "invalid patch format of retainKeys",
            ),
            (
                "$deleteFromPrimitiveList without a field",
                json!({"metadata": {}}),
                json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}),
                400,
                "invalid patch format of primitive list",
            ),
            (
                "$setElementOrder contradicting the patch order",
                deployment(json!({"containers": [{"name": "a"}, {"name": "b"}]})),
                deployment(json!({
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "b"}, {"name": "a"}]
                })),
                400,
                "The order in patch list:\n[map[name:b] map[name:a]]\n doesn't match $setElementOrder list:\n[map[name:a] map[name:b]]\n",
            ),
            (
                "lists of lists",
                json!({"metadata": {"finalizers": [["a"]]}}),
                json!({"metadata": {"finalizers": [["b"]]}}),
                422,
                "lists of lists are not supported",
            ),
        ];
        for (name, original, patch, code, message) in cases {
            match smp(DEPLOY, original, patch) {
                Ok(v) => panic!("{name}: unexpectedly {v}"),
                Err(e) => {
                    assert_eq!(e.status_code(), code, "{name}");
                    assert_eq!(e.to_string(), message, "{name}");
                }
            }
        }
    }

    #[test]
    fn directive_keys_never_reach_the_result() {
        let got = smp(
            DEPLOY,
            deployment(json!({})),
            deployment(json!({"containers": [{"name": "a", "$retainKeys": ["name"],
                "$setElementOrder/env": [{"name": "X"}], "env": [{"name": "X"}]}]})),
        );
        assert_eq!(
            pod_spec(got),
            json!({"containers": [{"name": "a", "env": [{"name": "X"}]}]})
        );
    }
}

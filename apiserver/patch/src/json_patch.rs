//! RFC 6902 JSON Patch (`application/json-patch+json`) with the semantics of the Go library
//! kube-apiserver uses (evanphx/json-patch v4):
//!
//! - `test` on a missing key compares as `null`, so `test /metadata/finalizers == null`
//!   passes on an object without finalizers (kube-runtime's finalizer helper relies on it);
//!   the parent container must exist;
//! - `replace` of a missing object key adds it; `copy` from a missing object key copies `null`;
//! - array indices follow Go's `strconv.Atoi` and may be negative (counted from the end);
//!   `-` appends on `add`;
//! - a path's first segment (before the first `/`) is ignored, `""` addresses the whole
//!   document only for `replace` and `test`;
//! - `copy` may grow the document by at most 3 MiB in total (kube's `JSONPatchMaxCopyBytes`).
//!
//! Errors: a body that is not a list of objects is 400, more than 10,000 operations is 413,
//! any failed operation is 422 Invalid (see [`PatchError`]).

use serde_json::Value;

use super::error::PatchError;

/// The most operations kube-apiserver accepts in one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes `copy` operations may add to a document in one patch (kube's default
/// `JSONPatchMaxCopyBytes`, 3 MiB).
pub const MAX_ACCUMULATED_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The deepest nesting of objects and arrays a patched document may have. It matches the
/// recursion limit of `serde_json`'s parser, so every stored object can be read back.
pub const MAX_DOCUMENT_DEPTH: usize = 128;

const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";

/// Applies the JSON patch `patch` (the parsed request body) to `doc`.
pub fn apply_json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops = decode(patch)?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            max: MAX_JSON_PATCH_OPERATIONS,
            got: ops.len(),
        });
    }
    let mut doc = doc.clone();
    let mut copied = 0usize;
    for op in ops {
        apply_op(&mut doc, op, &mut copied).map_err(PatchError::Unprocessable)?;
    }
    if depth_exceeds(&doc, MAX_DOCUMENT_DEPTH) {
        return Err(PatchError::Unprocessable(format!(
            "the patched document is nested deeper than {MAX_DOCUMENT_DEPTH} levels"
        )));
    }
    Ok(doc)
}

/// One operation as Go's `map[string]*json.RawMessage`: an absent member and an explicit
/// `null` are both `None`.
struct Op<'a> {
    kind: Option<&'a Value>,
    path: Option<&'a Value>,
    from: Option<&'a Value>,
    value: Option<&'a Value>,
}

fn decode(patch: &Value) -> Result<Vec<Op<'_>>, PatchError> {
    let items = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_kind(other)
            )));
        }
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Null => ops.push(Op {
                kind: None,
                path: None,
                from: None,
                value: None,
            }),
            Value::Object(m) => {
                let member = |k: &str| m.get(k).filter(|v| !v.is_null());
                ops.push(Op {
                    kind: member("op"),
                    path: member("path"),
                    from: member("from"),
                    value: member("value"),
                });
            }
            other => {
                return Err(PatchError::BadRequest(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    go_kind(other)
                )));
            }
        }
    }
    Ok(ops)
}

/// Go's name for a JSON value's kind in unmarshal errors.
fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A string member (`path`, `from`); `Err` carries Go's error text.
fn string_member(v: Option<&Value>, missing: &str) -> Result<String, String> {
    match v {
        None => Err(format!("{missing}: {MISSING}")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            go_kind(other)
        )),
    }
}

fn apply_op(doc: &mut Value, op: Op<'_>, copied: &mut usize) -> Result<(), String> {
    let kind = match op.kind {
        Some(Value::String(s)) => s.as_str(),
        _ => "unknown",
    };
    let path = || string_member(op.path, "operation missing path field");
    let from = || string_member(op.from, "operation, missing from field");
    let value = op.value.cloned().unwrap_or(Value::Null);
    match kind {
        "add" => {
            let path =
                path().map_err(|_| format!("add operation failed to decode path: {MISSING}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("add operation does not apply: doc is missing path: \"{path}\": {MISSING}")
            })?;
            container_add(con, &key, value)
                .map_err(|e| format!("error in add for path: '{path}': {e}"))
        }
        "remove" => {
            let path =
                path().map_err(|_| format!("remove operation failed to decode path: {MISSING}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!(
                    "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
                )
            })?;
            container_remove(con, &key)
                .map(drop)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "replace" => {
            let path =
                path().map_err(|e| format!("replace operation failed to decode path: {e}"))?;
            if path.is_empty() {
                return match value {
                    v @ (Value::Object(_) | Value::Array(_)) => {
                        *doc = v;
                        Ok(())
                    }
                    _ => Err("replace operation value must be object or array: %!w(<nil>)".into()),
                };
            }
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("replace operation does not apply: doc is missing path: {path}: {MISSING}")
            })?;
            if container_get(con, &key).is_err() {
                return Err(format!(
                    "replace operation does not apply: doc is missing key: {path}: {MISSING}"
                ));
            }
            container_set(con, &key, value)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "move" => {
            let from = from().map_err(|e| format!("move operation failed to decode from: {e}"))?;
            let (con, key) = find_container(doc, &from).ok_or_else(|| {
                format!(
                    "move operation does not apply: doc is missing from path: {from}: {MISSING}"
                )
            })?;
            container_get(con, &key)
                .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let moved = container_remove(con, &key)
                .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let path = path().map_err(|e| format!("move operation failed to decode path: {e}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!(
                    "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
                )
            })?;
            container_add(con, &key, moved)
                .map_err(|e| format!("error in move for path: '{path}': {e}"))
        }
        "test" => {
            let path = path().map_err(|e| format!("test operation failed to decode path: {e}"))?;
            let failed = || format!("testing value {path} failed: test failed");
            if path.is_empty() {
                return match op.value {
                    Some(v) if v == doc => Ok(()),
                    _ => Err(failed()),
                };
            }
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("test operation does not apply: is missing path: {path}: {MISSING}")
            })?;
            let current = container_get(con, &key)
                .map_err(|e| format!("error in test for path: '{path}': {e}"))?;
            match (current.filter(|v| !v.is_null()), op.value) {
                (None, None) => Ok(()),
                (Some(cur), Some(expected)) if cur == expected => Ok(()),
                _ => Err(failed()),
            }
        }
        "copy" => {
            let from = from().map_err(|e| format!("copy operation failed to decode from: {e}"))?;
            let (con, key) = find_container(doc, &from).ok_or_else(|| {
                format!(
                    "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
                )
            })?;
            let source = container_get(con, &key)
                .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
                .cloned()
                .unwrap_or(Value::Null);
            let path =
                path().map_err(|_| format!("copy operation failed to decode path: {MISSING}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!(
                    "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
                )
            })?;
            let size = ocm_apiserver_json::to_vec(&source)
                .map(|b| b.len())
                .unwrap_or(usize::MAX);
            *copied = copied.saturating_add(size);
            if *copied > MAX_ACCUMULATED_COPY_BYTES {
                return Err(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_ACCUMULATED_COPY_BYTES}"
                ));
            }
            container_add(con, &key, source)
                .map_err(|e| format!("error while adding value during copy: {e}"))
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}

/// RFC 6901 unescaping: `~1` becomes `/`, then `~0` becomes `~`.
fn unescape(token: &str) -> String {
    if token.contains('~') {
        token.replace("~1", "/").replace("~0", "~")
    } else {
        token.to_string()
    }
}

/// The container (object or array) holding the last token of `path`, and that token
/// (unescaped). `None` when the path has no `/`, or an intermediate token is missing, null, a
/// scalar, or not a valid index.
fn find_container<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let tokens: Vec<&str> = path.split('/').collect();
    let (last, parents) = tokens.split_last()?;
    if parents.is_empty() {
        return None;
    }
    let mut current = doc;
    for token in &parents[1..] {
        let key = unescape(token);
        let next = match current {
            Value::Object(m) => m.get_mut(&key)?,
            Value::Array(items) => {
                let idx = resolve_index(&key, items.len()).ok()?;
                items.get_mut(idx)?
            }
            _ => return None,
        };
        if !matches!(next, Value::Object(_) | Value::Array(_)) {
            return None;
        }
        current = next;
    }
    if !matches!(current, Value::Object(_) | Value::Array(_)) {
        return None;
    }
    Some((current, unescape(last)))
}

/// Go's `strconv.Atoi`.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

fn go_quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// An existing element's index (`get`/`set`/`remove`): negative counts from the end.
fn resolve_index(key: &str, len: usize) -> Result<usize, String> {
    let idx = atoi(key)?;
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let invalid = || format!("Unable to access invalid index: {idx}: {INVALID_INDEX}");
    let idx_abs = if idx < 0 {
        if idx < -len_i {
            return Err(invalid());
        }
        idx + len_i
    } else {
        idx
    };
    if idx_abs >= len_i {
        return Err(invalid());
    }
    usize::try_from(idx_abs).map_err(|_| invalid())
}

/// The value at `key` (`Ok(None)` for a missing object key, as in Go).
fn container_get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match con {
        Value::Object(m) => Ok(m.get(key)),
        Value::Array(items) => {
            let idx = resolve_index(key, items.len())?;
            Ok(items.get(idx))
        }
        _ => Err(INVALID_INDEX.to_string()),
    }
}

fn container_set(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            let idx = resolve_index(key, items.len())?;
            if let Some(slot) = items.get_mut(idx) {
                *slot = value;
            }
            Ok(())
        }
        _ => Err(INVALID_INDEX.to_string()),
    }
}

fn container_add(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let idx = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let new_len = i64::try_from(items.len()).unwrap_or(i64::MAX) + 1;
            let invalid = || format!("Unable to access invalid index: {idx}: {INVALID_INDEX}");
            if idx >= new_len {
                return Err(invalid());
            }
            let idx = if idx < 0 {
                if idx < -new_len {
                    return Err(invalid());
                }
                idx + new_len
            } else {
                idx
            };
            let idx = usize::try_from(idx).map_err(|_| invalid())?;
            items.insert(idx.min(items.len()), value);
            Ok(())
        }
        _ => Err(INVALID_INDEX.to_string()),
    }
}

fn container_remove(con: &mut Value, key: &str) -> Result<Value, String> {
    match con {
        Value::Object(m) => m
            .shift_remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(items) => {
            let idx = resolve_index(key, items.len())?;
            Ok(items.remove(idx))
        }
        _ => Err(INVALID_INDEX.to_string()),
    }
}

/// Whether `doc` nests objects/arrays deeper than `limit` levels (iterative, so it cannot
/// overflow the stack on adversarial documents).
pub(crate) fn depth_exceeds(doc: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(doc, 0)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Object(m) => Box::new(m.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        let depth = depth + 1;
        if depth > limit {
            return true;
        }
        stack.extend(children.map(|c| (c, depth)));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(doc: Value, patch: Value) -> Value {
        match apply_json_patch(&doc, &patch) {
            Ok(v) => v,
            Err(e) => panic!("patch {patch} failed: {e}"),
        }
    }

    fn err(doc: Value, patch: Value) -> PatchError {
        match apply_json_patch(&doc, &patch) {
            Ok(v) => panic!("patch {patch} unexpectedly gave {v}"),
            Err(e) => e,
        }
    }

    #[test]
    fn successful_operations() {
        let cases: Vec<(&str, Value, Value, Value)> = vec![
            (
                "add sets a new object key",
                json!({"a": 1}),
                json!([{"op": "add", "path": "/b", "value": 2}]),
                json!({"a": 1, "b": 2}),
            ),
            (
                "add replaces an existing object key",
                json!({"a": 1}),
                json!([{"op": "add", "path": "/a", "value": [1]}]),
                json!({"a": [1]}),
            ),
            (
                "add with dash appends to an array",
                json!({"a": [1, 2]}),
                json!([{"op": "add", "path": "/a/-", "value": 3}]),
                json!({"a": [1, 2, 3]}),
            ),
            (
                "add inserts at an index",
                json!({"a": [1, 2]}),
                json!([{"op": "add", "path": "/a/0", "value": 0}]),
                json!({"a": [0, 1, 2]}),
            ),
            (
                "add at index len appends",
                json!({"a": [1]}),
                json!([{"op": "add", "path": "/a/1", "value": 2}]),
                json!({"a": [1, 2]}),
            ),
            (
                "add at negative index counts from the end",
                json!({"a": [1, 2]}),
                json!([{"op": "add", "path": "/a/-1", "value": 9}]),
                json!({"a": [1, 2, 9]}),
            ),
            (
                "add without value adds null",
                json!({}),
                json!([{"op": "add", "path": "/a"}]),
                json!({"a": null}),
            ),
            (
                "pointer escapes ~1 and ~0",
                json!({"metadata": {"annotations": {}}}),
                json!([{"op": "add", "path": "/metadata/annotations/a.io~1b~0c", "value": "x"}]),
                json!({"metadata": {"annotations": {"a.io/b~c": "x"}}}),
            ),
            (
                "remove an object key",
                json!({"a": 1, "b": 2}),
                json!([{"op": "remove", "path": "/a"}]),
                json!({"b": 2}),
            ),
            (
                "remove an array element",
                json!({"a": [1, 2, 3]}),
                json!([{"op": "remove", "path": "/a/1"}]),
                json!({"a": [1, 3]}),
            ),
            (
                "remove the last array element with -1",
                json!({"a": [1, 2, 3]}),
                json!([{"op": "remove", "path": "/a/-1"}]),
                json!({"a": [1, 2]}),
            ),
            (
                "replace an existing key",
                json!({"a": 1}),
                json!([{"op": "replace", "path": "/a", "value": 2}]),
                json!({"a": 2}),
            ),
            (
                "replace of a missing object key adds it (Go v4)",
                json!({"a": 1}),
                json!([{"op": "replace", "path": "/b", "value": 2}]),
                json!({"a": 1, "b": 2}),
            ),
            (
                "replace the whole document",
                json!({"a": 1}),
                json!([{"op": "replace", "path": "", "value": {"b": 1}}]),
                json!({"b": 1}),
            ),
            (
                "move a key",
                json!({"a": {"x": 1}, "b": {}}),
                json!([{"op": "move", "from": "/a/x", "path": "/b/y"}]),
                json!({"a": {}, "b": {"y": 1}}),
            ),
            (
                "copy a value",
                json!({"a": [1], "b": {}}),
                json!([{"op": "copy", "from": "/a", "path": "/b/a"}]),
                json!({"a": [1], "b": {"a": [1]}}),
            ),
            (
                "copy from a missing key copies null (Go v4)",
                json!({"b": {}}),
                json!([{"op": "copy", "from": "/nope", "path": "/b/a"}]),
                json!({"b": {"a": null}}),
            ),
            (
                "test of a missing key against null passes (kube-runtime finalizer helper)",
                json!({"metadata": {"name": "x"}}),
                json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": null},
                    {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}
                ]),
                json!({"metadata": {"name": "x", "finalizers": ["f"]}}),
            ),
            (
                "test of a missing key without value passes",
                json!({"a": {}}),
                json!([{"op": "test", "path": "/a/b"}]),
                json!({"a": {}}),
            ),
            (
                "test of an explicit null against null passes",
                json!({"a": null}),
                json!([{"op": "test", "path": "/a", "value": null}]),
                json!({"a": null}),
            ),
            (
                "test compares objects regardless of key order",
                json!({"a": {"x": 1, "y": [1, {"z": true}]}}),
                json!([{"op": "test", "path": "/a", "value": {"y": [1, {"z": true}], "x": 1}}]),
                json!({"a": {"x": 1, "y": [1, {"z": true}]}}),
            ),
            (
                "test the whole document",
                json!({"a": 1}),
                json!([{"op": "test", "path": "", "value": {"a": 1}}]),
                json!({"a": 1}),
            ),
            (
                "a path's first segment is ignored (Go v4)",
                json!({"a": 1}),
                json!([{"op": "replace", "path": "x/a", "value": 2}]),
                json!({"a": 2}),
            ),
            (
                "empty key addresses the empty-string member",
                json!({}),
                json!([{"op": "add", "path": "/", "value": 1}]),
                json!({"": 1}),
            ),
            (
                "null patch is a no-op",
                json!({"a": 1}),
                Value::Null,
                json!({"a": 1}),
            ),
            (
                "ops apply in order",
                json!({"a": 1}),
                json!([
                    {"op": "add", "path": "/b", "value": {}},
                    {"op": "move", "from": "/a", "path": "/b/a"},
                    {"op": "test", "path": "/b/a", "value": 1}
                ]),
                json!({"b": {"a": 1}}),
            ),
        ];
        for (name, doc, patch, want) in cases {
            let got = ok(doc, patch);
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn failing_operations_are_422_with_go_messages() {
        let cases: Vec<(&str, Value, Value, &str)> = vec![
            (
                "test against a different value fails",
                json!({"metadata": {"resourceVersion": "5"}}),
                json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "4"}]),
                "testing value /metadata/resourceVersion failed: test failed",
            ),
            (
                "test of a missing key against a value fails",
                json!({"a": {}}),
                json!([{"op": "test", "path": "/a/b", "value": 1}]),
                "testing value /a/b failed: test failed",
            ),
            (
                "test needs the parent to exist",
                json!({}),
                json!([{"op": "test", "path": "/a/b", "value": null}]),
                "test operation does not apply: is missing path: /a/b: missing value",
            ),
            (
                "test of an existing value against null fails",
                json!({"a": 1}),
                json!([{"op": "test", "path": "/a", "value": null}]),
                "testing value /a failed: test failed",
            ),
            (
                "test compares numbers by their text like Go",
                json!({"a": 1}),
                json!([{"op": "test", "path": "/a", "value": 1.0}]),
                "testing value /a failed: test failed",
            ),
            (
                "add into a missing parent fails",
                json!({}),
                json!([{"op": "add", "path": "/a/b", "value": 1}]),
                "add operation does not apply: doc is missing path: \"/a/b\": missing value",
            ),
            (
                "add past the end of an array fails",
                json!({"a": [1]}),
                json!([{"op": "add", "path": "/a/3", "value": 1}]),
                "error in add for path: '/a/3': Unable to access invalid index: 3: invalid index referenced",
            ),
            (
                "add with a non-numeric index fails",
                json!({"a": [1]}),
                json!([{"op": "add", "path": "/a/x", "value": 1}]),
                "error in add for path: '/a/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                "add to the root path fails",
                json!({}),
                json!([{"op": "add", "path": "", "value": {}}]),
                "add operation does not apply: doc is missing path: \"\": missing value",
            ),
            (
                "remove of a missing key fails",
                json!({}),
                json!([{"op": "remove", "path": "/a"}]),
                "error in remove for path: '/a': Unable to remove nonexistent key: a: missing value",
            ),
            (
                "remove past the end of an array fails",
                json!({"a": []}),
                json!([{"op": "remove", "path": "/a/0"}]),
                "error in remove for path: '/a/0': Unable to access invalid index: 0: invalid index referenced",
            ),
            (
                "replace past the end of an array fails",
                json!({"a": [1]}),
                json!([{"op": "replace", "path": "/a/1", "value": 2}]),
                "replace operation does not apply: doc is missing key: /a/1: missing value",
            ),
            (
                "move from a missing key fails",
                json!({}),
                json!([{"op": "move", "from": "/a", "path": "/b"}]),
                "error in move for path: 'a': Unable to remove nonexistent key: a: missing value",
            ),
            (
                "move into its own child fails",
                json!({"a": {}}),
                json!([{"op": "move", "from": "/a", "path": "/a/b"}]),
                "move operation does not apply: doc is missing destination path: /a/b: missing value",
            ),
            (
                "unknown op fails",
                json!({}),
                json!([{"op": "frobnicate", "path": "/a"}]),
                "Unexpected kind: frobnicate",
            ),
            (
                "missing op fails",
                json!({}),
                json!([{"path": "/a"}]),
                "Unexpected kind: unknown",
            ),
            (
                "null operation fails",
                json!({}),
                json!([null]),
                "Unexpected kind: unknown",
            ),
            (
                "missing path fails",
                json!({}),
                json!([{"op": "add", "value": 1}]),
                "add operation failed to decode path: missing value",
            ),
            (
                "intermediate scalar is not a container",
                json!({"a": 1}),
                json!([{"op": "add", "path": "/a/b", "value": 1}]),
                "add operation does not apply: doc is missing path: \"/a/b\": missing value",
            ),
            (
                "a failed op discards earlier ops",
                json!({"a": 1}),
                json!([
                    {"op": "replace", "path": "/a", "value": 2},
                    {"op": "test", "path": "/a", "value": 3}
                ]),
                "testing value /a failed: test failed",
            ),
        ];
        for (name, doc, patch, want) in cases {
            let e = err(doc, patch);
            assert_eq!(e.status_code(), 422, "{name}");
            assert_eq!(e.reason(), "Invalid", "{name}");
            assert_eq!(e.to_string(), want, "{name}");
        }
    }

    #[test]
    fn malformed_patch_documents_are_400() {
        let cases: Vec<(&str, Value, &str)> = vec![
            (
                "an object instead of a list",
                json!({"op": "add"}),
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
            ),
            (
                "a string instead of a list",
                json!("x"),
                "json: cannot unmarshal string into Go value of type jsonpatch.Patch",
            ),
            (
                "a number inside the list",
                json!([1]),
                "json: cannot unmarshal number into Go value of type jsonpatch.Operation",
            ),
        ];
        for (name, patch, want) in cases {
            let e = err(json!({}), patch);
            assert_eq!(e.status_code(), 400, "{name}");
            assert_eq!(e.reason(), "BadRequest", "{name}");
            assert_eq!(e.message(), want, "{name}");
        }
    }

    #[test]
    fn kube_runtime_finalizer_helper_sequences() {
        // First finalizer on an object without finalizers.
        let obj = json!({"metadata": {"name": "x"}});
        let add_first = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["a.io/f"]}
        ]);
        let with_one = ok(obj, add_first.clone());
        assert_eq!(with_one["metadata"]["finalizers"], json!(["a.io/f"]));
        // The same patch again fails: someone added finalizers meanwhile.
        assert_eq!(err(with_one.clone(), add_first).status_code(), 422);
        // Another finalizer appended after testing the current list.
        let add_next = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": ["a.io/f"]},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "b.io/g"}
        ]);
        let with_two = ok(with_one, add_next);
        assert_eq!(
            with_two["metadata"]["finalizers"],
            json!(["a.io/f", "b.io/g"])
        );
        // Removal by index guarded by a test of the value at that index.
        let remove = json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "a.io/f"},
            {"op": "remove", "path": "/metadata/finalizers/0"}
        ]);
        let removed = ok(with_two.clone(), remove);
        assert_eq!(removed["metadata"]["finalizers"], json!(["b.io/g"]));
        let wrong = json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "b.io/g"},
            {"op": "remove", "path": "/metadata/finalizers/0"}
        ]);
        assert_eq!(err(with_two, wrong).status_code(), 422);
    }

    #[test]
    fn more_than_ten_thousand_operations_is_413() {
        let op = json!({"op": "test", "path": "/a"});
        let patch = Value::Array(vec![op; MAX_JSON_PATCH_OPERATIONS + 1]);
        let e = err(json!({}), patch);
        assert_eq!(e.status_code(), 413);
        assert_eq!(e.reason(), "RequestEntityTooLarge");
    }

    #[test]
    fn exactly_ten_thousand_operations_is_accepted() {
        let op = json!({"op": "test", "path": "/a"});
        let patch = Value::Array(vec![op; MAX_JSON_PATCH_OPERATIONS]);
        assert_eq!(ok(json!({}), patch), json!({}));
    }

    #[test]
    fn copy_amplification_is_capped() {
        let mut ops =
            vec![json!({"op": "add", "path": "/a", "value": ["0123456789abcdef0123456789abcdef"]})];
        for _ in 0..40 {
            ops.push(json!({"op": "copy", "from": "/a", "path": "/a/-"}));
        }
        let e = err(json!({}), Value::Array(ops));
        assert_eq!(e.status_code(), 422);
        assert!(
            e.to_string().starts_with("Unable to complete the copy"),
            "{e}"
        );
    }

    #[test]
    fn deep_nesting_through_moves_is_refused() {
        let mut ops = vec![];
        for _ in 0..200 {
            ops.push(json!({"op": "add", "path": "/t", "value": {}}));
            ops.push(json!({"op": "move", "from": "/a", "path": "/t/a"}));
            ops.push(json!({"op": "move", "from": "/t", "path": "/a"}));
        }
        let e = err(json!({"a": 1}), Value::Array(ops));
        assert_eq!(e.status_code(), 422);
    }
}

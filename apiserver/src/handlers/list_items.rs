//! List items as kube-apiserver writes them in JSON: the items of a built-in (typed) list carry
//! no `apiVersion` or `kind` of their own (only the list does; Go's typed decoding leaves an
//! embedded item's type meta empty), while the items of a custom resource list (unstructured)
//! keep theirs. Watch events, single objects and `PartialObjectMetadataList` items keep them.
//!
//! Stored objects are sent without parsing where possible, so the members are cut out of the
//! serialized bytes: a scan of the object's top-level members that stops as soon as both are
//! found (they are normally the first two).

use bytes::{BufMut, BytesMut};
use serde_json::Value;

use crate::registry::ResourceInfo;

/// Whether the list items of `res` are written without `apiVersion` and `kind`.
pub(crate) fn strips_type_meta(res: &ResourceInfo) -> bool {
    !res.is_custom()
}

/// The items of a list of `res`, as kube writes them.
pub(crate) fn list_items(res: &ResourceInfo, items: Vec<Value>) -> Vec<Value> {
    if strips_type_meta(res) {
        items.into_iter().map(without_type_meta).collect()
    } else {
        items
    }
}

/// `object` without its top-level `apiVersion` and `kind`.
pub(crate) fn without_type_meta(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.shift_remove("apiVersion");
        map.shift_remove("kind");
    }
    object
}

/// Appends the serialized JSON object `object` to `out` without its top-level `apiVersion` and
/// `kind` members; bytes that are not a JSON object are appended unchanged.
pub(crate) fn put_without_type_meta(out: &mut BytesMut, object: &[u8]) {
    match strip(object) {
        Some(parts) => {
            out.put_u8(b'{');
            let mut first = true;
            for part in parts.kept {
                if !first {
                    out.put_u8(b',');
                }
                first = false;
                out.put_slice(&object[part.0..part.1]);
            }
            match parts.rest {
                Some(rest) if first => out.put_slice(&object[rest..]),
                Some(rest) => {
                    out.put_u8(b',');
                    out.put_slice(&object[rest..]);
                }
                None => out.put_u8(b'}'),
            }
        }
        None => out.put_slice(object),
    }
}

/// The members to keep: byte ranges of whole `"key":value` members, then (when both type
/// members were found before the end) the offset of the first member after them, from which
/// everything up to and including the closing brace is kept as it is.
struct Kept {
    kept: Vec<(usize, usize)>,
    rest: Option<usize>,
}

fn strip(bytes: &[u8]) -> Option<Kept> {
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(bytes, i + 1);
    let mut kept = Vec::new();
    let mut found = 0;
    if bytes.get(i) == Some(&b'}') {
        return Some(Kept { kept, rest: None });
    }
    loop {
        let start = i;
        let key_end = skip_string(bytes, i)?;
        let key = &bytes[start + 1..key_end - 1];
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        let end = skip_value(bytes, skip_ws(bytes, i + 1))?;
        if key == b"apiVersion" || key == b"kind" {
            found += 1;
        } else {
            kept.push((start, end));
        }
        i = skip_ws(bytes, end);
        match bytes.get(i) {
            Some(b',') => {
                i = skip_ws(bytes, i + 1);
                if found == 2 {
                    return Some(Kept {
                        kept,
                        rest: Some(i),
                    });
                }
            }
            Some(b'}') => return Some(Kept { kept, rest: None }),
            _ => return None,
        }
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while matches!(bytes.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// The offset after the string starting at `i`.
fn skip_string(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', bytes.get(j..)?)?;
        if bytes[j] == b'\\' {
            j += 2;
        } else {
            return Some(j + 1);
        }
    }
}

/// The offset after the value starting at `i`.
fn skip_value(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b'"' => skip_string(bytes, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match bytes.get(j)? {
                    b'"' => {
                        j = skip_string(bytes, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while !matches!(
                bytes.get(j),
                None | Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            ) {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stripped(input: &str) -> String {
        let mut out = BytesMut::new();
        put_without_type_meta(&mut out, input.as_bytes());
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn cuts_type_members_wherever_they_are() {
        assert_eq!(
            stripped(
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"kind":"x"}}"#
            ),
            r#"{"metadata":{"name":"a"},"data":{"kind":"x"}}"#
        );
        assert_eq!(
            stripped(
                r#"{"aggregationRule":{"a":[1,{"b":"}"}]},"apiVersion":"rbac/v1","kind":"ClusterRole"}"#
            ),
            r#"{"aggregationRule":{"a":[1,{"b":"}"}]}}"#
        );
        assert_eq!(
            stripped(r#"{ "kind" : "X", "n":1, "s":"a\"b", "apiVersion":"v1", "t":true }"#),
            r#"{"n":1,"s":"a\"b","t":true }"#
        );
        assert_eq!(stripped(r#"{"apiVersion":"v1","kind":"X"}"#), "{}");
        assert_eq!(stripped("{}"), "{}");
        // Not an object: unchanged.
        assert_eq!(stripped("[1]"), "[1]");
        assert_eq!(stripped(r#"{"a":"#), r#"{"a":"#);
    }

    #[test]
    fn the_bytes_and_the_value_forms_agree() {
        let object = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                            "type": "Opaque", "data": {"k": "dg=="}});
        let text = serde_json::to_string(&object).unwrap();
        let from_bytes: Value = serde_json::from_str(&stripped(&text)).unwrap();
        assert_eq!(from_bytes, without_type_meta(object));
    }
}

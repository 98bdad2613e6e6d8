//! The data of ConfigMaps and Secrets, as kube-apiserver validates it (`ValidateConfigMap`,
//! `ValidateSecret` and their update checks): every key is a config key, a ConfigMap key is in
//! `data` or `binaryData` but not both, the values hold at most 1 MiB, and once `immutable` is
//! true neither the data nor `immutable` may change (nor, ever, a Secret's `type`).
//!
//! Objects are read as the server stores them: a Secret's `stringData` is already folded into
//! `data` (so its bad keys show as `data[...]`, as in kube-apiserver), and Secret `data` and
//! ConfigMap `binaryData` values are base64. Deliberate difference: an absent, null or empty
//! map count as the same data (Go's `reflect.DeepEqual` tells a nil map from an empty one).
//! Not checked: the keys each Secret `type` requires.

use serde_json::{Map, Value};

use super::cause::{Cause, key};
use super::names::config_map_key_errors;

/// `core.MaxSecretSize`: the most bytes the values of one ConfigMap or Secret may hold.
const MAX_SECRET_SIZE: usize = 1024 * 1024;
const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";

/// The entries of the map at `field`, sorted by key (Go reports them in map order).
fn entries<'a>(obj: &'a Value, field: &str) -> Vec<(&'a String, &'a Value)> {
    let mut out: Vec<(&String, &Value)> = obj
        .get(field)
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

/// The map at `field`, with absent and null read as empty.
fn map_of(obj: &Value, field: &str) -> Map<String, Value> {
    obj.get(field)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Bytes a base64 value decodes to.
fn decoded_len(value: &Value) -> usize {
    let text = value.as_str().unwrap_or_default();
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3).saturating_sub(padding)
}

/// One `Invalid` cause per reason `k` is not a config key.
fn key_causes(field: &str, k: &str) -> Vec<Cause> {
    config_map_key_errors(k)
        .iter()
        .map(|msg| Cause::invalid(key(field, k), k, msg))
        .collect()
}

fn is_immutable(obj: &Value) -> bool {
    obj.get("immutable").and_then(Value::as_bool) == Some(true)
}

/// `ValidateConfigMap` without the metadata: keys of `data` and `binaryData`, keys in both,
/// and the total size.
pub fn validate_config_map(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let binary = map_of(obj, "binaryData");
    let mut total = 0;
    for (k, v) in entries(obj, "data") {
        causes.extend(key_causes("data", k));
        if binary.contains_key(k) {
            causes.push(Cause::invalid(
                key("data", k),
                k.as_str(),
                "duplicate of key present in binaryData",
            ));
        }
        total += v.as_str().map_or(0, str::len);
    }
    for (k, v) in entries(obj, "binaryData") {
        causes.extend(key_causes("binaryData", k));
        total += decoded_len(v);
    }
    if total > MAX_SECRET_SIZE {
        causes.push(Cause::too_long("", MAX_SECRET_SIZE as i64));
    }
    causes
}

/// The immutability rules of a ConfigMap or Secret update: once `old` is immutable, `new`
/// stays immutable and keeps each of `fields` as it was.
fn immutability_causes(new: &Value, old: &Value, fields: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    if is_immutable(old) {
        if !is_immutable(new) {
            causes.push(Cause::forbidden("immutable", IMMUTABLE_SET));
        }
        for &field in fields {
            if map_of(new, field) != map_of(old, field) {
                causes.push(Cause::forbidden(field, IMMUTABLE_SET));
            }
        }
    }
    causes
}

/// `ValidateConfigMapUpdate` without the metadata: the immutability rules, then
/// [`validate_config_map`] of the new object.
pub fn validate_config_map_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = immutability_causes(new, old, &["data", "binaryData"]);
    causes.extend(validate_config_map(new));
    causes
}

/// `ValidateSecret` without the metadata and the per-type required keys: keys of `data` and
/// the total size.
pub fn validate_secret(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut total = 0;
    for (k, v) in entries(obj, "data") {
        causes.extend(key_causes("data", k));
        total += decoded_len(v);
    }
    if total > MAX_SECRET_SIZE {
        causes.push(Cause::too_long("data", MAX_SECRET_SIZE as i64));
    }
    causes
}

/// A Secret's `type` as kube-apiserver sees it after defaulting (`Opaque` when unset).
fn secret_type(obj: &Value) -> &str {
    match obj.get("type").and_then(Value::as_str) {
        None | Some("") => "Opaque",
        Some(t) => t,
    }
}

/// `ValidateSecretUpdate` without the metadata: `type` never changes, the immutability
/// rules, then [`validate_secret`] of the new object.
pub fn validate_secret_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if secret_type(new) != secret_type(old) {
        causes.push(Cause::invalid(
            "type",
            secret_type(new),
            "field is immutable",
        ));
    }
    causes.extend(immutability_causes(new, old, &["data"]));
    causes.extend(validate_secret(new));
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

    #[test]
    fn config_map_keys() {
        let cm = json!({"data": {"ok.key_1-A": "x", "bad key": "y", "": "z", "dup": "1"},
                        "binaryData": {"dup": "AA==", "..x": "AA==", ".": "AA=="}});
        assert_eq!(
            texts(&validate_config_map(&cm)),
            [
                format!("data[]: Invalid value: \"\": {KEY_MSG}"),
                format!("data[bad key]: Invalid value: \"bad key\": {KEY_MSG}"),
                "data[dup]: Invalid value: \"dup\": duplicate of key present in binaryData"
                    .to_owned(),
                "binaryData[.]: Invalid value: \".\": must not be '.'".to_owned(),
                "binaryData[..x]: Invalid value: \"..x\": must not start with '..'".to_owned(),
            ]
        );
        let long = "k".repeat(254);
        assert_eq!(
            texts(&validate_config_map(&json!({"data": {long.clone(): ""}}))),
            [format!(
                "data[{long}]: Invalid value: \"{long}\": must be no more than 253 characters"
            )]
        );
    }

    #[test]
    fn sizes() {
        let big = "x".repeat(MAX_SECRET_SIZE);
        assert!(validate_config_map(&json!({"data": {"a": big}})).is_empty());
        assert_eq!(
            texts(&validate_config_map(
                &json!({"data": {"a": big}, "binaryData": {"b": "AA=="}})
            )),
            [": Too long: may not be more than 1048576 bytes"]
        );
        assert_eq!(decoded_len(&json!("AAAA")), 3);
        assert_eq!(decoded_len(&json!("AAA=")), 2);
        assert_eq!(decoded_len(&json!("AA==")), 1);
    }

    #[test]
    fn immutable_config_map() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        assert!(validate_config_map_update(&old, &old).is_empty());
        let changed = json!({"immutable": true, "data": {"a": "2"}, "binaryData": {"b": "AA=="}});
        assert_eq!(
            texts(&validate_config_map_update(&changed, &old)),
            [
                "data: Forbidden: field is immutable when `immutable` is set",
                "binaryData: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        let unset = json!({"immutable": false, "data": {"a": "1"}});
        assert_eq!(
            texts(&validate_config_map_update(&unset, &old)),
            ["immutable: Forbidden: field is immutable when `immutable` is set"]
        );
        // Not immutable yet: anything goes, including becoming immutable.
        let mutable = json!({"data": {"a": "1"}});
        assert!(validate_config_map_update(&changed, &mutable).is_empty());
        // Absent and empty data are the same data.
        let empty = json!({"immutable": true});
        assert!(
            validate_config_map_update(&json!({"immutable": true, "data": {}}), &empty).is_empty()
        );
    }

    #[test]
    fn secrets() {
        assert_eq!(
            texts(&validate_secret(&json!({"data": {"a/b": "AA=="}}))),
            [format!("data[a/b]: Invalid value: \"a/b\": {KEY_MSG}")]
        );
        let old = json!({"type": "Opaque", "immutable": true, "data": {"a": "AA=="}});
        assert!(
            validate_secret_update(&json!({"immutable": true, "data": {"a": "AA=="}}), &old)
                .is_empty()
        );
        let new = json!({"type": "kubernetes.io/tls", "data": {"a": "AQ=="}});
        assert_eq!(
            texts(&validate_secret_update(&new, &old)),
            [
                "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
    }
}

//! `metadata` checks: `ValidateObjectMeta`, `ValidateObjectMetaUpdate`, and what decoding
//! `metadata` into Go's `ObjectMeta` does (unknown fields dropped, wrong types rejected).

use serde_json::{Map, Value};

use super::cause::{BadValue, Cause, child, go_quote, index, is_go_printable};
use super::names::{NameRule, dns1123_label_errors, qualified_name_errors, validate_labels};

const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
const FIELD_MANAGER_MAX_LENGTH: usize = 128;
const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;
const FINALIZER_ORPHAN: &str = "orphan";
const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

fn meta_of(obj: &Value) -> &Map<String, Value> {
    obj.get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&EMPTY)
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

/// `ValidateObjectMeta` on `obj.metadata` (field paths start with `metadata.`).
///
/// `rule` is the kind's name syntax (see [`super::name_rule_for`]); `namespaced` whether the
/// resource lives in a namespace (then `metadata.namespace` is required, else forbidden).
/// Call it after the server has filled `name` from `generateName` and `namespace` from the URL,
/// as kube-apiserver does.
pub fn validate_object_meta(obj: &Value, rule: NameRule, namespaced: bool) -> Vec<Cause> {
    validate_meta_at(meta_of(obj), "metadata", rule, namespaced)
}

/// `ValidateObjectMeta` for a metadata map at `path` (used for embedded resources too).
pub fn validate_meta_at(
    meta: &Map<String, Value>,
    path: &str,
    rule: NameRule,
    namespaced: bool,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let generate_name = str_of(meta, "generateName");
    if !generate_name.is_empty() {
        for m in rule.check(generate_name, true) {
            causes.push(Cause::invalid(
                child(path, "generateName"),
                generate_name,
                &m,
            ));
        }
    }
    let name = str_of(meta, "name");
    if name.is_empty() {
        causes.push(Cause::required(
            child(path, "name"),
            "name or generateName is required",
        ));
    } else {
        for m in rule.check(name, false) {
            causes.push(Cause::invalid(child(path, "name"), name, &m));
        }
    }
    let namespace = str_of(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            causes.push(Cause::required(child(path, "namespace"), ""));
        } else {
            for m in dns1123_label_errors(namespace) {
                causes.push(Cause::invalid(child(path, "namespace"), namespace, &m));
            }
        }
    } else if !namespace.is_empty() {
        causes.push(Cause::forbidden(
            child(path, "namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64)
        && g < 0
    {
        causes.push(Cause::invalid(
            child(path, "generation"),
            g,
            "must be greater than or equal to 0",
        ));
    }
    causes.extend(common_meta_checks(meta, path, true));
    causes
}

/// Labels, annotations, owner references, finalizers (create only) and managed fields.
fn common_meta_checks(meta: &Map<String, Value>, path: &str, finalizers: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        causes.extend(validate_labels(labels, &child(path, "labels")));
    }
    if let Some(ann) = meta.get("annotations").and_then(Value::as_object) {
        causes.extend(validate_annotations(ann, &child(path, "annotations")));
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        causes.extend(validate_owner_references(
            refs,
            &child(path, "ownerReferences"),
        ));
    }
    if finalizers && let Some(fins) = meta.get("finalizers").and_then(Value::as_array) {
        causes.extend(validate_finalizers(fins, &child(path, "finalizers")));
    }
    if let Some(mf) = meta.get("managedFields").and_then(Value::as_array) {
        causes.extend(validate_managed_fields(mf, &child(path, "managedFields")));
    }
    causes
}

fn validate_annotations(ann: &Map<String, Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut total = 0usize;
    for (k, v) in ann {
        for m in qualified_name_errors(&k.to_lowercase()) {
            causes.push(Cause::invalid(field, k, &m));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        causes.push(Cause::too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT as i64));
    }
    causes
}

/// `(group, version)` of an apiVersion the way `schema.FromAPIVersionAndKind` sees it;
/// `None` when it does not parse (more than one `/`).
fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
    if api_version.is_empty() {
        return Some(("", ""));
    }
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [v] => Some(("", v)),
        [g, v] => Some((g, v)),
        _ => None,
    }
}

fn validate_owner_references(refs: &[Value], field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let m = r.as_object().unwrap_or(&EMPTY);
        let api_version = str_of(m, "apiVersion");
        let kind = str_of(m, "kind");
        let (group, version) = parse_group_version(api_version).unwrap_or(("", ""));
        if version.is_empty() {
            causes.push(Cause::invalid(
                child(field, "apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            causes.push(Cause::invalid(
                child(field, "kind"),
                kind,
                "kind must not be empty",
            ));
        }
        let name = str_of(m, "name");
        if name.is_empty() {
            causes.push(Cause::invalid(
                child(field, "name"),
                name,
                "name must not be empty",
            ));
        }
        let uid = str_of(m, "uid");
        if uid.is_empty() {
            causes.push(Cause::invalid(
                child(field, "uid"),
                uid,
                "uid must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            causes.push(Cause::invalid(
                field,
                r,
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if m.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => causes.push(Cause::invalid(
                    field,
                    &Value::Array(refs.to_vec()),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    causes
}

fn validate_finalizers(fins: &[Value], field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let (mut orphan, mut foreground) = (false, false);
    for f in fins {
        let s = f.as_str().unwrap_or("");
        for m in qualified_name_errors(s) {
            causes.push(Cause::invalid(field, s, &m));
        }
        orphan |= s == FINALIZER_ORPHAN;
        foreground |= s == FINALIZER_FOREGROUND;
    }
    if orphan && foreground {
        let all: Vec<String> = fins
            .iter()
            .map(|f| f.as_str().unwrap_or("").to_string())
            .collect();
        causes.push(Cause::invalid(
            field,
            BadValue::StringList(all),
            &format!("finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"),
        ));
    }
    causes
}

fn validate_managed_fields(entries: &[Value], field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let path = index(field, i);
        let m = e.as_object().unwrap_or(&EMPTY);
        let op = str_of(m, "operation");
        if op != "Apply" && op != "Update" {
            causes.push(Cause::invalid(
                child(&path, "operation"),
                op,
                "must be `Apply` or `Update`",
            ));
        }
        let fields_type = str_of(m, "fieldsType");
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            causes.push(Cause::invalid(
                child(&path, "fieldsType"),
                fields_type,
                "must be `FieldsV1`",
            ));
        }
        let manager = str_of(m, "manager");
        causes.extend(validate_field_manager(manager, &child(&path, "manager")));
        if str_of(m, "subresource").len() > MAX_SUBRESOURCE_NAME_LENGTH {
            causes.push(Cause::too_long(
                child(&path, "subresource"),
                MAX_SUBRESOURCE_NAME_LENGTH as i64,
            ));
        }
    }
    causes
}

fn validate_field_manager(manager: &str, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        causes.push(Cause::too_long(field, FIELD_MANAGER_MAX_LENGTH as i64));
    }
    for (pos, c) in manager.char_indices() {
        if !is_go_printable(c) {
            causes.push(Cause::invalid(
                field,
                manager,
                &format!("invalid character U+{:04X} (at position {pos})", c as u32),
            ));
        }
    }
    causes
}

/// `ValidateObjectMetaUpdate`: the immutable fields (`name`, `namespace`, `uid`,
/// `creationTimestamp`, `deletionTimestamp`, `deletionGracePeriodSeconds`), `resourceVersion`
/// present, `generation` not decremented, no new finalizers once deletion started, plus
/// labels, annotations, owner references and managed fields of the new object.
pub fn validate_object_meta_update(new_obj: &Value, old_obj: &Value) -> Vec<Cause> {
    let new = meta_of(new_obj);
    let old = meta_of(old_obj);
    let mut causes = Vec::new();
    if old.get("deletionTimestamp").is_some_and(|v| !v.is_null()) {
        let old_fins = string_list(old.get("finalizers"));
        let mut extra: Vec<String> = string_list(new.get("finalizers"))
            .into_iter()
            .filter(|f| !old_fins.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            let quoted: Vec<String> = extra.iter().map(|s| go_quote(s)).collect();
            causes.push(Cause::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            ));
        }
    }
    let rv = str_of(new, "resourceVersion");
    if rv.is_empty() {
        causes.push(Cause::invalid(
            "metadata.resourceVersion",
            rv,
            "must be specified for an update",
        ));
    }
    let new_gen = new.get("generation").and_then(Value::as_i64).unwrap_or(0);
    let old_gen = old.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if new_gen < old_gen {
        causes.push(Cause::invalid(
            "metadata.generation",
            new_gen,
            "must not be decremented",
        ));
    }
    for key in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let nv = new.get(key).unwrap_or(&Value::Null);
        let ov = old.get(key).unwrap_or(&Value::Null);
        if !same_meta_value(key, nv, ov) {
            causes.push(Cause::invalid(
                child("metadata", key),
                immutable_bad_value(key, nv),
                "field is immutable",
            ));
        }
    }
    causes.extend(common_meta_checks(new, "metadata", false));
    causes
}

/// Semantic equality of an immutable metadata field: absent, null and `""` are the same empty
/// string/time for the string and time fields.
fn same_meta_value(key: &str, a: &Value, b: &Value) -> bool {
    match key {
        "deletionGracePeriodSeconds" => a == b,
        _ => a.as_str().unwrap_or("") == b.as_str().unwrap_or(""),
    }
}

fn immutable_bad_value(key: &str, v: &Value) -> BadValue {
    match (key, v) {
        ("creationTimestamp" | "deletionTimestamp", Value::String(s)) => BadValue::Str(s.clone()),
        ("creationTimestamp" | "deletionTimestamp", _) => BadValue::Str("null".to_string()),
        (_, Value::Null) if key == "deletionGracePeriodSeconds" => BadValue::Str("null".into()),
        (_, Value::Null) => BadValue::Str(String::new()),
        _ => BadValue::from(v),
    }
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The warnings kube-apiserver returns (as `Warning` headers) when a custom resource gets
/// finalizers without a domain prefix: `metadata.finalizers: "x": prefer a domain-qualified
/// finalizer name ...`. Only finalizers added relative to `old_obj` are checked.
pub fn finalizer_warnings(new_obj: &Value, old_obj: Option<&Value>) -> Vec<String> {
    let old = old_obj
        .map(|o| string_list(meta_of(o).get("finalizers")))
        .unwrap_or_default();
    let mut added: Vec<String> = string_list(meta_of(new_obj).get("finalizers"))
        .into_iter()
        .filter(|f| !old.contains(f))
        .collect();
    added.sort();
    added.dedup();
    let path = "metadata.finalizers";
    let mut warnings = Vec::new();
    for f in added {
        let q = go_quote(&f);
        for m in qualified_name_errors(&f) {
            warnings.push(format!("{path}: {q}: {m}"));
        }
        if !f.contains('/') && !matches!(f.as_str(), "orphan" | "foregroundDeletion" | "kubernetes")
        {
            if f.contains('.') {
                warnings.push(format!("{path}: {q}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"));
            } else {
                warnings.push(format!("{path}: {q}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"));
            }
        }
    }
    warnings
}

/// Decoding `metadata` into Go's `ObjectMeta` failed because a field has the wrong JSON type
/// (kube-apiserver answers 400 BadRequest with this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MetaDecodeError(pub String);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Bool,
    StrMap,
    StrList,
    Time,
    Refs,
    Managed,
    Any,
}

/// A Go struct the coercion walks: its name and the kind of each known field.
struct GoStruct {
    name: &'static str,
    fields: fn(&str) -> Option<(Kind, &'static str)>,
    /// Whether empty values are dropped on re-encoding (`omitempty`).
    omit_empty: bool,
}

const OBJECT_META: GoStruct = GoStruct {
    name: "ObjectMeta",
    fields: meta_field_kind,
    omit_empty: true,
};
const OWNER_REFERENCE: GoStruct = GoStruct {
    name: "OwnerReference",
    fields: owner_ref_field_kind,
    omit_empty: false,
};
const MANAGED_FIELDS_ENTRY: GoStruct = GoStruct {
    name: "ManagedFieldsEntry",
    fields: managed_field_kind,
    omit_empty: true,
};

fn meta_field_kind(key: &str) -> Option<(Kind, &'static str)> {
    Some(match key {
        "name" | "generateName" | "namespace" | "selfLink" | "resourceVersion" => {
            (Kind::Str, "string")
        }
        "uid" => (Kind::Str, "types.UID"),
        "generation" | "deletionGracePeriodSeconds" => (Kind::Int, "int64"),
        "creationTimestamp" | "deletionTimestamp" => (Kind::Time, "v1.Time"),
        "labels" | "annotations" => (Kind::StrMap, "map[string]string"),
        "finalizers" => (Kind::StrList, "[]string"),
        "ownerReferences" => (Kind::Refs, "[]v1.OwnerReference"),
        "managedFields" => (Kind::Managed, "[]v1.ManagedFieldsEntry"),
        _ => return None,
    })
}

fn owner_ref_field_kind(key: &str) -> Option<(Kind, &'static str)> {
    Some(match key {
        "apiVersion" | "kind" | "name" => (Kind::Str, "string"),
        "uid" => (Kind::Str, "types.UID"),
        "controller" | "blockOwnerDeletion" => (Kind::Bool, "bool"),
        _ => return None,
    })
}

fn managed_field_kind(key: &str) -> Option<(Kind, &'static str)> {
    Some(match key {
        "manager" | "apiVersion" | "fieldsType" | "subresource" => (Kind::Str, "string"),
        "operation" => (Kind::Str, "v1.ManagedFieldsOperationType"),
        "time" => (Kind::Time, "v1.Time"),
        "fieldsV1" => (Kind::Any, "v1.FieldsV1"),
        _ => return None,
    })
}

/// How Go's encoding/json names a JSON value in an `UnmarshalTypeError`.
fn json_type(v: &Value, numeric_target: bool) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if numeric_target => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn type_error(v: &Value, st: &GoStruct, field: &str, go_type: &str) -> MetaDecodeError {
    MetaDecodeError(format!(
        "json: cannot unmarshal {} into Go struct field {}.{field} of type {go_type}",
        json_type(v, go_type == "int64"),
        st.name
    ))
}

/// Whether a checked value is empty (dropped by `omitempty`).
fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// Check one field value against its kind, normalising nulls inside maps and lists.
fn check_kind(
    v: &mut Value,
    kind: Kind,
    go_type: &'static str,
    st: &GoStruct,
    field: &str,
    unknown: &mut Vec<String>,
    unknown_path: &str,
) -> Result<(), MetaDecodeError> {
    if v.is_null() {
        return Ok(());
    }
    match kind {
        Kind::Str | Kind::Time if v.is_string() => Ok(()),
        Kind::Int if v.as_i64().is_some() => Ok(()),
        Kind::Bool if v.is_boolean() => Ok(()),
        Kind::Any => Ok(()),
        Kind::StrMap => {
            let Value::Object(m) = v else {
                return Err(type_error(v, st, field, go_type));
            };
            for item in m.values_mut() {
                match item {
                    Value::String(_) => {}
                    Value::Null => *item = Value::String(String::new()),
                    other => return Err(type_error(other, st, field, "string")),
                }
            }
            Ok(())
        }
        Kind::StrList => {
            let Value::Array(a) = v else {
                return Err(type_error(v, st, field, go_type));
            };
            for item in a.iter_mut() {
                match item {
                    Value::String(_) => {}
                    Value::Null => *item = Value::String(String::new()),
                    other => return Err(type_error(other, st, field, "string")),
                }
            }
            Ok(())
        }
        Kind::Refs | Kind::Managed => {
            let Value::Array(a) = v else {
                return Err(type_error(v, st, field, go_type));
            };
            let (inner, elem_type) = if kind == Kind::Refs {
                (&OWNER_REFERENCE, "v1.OwnerReference")
            } else {
                (&MANAGED_FIELDS_ENTRY, "v1.ManagedFieldsEntry")
            };
            for (i, item) in a.iter_mut().enumerate() {
                match item {
                    Value::Null => *item = Value::Object(Map::new()),
                    Value::Object(m) => {
                        coerce_struct(m, inner, field, unknown, &index(unknown_path, i))?
                    }
                    other => return Err(type_error(other, st, field, elem_type)),
                }
            }
            Ok(())
        }
        _ => Err(type_error(v, st, field, go_type)),
    }
}

/// Walk the fields of one Go struct: drop unknown fields (recording their paths), check the
/// types of known ones, drop empty `omitempty` fields.
fn coerce_struct(
    m: &mut Map<String, Value>,
    st: &GoStruct,
    field_base: &str,
    unknown: &mut Vec<String>,
    unknown_base: &str,
) -> Result<(), MetaDecodeError> {
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        let Some((kind, go_type)) = (st.fields)(&k) else {
            unknown.push(child(unknown_base, &k));
            m.remove(&k);
            continue;
        };
        let field = child(field_base, &k);
        if let Some(v) = m.get_mut(&k) {
            check_kind(
                v,
                kind,
                go_type,
                st,
                &field,
                unknown,
                &child(unknown_base, &k),
            )?;
        }
        let drop = m.get(&k).is_some_and(|v| {
            v.is_null() || (st.omit_empty && kind != Kind::Bool && is_empty_value(v))
        });
        if drop {
            m.remove(&k);
        }
    }
    Ok(())
}

/// What kube-apiserver's decoding of `metadata` into `ObjectMeta` does to a JSON object:
///
/// * unknown fields of `metadata` (and of its owner references and managed-fields entries)
///   are removed; their paths (`metadata.foo`, `metadata.ownerReferences[0].bar`) are returned
///   so the caller can emit `unknown field` warnings or fail under `fieldValidation=Strict`;
/// * empty `omitempty` fields (`labels: {}`, `finalizers: []`, `name: ""`, nulls) are removed,
///   so objects read back look like kube-apiserver's;
/// * a field of the wrong JSON type is an error (400 BadRequest in kube-apiserver).
///
/// An object without `metadata` is left alone; a `metadata` that is not an object is an error.
/// `prefix` is the path of the object inside its parent (`""` for a top-level object).
pub fn coerce_object_meta(obj: &mut Value, prefix: &str) -> Result<Vec<String>, MetaDecodeError> {
    let mut unknown = Vec::new();
    let Some(meta) = obj.get_mut("metadata") else {
        return Ok(unknown);
    };
    match meta {
        Value::Object(m) => {
            coerce_struct(
                m,
                &OBJECT_META,
                "",
                &mut unknown,
                &child(prefix, "metadata"),
            )?;
        }
        Value::Null => {}
        other => {
            return Err(MetaDecodeError(format!(
                "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                json_type(other, false)
            )));
        }
    }
    Ok(unknown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid_metadata_has_no_causes() {
        let obj = json!({"metadata": {
            "name": "web", "namespace": "default", "generation": 3,
            "labels": {"app": "web", "example.com/tier": ""},
            "annotations": {"Example.com/Note": "anything goes"},
            "finalizers": ["example.com/cleanup"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1"}]
        }});
        assert_eq!(
            msgs(&validate_object_meta(&obj, NameRule::DnsSubdomain, true)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn name_namespace_and_generation_rules() {
        let cases: Vec<(Value, NameRule, bool, Vec<&str>)> = vec![
            (
                json!({}),
                NameRule::DnsSubdomain,
                false,
                vec!["metadata.name: Required value: name or generateName is required"],
            ),
            (
                json!({"metadata": {"name": "x"}}),
                NameRule::DnsSubdomain,
                true,
                vec!["metadata.namespace: Required value"],
            ),
            (
                json!({"metadata": {"name": "x", "namespace": "ns"}}),
                NameRule::DnsSubdomain,
                false,
                vec!["metadata.namespace: Forbidden: not allowed on this type"],
            ),
            (
                json!({"metadata": {"name": "x", "namespace": "a.b"}}),
                NameRule::DnsSubdomain,
                true,
                vec!["metadata.namespace: Invalid value: \"a.b\": must not contain dots"],
            ),
            (
                json!({"metadata": {"name": "x", "generation": -1}}),
                NameRule::DnsSubdomain,
                false,
                vec!["metadata.generation: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                json!({"metadata": {"name": "Bad_Name"}}),
                NameRule::PathSegment,
                false,
                vec![],
            ),
            (
                json!({"metadata": {"name": "a/b"}}),
                NameRule::PathSegment,
                false,
                vec!["metadata.name: Invalid value: \"a/b\": may not contain '/'"],
            ),
            (
                json!({"metadata": {"name": "x", "generateName": "Web-"}}),
                NameRule::DnsLabel,
                false,
                vec![
                    "metadata.generateName: Invalid value: \"Web-\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
        ];
        for (obj, rule, namespaced, want) in cases {
            assert_eq!(
                msgs(&validate_object_meta(&obj, rule, namespaced)),
                want,
                "{obj}"
            );
        }
    }

    #[test]
    fn annotation_keys_are_checked_lowercased_and_size_limited() {
        let obj = json!({"metadata": {"name": "x", "annotations": {"Bad Key": "v"}}});
        let c = validate_object_meta(&obj, NameRule::DnsSubdomain, false);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].field, "metadata.annotations");
        assert!(
            c[0].message
                .starts_with("Invalid value: \"Bad Key\": name part must consist")
        );

        let big = "x".repeat(256 * 1024);
        let obj = json!({"metadata": {"name": "x", "annotations": {"a": big}}});
        assert_eq!(
            msgs(&validate_object_meta(&obj, NameRule::DnsSubdomain, false)),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }

    #[test]
    fn owner_references() {
        let obj = json!({"metadata": {"name": "x", "ownerReferences": [
            {"apiVersion": "", "kind": "", "name": "", "uid": ""},
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"},
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true}
        ]}});
        let m = msgs(&validate_object_meta(&obj, NameRule::DnsSubdomain, false));
        assert_eq!(
            m[0],
            "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty"
        );
        assert_eq!(
            m[1],
            "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty"
        );
        assert_eq!(
            m[2],
            "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty"
        );
        assert_eq!(
            m[3],
            "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty"
        );
        assert!(m[4].ends_with(": /v1, Kind=Event is disallowed from being an owner"));
        assert!(m[5].ends_with("Only one reference can have Controller set to true. Found \"true\" in references for A/a and B/b"));
        assert_eq!(m.len(), 6);
    }

    #[test]
    fn finalizers_and_managed_fields() {
        let obj = json!({"metadata": {"name": "x",
            "finalizers": ["orphan", "foregroundDeletion", "bad finalizer"],
            "managedFields": [{"manager": "m\u{7}", "operation": "Patch", "fieldsType": "FieldsV2"}]}});
        let m = msgs(&validate_object_meta(&obj, NameRule::DnsSubdomain, false));
        assert!(m[0].starts_with(
            "metadata.finalizers: Invalid value: \"bad finalizer\": name part must consist"
        ));
        assert_eq!(
            m[1],
            "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\",\"bad finalizer\"]: finalizer orphan and foregroundDeletion cannot be both set"
        );
        assert_eq!(
            m[2],
            "metadata.managedFields[0].operation: Invalid value: \"Patch\": must be `Apply` or `Update`"
        );
        assert_eq!(
            m[3],
            "metadata.managedFields[0].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`"
        );
        assert_eq!(
            m[4],
            "metadata.managedFields[0].manager: Invalid value: \"m\\a\": invalid character U+0007 (at position 1)"
        );
    }

    #[test]
    fn update_immutable_fields() {
        let old = json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 2}});
        let ok = json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 2, "labels": {"x": "y"}}});
        assert!(validate_object_meta_update(&ok, &old).is_empty());

        let bad = json!({"metadata": {"name": "b", "namespace": "ns", "uid": "u2",
            "creationTimestamp": "2025-01-01T00:00:00Z", "generation": 1,
            "deletionTimestamp": "2025-01-01T00:00:00Z"}});
        assert_eq!(
            msgs(&validate_object_meta_update(&bad, &old)),
            vec![
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.generation: Invalid value: 1: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.creationTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable",
                "metadata.deletionTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable",
            ]
        );
    }

    #[test]
    fn no_new_finalizers_while_deleting() {
        let old = json!({"metadata": {"name": "a", "resourceVersion": "1", "finalizers": ["a/x"],
            "deletionTimestamp": "2025-01-01T00:00:00Z"}});
        let new = json!({"metadata": {"name": "a", "resourceVersion": "1", "finalizers": ["a/x", "b/y"],
            "deletionTimestamp": "2025-01-01T00:00:00Z"}});
        assert_eq!(
            msgs(&validate_object_meta_update(&new, &old)),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b/y\"}"
            ]
        );
    }

    #[test]
    fn finalizer_warnings_for_unqualified_names() {
        let new =
            json!({"metadata": {"finalizers": ["a.b", "plain", "ok.io/x", "kubernetes", "old"]}});
        let old = json!({"metadata": {"finalizers": ["old"]}});
        assert_eq!(
            finalizer_warnings(&new, Some(&old)),
            vec![
                "metadata.finalizers: \"a.b\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
                "metadata.finalizers: \"plain\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
            ]
        );
    }

    #[test]
    fn coerce_drops_unknown_and_empty_fields() {
        let mut obj = json!({"metadata": {"name": "a", "labels": {}, "finalizers": [], "foo": 1,
            "namespace": "", "creationTimestamp": null, "annotations": {"a": null},
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u", "bar": true}]},
            "spec": {}});
        let unknown = coerce_object_meta(&mut obj, "").unwrap();
        assert_eq!(
            unknown,
            vec!["metadata.foo", "metadata.ownerReferences[0].bar"]
        );
        assert_eq!(
            obj,
            json!({"metadata": {"name": "a", "annotations": {"a": ""},
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u"}]}, "spec": {}})
        );
    }

    #[test]
    fn coerce_rejects_wrong_types() {
        let cases = [
            (
                json!({"metadata": {"labels": "x"}}),
                "json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string",
            ),
            (
                json!({"metadata": {"labels": {"a": 1}}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string",
            ),
            (
                json!({"metadata": {"generation": 1.5}}),
                "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.generation of type int64",
            ),
            (
                json!({"metadata": {"ownerReferences": [{"controller": "yes"}]}}),
                "json: cannot unmarshal string into Go struct field OwnerReference.ownerReferences.controller of type bool",
            ),
            (
                json!({"metadata": 5}),
                "json: cannot unmarshal number into Go value of type v1.ObjectMeta",
            ),
        ];
        for (mut obj, want) in cases {
            let err = coerce_object_meta(&mut obj, "").unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }
}

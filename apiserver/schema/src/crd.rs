//! The checks kube-apiserver runs on a CRD's `openAPIV3Schema` when the CRD is created or
//! updated (`validateCustomResourceDefinitionValidation`): structural-ness, the v1 schema
//! restrictions, list/map type extensions, `x-kubernetes-validations` rule shapes, and that
//! every `default` is pruned and valid.

use serde_json::{Map, Value};

use super::node::{Additional, Node};
use super::prune::{coerce_embedded, prune};
use super::structure::validate_embedded;
use super::validate::{to_causes, validate_value};
use crate::validation::{BadValue, Cause, child, index, key};

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const ALLOWED_AT_ROOT_WITH_STATUS: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";
const SUPPORTED_RULE_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k).filter(|x| !x.is_null())
}

fn get_str<'a>(v: &'a Value, k: &str) -> &'a str {
    get(v, k).and_then(Value::as_str).unwrap_or("")
}

fn get_bool(v: &Value, k: &str) -> bool {
    get(v, k).and_then(Value::as_bool).unwrap_or(false)
}

fn non_empty_obj<'a>(v: &'a Value, k: &str) -> Option<&'a Map<String, Value>> {
    get(v, k)
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
}

/// All checks, in kube-apiserver's order. `path` is the field path of the schema
/// (`spec.versions[0].schema.openAPIV3Schema`).
pub(crate) fn check(raw: &Value, root: &Node, path: &str, status_subresource: bool) -> Vec<Cause> {
    let mut all = Vec::new();
    if status_subresource {
        status_root_rules(raw, path, &mut all);
    }
    if get_bool(raw, "nullable") {
        all.push(Cause::forbidden(
            child(path, "nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let init_error = structural_init_error(raw);
    if init_error.is_none() {
        let mut structural = Vec::new();
        invariants(root, Level::Root, path, &mut structural);
        completeness(root, path, &mut structural);
        structural.sort_by_key(ToString::to_string);
        if structural.is_empty() {
            validate_defaults(root, path, false, true, &mut all);
        } else {
            all.extend(structural);
        }
    }
    let ssv = Ssv {
        allow_defaults: true,
        disallow_reason: String::new(),
        inside_meta: false,
    };
    spec_validate(raw, path, &ssv, true, &mut all);
    if all.is_empty()
        && let Some(e) = init_error
    {
        all.push(Cause::invalid(path, "", &e));
    }
    all
}

/// The Go field names of `JSONSchemaProps`, in declaration order, with their JSON names.
const GO_FIELDS: [(&str, &str); 43] = [
    ("ID", "id"),
    ("Schema", "$schema"),
    ("Ref", "$ref"),
    ("Description", "description"),
    ("Type", "type"),
    ("Format", "format"),
    ("Title", "title"),
    ("Default", "default"),
    ("Maximum", "maximum"),
    ("ExclusiveMaximum", "exclusiveMaximum"),
    ("Minimum", "minimum"),
    ("ExclusiveMinimum", "exclusiveMinimum"),
    ("MaxLength", "maxLength"),
    ("MinLength", "minLength"),
    ("Pattern", "pattern"),
    ("MaxItems", "maxItems"),
    ("MinItems", "minItems"),
    ("UniqueItems", "uniqueItems"),
    ("MultipleOf", "multipleOf"),
    ("Enum", "enum"),
    ("MaxProperties", "maxProperties"),
    ("MinProperties", "minProperties"),
    ("Required", "required"),
    ("Items", "items"),
    ("AllOf", "allOf"),
    ("OneOf", "oneOf"),
    ("AnyOf", "anyOf"),
    ("Not", "not"),
    ("Properties", "properties"),
    ("AdditionalProperties", "additionalProperties"),
    ("PatternProperties", "patternProperties"),
    ("Dependencies", "dependencies"),
    ("AdditionalItems", "additionalItems"),
    ("Definitions", "definitions"),
    ("ExternalDocs", "externalDocs"),
    ("Example", "example"),
    ("Nullable", "nullable"),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
    ),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource"),
    ("XIntOrString", "x-kubernetes-int-or-string"),
    ("XListMapKeys", "x-kubernetes-list-map-keys"),
    ("XListType", "x-kubernetes-list-type"),
    ("XMapType", "x-kubernetes-map-type"),
];

/// Whether a JSON keyword holds a non-zero Go value.
fn is_set(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Number(_)) => true,
    }
}

fn status_root_rules(raw: &Value, path: &str, out: &mut Vec<Cause>) {
    let allowed = [
        "Description",
        "Type",
        "Format",
        "Title",
        "Maximum",
        "ExclusiveMaximum",
        "Minimum",
        "ExclusiveMinimum",
        "MaxLength",
        "MinLength",
        "Pattern",
        "MaxItems",
        "MinItems",
        "UniqueItems",
        "MultipleOf",
        "Required",
        "Items",
        "Properties",
        "ExternalDocs",
        "Example",
        "XPreserveUnknownFields",
        "XValidations",
    ];
    let fields = GO_FIELDS.iter().copied().chain(std::iter::once((
        "XValidations",
        "x-kubernetes-validations",
    )));
    for (go, json) in fields {
        let v = raw.get(json);
        let set = if go == "Default" || go == "Maximum" || go == "Minimum" {
            v.is_some_and(|x| !x.is_null())
        } else {
            is_set(v)
        };
        if !set {
            continue;
        }
        if go == "Type" {
            let t = get_str(raw, "type");
            if t != "object" {
                out.push(Cause::invalid(
                    child(path, "type"),
                    t,
                    "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                ));
                break;
            }
            continue;
        }
        if !allowed.contains(&go) {
            out.push(Cause::invalid(
                path,
                raw,
                &format!("only {ALLOWED_AT_ROOT_WITH_STATUS} fields are allowed at the root of the schema if the status subresource is enabled"),
            ));
            break;
        }
    }
}

/// The first error `structuralschema.NewStructural` returns, if any.
fn structural_init_error(v: &Value) -> Option<String> {
    if !v.is_object() {
        return None;
    }
    let unsupported = [
        ("id", "id"),
        ("$schema", "schema"),
        ("$ref", "$ref"),
        ("patternProperties", "patternProperties"),
        ("dependencies", "dependencies"),
        ("additionalItems", "additionalItems"),
        ("definitions", "definitions"),
    ];
    for (json, name) in unsupported {
        let present = match json {
            "additionalItems" => get(v, json).is_some(),
            _ => is_set(v.get(json)),
        };
        if present {
            return Some(format!("OpenAPIV3Schema '{name}' is not supported"));
        }
    }
    if let Some(e) = get(v, "not").and_then(structural_init_error) {
        return Some(e);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for s in get(v, k).and_then(Value::as_array).into_iter().flatten() {
            if let Some(e) = structural_init_error(s) {
                return Some(e);
            }
        }
    }
    if get(v, "x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .into(),
        );
    }
    match get(v, "items") {
        Some(Value::Array(a)) if !a.is_empty() => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into());
        }
        Some(items @ Value::Object(_)) => {
            if let Some(e) = structural_init_error(items) {
                return Some(e);
            }
        }
        _ => {}
    }
    for (_, p) in get(v, "properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(e) = structural_init_error(p) {
            return Some(e);
        }
    }
    if let Some(ap @ Value::Object(_)) = get(v, "additionalProperties") {
        return structural_init_error(ap);
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

fn is_int_or_string_any_of(any_of: &[Node]) -> bool {
    matches!(any_of, [a, b]
        if a.only_type.as_deref() == Some("integer") && b.only_type.as_deref() == Some("string"))
}

/// `validateStructuralInvariants`.
fn invariants(s: &Node, lvl: Level, path: &str, out: &mut Vec<Cause>) {
    if s.type_name == "array" && s.items.is_none() {
        out.push(Cause::required(child(path, "items"), "must be specified"));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &child(path, "items"), out);
    }
    for (k, p) in &s.properties {
        invariants(p, Level::Field, &key(&child(path, "properties"), k), out);
    }
    if let Some(ap) = &s.additional {
        if lvl == Level::Root {
            out.push(Cause::forbidden(
                child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Additional::Schema(ap) = ap {
            invariants(ap, Level::Field, &child(path, "additionalProperties"), out);
        }
    }
    if s.int_or_string && s.preserve_unknown {
        out.push(Cause::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded {
        out.push(Cause::invalid(
            child(path, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of = s
        .all_of
        .first()
        .is_some_and(|a| is_int_or_string_any_of(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of, lvl, path, out);

    let check_metadata = lvl == Level::Root || s.embedded;
    if s.embedded && s.type_name != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if s.type_name.is_empty() {
            out.push(Cause::required(child(path, "type"), msg));
        } else {
            out.push(Cause::invalid(child(path, "type"), &s.type_name, msg));
        }
    } else if s.type_name.is_empty() && !s.int_or_string && !s.preserve_unknown {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(Cause::required(child(path, "type"), msg));
    }
    if s.embedded && s.additional.is_some() {
        out.push(Cause::forbidden(
            child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_name.is_empty() && s.type_name != "object" {
        out.push(Cause::invalid(
            child(path, "type"),
            &s.type_name,
            "must be object at the root",
        ));
    }
    for name in ["kind", "apiVersion"] {
        if let Some(p) = s.property(name)
            && check_metadata
            && p.type_name != "string"
        {
            out.push(Cause::invalid(
                child(&key(&child(path, "properties"), name), "type"),
                &p.type_name,
                "must be string",
            ));
        }
    }
    if let Some(meta) = s.property("metadata") {
        let mpath = key(&child(path, "properties"), "metadata");
        if check_metadata && meta.type_name != "object" {
            out.push(Cause::invalid(
                child(&mpath, "type"),
                &meta.type_name,
                "must be object",
            ));
        }
        if lvl == Level::Root && !root_metadata_is_implicit(meta) {
            out.push(Cause::forbidden(
                mpath,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.embedded && !s.preserve_unknown && s.properties.is_empty() {
        out.push(Cause::required(
            child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// The root `metadata` schema may only have a type, a default and `name`/`generateName`
/// properties.
fn root_metadata_is_implicit(m: &Node) -> bool {
    let names_only = m
        .properties
        .iter()
        .all(|(k, _)| k == "name" || k == "generateName");
    names_only
        && m.items.is_none()
        && m.additional.is_none()
        && m.title.is_empty()
        && m.description.is_empty()
        && !m.nullable
        && !m.preserve_unknown
        && !m.embedded
        && !m.int_or_string
        && m.list_map_keys.is_empty()
        && m.list_type.is_none()
        && m.map_type.is_none()
        && m.x_validations.is_empty()
        && has_no_value_validation(m)
}

fn has_no_value_validation(m: &Node) -> bool {
    m.format.is_empty()
        && m.maximum.is_none()
        && !m.exclusive_maximum
        && m.minimum.is_none()
        && !m.exclusive_minimum
        && m.max_length.is_none()
        && m.min_length.is_none()
        && m.pattern.is_none()
        && m.max_items.is_none()
        && m.min_items.is_none()
        && !m.unique_items
        && m.multiple_of.is_none()
        && m.enum_values.as_ref().is_none_or(Vec::is_empty)
        && m.max_properties.is_none()
        && m.min_properties.is_none()
        && m.required.is_empty()
        && m.all_of.is_empty()
        && m.any_of.is_empty()
        && m.one_of.is_empty()
        && m.not.is_none()
}

/// `validateValueValidation`: the nested (anyOf/allOf/oneOf/not) schemas must not carry
/// structure, and patterns must compile.
fn value_validation(
    s: &Node,
    skip_any_of: bool,
    skip_first_all_of: bool,
    lvl: Level,
    path: &str,
    out: &mut Vec<Cause>,
) {
    if !skip_any_of {
        for (i, v) in s.any_of.iter().enumerate() {
            nested(v, false, lvl, &index(&child(path, "anyOf"), i), out);
        }
    }
    for (i, v) in s.all_of.iter().enumerate() {
        nested(
            v,
            skip_first_all_of && i == 0,
            lvl,
            &index(&child(path, "allOf"), i),
            out,
        );
    }
    for (i, v) in s.one_of.iter().enumerate() {
        nested(v, false, lvl, &index(&child(path, "oneOf"), i), out);
    }
    if let Some(not) = &s.not {
        nested(not, false, lvl, &child(path, "not"), out);
    }
    if let Some(p) = &s.pattern
        && let Err(e) = &p.regex
    {
        out.push(Cause::invalid(
            child(path, "pattern"),
            &p.source,
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

fn nested(v: &Node, skip_any_of: bool, lvl: Level, path: &str, out: &mut Vec<Cause>) {
    value_validation(v, skip_any_of, false, lvl, path, out);
    if let Some(items) = &v.items {
        nested(items, false, lvl, &child(path, "items"), out);
    }
    for (k, p) in &v.properties {
        nested(
            p,
            false,
            Level::Field,
            &key(&child(path, "properties"), k),
            out,
        );
    }
    let forbid = |out: &mut Vec<Cause>, field: &str, msg: &str| {
        out.push(Cause::forbidden(child(path, field), msg));
    };
    if !v.type_name.is_empty() {
        forbid(out, "type", "must be empty to be structural");
    }
    match &v.additional {
        Some(Additional::Schema(_)) | Some(Additional::Bool(true)) => {
            forbid(
                out,
                "additionalProperties",
                "must be undefined to be structural",
            );
        }
        _ => {}
    }
    if v.default.is_some() {
        forbid(out, "default", "must be undefined to be structural");
    }
    if !v.title.is_empty() {
        forbid(out, "title", "must be empty to be structural");
    }
    if !v.description.is_empty() {
        forbid(out, "description", "must be empty to be structural");
    }
    if v.nullable {
        forbid(out, "nullable", "must be false to be structural");
    }
    if v.preserve_unknown {
        forbid(
            out,
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if v.embedded {
        forbid(
            out,
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if v.int_or_string {
        forbid(
            out,
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if !v.list_map_keys.is_empty() {
        forbid(
            out,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if v.list_type.is_some() {
        forbid(
            out,
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if v.map_type.is_some() {
        forbid(
            out,
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if !v.x_validations.is_empty() {
        forbid(
            out,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v.property("metadata").is_some() {
        out.push(Cause::forbidden(
            key(&child(path, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: every property a root-level `anyOf`/`allOf`/`oneOf`/`not`
/// mentions must also be specified structurally.
fn completeness(s: &Node, path: &str, out: &mut Vec<Cause>) {
    value_completeness(s, s, path, path, out);
}

fn value_completeness(v: &Node, s: &Node, s_path: &str, v_path: &str, out: &mut Vec<Cause>) {
    if let Some(not) = &v.not {
        nested_completeness(not, Some(s), s_path, &child(v_path, "not"), out);
    }
    for (name, list) in [
        ("allOf", &v.all_of),
        ("anyOf", &v.any_of),
        ("oneOf", &v.one_of),
    ] {
        for (i, n) in list.iter().enumerate() {
            nested_completeness(n, Some(s), s_path, &index(&child(v_path, name), i), out);
        }
    }
}

fn nested_completeness(
    v: &Node,
    s: Option<&Node>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<Cause>,
) {
    let Some(s) = s else {
        out.push(Cause::required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    value_completeness(v, s, s_path, v_path, out);
    if let Some(items) = &v.items {
        nested_completeness(
            items,
            s.items.as_deref(),
            &child(s_path, "items"),
            &child(v_path, "items"),
            out,
        );
    }
    for (k, vf) in &v.properties {
        let sp = key(&child(s_path, "properties"), k);
        let vp = key(&child(v_path, "properties"), k);
        match s.property(k) {
            None => out.push(Cause::required(
                sp,
                &format!("because it is defined in {vp}"),
            )),
            Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, out),
        }
    }
}

/// `structuraldefaulting.ValidateDefaults`: each default must survive pruning unchanged, be
/// valid metadata where embedded, and validate against its own schema.
fn validate_defaults(s: &Node, path: &str, inside_meta: bool, root: bool, out: &mut Vec<Cause>) {
    let embedded = root || s.embedded;
    let inside_meta = inside_meta && !embedded;
    if let Some(d) = &s.default
        && !inside_meta
    {
        let dpath = child(path, "default");
        let mut pruned = d.clone();
        prune(&mut pruned, Some(s), s.embedded, "", &mut Vec::new());
        if &pruned != d {
            out.push(Cause::invalid(&dpath, d, "must not have unknown fields"));
        }
        let mut coerced = d.clone();
        if let Err(e) = coerce_embedded(&mut coerced, Some(s), &dpath, "", &mut Vec::new()) {
            out.push(e);
        } else {
            let mut meta_errs = Vec::new();
            validate_embedded(d, Some(s), &dpath, &mut meta_errs);
            if meta_errs.is_empty() {
                let mut errs = Vec::new();
                validate_value(s, d, None, "", &mut errs);
                out.extend(to_causes(errs, Some(&dpath)));
            } else {
                out.extend(meta_errs);
            }
        }
    }
    if let Some(items) = &s.items {
        validate_defaults(items, &child(path, "items"), inside_meta, false, out);
    }
    for (k, p) in &s.properties {
        let sub_meta =
            inside_meta || (embedded && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
        validate_defaults(p, &key(&child(path, "properties"), k), sub_meta, false, out);
    }
}

/// The state `specStandardValidatorV3` carries down the schema.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
}

impl Ssv {
    fn forbid_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            disallow_reason: reason.to_string(),
            inside_meta: self.inside_meta,
        }
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` on the raw schema.
fn spec_validate(v: &Value, path: &str, ssv: &Ssv, is_root: bool, out: &mut Vec<Cause>) {
    if !v.is_object() {
        return;
    }
    let t = get_str(v, "type");
    if !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t) {
        out.push(Cause::not_supported(
            child(path, "type"),
            t,
            &OPENAPI_V3_TYPES,
        ));
    }
    if get(v, "default").is_some() && !ssv.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ssv.disallow_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ssv.disallow_reason);
        }
        out.push(Cause::forbidden(child(path, "default"), &detail));
    }
    if !get_str(v, "id").is_empty() {
        out.push(Cause::forbidden(child(path, "id"), "id is not supported"));
    }
    if get(v, "additionalItems").is_some() {
        out.push(Cause::forbidden(
            child(path, "additionalItems"),
            "additionalItems is not supported",
        ));
    }
    if non_empty_obj(v, "patternProperties").is_some() {
        out.push(Cause::forbidden(
            child(path, "patternProperties"),
            "patternProperties is not supported",
        ));
    }
    if non_empty_obj(v, "definitions").is_some() {
        out.push(Cause::forbidden(
            child(path, "definitions"),
            "definitions is not supported",
        ));
    }
    if get(v, "dependencies").is_some() {
        out.push(Cause::forbidden(
            child(path, "dependencies"),
            "dependencies is not supported",
        ));
    }
    if get(v, "$ref").is_some() {
        out.push(Cause::forbidden(
            child(path, "$ref"),
            "$ref is not supported",
        ));
    }
    if t == "null" {
        out.push(Cause::forbidden(
            child(path, "type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    let items = get(v, "items");
    if let Some(Value::Array(a)) = items
        && !a.is_empty()
    {
        out.push(Cause::forbidden(
            child(path, "items"),
            "items must be a schema object and not an array",
        ));
    }
    let embedded = get_bool(v, "x-kubernetes-embedded-resource");
    if ssv.inside_meta && embedded {
        out.push(Cause::forbidden(
            child(path, "x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if get_bool(v, "uniqueItems") {
        out.push(Cause::forbidden(
            child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let properties = get(v, "properties").and_then(Value::as_object);
    let has_properties = properties.is_some_and(|p| !p.is_empty());
    if let Some(ap) = get(v, "additionalProperties") {
        let allows_without_schema = ap == &Value::Bool(true);
        if has_properties && !allows_without_schema {
            out.push(Cause::forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_meta {
            ssv.forbid_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        spec_validate(ap, &child(path, "additionalProperties"), &sub, false, out);
    }
    for (k, p) in properties.into_iter().flatten() {
        let mut sub = ssv.clone();
        if (is_root || embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbid_defaults(&format!("in top-level {k}"));
            }
        }
        spec_validate(p, &key(&child(path, "properties"), k), &sub, false, out);
    }
    if let Some(not) = get(v, "not") {
        spec_validate(not, &child(path, "not"), ssv, false, out);
    }
    for name in ["allOf", "oneOf", "anyOf"] {
        for (i, s) in get(v, name)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            spec_validate(s, &index(&child(path, name), i), ssv, false, out);
        }
    }
    for (k, s) in get(v, "definitions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        spec_validate(s, &key(&child(path, "definitions"), k), ssv, false, out);
    }
    match items {
        Some(s @ Value::Object(_)) => spec_validate(s, &child(path, "items"), ssv, false, out),
        Some(Value::Array(a)) => {
            for (i, s) in a.iter().enumerate() {
                spec_validate(s, &index(&child(path, "items"), i), ssv, false, out);
            }
        }
        _ => {}
    }
    for (k, s) in get(v, "dependencies")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if s.is_object() {
            spec_validate(s, &key(&child(path, "dependencies"), k), ssv, false, out);
        }
    }
    if get(v, "x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        out.push(Cause::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    list_and_map_types(v, t, path, out);
    validation_rules(v, path, out);
}

fn list_and_map_types(v: &Value, t: &str, path: &str, out: &mut Vec<Cause>) {
    let map_type = get(v, "x-kubernetes-map-type").and_then(Value::as_str);
    if let Some(mt) = map_type {
        if t != "object" {
            let msg = "must be object if x-kubernetes-map-type is specified";
            if t.is_empty() {
                out.push(Cause::required(child(path, "type"), msg));
            } else {
                out.push(Cause::invalid(child(path, "type"), t, msg));
            }
        }
        if mt != "atomic" && mt != "granular" {
            out.push(Cause::not_supported(
                child(path, "x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = get(v, "x-kubernetes-list-type").and_then(Value::as_str);
    let items = get(v, "items");
    let item_schema = items.filter(|i| i.is_object());
    if let Some(lt) = list_type {
        if t != "array" {
            let msg = "must be array if x-kubernetes-list-type is specified";
            if t.is_empty() {
                out.push(Cause::required(child(path, "type"), msg));
            } else {
                out.push(Cause::invalid(child(path, "type"), t, msg));
            }
        } else if lt == "set"
            && let Some(is) = item_schema
        {
            let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
            match get_str(is, "type") {
                "array" => {
                    if let Some(ilt) = get(is, "x-kubernetes-list-type").and_then(Value::as_str)
                        && ilt != "atomic"
                    {
                        out.push(Cause::invalid(
                            child(&child(path, "items"), "x-kubernetes-list-type"),
                            ilt,
                            msg,
                        ));
                    }
                }
                "object" => {
                    let imt = get(is, "x-kubernetes-map-type").and_then(Value::as_str);
                    if imt != Some("atomic") {
                        let shown = get(is, "x-kubernetes-list-type")
                            .and_then(Value::as_str)
                            .map_or(BadValue::Null, |s| BadValue::Str(s.to_string()));
                        out.push(Cause::invalid(
                            child(&child(path, "items"), "x-kubernetes-map-type"),
                            shown,
                            msg,
                        ));
                    }
                }
                _ => {}
            }
        }
        if !matches!(lt, "atomic" | "set" | "map") {
            out.push(Cause::not_supported(
                child(path, "x-kubernetes-list-type"),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    let keys: Vec<String> = get(v, "x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if !keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => out.push(Cause::required(child(path, "x-kubernetes-list-type"), msg)),
            Some(lt) if lt != "map" => {
                out.push(Cause::invalid(
                    child(path, "x-kubernetes-list-type"),
                    lt,
                    msg,
                ));
            }
            _ => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            out.push(Cause::required(
                child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match items {
            None => out.push(Cause::required(
                child(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(i @ Value::Array(_)) => out.push(Cause::invalid(
                child(path, "items"),
                i,
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(is) => {
                let it = get_str(is, "type");
                if it != "object" {
                    out.push(Cause::invalid(
                        child(&child(path, "items"), "type"),
                        it,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let props = get(is, "properties").and_then(Value::as_object);
                    let mut seen: Vec<&str> = Vec::new();
                    for k in &keys {
                        match props.and_then(|p| p.get(k)) {
                            Some(ks) => {
                                let kt = get_str(ks, "type");
                                if kt == "array" || kt == "object" {
                                    out.push(Cause::invalid(
                                        child(&key(&child(&child(path, "items"), "properties"), k), "type"),
                                        it,
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => out.push(Cause::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                BadValue::StringList(keys.clone()),
                                "entries must all be names of item properties",
                            )),
                        }
                        if seen.contains(&k.as_str()) {
                            out.push(Cause::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                BadValue::StringList(keys.clone()),
                                "must not contain duplicate entries",
                            ));
                        }
                        seen.push(k);
                    }
                }
            }
        }
    }
    // validateMapListKeysMapSet
    if let (Some(lt @ ("set" | "map")), Some(is)) = (list_type, item_schema) {
        let ipath = child(path, "items");
        if get_bool(is, "nullable") {
            out.push(Cause::forbidden(
                child(&ipath, "nullable"),
                &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            let required: Vec<&str> = get(is, "required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let props = get(is, "properties").and_then(Value::as_object);
            for k in &keys {
                let Some(ks) = props.and_then(|p| p.get(k)) else {
                    continue;
                };
                let kpath = key(&child(&ipath, "properties"), k);
                if !required.contains(&k.as_str()) && get(ks, "default").is_none() {
                    out.push(Cause::required(
                        child(&kpath, "default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if get_bool(ks, "nullable") {
                    out.push(Cause::forbidden(
                        child(&kpath, "nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
}

fn validation_rules(v: &Value, path: &str, out: &mut Vec<Cause>) {
    let rules = get(v, "x-kubernetes-validations").and_then(Value::as_array);
    for (i, r) in rules.into_iter().flatten().enumerate() {
        let rpath = index(&child(path, "x-kubernetes-validations"), i);
        let rule = get_str(r, "rule");
        let message = get_str(r, "message");
        let message_expr = get_str(r, "messageExpression");
        let trimmed_rule = rule.trim();
        let trimmed_msg = message.trim();
        if trimmed_rule.is_empty() {
            out.push(Cause::required(
                child(&rpath, "rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            out.push(Cause::invalid(
                child(&rpath, "message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if trimmed_msg.contains(['\n', '\r']) {
            out.push(Cause::invalid(
                child(&rpath, "message"),
                message,
                "message must not contain line breaks",
            ));
        } else if trimmed_rule.contains(['\n', '\r']) && trimmed_msg.is_empty() {
            out.push(Cause::required(
                child(&rpath, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expr.is_empty() && message_expr.trim().is_empty() {
            out.push(Cause::required(
                child(&rpath, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = get(r, "reason").and_then(Value::as_str)
            && !SUPPORTED_RULE_REASONS.contains(&reason)
        {
            out.push(Cause::not_supported(
                child(&rpath, "reason"),
                reason,
                &SUPPORTED_RULE_REASONS,
            ));
        }
        let field_path = get_str(r, "fieldPath");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            out.push(Cause::invalid(
                child(&rpath, "fieldPath"),
                field_path,
                "fieldPath must be non-empty if specified",
            ));
        }
        if field_path.contains(['\n', '\r']) {
            out.push(Cause::invalid(
                child(&rpath, "fieldPath"),
                field_path,
                "fieldPath must not contain line breaks",
            ));
        }
    }
}

/// `ValidateCustomResourceSelectableFields`: each `selectableFields[].jsonPath` of a CRD version
/// must be a simple path (`.spec.color`) to a string, boolean or integer field outside
/// `metadata`, without duplicates, at most 8. `path` is the field path of the list
/// (`spec.versions[0].selectableFields`).
pub(crate) fn selectable_fields(root: &Node, json_paths: &[&str], path: &str) -> Vec<Cause> {
    const MAX_SELECTABLE_FIELDS: i64 = 8;
    let mut out = Vec::new();
    let mut unique: Vec<String> = Vec::new();
    for (i, jp) in json_paths.iter().enumerate() {
        let fpath = child(&index(path, i), "jsonPath");
        if jp.is_empty() {
            out.push(Cause::required(fpath, ""));
            continue;
        }
        let (field_path, node, first) = match walk_field_path(root, jp) {
            Ok(found) => found,
            Err(e) => {
                out.push(Cause::invalid(
                    fpath,
                    *jp,
                    &format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if first == "metadata" {
            out.push(Cause::invalid(
                &fpath,
                *jp,
                "must not point to fields in metadata",
            ));
        }
        if !node.is_some_and(|n| matches!(n.type_name.as_str(), "string" | "boolean" | "integer")) {
            out.push(Cause::invalid(
                &fpath,
                *jp,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&field_path) {
            out.push(Cause::duplicate(&fpath, *jp));
        } else {
            unique.push(field_path);
        }
    }
    if unique.len() as i64 > MAX_SELECTABLE_FIELDS {
        out.push(Cause::too_many(
            path,
            Some(unique.len() as i64),
            MAX_SELECTABLE_FIELDS,
        ));
    }
    out
}

/// `cel.ValidFieldPath` without array notation: the field path, the schema found, and the
/// first segment.
fn walk_field_path<'a>(
    root: &'a Node,
    jp: &str,
) -> Result<(String, Option<&'a Node>, String), String> {
    let mut node = Some(root);
    let mut field = String::new();
    let mut first = String::new();
    let mut rest = jp;
    while !rest.is_empty() {
        if rest.starts_with('[') {
            return Err("array notation is not allowed".into());
        }
        let Some(after) = rest.strip_prefix('.') else {
            let tok = rest.split(['.', '[', ']']).next().unwrap_or(rest);
            let tok = if tok.is_empty() { &rest[..1] } else { tok };
            return Err(format!("expected [ or . but got: {tok}"));
        };
        let end = after.find(['.', '[', ']']).unwrap_or(after.len());
        if after.is_empty() {
            return Err("unexpected end of JSON path".into());
        }
        let tok = if end == 0 { &after[..1] } else { &after[..end] };
        let n = node.ok_or("does not refer to a valid field")?;
        if !n.properties.is_empty() {
            node = Some(n.property(tok).ok_or("does not refer to a valid field")?);
            field = child(&field, tok);
        } else if let Some(ap) = n.additional_schema() {
            node = ap;
            field = key(&field, tok);
        } else {
            return Err("does not refer to a valid field".into());
        }
        if first.is_empty() {
            first = tok.to_string();
        }
        rest = &after[tok.len()..];
    }
    Ok((field, node, first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: &str = "spec.versions[0].schema.openAPIV3Schema";

    fn run(schema: Value, status: bool) -> Vec<String> {
        let root = Node::parse(&schema, P, &mut Vec::new());
        check(&schema, &root, P, status)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn accepts_a_typical_structural_schema() {
        let s = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["x"], "properties": {
                "x": {"type": "string", "default": "a", "enum": ["a", "b"]},
                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "manifests": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                              "x-kubernetes-preserve-unknown-fields": true}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "either": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                           "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        assert_eq!(run(s, true), Vec::<String>::new());
    }

    #[test]
    fn rejects_missing_types_and_nested_structure() {
        let s = json!({"type": "object", "properties": {
            "spec": {"properties": {"a": {"type": "string"}},
                     "anyOf": [{"type": "string", "properties": {"metadata": {}}}]},
            "list": {"type": "array"}}});
        assert_eq!(
            run(s, false),
            vec![
                format!("{P}.properties[list].items: Required value: must be specified"),
                format!(
                    "{P}.properties[spec].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"
                ),
                format!(
                    "{P}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{P}.properties[spec].type: Required value: must not be empty for specified object fields"
                ),
            ]
        );
    }

    #[test]
    fn root_rules() {
        assert_eq!(
            run(json!({"type": "string"}), false),
            vec![format!(
                "{P}.type: Invalid value: \"string\": must be object at the root"
            ),]
        );
        assert_eq!(
            run(json!({}), false),
            vec![format!(
                "{P}.type: Required value: must not be empty at the root"
            ),]
        );
        assert_eq!(
            run(json!({"type": "object", "nullable": true}), false),
            vec![format!(
                "{P}.nullable: Forbidden: nullable cannot be true at the root"
            ),]
        );
        assert_eq!(
            run(
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                false
            ),
            vec![format!(
                "{P}.additionalProperties: Forbidden: must not be used at the root"
            ),]
        );
        let with_meta = json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 10}, "labels": {"type": "object"}}}}});
        assert_eq!(
            run(with_meta, false),
            vec![format!(
                "{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            ),]
        );
        let defaults_in_meta =
            json!({"type": "object", "properties": {"kind": {"type": "string", "default": "X"}}});
        assert_eq!(
            run(defaults_in_meta, false),
            vec![format!(
                "{P}.properties[kind].default: Forbidden: must not be set in top-level kind"
            ),]
        );
        let status = json!({"type": "object", "required": ["spec"], "enum": [{}], "properties": {"spec": {"type": "object"}}});
        let got = run(status, true);
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with(&format!("{P}: Invalid value: ")));
        assert!(got[0].ends_with(
            "fields are allowed at the root of the schema if the status subresource is enabled"
        ));
    }

    #[test]
    fn v1_restrictions() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "null"},
            "b": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "c": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
            "d": {"type": "strin"},
            "e": {"type": "string", "$ref": "#/x"},
            "f": {"type": "string", "x-kubernetes-preserve-unknown-fields": false},
            "g": {"type": "string", "pattern": "("}}}}});
        let got = run(s, false);
        assert!(got.contains(&format!("{P}.properties[spec].properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative")), "{got:#?}");
        assert!(got.contains(&format!("{P}.properties[spec].properties[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")));
        assert!(got.contains(&format!("{P}.properties[spec].properties[c].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")));
        assert!(got.contains(&format!("{P}.properties[spec].properties[d].type: Unsupported value: \"strin\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"")));
        assert!(got.contains(&format!(
            "{P}.properties[spec].properties[e].$ref: Forbidden: $ref is not supported"
        )));
        assert!(got.contains(&format!("{P}.properties[spec].properties[f].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined")));
    }

    #[test]
    fn pattern_must_compile() {
        let s =
            json!({"type": "object", "properties": {"spec": {"type": "string", "pattern": "("}}});
        let got = run(s, false);
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with(&format!("{P}.properties[spec].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp:")), "{got:?}");
    }

    #[test]
    fn list_and_map_type_rules() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string", "x-kubernetes-list-type": "set"},
            "b": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "c": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "missing"],
                  "items": {"type": "object", "properties": {"k": {"type": "string", "nullable": true}}}},
            "d": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
            "e": {"type": "array", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "string"}},
            "f": {"type": "string", "x-kubernetes-map-type": "weird"},
            "g": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}}}});
        let got = run(s, false);
        let want = [
            format!(
                "{P}.properties[spec].properties[a].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"
            ),
            format!(
                "{P}.properties[spec].properties[b].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
            ),
            format!(
                "{P}.properties[spec].properties[c].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"missing\"]: entries must all be names of item properties"
            ),
            format!(
                "{P}.properties[spec].properties[c].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
            ),
            format!(
                "{P}.properties[spec].properties[c].items.properties[k].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
            ),
            format!(
                "{P}.properties[spec].properties[d].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""
            ),
            format!(
                "{P}.properties[spec].properties[e].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
            ),
            format!(
                "{P}.properties[spec].properties[f].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified"
            ),
            format!(
                "{P}.properties[spec].properties[f].x-kubernetes-map-type: Unsupported value: \"weird\": supported values: \"atomic\", \"granular\""
            ),
            format!(
                "{P}.properties[spec].properties[g].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"
            ),
        ];
        for w in &want {
            assert!(got.contains(w), "missing {w}\n{got:#?}");
        }
    }

    #[test]
    fn defaults_must_be_valid_and_pruned() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "n": {"type": "integer", "default": "x"},
            "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "1", "b": 2}},
            "ok": {"type": "string", "default": "fine"}}}}});
        assert_eq!(
            run(s, false),
            vec![
                format!(
                    "{P}.properties[spec].properties[n].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
                ),
                format!(
                    "{P}.properties[spec].properties[o].default: Invalid value: {{\"a\":\"1\",\"b\":2}}: must not have unknown fields"
                ),
            ]
        );
    }

    #[test]
    fn unsupported_fields_only_reported_alone() {
        let s = json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"});
        assert_eq!(
            run(s, false),
            vec![format!(
                "{P}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"
            ),]
        );
    }

    #[test]
    fn selectable_field_paths() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "color": {"type": "string"}, "size": {"type": "integer"}, "obj": {"type": "object"}}},
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}}}});
        let root = Node::parse(&s, P, &mut Vec::new());
        let got: Vec<String> = selectable_fields(
            &root,
            &[
                ".spec.color",
                ".spec.size",
                "",
                ".spec.obj",
                ".spec.nope",
                "spec.color",
                ".spec.color",
                ".spec[0]",
                ".metadata.name",
                ".spec.",
            ],
            "spec.versions[0].selectableFields",
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        let f = "spec.versions[0].selectableFields";
        assert_eq!(
            got,
            vec![
                format!("{f}[2].jsonPath: Required value"),
                format!(
                    "{f}[3].jsonPath: Invalid value: \".spec.obj\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."
                ),
                format!(
                    "{f}[4].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field"
                ),
                format!(
                    "{f}[5].jsonPath: Invalid value: \"spec.color\": is an invalid path: expected [ or . but got: spec"
                ),
                format!("{f}[6].jsonPath: Duplicate value: \".spec.color\""),
                format!(
                    "{f}[7].jsonPath: Invalid value: \".spec[0]\": is an invalid path: array notation is not allowed"
                ),
                format!(
                    "{f}[8].jsonPath: Invalid value: \".metadata.name\": must not point to fields in metadata"
                ),
                format!(
                    "{f}[9].jsonPath: Invalid value: \".spec.\": is an invalid path: unexpected end of JSON path"
                ),
            ]
        );
    }

    #[test]
    fn validation_rule_shapes() {
        let s = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": " "}, {"rule": "self.a\n== 1"}, {"rule": "true", "reason": "Nope"}, {"rule": "true", "message": " "}]});
        assert_eq!(
            run(s, false),
            vec![
                format!(
                    "{P}.x-kubernetes-validations[0].rule: Required value: rule is not specified"
                ),
                format!(
                    "{P}.x-kubernetes-validations[1].message: Required value: message must be specified if rule contains line breaks"
                ),
                format!(
                    "{P}.x-kubernetes-validations[2].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ),
                format!(
                    "{P}.x-kubernetes-validations[3].message: Invalid value: \" \": message must be non-empty if specified"
                ),
            ]
        );
    }
}

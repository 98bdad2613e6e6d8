//! Property tests: random JSON thrown at schema building, validation, defaulting and pruning,
//! at metadata validation, and random strings at the selector parsers — never a panic, and
//! parsed selectors print back to text that parses to the same selector.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ocm_apiserver_schema::StructuralSchema;
use ocm_apiserver_selector::{
    FieldSelector, FieldSet, LabelSelector, validate_structured_label_selector,
};
use ocm_apiserver_validation::{
    NameRule, coerce_object_meta, finalizer_warnings, validate_object_meta,
    validate_object_meta_update,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Keys that make random objects hit schema keywords and Kubernetes fields.
const KEYS: &[&str] = &[
    "type",
    "properties",
    "items",
    "required",
    "enum",
    "default",
    "additionalProperties",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "multipleOf",
    "maxLength",
    "minItems",
    "maxProperties",
    "nullable",
    "uniqueItems",
    "metadata",
    "apiVersion",
    "kind",
    "spec",
    "status",
    "name",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "generateName",
    "uid",
    "a",
    "b",
    "",
];

const STRINGS: &[&str] = &[
    "object",
    "array",
    "string",
    "integer",
    "number",
    "boolean",
    "null",
    "map",
    "set",
    "atomic",
    "date-time",
    "byte",
    "uuid",
    "int32",
    "^[a-z]+$",
    "(",
    "v1",
    "a/b",
    "x",
    "",
    "Kind",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        Just(json!(u64::MAX)),
        Just(json!(1e300)),
        prop::sample::select(STRINGS).prop_map(|s| json!(s)),
        "[ -~]{0,8}".prop_map(Value::String),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                let mut m = Map::new();
                for (k, v) in kv {
                    m.insert(k.to_string(), v);
                }
                Value::Object(m)
            }),
        ]
    })
}

fn fixed_schema() -> StructuralSchema {
    let s = json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string", "default": "x", "pattern": "^[a-z]*$", "maxLength": 5},
            "b": {"type": "integer", "minimum": 0, "maximum": 10, "multipleOf": 2, "nullable": true},
            "c": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": true, "maximum": 3},
            "d": {"type": "string", "format": "date-time", "enum": ["2024-01-01T00:00:00Z"]},
            "e": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "list": {"type": "array", "maxItems": 3, "x-kubernetes-list-type": "map",
                     "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"],
                     "properties": {"name": {"type": "string"}, "v": {"type": "integer", "default": 1}}}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "m": {"type": "object", "additionalProperties": {"type": "string", "default": "d"}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "emb": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true}},
            "one": {"type": "object", "properties": {"p": {"type": "string"}, "q": {"type": "string"}},
                    "oneOf": [{"required": ["p"]}, {"required": ["q"]}]}}},
        "status": {"type": "object", "properties": {"n": {"type": "integer"}}}}});
    StructuralSchema::new(&s).expect("fixed schema is structural")
}

fn exercise(schema: &StructuralSchema, obj: &Value, old: &Value) {
    let mut o = obj.clone();
    let _ = schema.prune(&mut o);
    schema.apply_defaults(&mut o);
    let _ = schema.validate(&o);
    let _ = schema.validate(obj);
    let _ = schema.validate_update(obj, old);
    let _ = schema.validate_status_update(obj, old);
    let _ = schema.list_type_at(&["spec", "list"]);
    let _ = schema.node_at(&["spec", "a", "b"]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_schemas_never_panic(schema in arb_json(), obj in arb_json(), old in arb_json()) {
        let _ = StructuralSchema::new(&schema);
        let _ = StructuralSchema::new_in_crd(&schema, "spec.versions[0].schema.openAPIV3Schema", true);
        let accepted = StructuralSchema::from_accepted(&schema);
        exercise(&accepted, &obj, &old);
    }

    #[test]
    fn random_objects_never_panic(spec in arb_json(), status in arb_json(), meta in arb_json(), old in arb_json()) {
        let schema = fixed_schema();
        let obj = json!({"apiVersion": "g/v1", "kind": "K", "metadata": meta, "spec": spec, "status": status});
        exercise(&schema, &obj, &old);
        exercise(&schema, &spec, &obj);
    }

    #[test]
    fn defaulting_is_idempotent_and_pruning_is_stable(spec in arb_json()) {
        let schema = fixed_schema();
        let mut obj = json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n"}, "spec": spec});
        if schema.prune(&mut obj).is_ok() {
            schema.apply_defaults(&mut obj);
            let once = obj.clone();
            schema.apply_defaults(&mut obj);
            prop_assert_eq!(&once, &obj);
            let again = schema.prune(&mut obj).unwrap();
            prop_assert!(again.is_empty(), "second prune found {:?}", again);
        }
    }

    #[test]
    fn metadata_checks_never_panic(meta in arb_json(), old_meta in arb_json()) {
        let obj = json!({"metadata": meta});
        let old = json!({"metadata": old_meta});
        for rule in [NameRule::DnsSubdomain, NameRule::DnsLabel, NameRule::Dns1035Label, NameRule::PathSegment] {
            let _ = validate_object_meta(&obj, rule, true);
            let _ = validate_object_meta(&obj, rule, false);
        }
        let _ = validate_object_meta_update(&obj, &old);
        let _ = finalizer_warnings(&obj, Some(&old));
        let mut o = obj.clone();
        let _ = coerce_object_meta(&mut o, "x");
        let _ = validate_structured_label_selector(&obj["metadata"], "spec.selector");
        let _ = LabelSelector::from_structured(&obj["metadata"]);
    }

    #[test]
    fn label_selector_text_round_trips(s in "[ a-z0-9=!(),<>._/-]{0,24}") {
        if let Ok(sel) = LabelSelector::parse(&s) {
            let printed = sel.to_string();
            let again = LabelSelector::parse(&printed);
            prop_assert_eq!(again.as_ref(), Ok(&sel), "{:?} printed as {:?}", s, printed);
        }
    }

    #[test]
    fn arbitrary_strings_never_panic_the_parsers(s in any::<String>()) {
        let _ = LabelSelector::parse(&s);
        if let Ok(f) = FieldSelector::parse(&s) {
            let set = FieldSet::for_builtin("", "pods");
            if let Ok(checked) = set.check(&f) {
                let _ = checked.matches(&json!({"metadata": {"name": s}}), &set);
            }
        }
    }

    #[test]
    fn field_selector_values_round_trip(field in "[a-z.]{1,10}", value in "[ -~]{0,10}") {
        let sel = FieldSelector::parse(&format!("{field}={}", value.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=")));
        let sel = sel.unwrap();
        prop_assert_eq!(&sel.terms()[0].value, &value);
        prop_assert_eq!(FieldSelector::parse(&sel.to_string()).unwrap(), sel);
    }
}

//! Property tests of the patch algorithms: random documents and random patches of all three
//! patch types and random applied configurations never panic; merge patches are idempotent;
//! a JSON-patch `add` followed by `remove` restores the document; applying the same
//! configuration twice with one manager changes nothing; non-apply writes keep managedFields
//! consistent with the object.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ocm_apiserver_patch::{
    ApplyOptions, ObjectType, PatchError, UpdateOptions, apply, apply_json_patch,
    apply_merge_patch, apply_strategic_merge_patch, record_update,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Keys that make random documents hit directives, list keys and Kubernetes fields.
const KEYS: &[&str] = &[
    "a",
    "b",
    "name",
    "image",
    "containerPort",
    "protocol",
    "spec",
    "template",
    "containers",
    "ports",
    "env",
    "metadata",
    "labels",
    "finalizers",
    "replicas",
    "tolerations",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$deleteFromPrimitiveList/finalizers",
    "",
];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_string)
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..100).prop_map(|n| json!(n)),
        Just(json!(1.5)),
        prop::sample::select(&["replace", "delete", "merge", "x", "TCP", "a", ""][..])
            .prop_map(|s| json!(s)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), value()), 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

fn pointer() -> impl Strategy<Value = String> {
    let segment = prop::sample::select(
        &[
            "a",
            "b",
            "0",
            "1",
            "-",
            "-1",
            "containers",
            "spec",
            "~0",
            "~1x",
            "",
            "9",
        ][..],
    );
    prop::collection::vec(segment, 0..4)
        .prop_map(|segs| segs.iter().map(|s| format!("/{s}")).collect::<String>())
}

fn json_patch_op() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(&["add", "remove", "replace", "move", "copy", "test", "bogus"][..]),
        pointer(),
        pointer(),
        prop::option::of(value()),
    )
        .prop_map(|(op, path, from, value)| {
            let mut m = Map::new();
            m.insert("op".into(), json!(op));
            m.insert("path".into(), json!(path));
            m.insert("from".into(), json!(from));
            if let Some(v) = value {
                m.insert("value".into(), v);
            }
            Value::Object(m)
        })
}

fn deployment_type() -> ObjectType {
    ObjectType::builtin("apps", "Deployment").expect("Deployment is built in")
}

/// Deployment-shaped configurations with random holes and random junk.
fn deployment_config() -> impl Strategy<Value = Value> {
    let container = (
        prop::sample::select(&["a", "b", "c"][..]),
        prop::option::of(prop::sample::select(&["i1", "i2"][..])),
        prop::option::of(prop::collection::vec(
            prop::sample::select(&[80, 443, 8080][..]),
            0..3,
        )),
        prop::option::of(prop::collection::vec(
            prop::sample::select(&["X", "Y"][..]),
            0..3,
        )),
    )
        .prop_map(|(name, image, ports, env)| {
            let mut c = json!({"name": name});
            if let Some(i) = image {
                c["image"] = json!(i);
            }
            if let Some(p) = ports {
                c["ports"] = Value::Array(p.iter().map(|p| json!({"containerPort": p})).collect());
            }
            if let Some(e) = env {
                c["env"] =
                    Value::Array(e.iter().map(|n| json!({"name": n, "value": "v"})).collect());
            }
            c
        });
    (
        prop::option::of(0i64..5),
        prop::option::of(any::<bool>()),
        prop::option::of(prop::collection::vec(container, 0..4)),
        prop::option::of(prop::collection::btree_map(
            prop::sample::select(&["app", "tier"][..]),
            prop::sample::select(&["x", "y"][..]),
            0..3,
        )),
        prop::option::of(prop::collection::vec(
            prop::sample::select(&["f1", "f2"][..]),
            0..3,
        )),
        prop::option::of(value()),
    )
        .prop_map(|(replicas, paused, containers, labels, finalizers, junk)| {
            let mut spec = Map::new();
            if let Some(r) = replicas {
                spec.insert("replicas".into(), json!(r));
            }
            if let Some(p) = paused {
                spec.insert("paused".into(), json!(p));
            }
            if let Some(c) = containers {
                spec.insert("template".into(), json!({"spec": {"containers": c}}));
            }
            if let Some(j) = junk {
                spec.insert("extra".into(), j);
            }
            let mut meta = json!({"name": "d", "namespace": "ns"});
            if let Some(l) = labels {
                meta["labels"] = json!(l);
            }
            if let Some(f) = finalizers {
                meta["finalizers"] = json!(f);
            }
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec})
        })
}

fn apply_opts<'a>(manager: &'a str, force: bool, now: &'a str) -> ApplyOptions<'a> {
    ApplyOptions {
        manager,
        api_version: "apps/v1",
        force,
        subresource: None,
        reset_fields: &[&["status"]],
        now,
    }
}

/// Every error maps to a client-error Status.
fn is_client_error(e: &PatchError) -> bool {
    (400..500).contains(&e.status_code()) && !e.reason().is_empty() && !e.message().is_empty()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn json_patch_never_panics(doc in object(), ops in prop::collection::vec(json_patch_op(), 0..8)) {
        if let Err(e) = apply_json_patch(&doc, &Value::Array(ops)) {
            prop_assert!(is_client_error(&e), "{e:?}");
        }
    }

    #[test]
    fn json_patch_bodies_of_any_shape_never_panic(doc in object(), body in value()) {
        if let Err(e) = apply_json_patch(&doc, &body) {
            prop_assert!(is_client_error(&e), "{e:?}");
        }
    }

    #[test]
    fn json_patch_add_then_remove_restores_the_document(
        doc in object(),
        new_key in "[a-z]{1,6}",
        v in value(),
    ) {
        let key = format!("zz-{new_key}/~");
        prop_assume!(doc.get(&key).is_none());
        let escaped = key.replace('~', "~0").replace('/', "~1");
        let patch = json!([
            {"op": "add", "path": format!("/{escaped}"), "value": v},
            {"op": "remove", "path": format!("/{escaped}")}
        ]);
        prop_assert_eq!(apply_json_patch(&doc, &patch), Ok(doc.clone()));
    }

    #[test]
    fn json_patch_test_of_a_missing_key_against_null_passes(doc in object(), new_key in "[a-z]{1,6}") {
        let key = format!("zz{new_key}");
        prop_assume!(doc.get(&key).is_none());
        let patch = json!([{"op": "test", "path": format!("/{key}"), "value": null}]);
        prop_assert_eq!(apply_json_patch(&doc, &patch), Ok(doc.clone()));
    }

    #[test]
    fn merge_patch_never_panics_and_is_idempotent(doc in object(), patch in value()) {
        match apply_merge_patch(&doc, &patch) {
            Ok(once) => {
                prop_assert!(once.is_object());
                prop_assert_eq!(apply_merge_patch(&once, &patch), Ok(once.clone()));
            }
            Err(e) => prop_assert!(is_client_error(&e), "{e:?}"),
        }
    }

    #[test]
    fn strategic_merge_patch_never_panics(original in object(), patch in value()) {
        let t = deployment_type();
        for (o, p) in [
            (original.clone(), patch.clone()),
            (json!({"spec": {"template": {"spec": original.clone()}}}),
             json!({"spec": {"template": {"spec": patch.clone()}}})),
            (json!({"metadata": original}), json!({"metadata": patch})),
        ] {
            match apply_strategic_merge_patch(&o, &p, &t) {
                Ok(v) => {
                    prop_assert!(v.is_object());
                    let text = v.to_string();
                    prop_assert!(!text.contains("\"$patch\""), "{text}");
                    prop_assert!(!text.contains("\"$retainKeys\""), "{text}");
                }
                Err(e) => prop_assert!(is_client_error(&e), "{e:?}"),
            }
        }
    }

    #[test]
    fn strategic_merge_of_deployments_never_panics(a in deployment_config(), b in deployment_config()) {
        let t = deployment_type();
        if let Err(e) = apply_strategic_merge_patch(&a, &b, &t) {
            prop_assert!(is_client_error(&e), "{e:?}");
        }
    }

    #[test]
    fn apply_of_random_bodies_never_panics(live in prop::option::of(object()), body in value()) {
        let t = deployment_type();
        let mut body = body;
        if let Value::Object(m) = &mut body {
            m.insert("apiVersion".into(), json!("apps/v1"));
        }
        let live = live.map(|mut l| {
            if let Value::Object(m) = &mut l {
                m.remove("metadata");
            }
            l
        });
        if let Err(e) = apply(live.as_ref(), &body, &t, &apply_opts("m", false, "2026-01-01T00:00:00Z")) {
            prop_assert!(is_client_error(&e), "{e:?}");
        }
    }

    #[test]
    fn apply_twice_by_one_manager_is_a_no_op(config in deployment_config()) {
        let t = deployment_type();
        let first = apply(None, &config, &t, &apply_opts("m", false, "2026-01-01T00:00:00Z"));
        match first {
            Ok(first) => {
                // A configuration that owns nothing (e.g. only an empty list) leaves the object
                // untracked; kube then attributes it to `before-first-apply` on the next apply.
                prop_assume!(first["metadata"].get("managedFields").is_some());
                let second = apply(Some(&first), &config, &t, &apply_opts("m", false, "2026-01-01T00:09:00Z"));
                prop_assert_eq!(second, Ok(first));
            }
            Err(e) => prop_assert!(is_client_error(&e), "{e:?}"),
        }
    }

    #[test]
    fn a_second_applier_either_conflicts_or_leaves_its_config_in_place(
        a in deployment_config(),
        b in deployment_config(),
        force in any::<bool>(),
    ) {
        let t = deployment_type();
        let Ok(first) = apply(None, &a, &t, &apply_opts("alice", false, "2026-01-01T00:00:00Z")) else {
            return Ok(());
        };
        prop_assume!(first["metadata"].get("managedFields").is_some());
        match apply(Some(&first), &b, &t, &apply_opts("bob", force, "2026-01-01T00:01:00Z")) {
            Ok(second) => {
                // Whatever bob applied is now in the object.
                if let Some(r) = b["spec"].get("replicas") {
                    prop_assert_eq!(&second["spec"]["replicas"], r);
                }
                // And applying it again is a no-op.
                let again = apply(Some(&second), &b, &t, &apply_opts("bob", force, "2026-01-01T00:02:00Z"));
                prop_assert_eq!(again, Ok(second));
            }
            Err(PatchError::Conflicts(c)) => {
                prop_assert!(!force);
                prop_assert!(!c.is_empty());
                prop_assert!(c.iter().all(|c| c.manager == "\"alice\""));
            }
            Err(e) => prop_assert!(is_client_error(&e), "{e:?}"),
        }
    }

    #[test]
    fn record_update_never_panics_and_an_identical_write_keeps_managed_fields(
        old in deployment_config(),
        new in deployment_config(),
    ) {
        let t = deployment_type();
        let opts = |m: &'static str, now: &'static str| UpdateOptions {
            manager: m, api_version: "apps/v1", subresource: None, reset_fields: &[], now,
        };
        let mut created = old.clone();
        record_update(None, &mut created, &t, &opts("creator", "2026-01-01T00:00:00Z"));
        created["metadata"]["uid"] = json!("u");
        let mut updated = new.clone();
        updated["metadata"]["uid"] = json!("u");
        record_update(Some(&created), &mut updated, &t, &opts("writer", "2026-01-01T00:01:00Z"));
        let mut same = updated.clone();
        record_update(Some(&updated), &mut same, &t, &opts("third", "2026-01-01T00:02:00Z"));
        prop_assert_eq!(same, updated);
    }
}

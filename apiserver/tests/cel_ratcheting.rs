//! CRD validation ratcheting with CEL, as Kubernetes' e2e `CRDValidationRatcheting` tests it:
//! a rule with `optionalOldSelf: true` sees `oldSelf` as an optional (`hasValue()`,
//! `value()`, `orValue()`), evaluated on create too; a rule on an item of an atomic or set
//! list is not ratcheted when the list changed (its items cannot be told apart), while an
//! unchanged list, and unchanged items of a map list (matched by key), are.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use crate::common;
use crate::common::tls::TlsServer;

const GROUP: &str = "ratchet.example.com";

fn crd(properties: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": properties}}}]}
    })
}

/// A Thing named `name` with `fields` at its root (`metadata` merged into its own).
fn thing(name: &str, fields: &Value) -> Value {
    let mut obj = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Thing",
                         "metadata": {"name": name}});
    for (k, v) in fields.as_object().into_iter().flatten() {
        match (k.as_str(), v.as_object()) {
            ("metadata", Some(meta)) => {
                for (mk, mv) in meta {
                    obj["metadata"][mk] = mv.clone();
                }
            }
            _ => obj[k] = v.clone(),
        }
    }
    obj
}

fn things(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, "v1", "Thing");
    Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk))
}

/// Server-side applies `fields` (at the root of a Thing named `test-resource`); the 422's
/// message when refused.
async fn apply(api: &Api<DynamicObject>, fields: Value) -> Result<(), String> {
    let obj = thing("test-resource", &fields);
    match api
        .patch(
            "test-resource",
            &PatchParams::apply("manager"),
            &Patch::Apply(obj),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(err) => {
            let (code, _, message) = common::status_of(err);
            assert_eq!(code, 422, "{message}");
            Err(message)
        }
    }
}

/// Replaces the Thing CRD's schema properties and waits until writes are checked with it
/// (`probe` is refused).
async fn update_schema(client: &kube::Client, properties: Value, probe: Value) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut current =
        serde_json::to_value(crds.get(&format!("things.{GROUP}")).await.unwrap()).unwrap();
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] = properties;
    let updated: CustomResourceDefinition = serde_json::from_value(current).unwrap();
    crds.replace(&format!("things.{GROUP}"), &Default::default(), &updated)
        .await
        .unwrap();
    let api = things(client);
    common::eventually("the new schema in use", || {
        let api = api.clone();
        let probe = probe.clone();
        async move {
            let obj = thing("sentinel", &probe);
            let refused = api
                .patch(
                    "sentinel",
                    &PatchParams::apply("probe").dry_run(),
                    &Patch::Apply(obj),
                )
                .await
                .is_err();
            refused.then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn optional_old_self_sees_an_optional() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let rule = json!([{"rule": "!oldSelf.hasValue() || self != oldSelf.value()",
                       "optionalOldSelf": true, "message": "must change"}]);
    common::crd::install(
        &client,
        common::crd::crd_from_json(crd(json!({
            "field": {"type": "string", "x-kubernetes-validations": rule},
            "other": {"type": "string", "x-kubernetes-validations": [
                {"rule": "oldSelf.orValue('none') != 'frozen'", "optionalOldSelf": true}]},
        }))),
    )
    .await;
    let api = things(&client);
    // On create there is no old value: the rule runs with optional.none().
    apply(&api, json!({"field": "foo", "other": "frozen"}))
        .await
        .unwrap();
    // Unchanged: the transition rule is not ratcheted.
    let message = apply(
        &api,
        json!({"field": "foo", "other": "x", "metadata": {"labels": {"a": "b"}}}),
    )
    .await
    .unwrap_err();
    assert!(
        message.starts_with("Thing.ratchet.example.com \"test-resource\" is invalid: ["),
        "{message}"
    );
    assert!(
        message.contains("field: Invalid value: \"foo\": must change"),
        "{message}"
    );
    assert!(
        message.contains(
            "other: Invalid value: \"x\": failed rule: oldSelf.orValue('none') != 'frozen'"
        ),
        "{message}"
    );
    apply(&api, json!({"field": "new", "other": "frozen"}))
        .await
        .unwrap_err();
    apply(&api, json!({"field": "new"})).await.unwrap();
}

#[tokio::test]
async fn items_of_atomic_and_set_lists_are_not_ratcheted_once_the_list_changes() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let item = |list_type: &str| {
        json!({"type": "array", "x-kubernetes-list-type": list_type,
               "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'foo'"}]}})
    };
    let plain = |list_type: &str| {
        json!({"type": "array", "x-kubernetes-list-type": list_type,
                                        "items": {"type": "string"}})
    };
    let keyed = json!({"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["key"],
        "items": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"},
            "field": {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'ok'"}]}}}});
    let keyed_plain = json!({"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["key"],
        "items": {"type": "object", "required": ["key"],
                  "properties": {"key": {"type": "string"}, "field": {"type": "string"}}}});
    common::crd::install(
        &client,
        common::crd::crd_from_json(crd(json!({
            "atomicArray": plain("atomic"), "setArray": plain("set"), "list": keyed_plain,
            "probe": {"type": "string"},
        }))),
    )
    .await;
    let api = things(&client);
    let lists = json!({"atomicArray": ["foo", "bar", "baz"], "setArray": ["foo", "bar", "baz"],
                       "list": [{"key": "a", "field": "bad"}, {"key": "b", "field": "ok"}]});
    apply(&api, lists.clone()).await.unwrap();
    update_schema(
        &client,
        json!({"atomicArray": item("atomic"), "setArray": item("set"), "list": keyed,
               "probe": {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'never'"}]}}),
        json!({"probe": "x"}),
    )
    .await;
    // Unchanged lists ratchet their items' errors.
    let mut unchanged = lists.clone();
    unchanged["metadata"] = json!({"labels": {"x": "y"}});
    apply(&api, unchanged).await.unwrap();
    // A map list's unchanged item ratchets even when it moves and another comes in.
    let mut moved = lists.clone();
    moved["list"] = json!([{"key": "c", "field": "ok"}, {"key": "b", "field": "ok"}, {"key": "a", "field": "bad"}]);
    apply(&api, moved).await.unwrap();
    // Appending to atomic and set lists: every item is checked again.
    let mut appended = lists.clone();
    appended["atomicArray"] = json!(["foo", "bar", "baz", "notfoo"]);
    appended["setArray"] = json!(["foo", "bar", "baz", "notfoo"]);
    appended["list"] = json!([{"key": "c", "field": "ok"}, {"key": "b", "field": "ok"}, {"key": "a", "field": "bad"}]);
    let message = apply(&api, appended).await.unwrap_err();
    assert!(
        message.contains("atomicArray[0]: Invalid value"),
        "{message}"
    );
    assert!(message.contains("setArray[0]: Invalid value"), "{message}");
    assert!(!message.contains("list["), "{message}");
}

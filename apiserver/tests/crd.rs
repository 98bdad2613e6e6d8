//! CustomResourceDefinitions: establishment, validation, defaulting, pruning, multiple
//! versions with conversion, printer columns, deletion.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use futures::StreamExt;

use common::crd::{crd_from_json, install};
use common::eventually;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

fn gadget_crd() -> CustomResourceDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["mode"],
                "properties": {
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                    "email": {"type": "string", "format": "email"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                },
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    });
    crd_from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.test.ocm.io"},
        "spec": {
            "group": "test.ocm.io",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gd"]},
            "versions": [
                {"name": "v1alpha1", "served": true, "storage": false, "schema": {"openAPIV3Schema": schema}},
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                 "subresources": {"status": {}},
                 "additionalPrinterColumns": [
                    {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                 ]},
            ],
        },
    }))
}

fn api(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("test.ocm.io", version, "Gadget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "gadgets");
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn gadget(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("test.ocm.io/{version}"),
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .unwrap()
}

fn invalid(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn established_with_conditions_and_discovery() {
    let (_s, client) = common::server().await;
    let crd = install(&client, gadget_crd()).await;
    let status = crd.status.unwrap();
    let types: Vec<_> = status
        .conditions
        .unwrap()
        .iter()
        .map(|c| (c.type_.clone(), c.status.clone()))
        .collect();
    assert!(types.contains(&("NamesAccepted".into(), "True".into())));
    assert!(types.contains(&("Established".into(), "True".into())));
    assert_eq!(status.accepted_names.unwrap().kind, "Gadget");
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let group = discovery.get("test.ocm.io").unwrap();
    assert_eq!(group.preferred_version(), Some("v1"));
    let discovery = kube::Discovery::new(client).run_aggregated().await.unwrap();
    assert!(
        discovery.get("test.ocm.io").is_some(),
        "aggregated discovery lists the CRD group"
    );
}

#[tokio::test]
async fn validation_defaulting_pruning() {
    let (_s, client) = common::server().await;
    install(&client, gadget_crd()).await;
    let v1 = api(&client, "v1");
    let created = v1
        .create(
            &PostParams::default(),
            &gadget(
                "v1",
                "g",
                json!({"mode": "fast", "unknown": 1, "free": {"anything": {"goes": true}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["replicas"], 1, "defaulted");
    assert_eq!(created.data["spec"].get("unknown"), None, "pruned");
    assert_eq!(
        created.data["spec"]["free"]["anything"]["goes"], true,
        "preserved"
    );
    for (spec, needle) in [
        (json!({}), "spec.mode: Required value"),
        (
            json!({"mode": "medium"}),
            "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\"",
        ),
        (
            json!({"mode": "fast", "replicas": 11}),
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ),
        (
            json!({"mode": "fast", "name": "ABC"}),
            "spec.name in body should match '^[a-z]+$'",
        ),
        (
            json!({"mode": "fast", "replicas": "x"}),
            "spec.replicas in body must be of type integer",
        ),
        (
            json!({"mode": "fast", "email": "nope"}),
            "spec.email in body must be of type email",
        ),
    ] {
        let (code, message) = invalid(
            v1.create(&PostParams::default(), &gadget("v1", "bad", spec.clone()))
                .await
                .unwrap_err(),
        );
        assert_eq!(code, 422, "{spec}: {message}");
        assert!(
            message.starts_with("Gadget.test.ocm.io \"bad\" is invalid: "),
            "{message}"
        );
        assert!(message.contains(needle), "{spec}: {message}");
    }
    // Strategic merge patch is not for custom resources.
    let (code, _) = invalid(
        v1.patch(
            "g",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"mode": "slow"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 415);
}

/// Registers a conversion hook for Gadgets that marks objects converted to v1alpha1
/// (`spec.converted: true`), drops the mark for other versions and sets `apiVersion`.
fn register_marking_hook(server: &ocm_apiserver::ApiServer) {
    server.register_conversion(
        "test.ocm.io",
        "Gadget",
        Arc::new(|mut obj: Value, to: &str| {
            if to == "test.ocm.io/v1alpha1" {
                obj["spec"]["converted"] = json!(true);
            } else if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("converted");
            }
            obj["apiVersion"] = json!(to);
            Ok(obj)
        }),
    );
}

#[tokio::test]
async fn multiple_versions_with_and_without_hook() {
    let (server, client) = common::server().await;
    install(&client, gadget_crd()).await;
    let alpha = api(&client, "v1alpha1");
    let v1 = api(&client, "v1");
    alpha
        .create(
            &PostParams::default(),
            &gadget("v1alpha1", "a", json!({"mode": "slow"})),
        )
        .await
        .unwrap();
    let as_v1 = v1.get("a").await.unwrap();
    assert_eq!(as_v1.types.as_ref().unwrap().api_version, "test.ocm.io/v1");
    assert_eq!(as_v1.data["spec"]["mode"], "slow");
    // The object is stored in the storage version.
    let raw = server
        .store()
        .list(
            &ocm_apiserver_storage::Bucket::new("", "test.ocm.io/gadgets"),
            None,
            None,
        )
        .1;
    let stored: Value = serde_json::from_slice(&raw[0].2.value).unwrap();
    assert_eq!(stored["apiVersion"], "test.ocm.io/v1");
    // A conversion hook takes over from the apiVersion rewrite.
    register_marking_hook(&server);
    let as_alpha = alpha.get("a").await.unwrap();
    assert_eq!(as_alpha.data["spec"]["converted"], true);
    let list = alpha.list(&Default::default()).await.unwrap();
    assert_eq!(list.items[0].data["spec"]["converted"], true);
}

/// The next watch event of `stream` as (type, apiVersion, spec.converted, label `team`).
async fn next_gadget<S>(stream: &mut S) -> (String, String, Value, Value)
where
    S: futures::Stream<Item = kube::Result<kube::api::WatchEvent<DynamicObject>>> + Unpin,
{
    use kube::api::WatchEvent;
    let event = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
        .await
        .expect("event in time")
        .expect("stream open")
        .expect("event ok");
    let (kind, obj) = match event {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        other => panic!("{other:?}"),
    };
    (
        kind.to_owned(),
        obj.types.map(|t| t.api_version).unwrap_or_default(),
        obj.data["spec"]["converted"].clone(),
        obj.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("team"))
            .map_or(Value::Null, |t| json!(t)),
    )
}

/// A watch event as [`next_gadget`] reads it: type, `test.ocm.io/<version>`, whether the
/// conversion hook's mark is there, label `team`.
fn seen(kind: &str, version: &str, converted: bool, team: &str) -> (String, String, Value, Value) {
    let mark = if converted { json!(true) } else { Value::Null };
    (
        kind.to_owned(),
        format!("test.ocm.io/{version}"),
        mark,
        json!(team),
    )
}

/// Sets gadget `w`'s label `team`.
async fn relabel(api: &Api<DynamicObject>, team: &str) {
    let patch = Patch::Merge(json!({"metadata": {"labels": {"team": team}}}));
    api.patch("w", &PatchParams::default(), &patch)
        .await
        .unwrap();
}

#[tokio::test]
async fn watchers_of_each_version_see_events_in_their_version() {
    let (server, client) = common::server().await;
    install(&client, gadget_crd()).await;
    register_marking_hook(&server);
    let alpha = api(&client, "v1alpha1");
    let v1 = api(&client, "v1");
    let params = kube::api::WatchParams::default();
    // Two watchers of v1alpha1 and one of v1 without selectors, one of v1alpha1 selecting a
    // label: every one must get each event in its own version.
    let mut alpha_a = alpha.watch(&params, "0").await.unwrap().boxed();
    let mut alpha_b = alpha.watch(&params, "0").await.unwrap().boxed();
    let mut plain = v1.watch(&params, "0").await.unwrap().boxed();
    let mut team = alpha
        .watch(&params.clone().labels("team=a"), "0")
        .await
        .unwrap()
        .boxed();
    let mut obj = gadget("v1", "w", json!({"mode": "fast"}));
    obj.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
    v1.create(&PostParams::default(), &obj).await.unwrap();
    let alpha_added = seen("ADDED", "v1alpha1", true, "a");
    assert_eq!(next_gadget(&mut alpha_a).await, alpha_added);
    assert_eq!(next_gadget(&mut alpha_b).await, alpha_added);
    assert_eq!(next_gadget(&mut team).await, alpha_added);
    assert_eq!(
        next_gadget(&mut plain).await,
        seen("ADDED", "v1", false, "a")
    );
    // The label goes: the selecting watcher sees the object leave, the others a change.
    relabel(&v1, "b").await;
    let alpha_changed = seen("MODIFIED", "v1alpha1", true, "b");
    assert_eq!(next_gadget(&mut alpha_a).await, alpha_changed);
    assert_eq!(next_gadget(&mut alpha_b).await, alpha_changed);
    assert_eq!(
        next_gadget(&mut team).await,
        seen("DELETED", "v1alpha1", true, "b")
    );
    assert_eq!(
        next_gadget(&mut plain).await,
        seen("MODIFIED", "v1", false, "b")
    );
    // Back in: ADDED for the selecting watcher.
    relabel(&v1, "a").await;
    assert_eq!(next_gadget(&mut team).await, alpha_added);
}

/// A watch opened before a CRD's spec changed ends at its next event instead of sending it as
/// the old spec would present it (kube-apiserver ends the watches of a CRD's storage when it
/// replaces it); a new watch from the last revision gets the object as now served. A watch
/// sharing encodings with a stale one is not handed the stale encoding.
#[tokio::test]
async fn watches_end_when_the_crds_spec_changes() {
    let (_server, client) = common::server().await;
    install(&client, gadget_crd()).await;
    let v1 = api(&client, "v1");
    v1.create(
        &PostParams::default(),
        &gadget("v1", "first", json!({"mode": "fast"})),
    )
    .await
    .unwrap();
    let params = kube::api::WatchParams::default();
    let mut before = v1.watch(&params, "0").await.unwrap().boxed();
    let (kind, ..) = next_gadget(&mut before).await;
    assert_eq!(kind, "ADDED");

    // A new default for spec.name: objects read (and watched) from now on carry it.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let patch = json!({"spec": {"versions": [
        {"name": "v1alpha1", "served": true, "storage": false, "schema": {"openAPIV3Schema":
            gadget_crd().spec.versions[0].schema.clone().unwrap().open_api_v3_schema}},
        {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
         "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "mode": {"type": "string"},
                "name": {"type": "string", "default": "defaulted"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
    ]}});
    crds.patch(
        "gadgets.test.ocm.io",
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await
    .unwrap();
    eventually("the CRD served with its new default", || async {
        let got = v1.get("first").await.ok()?;
        (got.data["spec"]["name"] == "defaulted").then_some(())
    })
    .await;
    let created = v1
        .create(
            &PostParams::default(),
            &gadget("v1", "second", json!({"mode": "slow"})),
        )
        .await
        .unwrap();
    // The old watch ends without the event.
    let end = tokio::time::timeout(std::time::Duration::from_secs(10), before.next())
        .await
        .expect("the stale watch ends in time");
    assert!(end.is_none(), "the stale watch sent {end:?}");
    // Watching again from the revision before the create: the object as now served.
    let rv = created.metadata.resource_version.unwrap();
    let previous = (rv.parse::<u64>().unwrap() - 1).to_string();
    let mut after = v1.watch(&params, &previous).await.unwrap().boxed();
    let event = tokio::time::timeout(std::time::Duration::from_secs(10), after.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        kube::api::WatchEvent::Added(obj) => {
            assert_eq!(obj.metadata.name.as_deref(), Some("second"));
            assert_eq!(obj.data["spec"]["name"], "defaulted");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn printer_columns_in_tables() {
    let (server, client) = common::server().await;
    install(&client, gadget_crd()).await;
    api(&client, "v1")
        .create(
            &PostParams::default(),
            &gadget("v1", "t", json!({"mode": "fast", "replicas": 3})),
        )
        .await
        .unwrap();
    let req = http::Request::get("/apis/test.ocm.io/v1/namespaces/default/gadgets")
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = tower::ServiceExt::oneshot(server.service(), req)
        .await
        .unwrap();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let table: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(table["kind"], "Table");
    let headers: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(headers, ["Name", "Mode", "Replicas"]);
    assert_eq!(table["rows"][0]["cells"], json!(["t", "fast", 3]));
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

#[tokio::test]
async fn deleting_the_crd_deletes_its_objects() {
    let (_s, client) = common::server().await;
    install(&client, gadget_crd()).await;
    let v1 = api(&client, "v1");
    v1.create(
        &PostParams::default(),
        &gadget("v1", "x", json!({"mode": "fast"})),
    )
    .await
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("gadgets.test.ocm.io", &DeleteParams::default())
        .await
        .unwrap();
    eventually("CRD gone", || async {
        crds.get_opt("gadgets.test.ocm.io")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let err = v1.get("x").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 404));
    // Re-creating starts empty.
    install(&client, gadget_crd()).await;
    assert!(v1.list(&Default::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn invalid_crd_is_rejected() {
    let (_s, client) = common::server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let mut crd = gadget_crd();
    crd.metadata.name = Some("wrong.test.ocm.io".into());
    let (code, _) = invalid(crds.create(&PostParams::default(), &crd).await.unwrap_err());
    assert_eq!(code, 422);
    let mut crd = gadget_crd();
    crd.spec.versions[1].schema = serde_json::from_value(json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {"x": {"type": "string"}}}}}})).unwrap();
    let (code, message) = invalid(crds.create(&PostParams::default(), &crd).await.unwrap_err());
    assert_eq!(code, 422, "{message}");
}

#[tokio::test]
async fn rules_selecting_undeclared_properties_are_refused_at_write() {
    let (_s, client) = common::server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd_json = |group: &str, rule: &str| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("dials.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "dials", "singular": "dial", "kind": "Dial", "listKind": "DialList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object",
                            "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                            "x-kubernetes-validations": [{"rule": rule}]}}}}}]}
        })
    };
    let crd = |rule: &str| -> CustomResourceDefinition {
        serde_json::from_value(crd_json("rules.test.ocm.io", rule)).unwrap()
    };
    let (code, message) = invalid(
        crds.create(&PostParams::default(), &crd("self.min <= self.maximum"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "CustomResourceDefinition.apiextensions.k8s.io \"dials.rules.test.ocm.io\" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.min <= self.maximum\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:17: undefined field 'maximum'\n | self.min <= self.maximum\n | ................^"
    );
    // The declared properties compile, and the rule is enforced.
    crds.create(&PostParams::default(), &crd("self.min <= self.max"))
        .await
        .unwrap();
    // A CRD stored before the check (written to storage directly) keeps its rule through
    // updates, as kube-apiserver keeps unchanged expressions; a new bad rule is refused.
    let mut legacy = crd_json("legacy.test.ocm.io", "self.min <= self.legacy");
    legacy["metadata"]["uid"] = json!("4a1d7f5e-0000-4000-8000-000000000001");
    legacy["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    let key = ocm_apiserver_storage::ObjectKey::new(
        ocm_apiserver_storage::Bucket::new("", "apiextensions.k8s.io/customresourcedefinitions"),
        "",
        "dials.legacy.test.ocm.io",
    );
    _s.store().create(key, legacy).await.unwrap();
    let patch = json!({"metadata": {"labels": {"touched": "yes"}}});
    crds.patch(
        "dials.legacy.test.ocm.io",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
    let patch = json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"min": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.min <= self.newer"}]}}}}}]}});
    let (code, message) = invalid(
        crds.patch(
            "dials.legacy.test.ocm.io",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "CustomResourceDefinition.apiextensions.k8s.io \"dials.legacy.test.ocm.io\" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.min <= self.newer\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:17: undefined field 'newer'\n | self.min <= self.newer\n | ................^"
    );
}

#[tokio::test]
async fn rules_with_type_errors_are_refused_at_write() {
    let (_s, client) = common::server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = |rule: Value| -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "knobs.types.test.ocm.io"},
            "spec": {"group": "types.test.ocm.io", "scope": "Namespaced",
                "names": {"plural": "knobs", "singular": "knob", "kind": "Knob", "listKind": "KnobList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object",
                            "properties": {"min": {"type": "integer"}, "name": {"type": "string"},
                                "tags": {"type": "array", "items": {"type": "string"}},
                                "port": {"x-kubernetes-int-or-string": true}},
                            "x-kubernetes-validations": [rule]}}}}}]}
        }))
        .unwrap()
    };
    let refused = |rule: Value| {
        let crds = crds.clone();
        async move {
            let err = crds
                .create(&PostParams::default(), &crd(rule))
                .await
                .unwrap_err();
            invalid(err)
        }
    };
    let prefix = "CustomResourceDefinition.apiextensions.k8s.io \"knobs.types.test.ocm.io\" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]";
    let (code, message) = refused(json!({"rule": "self.name > 5"})).await;
    assert_eq!(code, 422);
    assert_eq!(
        message,
        format!(
            "{prefix}.rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.name > 5\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:11: found no matching overload for '_>_' applied to '(string, int)'\n | self.name > 5\n | ..........^"
        )
    );
    let (_, message) = refused(json!({"rule": "self.tags.all(t, t == 1) && self.min"})).await;
    assert!(
        message.ends_with("compilation failed: ERROR: <input>:1:20: found no matching overload for '_==_' applied to '(string, int)'\n | self.tags.all(t, t == 1) && self.min\n | ...................^\nERROR: <input>:1:33: expected type 'bool' but found 'int'\n | self.tags.all(t, t == 1) && self.min\n | ................................^"),
        "{message}"
    );
    let (_, message) = refused(json!({"rule": "self.min + 1"})).await;
    assert!(
        message.starts_with(&format!("{prefix}.rule: Invalid value: "))
            && message.ends_with(": cel expression must evaluate to a bool"),
        "{message}"
    );
    let (_, message) =
        refused(json!({"rule": "self.min > 0", "messageExpression": "self.min"})).await;
    assert!(
        message.starts_with(&format!("{prefix}.messageExpression: Invalid value: "))
            && message.ends_with(": messageExpression must evaluate to a string"),
        "{message}"
    );
    // Well-typed rules, and rules on what is dyn, are accepted and enforced.
    crds.create(
        &PostParams::default(),
        &crd(json!({"rule": "self.min < 2.5 && self.tags.all(t, t.startsWith('a')) && self.port != 'http'",
            "messageExpression": "'min is ' + string(self.min)"})),
    )
    .await
    .unwrap();
}

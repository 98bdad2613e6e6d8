//! Server-side apply (conflicts, force, field removal) and strategic merge patch on a
//! Deployment's containers and env, through a real kube client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

fn deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "sidecar", "image": "side:1"},
                ]},
            },
        },
    })
}

#[tokio::test]
async fn strategic_merge_patch_on_deployment_containers_and_env() {
    let (_s, client) = common::server().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    api.create(
        &PostParams::default(),
        &serde_json::from_value(deployment()).unwrap(),
    )
    .await
    .unwrap();
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]},
    ]}}}});
    let d = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let containers = d.spec.unwrap().template.spec.unwrap().containers;
    assert_eq!(containers.len(), 2, "merged by name, sidecar kept");
    let app = containers.iter().find(|c| c.name == "app").unwrap();
    assert_eq!(app.image.as_deref(), Some("app:2"));
    let env: Vec<(String, String)> = app
        .env
        .clone()
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.value.unwrap_or_default()))
        .collect();
    assert_eq!(
        env,
        [
            ("A".into(), "1".into()),
            ("B".into(), "3".into()),
            ("C".into(), "4".into())
        ]
    );
    let delete = json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}});
    let d = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(delete))
        .await
        .unwrap();
    assert_eq!(d.spec.unwrap().template.spec.unwrap().containers.len(), 1);
}

#[tokio::test]
async fn server_side_apply_conflicts_force_and_removal() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let a = PatchParams::apply("alice");
    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "1", "y": "2"}});
    let created = api.patch("c", &a, &Patch::Apply(&cfg)).await.unwrap();
    let mf = created.metadata.managed_fields.unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager.as_deref(), Some("alice"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
    // Same apply again: no new revision.
    let again = api.patch("c", &a, &Patch::Apply(&cfg)).await.unwrap();
    assert_eq!(
        again.metadata.resource_version,
        created.metadata.resource_version
    );
    // Bob changes x: conflict naming alice and the field.
    let b = PatchParams::apply("bob");
    let bob_cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "9"}});
    match api
        .patch("c", &b, &Patch::Apply(&bob_cfg))
        .await
        .unwrap_err()
    {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
            assert_eq!(
                s.message,
                "Apply failed with 1 conflict: conflict with \"alice\": .data.x"
            );
        }
        other => panic!("{other:?}"),
    }
    // Agreeing on the value is not a conflict; force takes ownership.
    let forced = api
        .patch("c", &b.clone().force(), &Patch::Apply(&bob_cfg))
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["x"], "9");
    // Alice stops sending y (and x, now bob's): y is removed, x stays.
    let alice_less =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}});
    let after = api
        .patch("c", &a, &Patch::Apply(&alice_less))
        .await
        .unwrap();
    let data = after.data.unwrap_or_default();
    assert_eq!(data.get("x").map(String::as_str), Some("9"));
    assert!(!data.contains_key("y"), "{data:?}");
    // A missing fieldManager is rejected.
    let none = PatchParams {
        field_manager: None,
        ..PatchParams::default()
    };
    let err = api
        .patch("c", &none, &Patch::Apply(&cfg))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422),
        "{err:?}"
    );
}

#[tokio::test]
async fn updates_record_managed_fields() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..PostParams::default()
    };
    let c = api
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "m"}, "data": {"a": "1"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let mf = c.metadata.managed_fields.unwrap();
    assert_eq!(mf[0].manager.as_deref(), Some("creator"));
    assert_eq!(mf[0].operation.as_deref(), Some("Update"));
}

//! Basic verbs through a real kube client on the in-process service.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "data": {"a": "1"}
    }))
    .unwrap()
}

#[tokio::test]
async fn create_get_update_conflict_delete() {
    let (_server, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &cm("one"))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.is_some());
    assert!(meta.creation_timestamp.is_some());
    assert!(meta.resource_version.is_some());
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    let err = api
        .create(&PostParams::default(), &cm("one"))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "AlreadyExists");
            assert_eq!(s.message, "configmaps \"one\" already exists");
        }
        other => panic!("unexpected {other:?}"),
    }
    let mut got = api.get("one").await.unwrap();
    assert_eq!(
        got.metadata.resource_version,
        created.metadata.resource_version
    );
    got.data.as_mut().unwrap().insert("b".into(), "2".into());
    let updated = api
        .replace("one", &PostParams::default(), &got)
        .await
        .unwrap();
    assert_ne!(
        updated.metadata.resource_version,
        created.metadata.resource_version
    );
    // Stale resourceVersion → 409 Conflict.
    let err = api
        .replace("one", &PostParams::default(), &got)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
            assert_eq!(
                s.message,
                "Operation cannot be fulfilled on configmaps \"one\": the object has been modified; please apply your changes to the latest version and try again"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    let patched = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.data.unwrap().get("c").map(String::as_str),
        Some("3")
    );
    let list = api
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    api.delete("one", &DeleteParams::default()).await.unwrap();
    let err = api.get("one").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(s) if s.code == 404 && s.message == "configmaps \"one\" not found")
    );
}

#[tokio::test]
async fn system_namespaces_exist() {
    let (_server, client) = common::server().await;
    let api: Api<Namespace> = Api::all(client);
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&ns.to_string()), "{ns} in {names:?}");
    }
}

#[tokio::test]
async fn missing_namespace_is_404() {
    let (_server, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "nope");
    let err = api
        .create(&PostParams::default(), &cm("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(s) if s.code == 404 && s.message == "namespaces \"nope\" not found")
    );
}

#[tokio::test]
async fn cronjobs_are_served_with_status_and_table_columns() {
    use k8s_openapi::api::batch::v1::CronJob;
    let (_server, client) = common::server().await;
    let api: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let cron: CronJob = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure",
            "containers": [{"name": "backup", "image": "busybox"}]}}}}}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &cron).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let patched = api
        .patch_status(
            "nightly",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"lastScheduleTime": "2026-01-01T02:00:00Z"}})),
        )
        .await
        .unwrap();
    assert!(patched.status.unwrap().last_schedule_time.is_some());
    // The table kubectl asks for has CronJob's own columns.
    let request = http::Request::get("/apis/batch/v1/namespaces/default/cronjobs")
        .header(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let table: serde_json::Value = client.request(request).await.unwrap();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        &columns[..7],
        [
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age"
        ]
    );
    assert_eq!(table["rows"][0]["cells"][1], "0 2 * * *");
    assert_eq!(table["rows"][0]["cells"][2], "<none>");
    api.delete("nightly", &DeleteParams::default())
        .await
        .unwrap();
}

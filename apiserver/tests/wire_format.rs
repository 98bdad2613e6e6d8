//! Lists and watches on the wire as kube-apiserver writes them: the items of built-in lists
//! carry no `apiVersion`/`kind` (custom resources and metadata lists keep theirs), a Table is
//! NotAcceptable (406) for the create-only reviews and for a watch-list, and watch-list works
//! for the typed and the metadata client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PartialObjectMeta, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

use common::crd::{Widget, WidgetSpec};
use common::kubectl;
use common::tls::TlsServer;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const NOT_ACCEPTABLE: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

fn request(method: &str, path: &str, accept: &str, body: Option<Value>) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(path)
        .header("Accept", accept)
        .header("Content-Type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .unwrap()
}

/// A request's JSON answer.
async fn json_of(client: &kube::Client, method: &str, path: &str, accept: &str) -> Value {
    let text = client
        .request_text(request(method, path, accept, None))
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn assert_not_acceptable(result: Result<String, kube::Error>) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 406);
            assert_eq!(status.reason, "NotAcceptable");
            assert_eq!(status.message, NOT_ACCEPTABLE);
        }
        other => panic!("expected 406 NotAcceptable, got {other:?}"),
    }
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test]
async fn table_requests_for_reviews_are_not_acceptable() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let ssar = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
    });
    let ssar_path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    assert_not_acceptable(
        client
            .request_text(request("POST", ssar_path, TABLE, Some(ssar.clone())))
            .await,
    );
    // The format is settled before the body is read.
    assert_not_acceptable(
        client
            .request_text(request(
                "POST",
                ssar_path,
                TABLE,
                Some(json!("not an object")),
            ))
            .await,
    );
    let ssr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    assert_not_acceptable(
        client
            .request_text(request(
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                TABLE,
                Some(ssr),
            ))
            .await,
    );
    // A later acceptable type is used instead, as kubectl's Accept lists it.
    let answer = client
        .request_text(request(
            "POST",
            ssar_path,
            &format!("{TABLE},application/json"),
            Some(ssar),
        ))
        .await
        .unwrap();
    let review: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(review["kind"], "SelfSubjectAccessReview");
    assert_eq!(review["status"]["allowed"], true);

    // Stored kinds do have a Table, for writes too.
    let created = client
        .request_text(request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            TABLE,
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}})),
        ))
        .await
        .unwrap();
    let table: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"][0]["cells"][0], "t");

    if kubectl::available() {
        let (code, out, err) = kubectl::run(&server, &["auth", "can-i", "get", "pods"], None).await;
        assert_eq!((code, out.as_str(), err.as_str()), (0, "yes\n", ""));
    }
}

const WATCH_LIST: &str = "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

/// The first lines of a watch stream, up to and including the one `stop` accepts.
async fn watch_lines(
    client: &kube::Client,
    path: &str,
    accept: &str,
    stop: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut lines = client
        .request_stream(request("GET", path, accept, None))
        .await
        .unwrap()
        .lines();
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next())
            .await
            .expect("a watch event in time")
            .expect("the stream goes on")
            .unwrap();
        let event: Value = serde_json::from_str(&line).unwrap();
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// The names a watcher lists before `InitDone`.
async fn initial_names<K, S>(mut stream: S) -> Vec<String>
where
    K: kube::Resource,
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    let mut names = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .expect("a watcher event in time")
            .unwrap()
            .expect("the watcher goes on");
        match event {
            watcher::Event::InitApply(o) => names.push(o.name_any()),
            watcher::Event::InitDone => return names,
            _ => {}
        }
    }
}

#[tokio::test]
async fn watch_list_refuses_table_output_and_serves_typed_and_metadata_clients() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    configmaps
        .create(&PostParams::default(), &configmap("listed"))
        .await
        .unwrap();

    // As kube's own watch-list e2e test: Table alone is 406 ...
    let refused = client
        .request_stream(request("GET", WATCH_LIST, TABLE, None))
        .await
        .map(|_| String::new());
    assert_not_acceptable(refused);
    // ... and with application/json after it the watch-list is served in JSON.
    let initial_end = |e: &Value| {
        e["type"] == "BOOKMARK"
            && e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
    };
    let events = watch_lines(
        &client,
        WATCH_LIST,
        &format!("{TABLE},application/json"),
        initial_end,
    )
    .await;
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "listed"),
        "{events:?}"
    );
    assert!(events.iter().all(|e| e["object"]["kind"] != "Table"));
    // A plain watch still streams Tables (kubectl get -w).
    let plain = watch_lines(
        &client,
        "/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Dlisted",
        TABLE,
        |_| true,
    )
    .await;
    assert_eq!(plain[0]["object"]["kind"], "Table");

    // kube-runtime's watchers with streaming lists, typed and metadata-only.
    let config = watcher::Config::default()
        .fields("metadata.name=listed")
        .streaming_lists();
    let typed = initial_names(watcher(configmaps.clone(), config.clone()).boxed()).await;
    let partial: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client.clone(), "default");
    let metadata = initial_names(watcher(partial, config).boxed()).await;
    assert_eq!(typed, ["listed"]);
    assert_eq!(metadata, ["listed"]);
}

#[tokio::test]
async fn built_in_list_items_carry_no_type_meta() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["a", "b"] {
        configmaps
            .create(&PostParams::default(), &configmap(name))
            .await
            .unwrap();
    }
    let list = json_of(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
    )
    .await;
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    let items = list["items"].as_array().unwrap();
    assert!(items.len() >= 2);
    for item in items {
        assert!(
            item.get("kind").is_none() && item.get("apiVersion").is_none(),
            "{item}"
        );
        assert!(item["metadata"]["name"].is_string());
    }
    assert!(items.iter().any(|i| i["data"]["k"] == "v"));

    // Typed and dynamic clients read them; the dynamic items have no type meta, as from kube.
    let typed = configmaps.list(&ListParams::default()).await.unwrap();
    assert!(
        typed
            .items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("a"))
    );
    let resource = kube::discovery::ApiResource::erase::<ConfigMap>(&());
    let dynamic: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let listed = dynamic.list(&ListParams::default()).await.unwrap();
    assert!(listed.items.iter().all(|o| o.types.is_none()));

    // Events of events.k8s.io (converted, not passed through).
    let event = json!({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
        "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": "default"},
        "reason": "Tested", "message": "listed", "type": "Normal",
    });
    client
        .request_text(request(
            "POST",
            "/api/v1/namespaces/default/events",
            "application/json",
            Some(event),
        ))
        .await
        .unwrap();
    let events = json_of(
        &client,
        "GET",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        "application/json",
    )
    .await;
    assert_eq!(events["kind"], "EventList");
    assert_eq!(events["items"][0]["note"], "listed");
    assert!(events["items"][0].get("kind").is_none());

    // What a deletecollection answers, and the typed client reading it.
    let gone = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"gone": "yes"}}}))
            .unwrap()
    };
    configmaps
        .create(&PostParams::default(), &gone("c"))
        .await
        .unwrap();
    let deleted = json_of(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps?labelSelector=gone%3Dyes",
        "application/json",
    )
    .await;
    assert_eq!(deleted["kind"], "ConfigMapList");
    assert_eq!(deleted["items"][0]["metadata"]["name"], "c");
    assert!(deleted["items"][0].get("kind").is_none());
    configmaps
        .create(&PostParams::default(), &gone("d"))
        .await
        .unwrap();
    let deleted = configmaps
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("gone=yes"),
        )
        .await
        .unwrap();
    let deleted = deleted.left().expect("a list of what was deleted");
    assert_eq!(deleted.items[0].name_any(), "d");

    // Metadata lists keep the items' PartialObjectMetadata type.
    let partial = json_of(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    )
    .await;
    assert_eq!(partial["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(partial["items"][0]["apiVersion"], "meta.k8s.io/v1");

    // Custom resources keep theirs.
    common::crd::install_widget(&client).await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), "default");
    widgets
        .create(
            &PostParams::default(),
            &Widget::new(
                "w",
                WidgetSpec {
                    color: "red".into(),
                    size: None,
                },
            ),
        )
        .await
        .unwrap();
    let list = json_of(
        &client,
        "GET",
        "/apis/test.ocm.io/v1/namespaces/default/widgets",
        "application/json",
    )
    .await;
    assert_eq!(list["items"][0]["kind"], "Widget");
    assert_eq!(list["items"][0]["apiVersion"], "test.ocm.io/v1");

    if kubectl::available() {
        // kubectl gives the items their type back from the list's, as with kube-apiserver.
        let (code, out, err) =
            kubectl::run(&server, &["get", "configmaps", "-o", "json"], None).await;
        assert_eq!(code, 0, "{err}");
        let printed: Value = serde_json::from_str(&out).unwrap();
        let items = printed["items"].as_array().unwrap();
        assert!(items.len() >= 2);
        for item in items {
            assert_eq!(item["kind"], "ConfigMap");
            assert_eq!(item["apiVersion"], "v1");
        }
    }
}

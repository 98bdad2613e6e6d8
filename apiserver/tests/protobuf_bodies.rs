//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) through the REST
//! layer: decoded for built-in kinds, answered in protobuf (the `Accept` header puts it
//! first), 400 when malformed, 415 for custom resources.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use http::{Method, Request};
use http_body_util::BodyExt;
use ocm_apiserver::ApiServer;
use serde_json::{Value, json};
use tower::ServiceExt;

const PB: &str = "application/vnd.kubernetes.protobuf";

fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
    out.push((number << 3) | 2);
    let mut len = bytes.len();
    loop {
        let b = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
    out.extend_from_slice(bytes);
}

/// `k8s\0` + runtime.Unknown{typeMeta{apiVersion, kind}, raw}.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut tm = Vec::new();
    field(&mut tm, 1, api_version.as_bytes());
    field(&mut tm, 2, kind.as_bytes());
    let mut body = b"k8s\0".to_vec();
    field(&mut body, 1, &tm);
    field(&mut body, 2, raw);
    body
}

/// A ConfigMap {metadata{name}, data{a: b}} (ConfigMap.metadata = 1, .data = 2;
/// ObjectMeta.name = 1).
fn configmap(name: &str) -> Vec<u8> {
    let mut meta = Vec::new();
    field(&mut meta, 1, name.as_bytes());
    let mut entry = Vec::new();
    field(&mut entry, 1, b"a");
    field(&mut entry, 2, b"b");
    let mut raw = Vec::new();
    field(&mut raw, 1, &meta);
    field(&mut raw, 2, &entry);
    envelope("v1", "ConfigMap", &raw)
}

async fn call(
    server: &ApiServer,
    method: Method,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, String, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf, application/json",
        )
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .unwrap();
    let resp = server.service().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let value = if ct == PB {
        ocm_apiserver_protobuf::decode_body(&body).unwrap()
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&body)}))
    };
    (status, ct, value)
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn protobuf_create_and_update_answer_protobuf() {
    let server = ApiServer::in_memory().await.unwrap();
    let (code, ct, v) = call(&server, Method::POST, CMS, PB, configmap("pb")).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(ct, PB);
    assert_eq!(v["kind"], "ConfigMap");
    assert_eq!(v["metadata"]["name"], "pb");
    assert_eq!(v["metadata"]["namespace"], "default");
    assert_eq!(v["data"], json!({"a": "b"}));

    let (code, ct, v) = call(
        &server,
        Method::PUT,
        &format!("{CMS}/pb"),
        PB,
        configmap("pb"),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(ct, PB);
    assert_eq!(v["data"], json!({"a": "b"}));
}

#[tokio::test]
async fn malformed_protobuf_is_bad_request() {
    let server = ApiServer::in_memory().await.unwrap();
    let mut body = configmap("pb");
    body.truncate(body.len() - 3);
    let (code, _, v) = call(&server, Method::POST, CMS, PB, body).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("malformed protobuf"),
        "{v}"
    );
    let (code, _, v) = call(&server, Method::POST, CMS, PB, b"{}".to_vec()).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
    // The server keeps serving.
    let (code, _, _) = call(&server, Method::POST, CMS, PB, configmap("after")).await;
    assert_eq!(code, 201);
}

#[tokio::test]
async fn protobuf_delete_options_are_read() {
    let server = ApiServer::in_memory().await.unwrap();
    let (code, _, _) = call(&server, Method::POST, CMS, PB, configmap("gone")).await;
    assert_eq!(code, 201);
    // DeleteOptions.propagationPolicy = 4.
    let mut raw = Vec::new();
    field(&mut raw, 4, b"Sideways");
    let (code, _, v) = call(
        &server,
        Method::DELETE,
        &format!("{CMS}/gone"),
        PB,
        envelope("meta.k8s.io/v1", "DeleteOptions", &raw),
    )
    .await;
    assert_eq!(
        code, 422,
        "an invalid policy read from protobuf is rejected: {v}"
    );
    let mut raw = Vec::new();
    field(&mut raw, 4, b"Background");
    let (code, _, v) = call(
        &server,
        Method::DELETE,
        &format!("{CMS}/gone"),
        PB,
        envelope("meta.k8s.io/v1", "DeleteOptions", &raw),
    )
    .await;
    assert_eq!(code, 200, "{v}");
}

#[tokio::test]
async fn protobuf_scale_put_sets_replicas() {
    let server = ApiServer::in_memory().await.unwrap();
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}
    });
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    let (code, _, v) = call(
        &server,
        Method::POST,
        deps,
        "application/json",
        deployment.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    // autoscaling/v1 Scale{metadata{name, namespace}, spec{replicas: 4}}: Scale.metadata = 1,
    // .spec = 2; ScaleSpec.replicas = 1 (a varint).
    let mut meta = Vec::new();
    field(&mut meta, 1, b"web");
    field(&mut meta, 3, b"default");
    let spec = vec![0x08, 4];
    let mut raw = Vec::new();
    field(&mut raw, 1, &meta);
    field(&mut raw, 2, &spec);
    let (code, ct, v) = call(
        &server,
        Method::PUT,
        &format!("{deps}/web/scale"),
        PB,
        envelope("autoscaling/v1", "Scale", &raw),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(ct, PB);
    assert_eq!(v["kind"], "Scale");
    assert_eq!(v["spec"]["replicas"], 4);
}

#[tokio::test]
async fn custom_resources_do_not_take_protobuf() {
    let (server, client) = common::server().await;
    common::crd::install_widget(&client).await;
    let mut meta = Vec::new();
    field(&mut meta, 1, b"w");
    let mut raw = Vec::new();
    field(&mut raw, 1, &meta);
    let (code, _, v) = call(
        &server,
        Method::POST,
        "/apis/test.ocm.io/v1/namespaces/default/widgets",
        PB,
        envelope("test.ocm.io/v1", "Widget", &raw),
    )
    .await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (415, Some("UnsupportedMediaType")),
        "{v}"
    );
}

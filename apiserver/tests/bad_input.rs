//! Bad input gets the right Status and the server keeps serving; random bodies and patches
//! never make it panic or answer 500.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use http::{Method, Request};
use http_body_util::BodyExt;
use ocm_apiserver::ApiServer;
use proptest::prelude::*;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn call(
    server: &ApiServer,
    method: Method,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .unwrap();
    let resp = server.service().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&body)}));
    (status, value)
}

async fn alive(server: &ApiServer) {
    let (code, v) = call(server, Method::GET, "/version", "", vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(v["major"], "1");
}

fn status(v: &Value) -> (&str, &str) {
    assert_eq!(v["kind"], "Status", "{v}");
    (
        v["reason"].as_str().unwrap_or(""),
        v["message"].as_str().unwrap_or(""),
    )
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn each_mistake_gets_its_status() {
    let server = ApiServer::in_memory().await.unwrap();
    let json_ct = "application/json";
    let (code, v) = call(
        &server,
        Method::POST,
        CMS,
        "application/x-unknown",
        b"{}".to_vec(),
    )
    .await;
    assert_eq!((code, status(&v).0), (415, "UnsupportedMediaType"));
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n".to_vec();
    let (code, v) = call(&server, Method::POST, CMS, "application/yaml", yaml).await;
    assert_eq!(code, 201, "{v}");
    let (code, v) = call(&server, Method::POST, CMS, json_ct, b"{not json".to_vec()).await;
    assert_eq!((code, status(&v).0), (400, "BadRequest"));
    alive(&server).await;

    let body = json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let (code, v) = call(
        &server,
        Method::POST,
        CMS,
        json_ct,
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        status(&v).1,
        "the API version in the data (v2) does not match the expected API version (v1)"
    );

    let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}});
    let (code, _) = call(
        &server,
        Method::POST,
        CMS,
        json_ct,
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 400);

    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let (code, _) = call(
        &server,
        Method::POST,
        CMS,
        json_ct,
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
    let (code, v) = call(
        &server,
        Method::PUT,
        &format!("{CMS}/a"),
        json_ct,
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        status(&v).1,
        "the name of the object (b) does not match the name on the URL (a)"
    );

    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"x": "y".repeat(3 * 1024 * 1024)}});
    let (code, v) = call(
        &server,
        Method::POST,
        CMS,
        json_ct,
        big.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 413);
    assert_eq!(
        status(&v),
        (
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728"
        )
    );
    alive(&server).await;

    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}});
    let (code, v) = call(
        &server,
        Method::POST,
        CMS,
        json_ct,
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.name");
    assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueInvalid");
    assert!(
        status(&v).1.starts_with(
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""
        ),
        "{v}"
    );

    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "labels": {"bad key!": "v"}}});
    let (code, v) = call(
        &server,
        Method::POST,
        CMS,
        json_ct,
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.labels");

    let (code, v) = call(
        &server,
        Method::GET,
        "/api/v1/namespaces/default/nonsense",
        "",
        vec![],
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        status(&v),
        (
            "NotFound",
            "the server could not find the requested resource"
        )
    );
    let (code, _) = call(&server, Method::GET, "/apis/nope.io/v1/things", "", vec![]).await;
    assert_eq!(code, 404);

    let (code, v) = call(
        &server,
        Method::PATCH,
        &format!("{CMS}/a"),
        "text/plain",
        b"{}".to_vec(),
    )
    .await;
    assert_eq!((code, status(&v).0), (415, "UnsupportedMediaType"));

    let patch = json!([{"op": "test", "path": "/data/x", "value": "nope"}]);
    let (code, v) = call(
        &server,
        Method::PATCH,
        &format!("{CMS}/a"),
        "application/json-patch+json",
        patch.to_string().into_bytes(),
    )
    .await;
    assert_eq!((code, status(&v).0), (422, "Invalid"));

    let (code, v) = call(
        &server,
        Method::PATCH,
        &format!("{CMS}/a?fieldManager=m"),
        "application/apply-patch+yaml",
        b"a: [b\n c: d".to_vec(),
    )
    .await;
    assert_eq!((code, status(&v).0), (400, "BadRequest"));

    let (code, v) = call(&server, Method::PUT, CMS, json_ct, b"{}".to_vec()).await;
    assert_eq!((code, status(&v).0), (405, "MethodNotAllowed"));

    let (code, _) = call(
        &server,
        Method::GET,
        &format!("{CMS}?labelSelector=a%20in%20(b"),
        "",
        vec![],
    )
    .await;
    assert_eq!(code, 400);
    alive(&server).await;
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-zA-Z0-9/._-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("apiVersion".to_string()),
                    Just("kind".to_string()),
                    Just("metadata".to_string()),
                    Just("name".to_string()),
                    Just("labels".to_string()),
                    Just("data".to_string()),
                    Just("spec".to_string()),
                    Just("op".to_string()),
                    Just("path".to_string()),
                    Just("$patch".to_string()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_bodies_never_break_the_server(body in arb_json(), target in 0usize..6, ct in 0usize..5) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let server = ApiServer::in_memory().await.unwrap();
            let seed = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
            let (code, _) = call(&server, Method::POST, "/apis/apps/v1/namespaces/default/deployments", "application/json", seed.to_string().into_bytes()).await;
            assert_eq!(code, 201);
            let content_types = ["application/json", "application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"];
            let (method, uri) = match target {
                0 => (Method::POST, CMS.to_string()),
                1 => (Method::POST, "/apis/apps/v1/namespaces/default/deployments".to_string()),
                2 => (Method::PUT, "/apis/apps/v1/namespaces/default/deployments/d".to_string()),
                3 => (Method::PATCH, "/apis/apps/v1/namespaces/default/deployments/d?fieldManager=fuzz".to_string()),
                4 => (Method::PATCH, "/apis/apps/v1/namespaces/default/deployments/d/status?fieldManager=fuzz".to_string()),
                _ => (Method::DELETE, "/apis/apps/v1/namespaces/default/deployments/d".to_string()),
            };
            let (code, v) = call(&server, method, &uri, content_types[ct], body.to_string().into_bytes()).await;
            let resource_version_on_create = v["message"] == "resourceVersion should not be set on objects to be created";
            assert!(code < 500 || resource_version_on_create, "{code} {v} for {body}");
            if code >= 400 {
                assert_eq!(v["kind"], "Status", "{v}");
            }
            alive(&server).await;
        });
    }
}

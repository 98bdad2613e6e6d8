//! The `timeout` query parameter: a request that is not a watch and whose `timeout` is not a Go
//! duration is a 400 BadRequest with kube-apiserver's message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::{Value, json};

/// The Status of a failed request, as JSON.
fn status<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Value {
    match result {
        Err(kube::Error::Api(s)) => serde_json::to_value(&*s).unwrap(),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_invalid_timeout_is_a_bad_request() {
    let (_server, client) = common::server().await;
    let get = |uri: &str| http::Request::get(uri).body(Vec::new()).unwrap();
    let s = status(
        client
            .request::<Value>(get("/api/v1/namespaces/default/configmaps?timeout=soon"))
            .await,
    );
    assert_eq!(
        (&s["code"], &s["reason"], &s["message"]),
        (
            &json!(400),
            &json!("BadRequest"),
            &json!(
                "invalid timeout specified in the request URL - time: invalid duration \"soon\""
            )
        )
    );
    let s = status(client.request::<Value>(get("/version?timeout=5")).await);
    assert_eq!(
        s["message"],
        "invalid timeout specified in the request URL - time: missing unit in duration \"5\""
    );
    let s = status(
        client
            .request::<Value>(get("/api/v1/namespaces/default/configmaps/x?timeout=1d"))
            .await,
    );
    assert_eq!(
        s["message"],
        "invalid timeout specified in the request URL - time: unknown unit \"d\" in duration \"1d\""
    );
    // Good durations pass; a watch does not read `timeout` at all.
    let list: Value = client
        .request(get("/api/v1/namespaces/default/configmaps?timeout=1m30s"))
        .await
        .unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    let events = client
        .request_text(get(
            "/api/v1/namespaces/default/configmaps?watch=true&timeout=soon&timeoutSeconds=1",
        ))
        .await
        .unwrap();
    assert!(!events.contains("BadRequest"), "{events}");
}

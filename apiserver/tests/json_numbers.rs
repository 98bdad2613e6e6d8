//! Numbers in custom resources as kube-apiserver answers them in JSON, through a kube client
//! over HTTPS. kube decodes a custom resource unstructured (a number is an int64 when its text
//! parses as one, else a float64), validates that, stores it with Go's `encoding/json`, and
//! answers what it decodes back from storage: `1.0` is answered `1`, `1e20`
//! `100000000000000000000`, `1e21` `1e+21`, `1e-7` `1e-7`, `-0.0` `0`. A `type: integer`
//! field takes a float within 2^53-1 of an integer (go-openapi's `IsFloat64AJSONInteger`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::crd::{crd_from_json, install};
use common::tls::TlsServer;
use kube::Client;

const NUMS: &str = "/apis/test.ocm.io/v1/namespaces/default/nums";
const JSON: &str = "application/json";

fn nums_crd()
-> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    let schema = serde_json::json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"count": {"type": "integer"}, "amount": {"type": "number"},
                       "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
        "status": {"type": "object", "properties": {"n": {"type": "integer"}}}}});
    crd_from_json(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "nums.test.ocm.io"},
        "spec": {"group": "test.ocm.io", "scope": "Namespaced",
                 "names": {"plural": "nums", "singular": "num", "kind": "Num"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": schema}}]},
    }))
}

/// A Num as JSON text, so that the numbers are sent exactly as written.
fn num(name: &str, spec: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"test.ocm.io/v1","kind":"Num","metadata":{{"name":"{name}"}},"spec":{spec}}}"#
    )
    .into_bytes()
}

async fn send(client: &Client, method: &str, uri: &str, body: Option<(&str, Vec<u8>)>) -> String {
    let answer = common::send_accept(client, method, uri, JSON, body).await;
    let text = answer.text().to_owned();
    assert!(answer.code < 300, "{method} {uri}: {} {text}", answer.code);
    text
}

/// The numbers every answer carries for the object `numbers_are_answered_as_kube_writes_them`
/// creates: field and text.
const ANSWERED: [(&str, &str); 12] = [
    ("count", "1"),
    ("amount", "2.5"),
    ("one", "1"),
    ("half", "2.5"),
    ("e20", "100000000000000000000"),
    ("e21", "1e+21"),
    ("small", "1e-7"),
    ("micro", "0.000001"),
    ("negzero", "0"),
    ("huge", "1.2345678901234568e+22"),
    ("tiny", "-1.5e-8"),
    ("int53", "9007199254740993"),
];

/// Whether `text` has `"field":number` with nothing more to the number.
fn has_number(text: &str, field: &str, number: &str) -> bool {
    let pair = format!(r#""{field}":{number}"#);
    text.match_indices(&pair)
        .any(|(at, _)| matches!(text.as_bytes().get(at + pair.len()), Some(b',' | b'}')))
}

fn assert_answered(text: &str) {
    for (field, number) in ANSWERED {
        assert!(
            has_number(text, field, number),
            "{field}: {number} not in {text}"
        );
    }
    // Nothing in Rust's own float text.
    for rust in ["1.0", "2.50", "1e20", "1e21", "e22", "-0"] {
        assert!(!text.contains(&format!(":{rust}")), "{rust} in {text}");
    }
}

#[tokio::test]
async fn numbers_are_answered_as_kube_writes_them() {
    let srv = TlsServer::start().await;
    let client = srv.client().await;
    install(&client, nums_crd()).await;
    let before = send(&client, "GET", NUMS, None).await;
    let list_rv =
        serde_json::from_str::<serde_json::Value>(&before).unwrap()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();

    let spec = r#"{"count": 1.0, "amount": 2.50, "free": {"one": 1.0, "half": 2.5,
        "e20": 1e20, "e21": 1e21, "small": 1e-7, "micro": 0.000001, "negzero": -0.0,
        "huge": 12345678901234567890123, "tiny": -1.5e-8, "int53": 9007199254740993}}"#;
    let created = send(&client, "POST", NUMS, Some((JSON, num("n1", spec)))).await;
    assert_answered(&created);
    let got = send(&client, "GET", &format!("{NUMS}/n1"), None).await;
    assert_answered(&got);
    let listed = send(&client, "GET", NUMS, None).await;
    assert_answered(&listed);

    // A change: the watch event of the patch carries the patched number as kube writes it.
    let patched = send(
        &client,
        "PATCH",
        &format!("{NUMS}/n1"),
        Some((
            "application/merge-patch+json",
            br#"{"spec":{"free":{"later":3e21,"zero":0.0}}}"#.to_vec(),
        )),
    )
    .await;
    assert!(has_number(&patched, "later", "3e+21"), "{patched}");
    assert!(has_number(&patched, "zero", "0"), "{patched}");
    let events = send(
        &client,
        "GET",
        &format!("{NUMS}?watch=true&resourceVersion={list_rv}&timeoutSeconds=1"),
        None,
    )
    .await;
    let lines: Vec<&str> = events.lines().collect();
    assert_eq!(lines.len(), 2, "{events}");
    assert!(lines[0].starts_with(r#"{"type":"ADDED""#), "{events}");
    assert!(lines[1].starts_with(r#"{"type":"MODIFIED""#), "{events}");
    for line in &lines {
        assert_answered(line);
    }
    assert!(has_number(lines[1], "later", "3e+21"), "{events}");
}

/// `(resourceVersion, generation)` of an answered object.
fn versions(text: &str) -> (String, i64) {
    let object: serde_json::Value = serde_json::from_str(text).unwrap();
    let meta = &object["metadata"];
    (
        meta["resourceVersion"].as_str().unwrap().to_owned(),
        meta["generation"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn writing_back_what_was_answered_changes_nothing() {
    let srv = TlsServer::start().await;
    let client = srv.client().await;
    install(&client, nums_crd()).await;
    let n1 = format!("{NUMS}/n1");
    let spec = r#"{"count": 7, "amount": 1.5, "free": {"f": 2.0, "e19": 9223372036854775808,
        "e20": 1e20}}"#;
    let created = send(&client, "POST", NUMS, Some((JSON, num("n1", spec)))).await;
    assert!(
        has_number(&created, "e19", "9223372036854776000"),
        "{created}"
    );
    let (rv, generation) = versions(&created);
    assert_eq!(generation, 1);

    // Sent back as answered: kube reads `9223372036854776000` and `100000000000000000000` as
    // the floats it stored, so nothing changed (no new resourceVersion or generation).
    let put = send(
        &client,
        "PUT",
        &n1,
        Some((JSON, created.clone().into_bytes())),
    )
    .await;
    assert_eq!(versions(&put), (rv.clone(), 1), "{put}");
    let patch = br#"{"spec":{"amount":1.50,"free":{"f":2,"e20":100000000000000000000}}}"#;
    let merge = "application/merge-patch+json";
    let patched = send(&client, "PATCH", &n1, Some((merge, patch.to_vec()))).await;
    assert_eq!(versions(&patched), (rv.clone(), 1), "{patched}");

    // `7.0` where `7` is stored: kube's generation check compares the decoded values (a
    // float64 is not an int64), so the spec changed, although it is stored as before.
    let float = created.replace(r#""count":7,"#, r#""count":7.0,"#);
    assert_ne!(float, created);
    let put = send(&client, "PUT", &n1, Some((JSON, float.into_bytes()))).await;
    let (rv2, generation) = versions(&put);
    assert_ne!(rv2, rv);
    assert_eq!(generation, 2);
    assert!(has_number(&put, "count", "7"), "{put}");

    // The status has no generation: only what is stored counts, and `7.0` is stored as `7`.
    let status_uri = format!("{n1}/status");
    let status = put.replace(r#""kind":"Num","#, r#""kind":"Num","status":{"n":7},"#);
    let with_status = send(
        &client,
        "PUT",
        &status_uri,
        Some((JSON, status.into_bytes())),
    )
    .await;
    let (rv3, _) = versions(&with_status);
    assert_ne!(rv3, rv2);
    assert!(has_number(&with_status, "n", "7"), "{with_status}");
    let same = with_status.replace(r#""n":7"#, r#""n":7.0"#);
    assert_ne!(same, with_status);
    let again = send(&client, "PUT", &status_uri, Some((JSON, same.into_bytes()))).await;
    assert_eq!(versions(&again), (rv3, 2), "{again}");
}

#[tokio::test]
async fn integer_fields_take_floats_near_an_integer() {
    let srv = TlsServer::start().await;
    let client = srv.client().await;
    install(&client, nums_crd()).await;
    let create = |name: &'static str, count: &'static str| {
        let client = client.clone();
        async move {
            common::send_accept(
                &client,
                "POST",
                NUMS,
                JSON,
                Some((JSON, num(name, &format!(r#"{{"count": {count}}}"#)))),
            )
            .await
        }
    };
    // Integral floats within 2^53-1 are integers, answered as such.
    for (name, count, answered) in [
        ("a", "3.0", "3"),
        ("b", "-0.0", "0"),
        ("c", "9007199254740991e0", "9007199254740991"),
        ("d", "2e3", "2000"),
    ] {
        let answer = create(name, count).await;
        assert_eq!(answer.code, 201, "{count}: {}", answer.text());
        assert!(
            has_number(answer.text(), "count", answered),
            "{}",
            answer.text()
        );
    }
    let type_error = r#"spec.count: Invalid value: "number": spec.count in body must be of type integer: "number""#;
    let not_int64 = r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.count"#;
    // Within a relative 1e-9 of an integer (the nearest, halves rounded away from zero) is of
    // type integer, but not an int64; beyond 2^53-1 no float is of type integer.
    for (count, type_refused, int_refused) in [
        ("2.5", true, true),
        ("400000000.5", true, true),
        ("1000000000.5", false, true),
        ("9007199254740992e0", true, false),
        ("1e19", true, true),
    ] {
        let answer = create("e", count).await;
        assert_eq!(answer.code, 422, "{count}: {}", answer.text());
        let status: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        let message = status["message"].as_str().unwrap();
        assert_eq!(
            message.contains(type_error),
            type_refused,
            "{count}: {message}"
        );
        assert_eq!(
            message.contains(not_int64),
            int_refused,
            "{count}: {message}"
        );
    }
}

//! Integers above 2^63-1 in custom resources, through a real kube client: kept as the float
//! kube's unstructured decoding makes of them (YAML `1.8446744073709552e+19`, JSON
//! `18446744073709552000`), and refused
//! by a `type: integer` schema as a `number`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::crd::{crd_from_json, install};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

fn big_crd()
-> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"count": {"type": "integer"}, "amount": {"type": "number"},
                       "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}});
    crd_from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "bigs.test.ocm.io"},
        "spec": {"group": "test.ocm.io", "scope": "Namespaced",
                 "names": {"plural": "bigs", "singular": "big", "kind": "Big"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": schema}}]},
    }))
}

fn big(name: &str, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "test.ocm.io/v1", "kind": "Big",
                                  "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

#[tokio::test]
async fn integers_beyond_int64_are_floats_in_custom_resources() {
    let (_srv, client) = common::server().await;
    install(&client, big_crd()).await;
    let gvk = GroupVersionKind::gvk("test.ocm.io", "v1", "Big");
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "bigs"),
    );

    let spec = json!({"amount": 18446744073709551615u64,
                      "free": {"big": 9223372036854775808u64, "max": 9223372036854775807i64}});
    let created = api
        .create(&PostParams::default(), &big("b1", spec))
        .await
        .unwrap();
    let amount = &created.data["spec"]["amount"];
    assert!(amount.is_f64(), "{amount}");
    assert_eq!(amount.as_f64(), Some(18_446_744_073_709_551_615.0));
    // Answered `9223372036854776000`, which reads as an integer here.
    assert_eq!(
        created.data["spec"]["free"]["big"].as_f64(),
        Some(9_223_372_036_854_775_808.0)
    );
    assert_eq!(created.data["spec"]["free"]["max"], json!(i64::MAX));

    let yaml = common::send_accept(
        &client,
        "GET",
        "/apis/test.ocm.io/v1/namespaces/default/bigs/b1",
        "application/yaml",
        None,
    )
    .await;
    let text = String::from_utf8(yaml.body).unwrap();
    assert!(text.contains("amount: 1.8446744073709552e+19"), "{text}");
    // Go's JSON writes the float 2^63 with its shortest digits padded with zeros, which
    // go-yaml reads back as a uint64.
    assert!(text.contains("big: 9223372036854776000"), "{text}");
    assert!(text.contains("max: 9223372036854775807"), "{text}");
    // JSON answers print the floats as Go's encoding/json does.
    let json = common::send_accept(
        &client,
        "GET",
        "/apis/test.ocm.io/v1/namespaces/default/bigs/b1",
        "application/json",
        None,
    )
    .await;
    let text = json.text();
    assert!(text.contains(r#""amount":18446744073709552000,"#), "{text}");
    assert!(text.contains(r#""big":9223372036854776000,"#), "{text}");
    assert!(text.contains(r#""max":9223372036854775807}"#), "{text}");

    // A `type: integer` field refuses it: it decoded as a number.
    let err = api
        .create(
            &PostParams::default(),
            &big("b2", json!({"count": 9223372036854775808u64})),
        )
        .await
        .unwrap_err();
    let (code, _, message) = common::status_of(err);
    assert_eq!(code, 422);
    assert!(
        message.contains(r#"spec.count: Invalid value: "number": spec.count in body must be of type integer: "number""#),
        "{message}"
    );
}

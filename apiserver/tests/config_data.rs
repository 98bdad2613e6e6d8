//! What kube-apiserver refuses in ConfigMap and Secret data: keys that are not config keys, a
//! ConfigMap key in both `data` and `binaryData`, and changes to the data of an `immutable`
//! object.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use common::kubectl;
use common::tls::TlsServer;

const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const IMMUTABLE: &str = "field is immutable when `immutable` is set";

/// The Status of a failed request, as JSON.
fn status<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Value {
    match result {
        Err(kube::Error::Api(s)) => serde_json::to_value(&*s).unwrap(),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The `(field, reason, message)` of each cause of a Status.
fn causes(status: &Value) -> Vec<(String, String, String)> {
    status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_owned(),
                c["reason"].as_str().unwrap().to_owned(),
                c["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn config_map_and_secret_keys_are_config_keys() {
    let (_server, client) = common::server().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let bad: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "bad"},
        "data": {"bad key": "1", "": "2", "both": "3", "ok": "4"},
        "binaryData": {"both": "AA==", "..hidden": "AA=="},
    }))
    .unwrap();
    let s = status(cms.create(&PostParams::default(), &bad).await);
    assert_eq!(
        (s["code"].as_u64(), s["reason"].as_str()),
        (Some(422), Some("Invalid"))
    );
    assert_eq!(
        s["message"],
        format!(
            "ConfigMap \"bad\" is invalid: [data[]: Invalid value: \"\": {KEY_MSG}, data[bad key]: Invalid value: \"bad key\": {KEY_MSG}, data[both]: Invalid value: \"both\": duplicate of key present in binaryData, binaryData[..hidden]: Invalid value: \"..hidden\": must not start with '..']"
        )
    );
    assert_eq!(s["details"]["kind"], "ConfigMap");
    assert_eq!(s["details"]["name"], "bad");
    assert_eq!(
        causes(&s)[1],
        (
            "data[bad key]".to_owned(),
            "FieldValueInvalid".to_owned(),
            format!("Invalid value: \"bad key\": {KEY_MSG}")
        )
    );

    // A Secret's stringData is folded into data first, so its bad keys show there.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let bad: Secret = serde_json::from_value(json!({
        "metadata": {"name": "bad"},
        "stringData": {"a/b": "x"},
        "data": {"k".repeat(254): "AA=="},
    }))
    .unwrap();
    let s = status(secrets.create(&PostParams::default(), &bad).await);
    let long = "k".repeat(254);
    assert_eq!(
        s["message"],
        format!(
            "Secret \"bad\" is invalid: [data[a/b]: Invalid value: \"a/b\": {KEY_MSG}, data[{long}]: Invalid value: \"{long}\": must be no more than 253 characters]"
        )
    );

    // Updates are checked too.
    let good: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "good"}, "data": {"a": "1"}})).unwrap();
    cms.create(&PostParams::default(), &good).await.unwrap();
    let s = status(
        cms.patch(
            "good",
            &PatchParams::default(),
            &Patch::Merge(json!({"binaryData": {"a": "AA=="}})),
        )
        .await,
    );
    assert_eq!(
        s["message"],
        "ConfigMap \"good\" is invalid: data[a]: Invalid value: \"a\": duplicate of key present in binaryData"
    );
}

#[tokio::test]
async fn immutable_data_stays_as_it_is() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let frozen: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "frozen"}, "immutable": true,
        "data": {"a": "1"}, "binaryData": {"b": "AA=="},
    }))
    .unwrap();
    cms.create(&PostParams::default(), &frozen).await.unwrap();
    let s = status(
        cms.patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}, "binaryData": null})),
        )
        .await,
    );
    assert_eq!(s["code"], 422);
    assert_eq!(
        s["message"],
        format!(
            "ConfigMap \"frozen\" is invalid: [data: Forbidden: {IMMUTABLE}, binaryData: Forbidden: {IMMUTABLE}]"
        )
    );
    assert_eq!(
        causes(&s)[0],
        (
            "data".to_owned(),
            "FieldValueForbidden".to_owned(),
            format!("Forbidden: {IMMUTABLE}")
        )
    );
    let s = status(
        cms.patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"immutable": false})),
        )
        .await,
    );
    assert_eq!(
        s["message"],
        format!("ConfigMap \"frozen\" is invalid: immutable: Forbidden: {IMMUTABLE}")
    );
    let s = status(
        cms.patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"immutable": null})),
        )
        .await,
    );
    assert_eq!(
        s["message"],
        format!("ConfigMap \"frozen\" is invalid: immutable: Forbidden: {IMMUTABLE}")
    );
    // Metadata may still change, and the object may be deleted.
    let labeled = cms
        .patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labeled.data.unwrap()["a"], "1");

    // Secrets: stringData counts as a data change; type never changes.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let sealed: Secret = serde_json::from_value(json!({
        "metadata": {"name": "sealed"}, "immutable": true, "stringData": {"k": "v"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &sealed)
        .await
        .unwrap();
    let s = status(
        secrets
            .patch(
                "sealed",
                &PatchParams::default(),
                &Patch::Merge(json!({"stringData": {"k": "w"}})),
            )
            .await,
    );
    assert_eq!(
        s["message"],
        format!("Secret \"sealed\" is invalid: data: Forbidden: {IMMUTABLE}")
    );
    let s = status(
        secrets
            .patch(
                "sealed",
                &PatchParams::default(),
                &Patch::Merge(json!({"type": "example.com/other"})),
            )
            .await,
    );
    assert_eq!(
        s["message"],
        "Secret \"sealed\" is invalid: type: Invalid value: \"example.com/other\": field is immutable"
    );
    // An unchanged write of an immutable Secret is fine.
    secrets
        .patch(
            "sealed",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"k": "v"}})),
        )
        .await
        .unwrap();

    if kubectl::available() {
        let (code, out, err) = kubectl::run(
            &server,
            &[
                "patch",
                "configmap",
                "frozen",
                "-p",
                r#"{"data":{"a":"3"}}"#,
            ],
            None,
        )
        .await;
        assert_eq!((code, out.as_str()), (1, ""));
        assert_eq!(
            err,
            format!("The ConfigMap \"frozen\" is invalid: data: Forbidden: {IMMUTABLE}\n")
        );
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: spaced\n  namespace: default\ndata:\n  bad key: x\n";
        let (code, _, err) = kubectl::run(&server, &["apply", "-f", "-"], Some(yaml)).await;
        assert_eq!(code, 1);
        assert_eq!(
            err,
            format!(
                "The ConfigMap \"spaced\" is invalid: data[bad key]: Invalid value: \"bad key\": {KEY_MSG}\n"
            )
        );
    }
    cms.delete("frozen", &DeleteParams::default())
        .await
        .unwrap();
}

//! Secrets: `stringData` is folded into `data` on every write, as kube-apiserver does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn string_data_is_stored_base64_in_data() {
    let (_server, client) = common::server().await;
    let secrets: Api<Secret> = Api::namespaced(client, "default");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "s1"},
        "data": {"kept": "MQ==", "overridden": "b2xk"},
        "stringData": {"overridden": "new", "token-secret": "abc"}
    }))
    .unwrap();
    let created = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let stored = serde_json::to_value(&created).unwrap();
    assert_eq!(
        stored["data"],
        json!({"kept": "MQ==", "overridden": "bmV3", "token-secret": "YWJj"})
    );
    assert!(
        stored.get("stringData").is_none(),
        "stringData is never stored: {stored}"
    );

    // A merge patch carrying stringData goes through the same decoding.
    let patched = secrets
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"kept": "2"}})),
        )
        .await
        .unwrap();
    let patched = serde_json::to_value(&patched).unwrap();
    assert_eq!(patched["data"]["kept"], json!("Mg=="));
    assert!(patched.get("stringData").is_none());
}

//! One request, one 422 with every error: invalid metadata and schema violations of a custom
//! resource come back together, as kube-apiserver reports them (a client that fixes what it is
//! told must not discover a second error only on the next try).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::crd::{crd_from_json, install};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

fn gadgets(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.ocm.io", "v1", "Gadget"),
        "gadgets",
    );
    Api::namespaced_with(client.clone(), "default", &resource)
}

async fn install_gadget(client: &kube::Client) {
    install(
        client,
        crd_from_json(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.test.ocm.io"},
            "spec": {"group": "test.ocm.io", "scope": "Namespaced",
                     "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                               "listKind": "GadgetList"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {
                                "replicas": {"type": "integer"},
                                "mode": {"type": "string"}},
                              "x-kubernetes-validations": [
                                {"rule": "self.mode != 'off'", "message": "mode must not be off"}]}}}}}]}})),
    )
    .await;
}

async fn refused(client: &kube::Client, object: serde_json::Value) -> kube::core::Status {
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    match gadgets(client)
        .create(&PostParams::default(), &object)
        .await
    {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn metadata_and_schema_errors_come_back_in_one_status() {
    let (_server, client) = common::server().await;
    install_gadget(&client).await;

    // An invalid label key, an invalid finalizer and a wrongly typed field: all three.
    let status = refused(
        &client,
        json!({"apiVersion": "test.ocm.io/v1", "kind": "Gadget",
               "metadata": {"name": "g1", "namespace": "default",
                            "labels": {"bad key": "x"}, "finalizers": ["bad finalizer"]},
               "spec": {"replicas": "three", "mode": "on"}}),
    )
    .await;
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let fields: Vec<String> = status
        .details
        .as_ref()
        .map(|d| d.causes.iter().map(|c| c.field.clone()).collect())
        .unwrap_or_default();
    assert!(
        fields.iter().any(|f| f.starts_with("metadata.labels")),
        "{fields:?}"
    );
    assert!(
        fields.iter().any(|f| f.starts_with("metadata.finalizers")),
        "{fields:?}"
    );
    assert!(fields.iter().any(|f| f == "spec.replicas"), "{fields:?}");
    assert!(
        status.message.contains("spec.replicas"),
        "{}",
        status.message
    );
    assert!(
        status.message.contains("metadata.labels"),
        "{}",
        status.message
    );

    // A metadata error does not block CEL: the rule's message is reported alongside.
    let status = refused(
        &client,
        json!({"apiVersion": "test.ocm.io/v1", "kind": "Gadget",
               "metadata": {"name": "g2", "namespace": "default", "labels": {"bad key": "x"}},
               "spec": {"mode": "off"}}),
    )
    .await;
    assert!(
        status.message.contains("metadata.labels"),
        "{}",
        status.message
    );
    assert!(
        status.message.contains("mode must not be off"),
        "{}",
        status.message
    );
}

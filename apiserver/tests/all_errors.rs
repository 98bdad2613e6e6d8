//! One request, one 422 with every error: invalid metadata and schema violations of a custom
//! resource come back together, as kube-apiserver reports them (a client that fixes what it is
//! told must not discover a second error only on the next try).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::crd::{crd_from_json, install};
use common::kubectl;
use common::tls::TlsServer;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

/// kube's message for a label key or finalizer whose name part is not a qualified name.
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', \
    and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
    '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// kube 1.35's message for a key with more than one `/` wherever a label key is checked
/// (`content.IsLabelKey`, which `validation.IsQualifiedName` aliases): label keys, annotation
/// keys, finalizers, label selectors.
const LABEL_KEY: &str = "a valid label key must consist of alphanumeric characters, '-', '_' \
    or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
    'my.name',  or '123-abc', regex used for validation is \
    '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' \
    (e.g. 'example.com/MyName')";

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

/// The Status of a request that must fail.
fn api_error<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn refused(client: &kube::Client, object: serde_json::Value) -> kube::core::Status {
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    api_error(
        gadgets(client)
            .create(&PostParams::default(), &object)
            .await,
    )
}

/// Asserts a 422 Invalid with this whole message.
fn assert_invalid(status: &kube::core::Status, message: &str) {
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(status.message, message);
}

#[tokio::test]
async fn metadata_and_schema_errors_come_back_in_one_status() {
    let server = TlsServer::start().await;
    let client = server.client().await;
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
    // In kube's order and words: metadata, then the schema, then (a type error blocking the
    // CEL rules) the note that rules were skipped.
    assert_eq!(
        status.message,
        format!(
            "Gadget.test.ocm.io \"g1\" is invalid: [\
             metadata.labels: Invalid value: \"bad key\": {NAME_PART}, \
             metadata.finalizers: Invalid value: \"bad finalizer\": {NAME_PART}, \
             spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\", \
             <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; \
             correct the existing errors to complete validation]"
        )
    );

    // A metadata error does not block CEL: the rule's message is reported alongside.
    let status = refused(
        &client,
        json!({"apiVersion": "test.ocm.io/v1", "kind": "Gadget",
               "metadata": {"name": "g2", "namespace": "default", "labels": {"bad key": "x"}},
               "spec": {"mode": "off"}}),
    )
    .await;
    assert_invalid(
        &status,
        &format!(
            "Gadget.test.ocm.io \"g2\" is invalid: [\
             metadata.labels: Invalid value: \"bad key\": {NAME_PART}, \
             spec: Invalid value: mode must not be off]"
        ),
    );

    // kubectl lists both causes.
    if kubectl::available() {
        let yaml = "apiVersion: test.ocm.io/v1\nkind: Gadget\nmetadata:\n  name: g3\n  namespace: default\n  labels:\n    bad key: x\nspec:\n  mode: \"off\"\n";
        let (code, out, err) = kubectl::run(&server, &["create", "-f", "-"], Some(yaml)).await;
        assert_eq!((code, out.as_str()), (1, ""), "{err}");
        assert_eq!(
            err,
            format!(
                "The Gadget \"g3\" is invalid: \n\
                 * metadata.labels: Invalid value: \"bad key\": {NAME_PART}\n\
                 * spec: Invalid value: mode must not be off\n"
            )
        );
    }
}

#[tokio::test]
async fn label_keys_annotation_keys_finalizers_and_selectors_say_valid_label_key() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    install_gadget(&client).await;

    // A custom resource: kube's metadata order (labels, annotations, finalizers); a label
    // value's length is counted in bytes since 1.35.
    let long = "v".repeat(64);
    let status = refused(
        &client,
        json!({"apiVersion": "test.ocm.io/v1", "kind": "Gadget",
               "metadata": {"name": "g4", "namespace": "default",
                            "labels": {"a/b/c": long}, "annotations": {"x/y/z": "1"},
                            "finalizers": ["f/g/h"]},
               "spec": {"mode": "on"}}),
    )
    .await;
    assert_invalid(
        &status,
        &format!(
            "Gadget.test.ocm.io \"g4\" is invalid: [\
             metadata.labels: Invalid value: \"a/b/c\": {LABEL_KEY}, \
             metadata.labels: Invalid value: \"{long}\": must be no more than 63 bytes, \
             metadata.annotations: Invalid value: \"x/y/z\": {LABEL_KEY}, \
             metadata.finalizers: Invalid value: \"f/g/h\": {LABEL_KEY}]"
        ),
    );

    // A built-in kind, and a name part over 63 bytes (one key per map: kube walks a map in
    // random order).
    let name = "n".repeat(64);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("c1".into());
    cm.metadata.labels = Some(BTreeMap::from([(
        format!("example.com/{name}"),
        "v".to_owned(),
    )]));
    cm.metadata.annotations = Some(BTreeMap::from([("p/q/r".to_owned(), "1".to_owned())]));
    let status = api_error(config_maps.create(&PostParams::default(), &cm).await);
    assert_invalid(
        &status,
        &format!(
            "ConfigMap \"c1\" is invalid: [\
             metadata.labels: Invalid value: \"example.com/{name}\": name part must be no more than 63 bytes, \
             metadata.annotations: Invalid value: \"p/q/r\": {LABEL_KEY}]"
        ),
    );

    // A label selector of a list.
    let status = api_error(
        config_maps
            .list(&ListParams::default().labels("a/b/c"))
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        status.message,
        format!("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": {LABEL_KEY}")
    );
}

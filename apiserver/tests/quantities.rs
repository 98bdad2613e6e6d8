//! Quantities of built-in kinds are stored and answered in Go's canonical form (kube-apiserver
//! decodes them into `resource.Quantity`): `0.5` is `500m`, `1024Mi` is `1Gi`, whatever the
//! write (create, update, patches, apply) and the encoding read. Custom resources are kept as
//! written (kube decodes them unstructured).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use common::kubectl;
use common::tls::TlsServer;

const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

fn pod(name: &str, requests: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox",
            "resources": {"requests": requests, "limits": {"cpu": "1000m", "memory": 1073741824}}}],
            "overhead": {"memory": "0.5Ki"}}})
}

fn resources(obj: &Value) -> &Value {
    &obj["spec"]["containers"][0]["resources"]
}

#[tokio::test]
async fn pod_quantities_are_written_in_canonical_form() {
    let (_server, client) = common::server().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let body = pod(
        "p",
        json!({"cpu": "0.5", "memory": "1024Mi", "ephemeral-storage": "1e3"}),
    );
    let created = pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(body).unwrap(),
        )
        .await
        .unwrap();
    let want = json!({"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1e3"},
        "limits": {"cpu": "1", "memory": "1073741824"}});
    let created = serde_json::to_value(created).unwrap();
    assert_eq!(resources(&created), &want);
    assert_eq!(created["spec"]["overhead"], json!({"memory": "512"}));
    let read = serde_json::to_value(pods.get("p").await.unwrap()).unwrap();
    assert_eq!(resources(&read), &want);

    // Every write path canonicalizes.
    let merge = json!({"spec": {"overhead": {"memory": "2048Ki"}}});
    let patched = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(&merge))
        .await
        .unwrap();
    let patched = serde_json::to_value(patched).unwrap();
    assert_eq!(patched["spec"]["overhead"], json!({"memory": "2Mi"}));
    let ops = json!([{"op": "replace", "path": "/spec/overhead/memory", "value": "0.001Mi"}]);
    let patched = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(ops).unwrap()),
        )
        .await
        .unwrap();
    let patched = serde_json::to_value(patched).unwrap();
    assert_eq!(patched["spec"]["overhead"], json!({"memory": "1048576m"}));
}

#[tokio::test]
async fn pod_templates_quotas_and_applies_are_canonical() {
    let (_server, client) = common::server().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                    "resources": {"limits": {"cpu": "1.5", "memory": "1536Mi"}}}]}}}});
    let applied = deployments
        .patch("d", &PatchParams::apply("test"), &Patch::Apply(&deployment))
        .await
        .unwrap();
    let applied = serde_json::to_value(applied).unwrap();
    assert_eq!(
        applied["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1500m", "memory": "1536Mi"}})
    );
    // Applying the same configuration again, a second later, is a no-op: the values differ
    // from the stored ones only in form, so the managedFields time is kept as well (kube's
    // IgnoreManagedFieldsTimestampsTransformer).
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let again = deployments
        .patch("d", &PatchParams::apply("test"), &Patch::Apply(&deployment))
        .await
        .unwrap();
    let again = serde_json::to_value(again).unwrap();
    assert_eq!(
        again["metadata"]["managedFields"],
        applied["metadata"]["managedFields"]
    );
    assert_eq!(again["spec"], applied["spec"]);

    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "default");
    let quota = json!({"metadata": {"name": "q"},
        "spec": {"hard": {"requests.cpu": "2000m", "requests.memory": "0.5Gi", "pods": "10"}}});
    let created = quotas
        .create(
            &PostParams::default(),
            &serde_json::from_value(quota).unwrap(),
        )
        .await
        .unwrap();
    let created = serde_json::to_value(created).unwrap();
    assert_eq!(
        created["spec"]["hard"],
        json!({"requests.cpu": "2", "requests.memory": "512Mi", "pods": "10"})
    );
    // The quota controller mirrors the canonical limits into status.
    common::eventually("quota status", || async {
        let q = serde_json::to_value(quotas.get("q").await.unwrap()).unwrap();
        (q["status"]["hard"] == created["spec"]["hard"]).then_some(())
    })
    .await;
}

#[tokio::test]
async fn malformed_quantities_are_refused_as_kube_refuses_them() {
    let (_server, client) = common::server().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // A create: kube's decoding error, a 400.
    for (cpu, error) in [
        ("one", FORMAT_WRONG),
        ("1ki", "unable to parse quantity's suffix"),
    ] {
        let answer = common::send_json(
            &client,
            "POST",
            "/api/v1/namespaces/default/pods",
            "application/json",
            Some(&pod("bad", json!({"cpu": cpu}))),
        )
        .await;
        assert_eq!(answer.code, 400, "{}", answer.text());
        let status: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(status["reason"], "BadRequest");
        assert_eq!(
            status["message"],
            format!("Pod in version \"v1\" cannot be handled as a Pod: {error}")
        );
    }

    // A patch: kube's 422 with the patched object as the `patch` value.
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod("p", json!({"cpu": "1"}))).unwrap(),
    )
    .await
    .unwrap();
    let merge = json!({"spec": {"overhead": {"cpu": "lots"}}});
    let err = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(&merge))
        .await
        .unwrap_err();
    let (code, reason, message) = common::status_of(err);
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{message}"
    );
    assert!(
        message.ends_with(&format!("\": {FORMAT_WRONG}")),
        "{message}"
    );
}

#[tokio::test]
async fn custom_resources_keep_quantities_as_written() {
    let (_server, client) = common::server().await;
    let crd = common::crd::crd_from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.test.ocm.io"},
        "spec": {"group": "test.ocm.io", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "cpu": {"x-kubernetes-int-or-string": true},
                        "resources": {"type": "object", "properties": {
                            "requests": {"type": "object", "additionalProperties": {
                                "x-kubernetes-int-or-string": true}}}}}}}}}}]}}));
    common::crd::install(&client, crd).await;
    let gadget = json!({"apiVersion": "test.ocm.io/v1", "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"cpu": "0.5", "resources": {"requests": {"cpu": "1000m", "memory": "1024Mi"}}}});
    let answer = common::send_json(
        &client,
        "POST",
        "/apis/test.ocm.io/v1/namespaces/default/gadgets",
        "application/json",
        Some(&gadget),
    )
    .await;
    assert_eq!(answer.code, 201, "{}", answer.text());
    let created: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(created["spec"], gadget["spec"]);
}

#[tokio::test]
async fn protobuf_answers_carry_the_canonical_quantities() {
    let (_server, client) = common::server().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod("p", json!({"cpu": "0.25"}))).unwrap(),
    )
    .await
    .unwrap();
    let answer = common::send_accept(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/p",
        "application/vnd.kubernetes.protobuf",
        None,
    )
    .await;
    assert_eq!(answer.code, 200);
    assert_eq!(answer.content_type, "application/vnd.kubernetes.protobuf");
    let decoded = ocm_apiserver_protobuf::decode_body(&answer.body).unwrap();
    assert_eq!(
        resources(&decoded)["requests"],
        json!({"cpu": "250m"}),
        "{decoded}"
    );
}

#[tokio::test]
async fn kubectl_shows_the_canonical_quantities() {
    if !kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    let manifest =
        serde_json::to_string(&pod("k", json!({"cpu": "0.1", "memory": "0.5Gi"}))).unwrap();
    let (code, _, err) = kubectl::run(&server, &["apply", "-f", "-"], Some(&manifest)).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = kubectl::run(
        &server,
        &[
            "get",
            "pod",
            "k",
            "-o",
            "jsonpath={.spec.containers[0].resources.requests}",
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let requests: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(requests, json!({"cpu": "100m", "memory": "512Mi"}));
    // Applying the same manifest again sends the written quantities again (kubectl compares
    // text), which change nothing stored.
    let version = || async {
        let args = [
            "get",
            "pod",
            "k",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ];
        let (code, out, err) = kubectl::run(&server, &args, None).await;
        assert_eq!(code, 0, "{err}");
        out
    };
    let before = version().await;
    let (code, _, err) = kubectl::run(&server, &["apply", "-f", "-"], Some(&manifest)).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(version().await, before);
}

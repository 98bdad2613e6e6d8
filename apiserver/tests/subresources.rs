//! Subresources other than status: scale, CSR approval, access reviews, pod binding and log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn deployment_scale() {
    let (_s, client) = common::server().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    api.create(&PostParams::default(), &serde_json::from_value(d).unwrap())
        .await
        .unwrap();
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let scaled = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(5));
    let d = api.get("web").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(5));
    assert_eq!(d.metadata.generation, Some(2));
}

#[tokio::test]
async fn csr_approval_and_requester_identity() {
    let (_s, client) = common::server().await;
    let api: Api<CertificateSigningRequest> = Api::all(client);
    let csr = json!({"metadata": {"name": "c1"}, "spec": {
        "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==",
        "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"], "username": "spoofed"}});
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(csr).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        created.spec.username.as_deref(),
        Some("admin"),
        "the server sets the requester"
    );
    let approval = json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]}});
    let approved = api
        .patch_approval("c1", &PatchParams::default(), &Patch::Merge(approval))
        .await
        .unwrap();
    let conditions = approved.status.unwrap().conditions.unwrap();
    assert_eq!(conditions[0].type_, "Approved");
    // The main resource cannot change the status.
    let after = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": []}})),
        )
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().conditions.unwrap().len(), 1);
}

#[tokio::test]
async fn self_subject_access_review_is_answered() {
    let (server, client) = common::server().await;
    let api: Api<SelfSubjectAccessReview> = Api::all(client);
    let before = server.store().revision();
    let review = json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}});
    let answer = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(review).unwrap(),
        )
        .await
        .unwrap();
    assert!(answer.status.unwrap().allowed);
    assert_eq!(server.store().revision(), before, "reviews are not stored");
}

#[tokio::test]
async fn pod_binding_and_log_from_the_nodes_kubelet() {
    use k8s_openapi::api::core::v1::Pod;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_s, client) = common::server().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = json!({"metadata": {"name": "p1"},
        "spec": {"containers": [{"name": "c", "image": "curlimages/curl"}]}});
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod).unwrap(),
    )
    .await
    .unwrap();
    // Not bound yet: no log.
    let err = pods.logs("p1", &Default::default()).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400 && s.message.contains("does not have a host assigned")),
        "{err:?}"
    );
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}});
    pods.create_subresource::<serde_json::Value, serde_json::Value>(
        "binding",
        "p1",
        &PostParams::default(),
        &binding,
    )
    .await
    .unwrap();
    assert_eq!(
        pods.get("p1")
            .await
            .unwrap()
            .spec
            .unwrap()
            .node_name
            .as_deref(),
        Some("n1")
    );
    // Bound once: a second binding is a conflict, as in kube.
    let err = pods
        .create_subresource::<serde_json::Value, serde_json::Value>(
            "binding",
            "p1",
            &PostParams::default(),
            &binding,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.message.contains("already assigned to node \"n1\"")),
        "{err:?}"
    );
    // A "kubelet" answering one request; the node names it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let kubelet = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = vec![0; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        let request = String::from_utf8_lossy(&buf[..n]).into_owned();
        let body = "hello from c\n";
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(reply.as_bytes()).await.unwrap();
        request
    });
    common::node_with_kubelet(&client, "n1", port).await;
    let log = pods
        .logs(
            "p1",
            &kube::api::LogParams {
                tail_lines: Some(5),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(log, "hello from c\n");
    let request = kubelet.await.unwrap();
    assert!(
        request.starts_with("GET /containerLogs/default/p1/c?tailLines=5 "),
        "{request}"
    );
}

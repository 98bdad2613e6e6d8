//! Subresources other than status: scale, CSR approval, access reviews.

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

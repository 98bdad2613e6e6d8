//! The `fieldSelector` / `labelSelector` of access reviews (kube's `AuthorizeWithSelectors`),
//! through a real kube client: kube's validation messages, and valid selectors answered (RBAC
//! ignores them) with the spec echoed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SubjectAccessReview,
};
use kube::api::{Api, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn review<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn selectors_in_reviews_are_validated_as_kube_does() {
    let (_srv, client) = common::server().await;
    let sar: Api<SubjectAccessReview> = Api::all(client.clone());
    let both = review(json!({"spec": {"user": "alice", "resourceAttributes": {
        "verb": "list", "resource": "pods",
        "fieldSelector": {"rawSelector": "spec.nodeName=n1",
                          "requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["n1"]}]}}}}));
    let (code, reason, message) =
        common::status_of(sar.create(&PostParams::default(), &both).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "spec.nodeName=n1": may not specified at the same time as requirements"#
    );

    let ssar: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let neither = review(json!({"spec": {"resourceAttributes": {
        "verb": "list", "resource": "pods", "labelSelector": {}}}}));
    let (code, _, message) = common::status_of(
        ssar.create(&PostParams::default(), &neither)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes.labelSelector.requirements: Required value: when spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required"
    );

    let lsar: Api<LocalSubjectAccessReview> = Api::namespaced(client.clone(), "default");
    let bad_requirement = review(json!({"metadata": {"namespace": "default"}, "spec": {
        "user": "alice", "resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods",
        "labelSelector": {"requirements": [{"key": "k", "operator": "Exists", "values": ["v"]}]}}}}));
    let (code, _, message) = common::status_of(
        lsar.create(&PostParams::default(), &bad_requirement)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes.labelSelector.requirements[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
    );
}

#[tokio::test]
async fn valid_selectors_are_answered_and_echoed() {
    let (_srv, client) = common::server().await;
    let ssar: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let attrs = json!({"verb": "list", "resource": "pods",
        "fieldSelector": {"requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["n1"]}]},
        // An operator kube does not know passes validation (for newer clients).
        "labelSelector": {"requirements": [{"key": "app", "operator": "Gt", "values": ["1"]}]}});
    let got = ssar
        .create(
            &PostParams::default(),
            &review(json!({"spec": {"resourceAttributes": attrs}})),
        )
        .await
        .unwrap();
    assert!(got.status.unwrap().allowed);
    let echoed = serde_json::to_value(got.spec.resource_attributes.unwrap()).unwrap();
    assert_eq!(echoed, attrs);

    // A raw selector that does not parse is not a validation error: the check runs without it.
    let sar: Api<SubjectAccessReview> = Api::all(client);
    let got = sar
        .create(
            &PostParams::default(),
            &review(json!({"spec": {"user": "nobody", "resourceAttributes": {
                "verb": "list", "resource": "pods", "labelSelector": {"rawSelector": "a in"}}}})),
        )
        .await
        .unwrap();
    assert!(!got.status.unwrap().allowed);
}

//! Subresource writes keep what kube-apiserver's strategies keep: a Namespace's `/status` and a
//! CertificateSigningRequest's `/status` and `/approval` apply the request's metadata (labels,
//! annotations) but never its `spec`, and a CSR's approval conditions change only through
//! `/approval`; a custom resource's `/status` applies only `status`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use common::crd::{Widget, WidgetSpec};
use common::kubectl;
use common::tls::TlsServer;

const EMPTY_CSR: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==";

#[tokio::test]
async fn namespace_status_applies_metadata_but_not_spec() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "labeled"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();

    let patched = namespaces
        .patch_status(
            "labeled",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "from status"}},
                "spec": {"finalizers": []},
            })),
        )
        .await
        .unwrap();
    let labels = patched.metadata.labels.unwrap();
    assert_eq!(labels["team"], "a");
    assert_eq!(labels["kubernetes.io/metadata.name"], "labeled");
    assert_eq!(patched.metadata.annotations.unwrap()["note"], "from status");
    assert_eq!(
        patched.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_owned()]),
        "spec is not written through /status"
    );
    let stored = namespaces.get("labeled").await.unwrap();
    assert_eq!(stored.metadata.labels.unwrap()["team"], "a");

    if kubectl::available() {
        let (code, out, err) = kubectl::run(
            &server,
            &[
                "patch",
                "namespace",
                "labeled",
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"metadata":{"annotations":{"by":"kubectl"}}}"#,
            ],
            None,
        )
        .await;
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (0, "namespace/labeled patched\n", "")
        );
        let (_, out, _) = kubectl::run(
            &server,
            &[
                "get",
                "namespace",
                "labeled",
                "-o",
                "jsonpath={.metadata.annotations.by}",
            ],
            None,
        )
        .await;
        assert_eq!(out, "kubectl");
    }
}

#[tokio::test]
async fn csr_approval_and_status_apply_metadata_but_not_spec() {
    let (_server, client) = common::server().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(client);
    let csr = serde_json::from_value(json!({
        "metadata": {"name": "c1"},
        "spec": {"request": EMPTY_CSR, "signerName": "example.com/test", "usages": ["client auth"]},
    }))
    .unwrap();
    csrs.create(&PostParams::default(), &csr).await.unwrap();

    let approved = csrs
        .patch_approval(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"annotations": {"approved-by": "test"}, "labels": {"a": "b"}},
                "spec": {"signerName": "example.com/other"},
                "status": {
                    "conditions": [{"type": "Approved", "status": "True", "reason": "Test"}],
                    "certificate": "Zm9v",
                },
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        approved.metadata.annotations.unwrap()["approved-by"],
        "test"
    );
    assert_eq!(approved.metadata.labels.unwrap()["a"], "b");
    assert_eq!(approved.spec.signer_name, "example.com/test");
    let status = approved.status.unwrap();
    assert_eq!(status.certificate, None, "approval writes only conditions");
    let condition = &status.conditions.unwrap()[0];
    assert_eq!(condition.type_, "Approved");
    assert!(
        condition.last_update_time.is_some() && condition.last_transition_time.is_some(),
        "timestamps are filled: {condition:?}"
    );

    let issued = csrs
        .patch_status(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"annotations": {"issued-by": "test"}},
                "spec": {"usages": ["server auth"]},
                "status": {"certificate": "Zm9v"},
            })),
        )
        .await
        .unwrap();
    let annotations = issued.metadata.annotations.unwrap();
    assert_eq!(annotations["issued-by"], "test");
    assert_eq!(annotations["approved-by"], "test");
    assert_eq!(issued.spec.usages, Some(vec!["client auth".to_owned()]));
    assert!(issued.status.unwrap().certificate.is_some());

    // Through /status, the approval conditions stay as they are: changed ones are kept from
    // before, added ones refused.
    let kept = csrs
        .patch_status(
            "c1",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/status/conditions/0/reason", "value": "Changed"},
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        kept.status.unwrap().conditions.unwrap()[0]
            .reason
            .as_deref(),
        Some("Test")
    );
    let pending = serde_json::from_value(json!({
        "metadata": {"name": "c2"},
        "spec": {"request": EMPTY_CSR, "signerName": "example.com/test", "usages": ["client auth"]},
    }))
    .unwrap();
    csrs.create(&PostParams::default(), &pending).await.unwrap();
    let approval = json!({"status": {"conditions": [
        {"type": "Approved", "status": "True", "reason": "Sneaky"}]}});
    match csrs
        .patch_status("c2", &PatchParams::default(), &Patch::Merge(approval))
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(
            (s.code, s.message.as_str()),
            (
                422,
                "CertificateSigningRequest.certificates.k8s.io \"c2\" is invalid: status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
            )
        ),
        other => panic!("expected 422, got {other:?}"),
    }
}

#[tokio::test]
async fn custom_resource_status_applies_only_status() {
    let (_server, client) = common::server().await;
    common::crd::install_widget(&client).await;
    let widgets: Api<Widget> = Api::namespaced(client, "default");
    let widget = Widget::new(
        "w",
        WidgetSpec {
            color: "red".into(),
            size: None,
        },
    );
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    let patched = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"labels": {"dropped": "yes"}},
                "spec": {"color": "blue"},
                "status": {"ready": true},
            })),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels, None);
    assert_eq!(patched.spec.color, "red");
    assert!(patched.status.unwrap().ready);
}

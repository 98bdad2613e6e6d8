//! ResourceQuotas (core/v1): served with `/status`, and their object-count usage kept in
//! `status.used` as objects come and go, as kube-controller-manager does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ResourceQuota};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

use common::kubectl;
use common::tls::TlsServer;

/// Waits until the quota reports `want` used for `key`.
async fn used(quotas: &Api<ResourceQuota>, key: &str, want: &str) {
    let cond = await_condition(quotas.clone(), "objects", |q: Option<&ResourceQuota>| {
        q.and_then(|q| q.status.as_ref())
            .and_then(|s| s.used.as_ref())
            .and_then(|u| u.get(key))
            .is_some_and(|v| v.0 == want)
    });
    tokio::time::timeout(std::time::Duration::from_secs(30), cond)
        .await
        .unwrap_or_else(|_| panic!("{key} never reached {want}"))
        .unwrap();
}

#[tokio::test]
async fn quota_usage_follows_the_objects_of_its_namespace() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();

    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "team");
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "objects"},
        "spec": {"hard": {"count/configmaps": "5", "secrets": "3",
                          "count/deployments.apps": "2", "requests.cpu": "1"}},
    }))
    .unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();

    // Every namespace holds kube-root-ca.crt already.
    used(&quotas, "count/configmaps", "1").await;
    used(&quotas, "secrets", "0").await;
    used(&quotas, "count/deployments.apps", "0").await;
    let status = quotas.get("objects").await.unwrap().status.unwrap();
    assert_eq!(status.hard.unwrap().len(), 4, "hard mirrors spec.hard");
    assert!(!status.used.unwrap().contains_key("requests.cpu"));

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    for name in ["a", "b"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        configmaps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    used(&quotas, "count/configmaps", "3").await;
    configmaps
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    used(&quotas, "count/configmaps", "2").await;

    // At the limit, one more is refused as kube's quota admission refuses it.
    for name in ["c", "d", "e"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        configmaps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "f"}})).unwrap();
    match configmaps.create(&PostParams::default(), &cm).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
            assert_eq!(
                s.message,
                "configmaps \"f\" is forbidden: exceeded quota: objects, requested: \
                 count/configmaps=1, used: count/configmaps=5, limited: count/configmaps=5"
            );
        }
        other => panic!("the sixth ConfigMap must be refused, got {other:?}"),
    }
    used(&quotas, "count/configmaps", "5").await;
    configmaps
        .delete("c", &DeleteParams::default())
        .await
        .unwrap();
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    used(&quotas, "count/configmaps", "5").await;

    if kubectl::available() {
        let (code, out, err) = kubectl::run(&server, &["get", "quota", "-n", "team"], None).await;
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("count/configmaps: 5/5"), "{out}");
        assert!(out.contains("REQUEST"), "{out}");
    }
}

//! The same API over TCP + TLS, through a kubeconfig with the generated admin certificate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn kubeconfig_client_over_tls() {
    let srv = common::tls::TlsServer::start().await;
    let client = srv.client().await;
    let info = client.apiserver_version().await.unwrap();
    assert_eq!(info.major, "1");
    let ns: Api<Namespace> = Api::all(client.clone());
    let names: Vec<_> = ns
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"kube-system".to_string()));
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "x"}, "data": {"a": "b"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    assert_eq!(cms.get("x").await.unwrap().data.unwrap()["a"], "b");
}

#[tokio::test]
async fn logical_clusters_are_isolated() {
    let srv = common::tls::TlsServer::start().await;
    let hub = srv.client().await;
    let c1 = srv.client_for(&format!("{}/clusters/c1", srv.url)).await;
    let c2 = srv.client_for(&format!("{}/clusters/c2", srv.url)).await;
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "only-in-c1"}})).unwrap();
    Api::<ConfigMap>::namespaced(c1.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    assert!(
        Api::<ConfigMap>::namespaced(c1, "default")
            .get("only-in-c1")
            .await
            .is_ok()
    );
    assert!(
        Api::<ConfigMap>::namespaced(c2.clone(), "default")
            .get("only-in-c1")
            .await
            .is_err()
    );
    assert!(
        Api::<ConfigMap>::namespaced(hub, "default")
            .get("only-in-c1")
            .await
            .is_err()
    );
    // Every logical cluster has its own system namespaces.
    assert!(
        Api::<Namespace>::all(c2)
            .get("kube-node-lease")
            .await
            .is_ok()
    );
}

//! helloworld end to end on the test fleet: enabled on two clusters, registered with the hub,
//! its agents (run here with exactly their pod credentials) copy each cluster's ConfigMaps and
//! keep the addon Available through their Lease; a ConfigMap of one cluster never reaches the
//! other; the agent's hub credentials cannot read another cluster's namespace.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use helloworld_addon::{ADDON_NAME, HelloWorld};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;
use ocm_addon_framework::agent_helpers::RotatingHubClient;
use ocm_addon_framework::testing::{TestFleet, WAIT};

fn available(m: &ocm_api::addon::v1beta1::ManagedClusterAddOn) -> bool {
    m.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helloworld_copies_each_clusters_configmaps_and_stays_available() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = TestFleet::start(dir.path(), 2, vec![Arc::new(HelloWorld::new("hello:test"))])
        .await
        .unwrap();
    for cluster in ["c01", "c02"] {
        fleet.enable(ADDON_NAME, cluster).await.unwrap();
    }
    let mut namespaces = Vec::new();
    for cluster in ["c01", "c02"] {
        let (credentials, namespace) = fleet.agent_credentials(cluster, ADDON_NAME).await.unwrap();
        let spoke = fleet.spoke(cluster).await.unwrap();
        tokio::spawn(helloworld_addon::agent::run(
            RotatingHubClient::new(credentials),
            spoke,
            cluster.to_owned(),
            namespace.clone(),
            fleet.shutdown(),
        ));
        namespaces.push(namespace);
    }
    for cluster in ["c01", "c02"] {
        fleet
            .wait_addon(cluster, ADDON_NAME, available)
            .await
            .unwrap();
    }
    // The agent's Deployment went out in the addon's work.
    let works: Api<ocm_api::work::v1::ManifestWork> = Api::namespaced(fleet.hub_client(), "c01");
    let work = works.get("addon-helloworld-deploy-0").await.unwrap();
    assert!(
        serde_json::to_string(&work.spec)
            .unwrap()
            .contains("helloworld-agent")
    );

    // A ConfigMap in c01's namespace on the hub reaches c01, not c02.
    let hub_cms: Api<ConfigMap> = Api::namespaced(fleet.hub_client(), "c01");
    hub_cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": "greeting", "namespace": "c01"},
                "data": {"hello": "world"}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let c01: Api<ConfigMap> = Api::namespaced(fleet.spoke("c01").await.unwrap(), &namespaces[0]);
    let copy = tokio::time::timeout(
        WAIT,
        await_condition(c01, "greeting", |c: Option<&ConfigMap>| c.is_some()),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(copy.data.unwrap()["hello"], "world");
    let c02: Api<ConfigMap> = Api::namespaced(fleet.spoke("c02").await.unwrap(), &namespaces[1]);
    assert!(c02.get_opt("greeting").await.unwrap().is_none());

    // c01's agent credentials reach only c01's namespace on the hub.
    let (credentials, _) = fleet.agent_credentials("c01", ADDON_NAME).await.unwrap();
    let hub = RotatingHubClient::new(credentials).client().await.unwrap();
    let other: Api<ConfigMap> = Api::namespaced(hub, "c02");
    let refused = other.list(&Default::default()).await;
    assert!(matches!(refused, Err(kube::Error::Api(s)) if s.code == 403));
    fleet.stop().await;
}

//! helloworld end to end on the test fleet, as the addon framework's acceptance asks: installed
//! on three clusters through a Placements strategy, its CSRs approved and signed, its hub
//! kubeconfig secrets on the clusters, its agents (run here with exactly their pod credentials)
//! renewing their Leases → Available; a ConfigMap in a cluster's namespace on the hub reaches
//! that cluster and no other; an agent stopped → Available False after the grace, restarted →
//! True; a cluster leaving the placement loses its addon, its work and the agent's objects; the
//! agent's hub credentials cannot read another cluster's namespace; its cleanup removes the
//! copies and nothing else.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use helloworld_addon::{ADDON_NAME, HelloWorld};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;
use ocm_addon_framework::agent_helpers::RotatingHubClient;
use ocm_addon_framework::testing::{TestFleet, WAIT};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_runtime::shutdown::Shutdown;

fn available(m: &ManagedClusterAddOn) -> Option<(String, String)> {
    m.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Available")
        .map(|c| (c.status.clone(), c.reason.clone()))
}

fn is(status: &'static str) -> impl Fn(&ManagedClusterAddOn) -> bool + Send + 'static {
    move |m| available(m).is_some_and(|(s, _)| s == status)
}

/// Runs the helloworld agent of `cluster` until the returned token is cancelled.
async fn start_agent(fleet: &TestFleet, cluster: &str) -> (Shutdown, String) {
    let (credentials, namespace) = fleet.agent_credentials(cluster, ADDON_NAME).await.unwrap();
    let stop = Shutdown::new();
    tokio::spawn(helloworld_addon::agent::run(
        RotatingHubClient::new(credentials),
        fleet.spoke(cluster).await.unwrap(),
        cluster.to_owned(),
        namespace.clone(),
        ADDON_NAME.to_owned(),
        stop.child(),
    ));
    (stop, namespace)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helloworld_by_placement_copies_configmaps_and_follows_its_agents_and_the_placement() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = TestFleet::start(dir.path(), 3, vec![Arc::new(HelloWorld::new("hello:test"))])
        .await
        .unwrap();
    let clusters = ["c01", "c02", "c03"];
    for cluster in clusters {
        fleet
            .label_cluster(cluster, "helloworld", Some("on"))
            .await
            .unwrap();
    }
    fleet
        .install_by_placement(ADDON_NAME, "helloworld", "on")
        .await
        .unwrap();
    let mut agents = BTreeMap::new();
    for cluster in clusters {
        agents.insert(cluster, start_agent(&fleet, cluster).await);
    }
    for cluster in clusters {
        let mca = fleet
            .wait_addon(cluster, ADDON_NAME, is("True"))
            .await
            .unwrap();
        assert_eq!(
            available(&mca).unwrap().1,
            "ManagedClusterAddOnLeaseUpdated"
        );
        let conditions = mca.status.unwrap().conditions;
        let rotated = conditions
            .iter()
            .find(|c| c.type_ == "ClusterCertificateRotated")
            .map(|c| c.status.as_str());
        assert_eq!(rotated, Some("True"));
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
    let c01: Api<ConfigMap> = Api::namespaced(fleet.spoke("c01").await.unwrap(), &agents["c01"].1);
    let copy = tokio::time::timeout(
        WAIT,
        await_condition(c01, "greeting", |c: Option<&ConfigMap>| c.is_some()),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(copy.data.unwrap()["hello"], "world");
    let c02: Api<ConfigMap> = Api::namespaced(fleet.spoke("c02").await.unwrap(), &agents["c02"].1);
    assert!(c02.get_opt("greeting").await.unwrap().is_none());

    // c01's agent credentials reach only c01's namespace on the hub.
    let (credentials, _) = fleet.agent_credentials("c01", ADDON_NAME).await.unwrap();
    let hub = RotatingHubClient::new(credentials).client().await.unwrap();
    let other: Api<ConfigMap> = Api::namespaced(hub, "c02");
    let refused = other.list(&Default::default()).await;
    assert!(matches!(refused, Err(kube::Error::Api(s)) if s.code == 403));

    // c02's agent stops: its Lease goes stale and the addon unavailable; back, available.
    agents["c02"].0.cancel();
    let mca = fleet
        .wait_addon("c02", ADDON_NAME, is("False"))
        .await
        .unwrap();
    assert_eq!(
        available(&mca).unwrap().1,
        "ManagedClusterAddOnLeaseUpdateStopped"
    );
    agents.insert("c02", start_agent(&fleet, "c02").await);
    fleet
        .wait_addon("c02", ADDON_NAME, is("True"))
        .await
        .unwrap();

    // c03 leaves the placement: its addon, its work and the agent's Deployment go.
    fleet
        .label_cluster("c03", "helloworld", None)
        .await
        .unwrap();
    fleet.wait_addon_gone("c03", ADDON_NAME).await.unwrap();
    let c03_works: Api<ocm_api::work::v1::ManifestWork> =
        Api::namespaced(fleet.hub_client(), "c03");
    tokio::time::timeout(
        WAIT,
        await_condition(
            c03_works,
            "addon-helloworld-deploy-0",
            |w: Option<&ocm_api::work::v1::ManifestWork>| w.is_none(),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    let c03_deployments: Api<Deployment> =
        Api::namespaced(fleet.spoke("c03").await.unwrap(), &agents["c03"].1);
    tokio::time::timeout(
        WAIT,
        await_condition(
            c03_deployments,
            "helloworld-agent",
            |d: Option<&Deployment>| d.is_none(),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        Api::<ManagedClusterAddOn>::namespaced(fleet.hub_client(), "c01")
            .get_opt(ADDON_NAME)
            .await
            .unwrap()
            .is_some()
    );

    // The addon's pre-delete cleanup: c01's agent stopped, its copies go, nothing else.
    agents["c01"].0.cancel();
    let c01: Api<ConfigMap> = Api::namespaced(fleet.spoke("c01").await.unwrap(), &agents["c01"].1);
    c01.create(
        &PostParams::default(),
        &serde_json::from_value(serde_json::json!({"metadata": {"name": "local"}})).unwrap(),
    )
    .await
    .unwrap();
    let spoke = fleet.spoke("c01").await.unwrap();
    let deleted = helloworld_addon::agent::cleanup(&spoke, &agents["c01"].1)
        .await
        .unwrap();
    // `greeting` and the namespace's `kube-root-ca.crt`, both copied from the hub.
    assert_eq!(deleted, 2);
    assert!(c01.get_opt("greeting").await.unwrap().is_none());
    assert!(c01.get_opt("local").await.unwrap().is_some());
    for (_, (stop, _)) in agents {
        stop.cancel();
    }
    fleet.stop().await;
}

//! The placement controller on the embedded hub with real registration agents: clusters that
//! join are placed; a cluster whose agent stops becomes unreachable (taint) and is dropped
//! unless tolerated, and a toleration with `tolerationSeconds` keeps it only that long.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::api::{Api, Patch, PatchParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::Placement;
use ocm_e2e::*;
use serde_json::json;

const NS: &str = "apps";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_leaving_and_unreachable_clusters_change_the_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_fast_hub(dir.path()).await.unwrap();
    let client = hub.admin_client();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    bind_namespace(&client, NS, "default").await.unwrap();
    apply_placement(&client, NS, "p", json!({})).await.unwrap();
    let placements: Api<Placement> = Api::namespaced(client.clone(), NS);
    wait_for(&placements, "p", "nothing to place yet", |p: &Placement| {
        placement_condition(p, "PlacementSatisfied").is_some_and(|c| c.status == "False")
    })
    .await
    .unwrap();

    // Clusters join: they are placed.
    let (_s1, a1) = join_and_accept(&hub, &bootstrap, "c1").await;
    let (_s2, a2) = join_and_accept(&hub, &bootstrap, "c2").await;
    wait_decided(&client, NS, "p", &["c1", "c2"]).await.unwrap();

    // c2's agent stops and its lease runs out: the hub taints it unreachable and the
    // placement drops it.
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    clusters
        .patch(
            "c2",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"leaseDurationSeconds": 1}})),
        )
        .await
        .unwrap();
    a2.stop().await.unwrap();
    wait_for(
        &clusters,
        "c2",
        "unreachable taint",
        |c: &ManagedCluster| {
            c.spec
                .taints
                .iter()
                .any(|t| t.key == "cluster.open-cluster-management.io/unreachable")
        },
    )
    .await
    .unwrap();
    wait_decided(&client, NS, "p", &["c1"]).await.unwrap();

    // Tolerated, it comes back; with tolerationSeconds it is dropped again when they run out.
    apply_placement(
        &client,
        NS,
        "p",
        json!({"tolerations": [{"key": "cluster.open-cluster-management.io/unreachable",
                                "operator": "Exists"}]}),
    )
    .await
    .unwrap();
    wait_decided(&client, NS, "p", &["c1", "c2"]).await.unwrap();
    let taint_added = clusters
        .get("c2")
        .await
        .unwrap()
        .spec
        .taints
        .iter()
        .find(|t| t.key == "cluster.open-cluster-management.io/unreachable")
        .and_then(|t| t.time_added.clone())
        .unwrap();
    let seconds = (jiff::Timestamp::now().as_second() - taint_added.0.as_second()) + 3;
    apply_placement(
        &client,
        NS,
        "p",
        json!({"tolerations": [{"key": "cluster.open-cluster-management.io/unreachable",
                                "operator": "Exists", "tolerationSeconds": seconds}]}),
    )
    .await
    .unwrap();
    wait_decided(&client, NS, "p", &["c1", "c2"]).await.unwrap();
    // When the toleration runs out, c2 is dropped (the controller looks again at that time).
    wait_decided(&client, NS, "p", &["c1"]).await.unwrap();

    a1.stop().await.unwrap();
    hub.stop().await;
}

//! The placement controller on the embedded hub with real registration agents: clusters that
//! join are placed; a cluster whose agent stops becomes unreachable (taint) and is dropped
//! unless tolerated, and a toleration with `tolerationSeconds` keeps it only that long.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::api::{Api, Patch, PatchParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_e2e::*;
use serde_json::{Value, json};

const NS: &str = "apps";

fn decided(d: &PlacementDecision) -> Vec<String> {
    let mut names: Vec<String> = d
        .status
        .iter()
        .flat_map(|s| s.decisions.iter().map(|c| c.cluster_name.clone()))
        .collect();
    names.sort();
    names
}

async fn place(client: &kube::Client, spec: Value) {
    Api::<Placement>::namespaced(client.clone(), NS)
        .patch(
            "p",
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
                "metadata": {"name": "p"}, "spec": spec})),
        )
        .await
        .unwrap();
}

async fn wait_decided(client: &kube::Client, want: &[&str]) {
    let want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
    let decisions: Api<PlacementDecision> = Api::namespaced(client.clone(), NS);
    wait_for(
        &decisions,
        "p-decision-1",
        &format!("decided {want:?}"),
        move |d| decided(d) == want,
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_leaving_and_unreachable_clusters_change_the_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_fast_hub(dir.path()).await.unwrap();
    let client = hub.admin_client();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    bind_namespace(&client, NS, "default").await.unwrap();
    place(&client, json!({})).await;
    let placements: Api<Placement> = Api::namespaced(client.clone(), NS);
    wait_for(&placements, "p", "nothing to place yet", |p: &Placement| {
        placement_condition(p, "PlacementSatisfied").is_some_and(|c| c.status == "False")
    })
    .await
    .unwrap();

    // Clusters join: they are placed.
    let (_s1, a1) = join_and_accept(&hub, &bootstrap, "c1").await;
    let (_s2, a2) = join_and_accept(&hub, &bootstrap, "c2").await;
    wait_decided(&client, &["c1", "c2"]).await;

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
    wait_decided(&client, &["c1"]).await;

    // Tolerated, it comes back; with tolerationSeconds it is dropped again when they run out.
    place(
        &client,
        json!({"tolerations": [{"key": "cluster.open-cluster-management.io/unreachable",
                                "operator": "Exists"}]}),
    )
    .await;
    wait_decided(&client, &["c1", "c2"]).await;
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
    place(
        &client,
        json!({"tolerations": [{"key": "cluster.open-cluster-management.io/unreachable",
                                "operator": "Exists", "tolerationSeconds": seconds}]}),
    )
    .await;
    wait_decided(&client, &["c1", "c2"]).await;
    // When the toleration runs out, c2 is dropped (the controller looks again at that time).
    wait_decided(&client, &["c1"]).await;

    a1.stop().await.unwrap();
    hub.stop().await;
}

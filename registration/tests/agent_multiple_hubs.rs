//! Several hubs to choose from (`AgentOptions::bootstrap_kubeconfig_secrets`): with no
//! bootstrap kubeconfig yet, the agent takes the first listed secret whose hub answers and does
//! not refuse the cluster; when none does, it says why for each secret, writes nothing and asks
//! again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support_agent;

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::{
    AgentProgress, BOOTSTRAP_KUBECONFIG_SECRET, DEFAULT_AGENT_NAMESPACE,
};
use serde_json::json;
use support_agent::*;

async fn write_secret(bench: &Bench, name: &str, kubeconfig: &str) {
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": DEFAULT_AGENT_NAMESPACE},
        "data": {"kubeconfig": ocm_apiserver::tls::base64(kubeconfig.as_bytes())},
    });
    Api::<Secret>::namespaced(bench.spoke.clone(), DEFAULT_AGENT_NAMESPACE)
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(secret),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_listed_hub_that_answers_is_taken_and_none_answering_is_said() {
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.delete_bootstrap_secret().await;
    let good = bench.bootstrap_kubeconfig();
    let down = good.replace(&bench.url, "https://127.0.0.1:1");
    write_secret(&bench, "hub-garbled", "clusters: [not a kubeconfig").await;
    write_secret(&bench, "hub-down", &down).await;
    let mut options = bench.options("multi1");
    options.bootstrap_kubeconfig_secrets = ["hub-missing", "hub-garbled", "hub-down", "hub-later"]
        .map(String::from)
        .to_vec();
    let mut agent = bench.spawn_agent(options);

    // None answers: each secret named with its problem; nothing written, nothing on the hub.
    agent
        .wait_progress("none of the hubs answers", |p| {
            matches!(p, AgentProgress::Retrying { error } if error.contains("no listed bootstrap kubeconfig reaches a hub that answers"))
        })
        .await;
    let error = agent.progress.borrow().to_string();
    for part in [
        "secret hub-missing: not found",
        "secret hub-garbled: the kubeconfig is malformed",
        "secret hub-down: hub https://127.0.0.1:1 unreachable",
        "secret hub-later: not found",
    ] {
        assert!(error.contains(part), "{part}: {error}");
    }
    let secrets = Api::<Secret>::namespaced(bench.spoke.clone(), DEFAULT_AGENT_NAMESPACE);
    assert!(
        secrets
            .get_opt(BOOTSTRAP_KUBECONFIG_SECRET)
            .await
            .unwrap()
            .is_none()
    );
    let clusters = Api::<ManagedCluster>::all(bench.hub.clone());
    assert!(clusters.get_opt("multi1").await.unwrap().is_none());

    // A reachable hub that holds the cluster without accepting it does not count either.
    create(
        &clusters,
        json!({"metadata": {"name": "multi1"}, "spec": {"hubAcceptsClient": false}}),
    )
    .await;
    write_secret(&bench, "hub-later", &good).await;
    agent
        .wait_progress("the hub refusing the cluster", |p| {
            matches!(p, AgentProgress::Retrying { error } if error.contains("secret hub-later: hub") && error.contains("does not accept cluster multi1"))
        })
        .await;
    assert!(
        secrets
            .get_opt(BOOTSTRAP_KUBECONFIG_SECRET)
            .await
            .unwrap()
            .is_none()
    );

    // Accepted there: the agent takes it and registers.
    clusters
        .patch(
            "multi1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hubAcceptsClient": true}})),
        )
        .await
        .unwrap();
    agent
        .wait_progress("registering with the listed hub", |p| {
            matches!(p, AgentProgress::WaitingForCsrApproval { .. })
        })
        .await;
    let chosen = secrets.get(BOOTSTRAP_KUBECONFIG_SECRET).await.unwrap();
    assert_eq!(chosen.data.unwrap()["kubeconfig"].0, good.as_bytes());
    agent.stop().await;
}

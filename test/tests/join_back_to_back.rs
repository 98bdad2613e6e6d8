//! `ocm init` and `ocm join` run back to back, as people script them, with no pause anywhere:
//! against an embedded hub the moment its admin kubeconfig appears (fresh data directory each
//! time), and against a plain `ocm apiserver` — no kubeadm objects, no `kube-public/cluster-info`
//! until `ocm init` publishes it — managed by `ocm hub --kubeconfig`. Twenty times each; every
//! join must find the hub CA by itself (no `--ca-file`) and get its ManagedCluster created; the
//! dashboard `ocm hub --kubeconfig` serves then lists them all.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::process::{Process, run_ocm};
use ocm_e2e::wait_for;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

const ROUNDS: usize = 20;

/// Runs `ocm init` against `kubeconfig`, then at once `ocm join` with the printed command for a
/// simulated cluster `name`; returns once the join reports the token accepted and the cluster
/// has asked to join on the hub.
async fn init_then_join(home: &Path, kubeconfig: &Path, name: &str) {
    let join = ocm_e2e::process::init_then_start_join(OCM, home, kubeconfig, name);
    let admin = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap();
    let clusters: Api<ManagedCluster> = Api::all(admin);
    wait_for(&clusters, name, "the cluster asking to join", |_| true)
        .await
        .unwrap();
    join.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_and_join_the_moment_an_embedded_hub_writes_its_kubeconfig() {
    for round in 0..ROUNDS {
        let home = tempfile::tempdir().unwrap();
        let data = home.path().join("hub");
        let hub = Process::spawn(
            OCM,
            home.path(),
            &[
                "hub",
                "--data-dir",
                data.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ],
        );
        let kubeconfig = data.join("admin.kubeconfig");
        // The only wait: the file appearing (written atomically, last of all).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !kubeconfig.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: no admin.kubeconfig"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        init_then_join(home.path(), &kubeconfig, &format!("round-{round}")).await;
        hub.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_and_join_against_a_plain_apiserver_managed_by_ocm_hub() {
    let home = tempfile::tempdir().unwrap();
    let real = ocm_e2e::process::ManagedApiserver::start(OCM, home.path());
    let kubeconfig = real.kubeconfig.clone();
    for round in 0..ROUNDS {
        init_then_join(home.path(), &kubeconfig, &format!("round-{round}")).await;
    }
    // `ocm hub --kubeconfig` serves the dashboard too (its URL in the banner): the clusters
    // that asked to join are listed, waiting for acceptance.
    let first = "round-0".to_owned();
    let last = format!("round-{}", ROUNDS - 1);
    let body =
        ocm_e2e::process::wait_dashboard_page(&real.dashboard, "/", &["Clusters", &first, &last])
            .await;
    assert!(!body.contains("Cannot watch"), "{body}");
    real.stop();
}

/// A hub with no `kube-public/cluster-info` that refuses anonymous requests: `ocm init`
/// publishes cluster-info, and `ocm join` — refused anonymously — reads it with the bootstrap
/// token instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_publishes_cluster_info_and_join_reads_it_with_the_token() {
    let home = tempfile::tempdir().unwrap();
    let (apiserver, kubeconfig) =
        ocm_e2e::process::start_apiserver(OCM, home.path(), &["--anonymous-auth=false"]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(admin, "kube-public");
    assert!(configmaps.get_opt("cluster-info").await.unwrap().is_none());
    let (code, stdout, stderr) = run_ocm(
        OCM,
        home.path(),
        &["init", "--kubeconfig", kubeconfig.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("published kube-public/cluster-info"),
        "{stdout}"
    );
    assert!(configmaps.get_opt("cluster-info").await.unwrap().is_some());
    let word_after = |flag: &str| {
        stdout
            .split_whitespace()
            .skip_while(|w| *w != flag)
            .nth(1)
            .unwrap()
            .to_owned()
    };
    let data = home.path().join("cluster");
    let join = Process::spawn(
        OCM,
        home.path(),
        &[
            "join",
            "--hub-apiserver",
            &word_after("--hub-apiserver"),
            "--hub-token",
            &word_after("--hub-token"),
            "--cluster-name",
            "c1",
            "--simulated",
            "--data-dir",
            data.to_str().unwrap(),
        ],
    );
    join.wait_line("token accepted");
    join.stop();
    // A second init leaves the published object alone.
    let before = configmaps.get("cluster-info").await.unwrap();
    let (code, stdout, _) = run_ocm(
        OCM,
        home.path(),
        &["init", "--kubeconfig", kubeconfig.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    assert!(!stdout.contains("published"), "{stdout}");
    let after = configmaps.get("cluster-info").await.unwrap();
    assert_eq!(
        before.metadata.resource_version,
        after.metadata.resource_version
    );
    apiserver.stop();
}

//! When the agent goes back to bootstrap: the hub answers 401 (expired certificate), the
//! bootstrap kubeconfig points at another hub address; when it does not: the hub admin deleted
//! the ManagedCluster (it stays deleted, as upstream); and a malformed bootstrap kubeconfig
//! stops an agent that never joined with a clear error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support_agent;

use std::time::Duration;

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams};
use kube::runtime::wait::await_condition;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::{AgentError, AgentProgress};
use support_agent::*;

fn names(csrs: &[k8s_openapi::api::certificates::v1::CertificateSigningRequest]) -> Vec<String> {
    csrs.iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_sends_the_agent_back_to_bootstrap() {
    // Certificates live 8 s and nobody approves renewals: the certificate expires, the hub
    // answers 401, and the agent registers again with the bootstrap token.
    let bench = Bench::start(Duration::from_secs(8)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    let mut options = bench.options("exp1");
    options.cert_check_period = Duration::from_secs(1);
    let mut agent = join(&bench, options, 1).await;
    let before = names(&bench.csrs("exp1").await);
    let second = bench
        .approve_next_csr_from("exp1", "system:bootstrap:", &before)
        .await;
    agent
        .wait_progress("Available again", |p| *p == AgentProgress::Available)
        .await;
    let after = jiff::Timestamp::now();
    bench.wait_lease_renewed_after("exp1", after).await;
    let secret = bench.hub_secret().await.unwrap().data.unwrap();
    let csr = Api::<k8s_openapi::api::certificates::v1::CertificateSigningRequest>::all(
        bench.hub.clone(),
    )
    .get(&second)
    .await
    .unwrap();
    assert_eq!(
        secret["tls.crt"].0.trim_ascii(),
        csr.status.unwrap().certificate.unwrap().0.trim_ascii()
    );
    // Back with a certificate, the agent says why it had to register again.
    let mc = bench
        .wait_cluster("exp1", "ClusterCertificateRotated False", |mc| {
            mc.status.as_ref().is_some_and(|s| {
                ocm_runtime::conditions::find_condition(&s.conditions, "ClusterCertificateRotated")
                    .is_some_and(|c| c.status == "False" && c.reason == "ClientCertificateExpired")
            })
        })
        .await;
    let rotated = ocm_runtime::conditions::find_condition(
        &mc.status.unwrap().conditions,
        "ClusterCertificateRotated",
    )
    .unwrap()
    .clone();
    assert!(rotated.message.contains("expired"), "{}", rotated.message);
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_cluster_the_hub_admin_deleted_stays_deleted() {
    // As upstream: the agent creates its ManagedCluster only while bootstrapping. The hub
    // admin deletes it (and the hub withdraws the cluster's RBAC with it); the running agent
    // says so and neither creates it again nor asks for a new certificate.
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    let mut options = bench.options("gone1");
    options.status_sync_period = Duration::from_millis(500);
    let mut agent = join(&bench, options, 1).await;
    let before = names(&bench.csrs("gone1").await);
    let clusters: Api<ManagedCluster> = Api::all(bench.hub.clone());
    Api::<ClusterRoleBinding>::all(bench.hub.clone())
        .delete(
            "open-cluster-management:managedcluster:gone1",
            &DeleteParams::default(),
        )
        .await
        .unwrap();
    clusters
        .delete("gone1", &DeleteParams::default())
        .await
        .unwrap();
    agent
        .wait_progress("Deleted", |p| *p == AgentProgress::Deleted)
        .await;
    assert!(
        agent
            .progress
            .borrow()
            .to_string()
            .contains("stays deleted")
    );
    // Many status syncs (every 0.5 s) and lease renewals (every 1 s) later, nothing came
    // back: waiting for a re-created cluster or a new CSR must run out of time.
    let recreated = tokio::time::timeout(
        Duration::from_secs(6),
        await_condition(clusters.clone(), "gone1", |mc: Option<&ManagedCluster>| {
            mc.is_some()
        }),
    )
    .await;
    assert!(recreated.is_err(), "the ManagedCluster came back");
    assert_eq!(names(&bench.csrs("gone1").await), before);
    assert_eq!(*agent.progress.borrow(), AgentProgress::Deleted);
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_kubeconfig_for_another_hub_address_rebootstraps() {
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    let mut agent = join(&bench, bench.options("moved1"), 60).await;
    let before = names(&bench.csrs("moved1").await);
    let moved_url = bench.url.replace("127.0.0.1", "localhost");
    bench
        .write_bootstrap_secret(&bench.bootstrap_kubeconfig().replace(&bench.url, &moved_url))
        .await;
    bench
        .approve_next_csr_from("moved1", "system:bootstrap:", &before)
        .await;
    agent
        .wait_progress("Available at the new address", |p| {
            *p == AgentProgress::Available
        })
        .await;
    let kubeconfig = bench.hub_secret().await.unwrap().data.unwrap()["kubeconfig"]
        .0
        .clone();
    let kubeconfig = String::from_utf8(kubeconfig).unwrap();
    assert!(kubeconfig.contains(&moved_url), "{kubeconfig}");
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_bootstrap_kubeconfig_is_a_clear_error() {
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench
        .write_bootstrap_secret("apiVersion: v1\nkind: Config\nclusters: {{{ not yaml")
        .await;
    let agent = bench.spawn_agent(bench.options("bad1"));
    let result = tokio::time::timeout(WAIT, agent.task)
        .await
        .expect("the agent gives up")
        .unwrap();
    let err = result.expect_err("a malformed bootstrap kubeconfig is an error");
    assert!(
        matches!(err, AgentError::BootstrapKubeconfigInvalid { .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("bootstrap-hub-kubeconfig") && message.contains("malformed"),
        "{message}"
    );
    assert!(bench.csrs("bad1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_waits_for_a_missing_bootstrap_kubeconfig() {
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    bench.delete_bootstrap_secret().await;
    let mut agent = bench.spawn_agent(bench.options("late1"));
    agent
        .wait_progress("waiting for the bootstrap kubeconfig", |p| {
            *p == AgentProgress::WaitingForBootstrapKubeconfig
        })
        .await;
    assert!(bench.csrs("late1").await.is_empty());
    bench
        .write_bootstrap_secret(&bench.bootstrap_kubeconfig())
        .await;
    bench.approve_next_csr("late1", &[]).await;
    bench.accept("late1", 60).await;
    agent
        .wait_progress("Available", |p| *p == AgentProgress::Available)
        .await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_csr_is_created_while_ten_exist_for_the_cluster() {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    use kube::api::{ListParams, PostParams};

    let bench = Bench::start(Duration::from_secs(3600)).await;
    let api = Api::<CertificateSigningRequest>::all(bench.hub.clone());
    for i in 0..10 {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("someone-{i}"));
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        let csr: CertificateSigningRequest = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("many1-old-{i}"),
                         "labels": {"open-cluster-management.io/cluster-name": "many1"}},
            "spec": {"request": ocm_apiserver::tls::base64(pem.as_bytes()),
                     "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["client auth"]},
        }))
        .unwrap();
        api.create(&PostParams::default(), &csr).await.unwrap();
    }
    let mut agent = bench.spawn_agent(bench.options("many1"));
    agent
        .wait_progress("halted CSR creation", |p| {
            matches!(p, AgentProgress::Retrying { error } if error.contains("10 certificate signing requests"))
        })
        .await;
    assert_eq!(bench.csrs("many1").await.len(), 10);
    api.delete_collection(
        &kube::api::DeleteParams::default(),
        &ListParams::default().labels("open-cluster-management.io/cluster-name=many1"),
    )
    .await
    .unwrap();
    bench.approve_next_csr("many1", &[]).await;
    agent
        .wait_progress("the certificate", |p| {
            matches!(
                p,
                AgentProgress::CertificateIssued | AgentProgress::WaitingForAcceptance
            )
        })
        .await;
    agent.stop().await;
}

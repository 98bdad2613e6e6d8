//! `ocm hub controllers --only …`: the hub's components as processes of their own against one
//! API server, as the operator deploys them (each electing its own leader).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_e2e::process::{Process, run_ocm, start_apiserver};
use ocm_e2e::{bind_namespace, wait_for};
use serde_json::json;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_components_run_as_processes_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let kubeconfig_arg = kubeconfig.to_str().unwrap();
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    ocm::embedded::install_crds(&admin, &ocm_api::crds::hub())
        .await
        .unwrap();

    // Bad input: a component that does not exist.
    let (code, _, stderr) = run_ocm(
        OCM,
        home,
        &[
            "hub",
            "controllers",
            "--kubeconfig",
            kubeconfig_arg,
            "--only",
            "registration,scheduler",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains(
            "unknown component \"scheduler\": use registration, placement, work, addon-manager"
        ),
        "{stderr}"
    );

    // Registration alone: an accepted cluster gets its namespace.
    let registration = Process::spawn(
        OCM,
        home,
        &[
            "hub",
            "controllers",
            "--kubeconfig",
            kubeconfig_arg,
            "--only",
            "registration",
        ],
    );
    registration.wait_line("ocm hub controllers running: registration");
    Api::<ManagedCluster>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": true}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    wait_for(
        &Api::<Namespace>::all(admin.clone()),
        "c1",
        "the accepted cluster's namespace",
        |_| true,
    )
    .await
    .unwrap();

    // Placement in a process of its own schedules onto that cluster.
    let placement = Process::spawn(
        OCM,
        home,
        &[
            "hub",
            "controllers",
            "--kubeconfig",
            kubeconfig_arg,
            "--only",
            "placement",
        ],
    );
    placement.wait_line("ocm hub controllers running: placement");
    bind_namespace(&admin, "apps", "global").await.unwrap();
    Api::<Placement>::namespaced(admin.clone(), "apps")
        .patch(
            "p",
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
                "metadata": {"name": "p"},
                // No agent runs for c1, so it is unreachable: tolerated here.
                "spec": {"clusterSets": ["global"], "tolerations": [
                    {"key": "cluster.open-cluster-management.io/unreachable",
                     "operator": "Exists"}]}})),
        )
        .await
        .unwrap();
    wait_for(
        &Api::<PlacementDecision>::namespaced(admin.clone(), "apps"),
        "p-decision-1",
        "c1 decided",
        |d| {
            d.status
                .as_ref()
                .is_some_and(|s| s.decisions.iter().any(|c| c.cluster_name == "c1"))
        },
    )
    .await
    .unwrap();
    placement.stop();
    registration.stop();
    apiserver.stop();
}

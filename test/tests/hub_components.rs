//! `ocm hub controllers --only …`: the hub's components as processes of their own against one
//! API server, as the operator deploys them (each electing its own leader).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ocm_e2e::process::{run_ocm, start_apiserver, start_hub_component};

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
    let registration = start_hub_component(OCM, home, &kubeconfig, "registration");
    ocm_e2e::accepted_cluster_without_agent(&admin, "c1")
        .await
        .unwrap();

    // Placement in a process of its own schedules onto that cluster.
    let placement = start_hub_component(OCM, home, &kubeconfig, "placement");
    ocm_e2e::wait_placed_on(&admin, "apps", "c1").await.unwrap();
    placement.stop();
    registration.stop();
    apiserver.stop();
}

//! The permissions the operator gives each hub component are enough: the components run as
//! their own service accounts, with exactly the rules `ocm_operator` renders, against an API
//! server that enforces RBAC (escalation checks included: the registration controller writes
//! roles for every accepted cluster; with the `ClusterProfile` gate, ClusterProfiles).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::process::{Process, start_apiserver, start_hub_component, start_hub_component_with};
use ocm_e2e::{service_account_kubeconfig, wait_for};
use ocm_operator::cluster_manager::render::{HUB_NAMESPACE, RenderInput, render};
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// Server-side applies one rendered object as the admin.
async fn apply(admin: &kube::Client, object: &Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        &format!("{}s", kind.to_lowercase()),
    );
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(admin.clone(), ns, &resource),
        None => Api::all_with(admin.clone(), &resource),
    };
    api.patch(
        object["metadata"]["name"].as_str().unwrap(),
        &PatchParams::apply("operator-rbac-test").force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|e| panic!("applying {kind}: {e}"));
}

/// A plain `ocm apiserver` under `home` with the hub CRDs and what the operator renders for a
/// ClusterManager with `metadata`, but for the workloads (the components run as processes
/// instead): (the apiserver, its admin kubeconfig, an admin client).
async fn hub_with_rendered_rbac(
    home: &std::path::Path,
    metadata: Value,
) -> (Process, std::path::PathBuf, kube::Client) {
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    let cluster_manager = serde_json::from_value(json!({
        "apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
        "metadata": metadata,
        "spec": {"registrationConfiguration": {"featureGates": [
            {"feature": "ClusterProfile", "mode": "Enable"}]}}}))
    .unwrap();
    let crds: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        ocm_operator::cluster_manager::render::crds(&cluster_manager)
            .into_iter()
            .map(|crd| serde_json::from_value(crd).unwrap())
            .collect();
    ocm::embedded::install_crds(&admin, &crds).await.unwrap();
    let objects = render(&RenderInput {
        cluster_manager: &cluster_manager,
        image: "ocm:test",
        control_plane_nodes: 1,
    });
    for object in objects
        .iter()
        .filter(|o| o["kind"] != "Deployment" && o["kind"] != "Service")
    {
        apply(&admin, object).await;
    }
    (apiserver, kubeconfig, admin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_components_work_with_the_permissions_the_operator_gives_them() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig, admin) =
        hub_with_rendered_rbac(home, json!({"name": "cluster-manager"})).await;

    // Registration as registration-controller-sa: accepting a cluster makes its namespace
    // and writes its roles and bindings (which RBAC allows only to a holder of their rules).
    let registration_kubeconfig = service_account_kubeconfig(
        &admin,
        &kubeconfig,
        HUB_NAMESPACE,
        "registration-controller-sa",
    )
    .await
    .unwrap();
    let registration = start_hub_component_with(
        OCM,
        home,
        &registration_kubeconfig,
        "registration",
        &["--feature-gates=ClusterProfile=true"],
    );
    ocm_e2e::accepted_cluster_without_agent(&admin, "c1")
        .await
        .unwrap();
    wait_for(
        &Api::<ClusterRole>::all(admin.clone()),
        "open-cluster-management:managedcluster:c1",
        "c1's cluster role",
        |_| true,
    )
    .await
    .unwrap();
    for binding in [
        "open-cluster-management:managedcluster:c1:registration",
        "open-cluster-management:managedcluster:c1:work",
    ] {
        wait_for(
            &Api::<RoleBinding>::namespaced(admin.clone(), "c1"),
            binding,
            "c1's role binding",
            |_| true,
        )
        .await
        .unwrap();
    }
    wait_for(
        &Api::<ManagedCluster>::all(admin.clone()),
        "c1",
        "c1 accepted",
        |c| {
            c.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "HubAcceptedManagedCluster" && c.status == "True")
            })
        },
    )
    .await
    .unwrap();

    // Placement as placement-controller-sa schedules onto it.
    let placement_kubeconfig = service_account_kubeconfig(
        &admin,
        &kubeconfig,
        HUB_NAMESPACE,
        "placement-controller-sa",
    )
    .await
    .unwrap();
    let placement = start_hub_component(OCM, home, &placement_kubeconfig, "placement");
    ocm_e2e::wait_placed_on(&admin, "apps", "c1").await.unwrap();
    // `apps` is bound to `global`: registration made c1's ClusterProfile there and wrote its
    // status, then its labels.
    wait_for(
        &Api::<ocm_api::multicluster::v1alpha1::ClusterProfile>::namespaced(admin.clone(), "apps"),
        "c1",
        "c1's profile with status and labels",
        |p| {
            p.status.is_some()
                && p.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("multicluster.x-k8s.io/clusterset"))
        },
    )
    .await
    .unwrap();
    placement.stop();
    registration.stop();
    apiserver.stop();
}

/// The dashboard the ClusterManager's annotation asks for, run as its own service account
/// with exactly the rules the operator renders for it: every page shows the fleet (no kind it
/// may not watch), it offers the join request's buttons, and its Accept accepts the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_works_with_the_permissions_the_operator_gives_it() {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    use kube::api::ListParams;
    use ocm_e2e::process::{http_post_form, init_then_start_join, wait_dashboard_page};

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig, admin) = hub_with_rendered_rbac(
        home,
        json!({"name": "cluster-manager", "annotations": {
            "operator.open-cluster-management.io/dashboard": "enabled"}}),
    )
    .await;
    // A cluster asks to join.
    let join = init_then_start_join(OCM, home, &kubeconfig, "c1");
    ocm_e2e::wait_for_bootstrap_csr(&admin, "c1").await.unwrap();

    let dashboard_kubeconfig =
        service_account_kubeconfig(&admin, &kubeconfig, HUB_NAMESPACE, "dashboard-sa")
            .await
            .unwrap();
    let dashboard = Process::spawn(
        OCM,
        home,
        &[
            "dashboard",
            "--kubeconfig",
            dashboard_kubeconfig.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
    );
    let line = dashboard.wait_line("ocm dashboard: http://");
    let url = line.split_whitespace().last().unwrap().to_owned();
    for (path, shown) in [
        ("/", "c1"),
        ("/clusters/c1", "c1"),
        ("/placements", "Placements"),
        ("/replicasets", "Rollouts"),
        ("/addons", "Addons"),
    ] {
        let body = wait_dashboard_page(&url, path, &[shown]).await;
        assert!(!body.contains("Cannot watch"), "{path}: {body}");
    }
    // The hub says (SelfSubjectAccessReviews) that it may accept and deny: the buttons show.
    let page = wait_dashboard_page(&url, "/join-requests", &["data-accept", "data-deny"]).await;
    let token = page
        .split("<meta name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let (status, head) = tokio::task::spawn_blocking({
        let url = url.clone();
        move || http_post_form(&url, "/join-requests/c1/accept", &format!("token={token}"))
    })
    .await
    .unwrap();
    assert!(status.contains(" 303 "), "{status}\n{head}");
    assert!(head.contains("done="), "{head}");
    let cluster = Api::<ManagedCluster>::all(admin.clone())
        .get("c1")
        .await
        .unwrap();
    assert!(cluster.spec.hub_accepts_client);
    let csrs = Api::<CertificateSigningRequest>::all(admin.clone())
        .list(&ListParams::default().labels("open-cluster-management.io/cluster-name=c1"))
        .await
        .unwrap();
    assert!(!csrs.items.iter().all(ocm::accept::is_pending));
    dashboard.stop();
    join.stop();
    apiserver.stop();
}

/// `ocm operator hub`: a ClusterManager gets its hub components (Applied, related resources),
/// and deleting it removes them before it goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_manager_installs_and_uninstalls_the_hub_components() {
    use k8s_openapi::api::apps::v1::Deployment;
    use ocm_api::operator::v1::ClusterManager;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    let operator = Process::spawn(
        OCM,
        home,
        &[
            "operator",
            "hub",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--image",
            "example.com/ocm:1",
        ],
    );
    operator.wait_line("ocm operator hub running");
    let managers: Api<ClusterManager> = Api::all(admin.clone());
    managers
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
                "metadata": {"name": "cluster-manager"}, "spec": {}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let applied = wait_for(&managers, "cluster-manager", "Applied", |cm| {
        cm.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "Applied" && c.status == "True" && c.reason == "ClusterManagerApplied"
            })
        })
    })
    .await
    .unwrap();
    assert!(
        applied
            .metadata
            .finalizers
            .unwrap()
            .contains(&"operator.open-cluster-management.io/cluster-manager-cleanup".to_owned())
    );
    let status = applied.status.unwrap();
    assert_eq!(status.observed_generation, applied.metadata.generation);
    assert!(status.related_resources.iter().any(
        |r| r.resource == "deployments" && r.name == "cluster-manager-registration-controller"
    ));
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), HUB_NAMESPACE);
    let registration = deployments
        .get("cluster-manager-registration-controller")
        .await
        .unwrap();
    let container = &registration.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("example.com/ocm:1"));
    assert!(
        deployments
            .get_opt("cluster-manager-registration-webhook")
            .await
            .unwrap()
            .is_some()
    );

    // Deleted: its objects go, then it does.
    managers
        .delete("cluster-manager", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    ocm_e2e::wait_gone(&managers, "cluster-manager")
        .await
        .unwrap();
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    assert!(
        roles
            .get_opt("open-cluster-management:cluster-manager-registration:controller")
            .await
            .unwrap()
            .is_none()
    );
    operator.stop();
    apiserver.stop();
}

/// `ocm operator manifests --hub` is what real kubectl accepts (server-side dry run against the
/// API server, after creating the operator's namespace for real).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_operator_manifests_pass_a_server_side_dry_run() {
    manifests_pass_a_server_side_dry_run(
        "--hub",
        &[
            "customresourcedefinition.apiextensions.k8s.io/clustermanagers.operator.open-cluster-management.io",
            "serviceaccount/cluster-manager",
            "clusterrole.rbac.authorization.k8s.io/cluster-manager",
            "clusterrolebinding.rbac.authorization.k8s.io/cluster-manager",
            "deployment.apps/cluster-manager",
        ],
    );
}

/// The same for `ocm operator manifests --klusterlet`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_klusterlet_operator_manifests_pass_a_server_side_dry_run() {
    manifests_pass_a_server_side_dry_run(
        "--klusterlet",
        &[
            "customresourcedefinition.apiextensions.k8s.io/klusterlets.operator.open-cluster-management.io",
            "serviceaccount/klusterlet",
            "clusterrole.rbac.authorization.k8s.io/klusterlet",
            "clusterrolebinding.rbac.authorization.k8s.io/klusterlet",
            "deployment.apps/klusterlet",
        ],
    );
}

/// Prints `ocm operator manifests <which>` and has real kubectl dry-run them on the server;
/// each of `expected` must be in kubectl's answer.
fn manifests_pass_a_server_side_dry_run(which: &str, expected: &[&str]) {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let (code, manifests, stderr) = ocm_e2e::process::run_ocm(
        OCM,
        home,
        &[
            "operator",
            "manifests",
            which,
            "--image",
            "example.com/ocm:1",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let file = home.join("operator.yaml");
    std::fs::write(&file, &manifests).unwrap();
    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .env("HOME", home)
            .output()
            .expect("kubectl is installed (.ci/run installs it)");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, _, err) = kubectl(&["create", "namespace", "open-cluster-management"]);
    assert!(ok, "{err}");
    let (ok, out, err) = kubectl(&["apply", "--dry-run=server", "-f", file.to_str().unwrap()]);
    assert!(ok, "kubectl refused the manifests: {err}\n{out}");
    for object in expected {
        assert!(
            out.lines()
                .any(|l| l.starts_with(object) && l.ends_with("(server dry run)")),
            "{object} not in {out}"
        );
    }
    apiserver.stop();
}

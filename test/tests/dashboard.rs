//! `ocm dashboard` in a real browser: headless Chromium (driven over its debugging pipe, see
//! `ocm_e2e::browser`) opens the pages served for an embedded hub with simulated clusters.
//! Screenshots go to a temporary folder, or to docs/images/ with `OCM_UPDATE_SCREENSHOTS=1`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_dashboard::Dashboard;
use ocm_e2e::browser::{Browser, Page};
use ocm_e2e::*;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

/// How long a page may take to show what the hub holds.
const SHOW: Duration = Duration::from_secs(20);

/// Where screenshots go: docs/images/ when `OCM_UPDATE_SCREENSHOTS=1`, else `scratch`.
fn screenshot_dir(scratch: &Path) -> PathBuf {
    if std::env::var("OCM_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/images")
    } else {
        scratch.join("screenshots")
    }
}

async fn start_dashboard(kubeconfig: &Path, shutdown: &Shutdown) -> Dashboard {
    let client = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap();
    Dashboard::start(client, &[([127, 0, 0, 1], 0).into()], shutdown.clone())
        .await
        .unwrap()
}

/// A JavaScript test of the text of the cluster row `name`.
fn row_contains(name: &str, text: &str) -> String {
    format!(
        "(function() {{ var r = document.querySelector('tr[data-cluster=\"{name}\"]'); \
         return !!r && r.innerText.includes('{text}'); }})()"
    )
}

fn body_contains(text: &str) -> String {
    format!("document.body.innerText.includes({})", json!(text))
}

/// Writes a screenshot of `page` as `name` under `dir`.
async fn save(page: &Page<'_>, dir: &Path, name: &str) {
    page.screenshot(&dir.join(name)).await.unwrap();
}

async fn show(page: &Page<'_>, url: &str, ready: &str) {
    page.goto(url).await.unwrap();
    page.wait_until(ready, SHOW).await.unwrap();
}

/// A cluster that asked to join and waits for the hub admin.
async fn pending_cluster(
    hub: &ocm::embedded::EmbeddedHub,
    bootstrap: &str,
    name: &str,
) -> RunningAgent {
    let spoke = simulated_spoke(hub, name).await.unwrap();
    let agent = join(&spoke, bootstrap, fast_agent_options(name))
        .await
        .unwrap();
    wait_for_bootstrap_csr(&hub.admin_client(), name)
        .await
        .unwrap();
    agent
}

/// An addon enabled on `clusters`, reported Available on the first (its status written as its
/// manager would).
async fn demo_addon(admin: &kube::Client, clusters: &[&str]) {
    let cma: ClusterManagementAddOn = serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": "observability"},
        "spec": {"addOnMeta": {"displayName": "Observability"}}
    }))
    .unwrap();
    Api::<ClusterManagementAddOn>::all(admin.clone())
        .create(&PostParams::default(), &cma)
        .await
        .unwrap();
    for (i, cluster) in clusters.iter().enumerate() {
        let api = Api::<ManagedClusterAddOn>::namespaced(admin.clone(), cluster);
        let mca: ManagedClusterAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "observability", "namespace": cluster},
            "spec": {}
        }))
        .unwrap();
        api.create(&PostParams::default(), &mca).await.unwrap();
        let status = if i == 0 { "True" } else { "Unknown" };
        api.patch_status(
            "observability",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{
                "type": "Available", "status": status, "reason": "Test",
                "message": "set by the test", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})),
        )
        .await
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_render_changes_arrive_live_and_accept_joins_a_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let shots = screenshot_dir(dir.path());
    let hub = start_fast_hub(dir.path()).await.unwrap();
    let admin = hub.admin_client();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke1, agent1) = join_and_accept(&hub, &bootstrap, "cluster1").await;
    // cluster1 heartbeats every second, so that it goes Unknown quickly when its agent stops
    // (late in the test: by then the change of cadence, which can make it Unknown for a
    // moment, is long over).
    set_lease_duration(&hub, "cluster1", 1).await.unwrap();
    let (spoke2, _agent2) = join_and_accept(&hub, &bootstrap, "cluster2").await;
    let work1 = RunningWorkAgent::start(&spoke1, "cluster1");
    let work2 = RunningWorkAgent::start(&spoke2, "cluster2");
    let _agent3 = pending_cluster(&hub, &bootstrap, "cluster3").await;
    ocm::sample_app::place(&admin).await.unwrap();
    tokio::time::timeout(
        WAIT,
        ocm::sample_app::wait_running(&admin, &["cluster1".into(), "cluster2".into()]),
    )
    .await
    .unwrap()
    .unwrap();
    demo_addon(&admin, &["cluster1", "cluster2"]).await;

    let shutdown = Shutdown::new();
    let dashboard = start_dashboard(&hub.admin_kubeconfig, &shutdown).await;
    let url = dashboard.url.trim_end_matches('/').to_owned();
    let browser = Browser::launch().await.unwrap();
    let page = browser.new_page().await.unwrap();

    // Overview: counts and one row per cluster.
    show(
        &page,
        &format!("{url}/"),
        &format!(
            "{} && {} && {}",
            row_contains("cluster1", "Available"),
            row_contains("cluster2", "Available"),
            row_contains("cluster3", "Pending acceptance")
        ),
    )
    .await;
    let text = page.text().await.unwrap();
    assert!(
        text.contains("3\nclusters") || text.contains("3 clusters"),
        "{text}"
    );
    save(&page, &shots, "dashboard-overview.png").await;

    // Cluster page: its work with the Deployment's feedback, its addon, its lease.
    show(
        &page,
        &format!("{url}/clusters/cluster1"),
        &format!(
            "{} && {} && {}",
            body_contains("ManifestWorks (1)"),
            body_contains("ReadyReplicas=2"),
            body_contains("observability")
        ),
    )
    .await;
    assert!(!page.text().await.unwrap().contains("Lease renewed\nnever"));
    save(&page, &shots, "dashboard-cluster.png").await;

    // Placements and one placement's reasoning.
    let placement = format!("{}/{}", ocm::sample_app::NAMESPACE, ocm::sample_app::NAME);
    show(
        &page,
        &format!("{url}/placements"),
        &format!("document.querySelector('a[href=\"/placements/{placement}\"]') !== null"),
    )
    .await;
    show(
        &page,
        &format!("{url}/placements/{placement}"),
        &format!(
            "{} && {}",
            body_contains("Why each cluster"),
            body_contains("Selected")
        ),
    )
    .await;
    save(&page, &shots, "dashboard-placement.png").await;

    // Rollouts: the replica set's progress per decision group.
    show(
        &page,
        &format!("{url}/replicasets"),
        &format!(
            "{} && {}",
            body_contains(&placement),
            "Array.from(document.querySelectorAll('progress')).some(p => p.value >= 2)"
        ),
    )
    .await;
    save(&page, &shots, "dashboard-rollouts.png").await;

    // Addons: the matrix says each cluster's health in words.
    show(
        &page,
        &format!("{url}/addons"),
        &format!(
            "{} && {}",
            body_contains("/2 available"),
            "document.querySelectorAll('#addon-matrix tbody tr').length === 3"
        ),
    )
    .await;
    save(&page, &shots, "dashboard-addons.png").await;

    // Join requests: Accept on the pending cluster joins it.
    show(
        &page,
        &format!("{url}/join-requests"),
        "document.querySelector('button[data-accept=\"cluster3\"]') !== null",
    )
    .await;
    assert!(page.text().await.unwrap().contains("ready to accept"));
    save(&page, &shots, "dashboard-join-requests.png").await;
    page.navigating("document.querySelector('button[data-accept=\"cluster3\"]').click()")
        .await
        .unwrap();
    let text = page.text().await.unwrap();
    assert!(text.contains("Cluster cluster3 accepted"), "{text}");
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    wait_for(
        &clusters,
        "cluster3",
        "Joined and Available",
        joined_and_available,
    )
    .await
    .unwrap();

    // Live: cluster1 going Unknown shows on the open overview within 2 s, without a reload.
    show(
        &page,
        &format!("{url}/"),
        "document.getElementById('live').dataset.connected === '1'",
    )
    .await;
    page.wait_until(&row_contains("cluster1", "Available"), SHOW)
        .await
        .unwrap();
    assert!(
        !page
            .eval(&row_contains("cluster1", "Unknown"))
            .await
            .unwrap()
            .as_bool()
            .unwrap()
    );
    page.eval("window.__sameDocument = true").await.unwrap();
    let stopped = jiff::Timestamp::now().as_second();
    agent1.stop().await.unwrap();
    wait_for(
        &clusters,
        "cluster1",
        "Unknown since its agent stopped",
        |c| {
            c.status.iter().flat_map(|s| s.conditions.iter()).any(|c| {
                c.type_ == "ManagedClusterConditionAvailable"
                    && c.status == "Unknown"
                    && c.last_transition_time.0.as_second() >= stopped
            })
        },
    )
    .await
    .unwrap();
    let took = page
        .wait_until(
            &format!(
                "window.__sameDocument === true && {}",
                row_contains("cluster1", "Unknown")
            ),
            Duration::from_secs(2),
        )
        .await
        .unwrap();
    println!("cluster1 Unknown on the page {took:?} after the hub said so");

    browser.close().await;
    shutdown.cancel();
    work1.stop().await;
    work2.stop().await;
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_only_user_sees_no_accept_button_and_the_hub_refuses_a_forged_accept() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_fast_hub(dir.path()).await.unwrap();
    let admin = hub.admin_client();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let _agent = pending_cluster(&hub, &bootstrap, "c1").await;

    // A user who may read everything the dashboard shows, and change nothing.
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "fleet-viewer"},
        "rules": [{
            "apiGroups": ["cluster.open-cluster-management.io", "work.open-cluster-management.io",
                          "addon.open-cluster-management.io", "certificates.k8s.io",
                          "coordination.k8s.io"],
            "resources": ["*"],
            "verbs": ["get", "list", "watch"]
        }]
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "viewer", "namespace": "default"}}))
            .unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "fleet-viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "fleet-viewer"},
        "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": "default"}]
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let viewer = service_account_kubeconfig(&admin, &hub.admin_kubeconfig, "default", "viewer")
        .await
        .unwrap();

    let shutdown = Shutdown::new();
    let dashboard = start_dashboard(&viewer, &shutdown).await;
    let url = dashboard.url.trim_end_matches('/').to_owned();
    let browser = Browser::launch().await.unwrap();
    let page = browser.new_page().await.unwrap();

    show(
        &page,
        &format!("{url}/join-requests"),
        &format!(
            "{} && {}",
            body_contains("ready to accept"),
            "document.getElementById('view-only') !== null"
        ),
    )
    .await;
    let buttons = page
        .eval("document.querySelectorAll('button[data-accept], button[data-deny]').length")
        .await
        .unwrap();
    assert_eq!(buttons, json!(0));

    // A POST without the page's token is refused by the dashboard itself...
    let refused = page
        .eval(
            "fetch('/join-requests/c1/accept', {method: 'POST', body: 'token=guess', \
             headers: {'Content-Type': 'application/x-www-form-urlencoded'}}).then(r => r.status)",
        )
        .await
        .unwrap();
    assert_eq!(refused, json!(403));
    // ...and one with it goes to the hub, which refuses the viewer; the page says so.
    let answer = page
        .eval(
            "fetch('/join-requests/c1/accept', {method: 'POST', \
             headers: {'Content-Type': 'application/x-www-form-urlencoded'}, \
             body: 'token=' + document.querySelector('meta[name=\"csrf-token\"]').content}) \
             .then(r => r.text())",
        )
        .await
        .unwrap();
    let answer = answer.as_str().unwrap();
    assert!(answer.contains("id=\"action-error\""), "{answer}");
    assert!(answer.contains("403 Forbidden"), "{answer}");

    // Nothing changed on the hub.
    let cluster = Api::<ManagedCluster>::all(admin.clone())
        .get("c1")
        .await
        .unwrap();
    assert!(!cluster.spec.hub_accepts_client);
    let csrs = Api::<CertificateSigningRequest>::all(admin.clone())
        .list(&ListParams::default().labels("open-cluster-management.io/cluster-name=c1"))
        .await
        .unwrap();
    assert!(csrs.items.iter().all(ocm::accept::is_pending));

    // The admin's Deny (the dashboard's other button) refuses the request on the real hub.
    let denied = ocm::accept::deny_cluster(&admin, "c1").await.unwrap();
    assert_eq!(denied.len(), csrs.items.len());
    let csrs = Api::<CertificateSigningRequest>::all(admin.clone())
        .list(&ListParams::default().labels("open-cluster-management.io/cluster-name=c1"))
        .await
        .unwrap();
    assert!(csrs.items.iter().all(|csr| {
        csr.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Denied" && c.status == "True"))
    }));

    browser.close().await;
    shutdown.cancel();
    hub.stop().await;
}

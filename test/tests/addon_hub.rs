//! What the hub and the agents do for every addon, whoever runs it (upstream's registration
//! hub and agent behaviour), on simulated clusters:
//! - an addon no addon manager runs, enabled with a v1alpha1 `installNamespace`, gets its
//!   `Available` from the Lease its agent renews there (renewed, stale, gone);
//! - the cluster carries `feature.open-cluster-management.io/addon-<name>` labels that follow
//!   each addon's availability, and lose it when the addon goes;
//! - a cluster whose availability becomes Unknown makes its addons' `Available` Unknown;
//! - a `Placements` install strategy copies the cluster's `addon.open-cluster-management.io…`
//!   annotations onto the addons it creates, and keeps them in step.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use ocm_addon_framework::manager::run_install_strategies;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::addon_condition as condition;
use ocm_e2e::{accepted_cluster_without_agent, apply_placement, bind_namespace, wait_for};
use serde_json::json;

const FEATURE: &str = "feature.open-cluster-management.io/addon-lease-addon";

/// ManagedClusterAddOns as a v1alpha1 client sees them.
fn v1alpha1_addons(client: &kube::Client, cluster: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "addon.open-cluster-management.io",
            "v1alpha1",
            "ManagedClusterAddOn",
        ),
        "managedclusteraddons",
    );
    Api::namespaced_with(client.clone(), cluster, &resource)
}

/// Writes the addon's Lease on the cluster, renewed `ago` seconds ago.
async fn renew(spoke: &kube::Client, ago: i64) {
    let at = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(ago);
    Api::<Lease>::namespaced(spoke.clone(), "lease-ns")
        .patch(
            "lease-addon",
            &PatchParams::apply("addon-test").force(),
            &Patch::Apply(json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "lease-addon", "namespace": "lease-ns"},
                "spec": {"renewTime": at.to_string()}})),
        )
        .await
        .unwrap();
}

async fn wait_available(
    mcas: &Api<ManagedClusterAddOn>,
    status: &'static str,
    reason: &'static str,
) -> ManagedClusterAddOn {
    wait_for(
        mcas,
        "lease-addon",
        &format!("Available {status} {reason}"),
        |m| condition(m, "Available").is_some_and(|(s, r, _)| s == status && r == reason),
    )
    .await
    .unwrap()
}

async fn wait_label(clusters: &Api<ManagedCluster>, cluster: &str, value: Option<&'static str>) {
    wait_for(clusters, cluster, &format!("{FEATURE} = {value:?}"), |c| {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(FEATURE))
            .map(String::as_str)
            == value
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addon_leases_feature_labels_and_unknown_clusters() {
    let dir = tempfile::tempdir().unwrap();
    // The agent looks at addon Leases every second (upstream: every minute).
    let (hub, names, agents) = ocm_e2e::fleet_with(dir.path(), 1, |name| {
        ocm_registration::agent::AgentOptions {
            addon_lease_check_period: std::time::Duration::from_secs(1),
            ..ocm_e2e::fast_agent_options(name)
        }
    })
    .await
    .unwrap();
    let client = hub.admin_client();
    let cluster = names[0].as_str();
    let spoke = ocm_e2e::simulated_spoke(&hub, cluster).await.unwrap();
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);

    // An addon nobody manages, its install namespace given the v1alpha1 way.
    v1alpha1_addons(&client, cluster)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "ManagedClusterAddOn",
                "metadata": {"name": "lease-addon", "namespace": cluster},
                "spec": {"installNamespace": "lease-ns"}}))
            .unwrap(),
        )
        .await
        .unwrap();
    // No Lease yet: unknown, and so is the label.
    wait_available(&mcas, "Unknown", "ManagedClusterAddOnLeaseNotFound").await;
    wait_label(&clusters, cluster, Some("unreachable")).await;
    Api::<Namespace>::all(spoke.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "lease-ns"}})).unwrap(),
        )
        .await
        .unwrap();
    renew(&spoke, 0).await;
    wait_available(&mcas, "True", "ManagedClusterAddOnLeaseUpdated").await;
    wait_label(&clusters, cluster, Some("available")).await;
    // A Lease not renewed for ten minutes: unhealthy.
    renew(&spoke, 600).await;
    wait_available(&mcas, "False", "ManagedClusterAddOnLeaseUpdateStopped").await;
    wait_label(&clusters, cluster, Some("unhealthy")).await;
    // The Lease gone: unreachable.
    Api::<Lease>::namespaced(spoke.clone(), "lease-ns")
        .delete("lease-addon", &DeleteParams::default())
        .await
        .unwrap();
    wait_available(&mcas, "Unknown", "ManagedClusterAddOnLeaseNotFound").await;
    wait_label(&clusters, cluster, Some("unreachable")).await;
    renew(&spoke, 0).await;
    wait_available(&mcas, "True", "ManagedClusterAddOnLeaseUpdated").await;

    // The agent stops; with a short lease the hub soon calls the cluster's availability
    // Unknown (upstream's test writes that status by hand): so are its addons'.
    agents.cancel();
    ocm_e2e::set_lease_duration(&hub, cluster, 1).await.unwrap();
    let mca = wait_available(&mcas, "Unknown", "ManagedClusterLeaseUpdateStopped").await;
    assert_eq!(
        condition(&mca, "Available").unwrap().2,
        "Registration agent stopped updating its lease."
    );
    wait_label(&clusters, cluster, Some("unreachable")).await;

    // The addon goes: so does its label.
    mcas.delete("lease-addon", &DeleteParams::default())
        .await
        .unwrap();
    wait_label(&clusters, cluster, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placements_strategy_copies_the_clusters_addon_annotations() {
    let dir = tempfile::tempdir().unwrap();
    let hub = ocm_e2e::start_fast_hub(dir.path()).await.unwrap();
    let client = hub.admin_client();
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    for name in ["plain", "annotated"] {
        accepted_cluster_without_agent(&client, name).await.unwrap();
    }
    let annotate = |pairs: serde_json::Value| {
        let clusters = clusters.clone();
        async move {
            clusters
                .patch(
                    "annotated",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": pairs}})),
                )
                .await
                .unwrap();
        }
    };
    annotate(json!({
        "addon.open-cluster-management.io/hosting-cluster-name": "hosting-cluster",
        "addon.open-cluster-management.io/test-annotation": "test-value",
        "foo.example.com/bar": "value1"}))
    .await;
    clusters
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"foo.example.com/bar": "v"}}})),
        )
        .await
        .unwrap();
    bind_namespace(&client, "addons", "global").await.unwrap();
    apply_placement(
        &client,
        "addons",
        "everywhere",
        json!({"clusterSets": ["global"], "tolerations": [
            {"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"},
            {"key": "cluster.open-cluster-management.io/unavailable", "operator": "Exists"}]}),
    )
    .await
    .unwrap();
    Api::<ClusterManagementAddOn>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn", "metadata": {"name": "annotated-addon"},
                "spec": {"installStrategy": {"type": "Placements", "placements": [
                    {"namespace": "addons", "name": "everywhere",
                     "rolloutStrategy": {"type": "All"}}]}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let stop = ocm_runtime::shutdown::Shutdown::new();
    tokio::spawn(run_install_strategies(client.clone(), stop.child()));

    // Created with the cluster's addon annotations only; none at all on the other cluster
    // (as a v1alpha1 client sees it too).
    let annotated: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "annotated");
    let mca = wait_for(&annotated, "annotated-addon", "created", |_| true)
        .await
        .unwrap();
    let expected: std::collections::BTreeMap<String, String> = [
        (
            "addon.open-cluster-management.io/hosting-cluster-name",
            "hosting-cluster",
        ),
        (
            "addon.open-cluster-management.io/test-annotation",
            "test-value",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(mca.metadata.annotations.unwrap_or_default(), expected);
    let plain = v1alpha1_addons(&client, "plain");
    let mca = wait_for(&plain, "annotated-addon", "created", |_| true)
        .await
        .unwrap();
    assert!(
        mca.metadata.annotations.unwrap_or_default().is_empty(),
        "no addon annotations on the cluster: none on the addon"
    );

    // Changed on the cluster: changed on the addon; dropped: dropped.
    annotate(json!({
        "addon.open-cluster-management.io/test-annotation": "updated-value",
        "addon.open-cluster-management.io/hosting-cluster-name": null}))
    .await;
    wait_for(
        &annotated,
        "annotated-addon",
        "the annotations in step",
        |m| {
            let a = m.metadata.annotations.clone().unwrap_or_default();
            a.get("addon.open-cluster-management.io/test-annotation")
                .map(String::as_str)
                == Some("updated-value")
                && !a.contains_key("addon.open-cluster-management.io/hosting-cluster-name")
        },
    )
    .await
    .unwrap();
    stop.cancel();
}

//! `ocm bench placement --placements P --clusters C`: upstream's placement benchmark shape
//! against the embedded hub and its placement controller. C ManagedClusters (with allocatable
//! CPU and memory, each with an AddOnPlacementScore), one namespace bound to the `default`
//! set, then P placements (mode Exact: AddOn score, ResourceAllocatableCPU and Balance,
//! `numberOfClusters: 10`, tolerating the unavailable taint of clusters that never joined)
//! created at once; the time from the first create until every
//! placement reports its selected clusters is printed, with the process RSS.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::Placement;
use ocm_runtime::backoff::WatchBackoffExt;
use serde_json::json;

use ocm_hub::embedded::{EmbeddedHub, EmbeddedHubOptions};

const NS: &str = "bench";

/// Flags of `ocm bench placement`.
#[derive(Debug, Args)]
pub struct BenchPlacementArgs {
    /// How many placements.
    #[arg(long, default_value_t = 100)]
    placements: usize,
    /// How many clusters.
    #[arg(long, default_value_t = 1)]
    clusters: usize,
}

fn value<T: for<'de> k8s_openapi::serde::Deserialize<'de>>(
    v: serde_json::Value,
) -> anyhow::Result<T> {
    serde_json::from_value(v).context("building an object")
}

/// The clusters never join (no agents), so the hub's registration controllers taint them
/// unavailable; the placements tolerate that so that every cluster is a candidate, as in
/// upstream's benchmark where the clusters carry no taints.
fn tolerations() -> serde_json::Value {
    json!([
        {"key": "cluster.open-cluster-management.io/unavailable", "operator": "Exists"},
        {"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"}
    ])
}

/// Runs the benchmark.
pub async fn bench(args: BenchPlacementArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-placement-{}", std::process::id()));
    let hub = EmbeddedHub::start(EmbeddedHubOptions {
        memory: true,
        listen: ([127, 0, 0, 1], 0).into(),
        ..EmbeddedHubOptions::new(&dir)
    })
    .await?;
    let admin = hub.admin_client();
    println!(
        "ocm bench placement: {} placements x {} clusters (AddOn + ResourceAllocatableCPU + Balance, numberOfClusters 10)",
        args.placements, args.clusters
    );
    let preparing = Instant::now();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    namespaces
        .create(
            &PostParams::default(),
            &value(json!({"metadata": {"name": NS}}))?,
        )
        .await?;
    Api::<ocm_api::cluster::v1beta2::ManagedClusterSetBinding>::namespaced(admin.clone(), NS)
        .create(
            &PostParams::default(),
            &value(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"name": "default"}, "spec": {"clusterSet": "default"}}))?,
        )
        .await?;
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    futures::stream::iter(1..=args.clusters)
        .map(|i| {
            let (admin, clusters, namespaces) = (admin.clone(), clusters.clone(), namespaces.clone());
            async move {
                let name = format!("cluster-{i}");
                clusters
                    .create(
                        &PostParams::default(),
                        &value(json!({
                            "apiVersion": "cluster.open-cluster-management.io/v1",
                            "kind": "ManagedCluster", "metadata": {"name": name},
                            "spec": {"hubAcceptsClient": false}}))?,
                    )
                    .await?;
                let cpu = 2 + (i * 7) % 30;
                clusters
                    .patch_status(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {
                            "allocatable": {"cpu": cpu.to_string(), "memory": format!("{}Gi", cpu * 4)},
                            "capacity": {"cpu": cpu.to_string(), "memory": format!("{}Gi", cpu * 4)}}})),
                    )
                    .await?;
                namespaces
                    .create(&PostParams::default(), &value(json!({"metadata": {"name": name}}))?)
                    .await?;
                let scores: Api<AddOnPlacementScore> = Api::namespaced(admin, &name);
                scores
                    .create(
                        &PostParams::default(),
                        &value(json!({
                            "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
                            "kind": "AddOnPlacementScore", "metadata": {"name": "demo"}}))?,
                    )
                    .await?;
                let score = ((i * 37) % 200) as i64 - 100;
                scores
                    .patch_status(
                        "demo",
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {"scores": [{"name": "demo", "value": score}]}})),
                    )
                    .await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    println!(
        "  {} clusters with scores prepared in {:.1} s",
        args.clusters,
        preparing.elapsed().as_secs_f64()
    );

    let want = args.clusters.min(10) as i32;
    let expected: BTreeSet<String> = (1..=args.placements)
        .map(|i| format!("placement-{i}"))
        .collect();
    let api: Api<Placement> = Api::namespaced(admin.clone(), NS);
    let waiter = {
        let api = api.clone();
        let expected = expected.clone();
        tokio::spawn(async move {
            let mut done = BTreeSet::new();
            let mut stream = watcher(api, watcher::Config::default())
                .backoff_on_errors()
                .applied_objects()
                .boxed();
            while let Some(event) = stream.next().await {
                let Ok(p) = event else { continue };
                let name = p.metadata.name.clone().unwrap_or_default();
                if expected.contains(&name)
                    && p.status
                        .as_ref()
                        .is_some_and(|s| s.number_of_selected_clusters == want)
                {
                    done.insert(name);
                    if done.len() == expected.len() {
                        return;
                    }
                }
            }
        })
    };
    let started = Instant::now();
    futures::stream::iter(expected.iter().cloned())
        .map(|name| {
            let api = api.clone();
            async move {
                let placement: Placement = value(json!({
                    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                    "kind": "Placement", "metadata": {"name": name},
                    "spec": {"numberOfClusters": 10, "tolerations": tolerations(),
                        "prioritizerPolicy": {"mode": "Exact",
                        "configurations": [
                            {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "demo"}}, "weight": 1},
                            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 1},
                            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Balance"}, "weight": 1}]}}}))?;
                api.create(&PostParams::default(), &placement).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    let created = started.elapsed();
    tokio::time::timeout(Duration::from_secs(1800), waiter)
        .await
        .context("placements not decided within 30 min")??;
    let decided = started.elapsed();
    let (rss, _) = crate::support::process_usage();
    println!(
        "  {} placements created in {:.1} s; all decided {:.1} s after the first create",
        args.placements,
        created.as_secs_f64(),
        decided.as_secs_f64()
    );
    println!(
        "  RSS of this process (hub, API server, controllers): {:.0} MiB",
        rss as f64 / 1024.0
    );
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

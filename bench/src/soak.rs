//! `ocm bench soak --clusters N --minutes M`: a hub (durable store, every hub controller)
//! under a steady churn for a long while, sampled every minute, to show that nothing grows.
//!
//! The simulated clusters, their registration agents and work agents run in other processes
//! (`ocm bench fleet`), so this process holds the hub, its API server and the churn driver.
//! Each minute the driver changes a quarter of the ManifestWorks (new ConfigMap data), deletes
//! and recreates a tenth of them, moves a twentieth of the clusters between two label values
//! that the placements select on, and changes half of the placements; leases renew every
//! `--lease-seconds`. Each minute's row: this process's RSS and CPU, the fleet processes' RSS,
//! the store's objects and history window, failed driver requests, 5xx answers of the server,
//! and clusters not Available. At the end: the RSS growth after the warm-up against the aim
//! (under 5 %).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions::is_deleted};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::Placement;
use ocm_api::work::v1::ManifestWork;
use serde_json::json;

use crate::support::{BenchHub, process_usage, rss_of, start_bench_hub};
use ocm_hub::embedded::EmbeddedHubOptions;

/// Namespace of the soak's placements.
const NS: &str = "soak";
/// The label the placements select on and the driver flips.
const ZONE: &str = "soak.open-cluster-management.io/zone";
/// Requests the driver keeps in flight.
const PARALLEL: usize = 32;
/// Longest wait for a deleted work to go before it is created again (it then fails as a
/// conflict, counted).
const GONE: Duration = Duration::from_secs(60);

/// Flags of `ocm bench soak`.
#[derive(Debug, Args)]
pub struct BenchSoakArgs {
    /// How many simulated clusters.
    #[arg(long, default_value_t = 200)]
    clusters: usize,
    /// How long to churn, in minutes (the warm-up included).
    #[arg(long, default_value_t = 10)]
    minutes: u64,
    /// Minutes at the start not counted in the growth.
    #[arg(long, default_value_t = 2)]
    warmup_minutes: u64,
    /// Lease duration of every cluster, in seconds.
    #[arg(long, default_value_t = 20)]
    lease_seconds: i32,
    /// ManifestWorks per cluster.
    #[arg(long, default_value_t = 2)]
    works_per_cluster: usize,
    /// How many placements.
    #[arg(long, default_value_t = 20)]
    placements: usize,
    /// Status sync interval of the work agents, in seconds.
    #[arg(long, default_value_t = 10)]
    status_sync_seconds: u64,
    /// Length of a "minute" (one round of churn and one row), in seconds: shorter only to try
    /// the benchmark out.
    #[arg(long, default_value_t = 60, hide = true)]
    round_seconds: u64,
}

/// One minute's figures.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    rss_kib: u64,
    cpu_seconds: f64,
}

/// Runs the benchmark.
pub async fn bench(args: BenchSoakArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.minutes > args.warmup_minutes,
        "--minutes must be more than --warmup-minutes"
    );
    let dir = std::env::temp_dir().join(format!("ocm-bench-soak-{}", std::process::id()));
    let BenchHub { hub, bootstrap, .. } = start_bench_hub(EmbeddedHubOptions {
        extra_controllers: ocm_setup::controllers::addon_controllers(),
        ..EmbeddedHubOptions::new(&dir)
    })
    .await?;
    let admin = hub.admin_client();
    let names: Vec<String> = (1..=args.clusters).map(|i| format!("bench-{i}")).collect();
    println!(
        "ocm bench soak: {} clusters, {} min ({} warm-up), {} s leases, {} works per cluster, {} placements, hub {} (durable)",
        args.clusters,
        args.minutes,
        args.warmup_minutes,
        args.lease_seconds,
        args.works_per_cluster,
        args.placements,
        hub.url
    );
    std::fs::create_dir_all(&dir)?;
    let joining = Instant::now();
    let fleet = crate::fleet::FleetProcess::join_all(
        &admin,
        &dir,
        &bootstrap,
        names.len(),
        Some(Duration::from_secs(args.status_sync_seconds)),
    )
    .await?;
    println!(
        "  {} clusters joined in {:.1} s (clusters and agents in other processes)",
        names.len(),
        joining.elapsed().as_secs_f64()
    );
    let driver = Driver {
        admin: admin.clone(),
        names,
        args: &args,
    };
    driver.set_up().await?;
    println!("  works and placements created; churning");
    println!(
        "  {:>4} {:>9} {:>7} {:>10} {:>9} {:>11} {:>8} {:>6} {:>13}",
        "min",
        "RSS MiB",
        "CPU %",
        "fleet MiB",
        "objects",
        "history MiB",
        "failed",
        "5xx",
        "not Available"
    );
    let fleet_pids: Vec<u32> = fleet
        .iter()
        .filter_map(crate::fleet::FleetProcess::pid)
        .collect();
    let mut failed = 0u64;
    let mut samples = Vec::new();
    let mut last = sample();
    let round = Duration::from_secs(args.round_seconds.max(1));
    let mut tick = tokio::time::interval(round);
    tick.tick().await;
    for minute in 1..=args.minutes {
        failed += driver.churn(minute).await;
        tick.tick().await;
        let now = sample();
        let cpu = (now.cpu_seconds - last.cpu_seconds) / round.as_secs_f64() * 100.0;
        last = now;
        samples.push(now);
        let stats = hub.server.store().stats();
        let errors = server_errors(&admin).await.unwrap_or(0);
        let down = driver.not_available().await.unwrap_or(usize::MAX);
        println!(
            "  {:>4} {:>9.0} {:>7.1} {:>10.0} {:>9} {:>11.1} {:>8} {:>6} {:>13}",
            minute,
            now.rss_kib as f64 / 1024.0,
            cpu,
            fleet_pids.iter().copied().map(rss_of).sum::<u64>() as f64 / 1024.0,
            stats.objects,
            stats.history_bytes as f64 / f64::from(1 << 20),
            failed,
            errors,
            down
        );
    }
    let warm = usize::try_from(args.warmup_minutes)
        .unwrap_or(usize::MAX)
        .clamp(1, samples.len());
    let after_warmup = samples[warm - 1].rss_kib as f64;
    let end = samples.last().map_or(after_warmup, |s| s.rss_kib as f64);
    let growth = (end - after_warmup) / after_warmup.max(1.0) * 100.0;
    println!(
        "  RSS after the warm-up {:.0} MiB, at the end {:.0} MiB: {:+.1} % ({} the aim of under 5 %)",
        after_warmup / 1024.0,
        end / 1024.0,
        growth,
        if growth < 5.0 { "meets" } else { "misses" }
    );
    for process in fleet {
        process.stop().await;
    }
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn sample() -> Sample {
    let (rss_kib, cpu_seconds) = process_usage();
    Sample {
        rss_kib,
        cpu_seconds,
    }
}

/// Answers of 500 and above the hub's server has given so far, from its `/metrics`.
async fn server_errors(admin: &kube::Client) -> anyhow::Result<u64> {
    let metrics = admin
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?;
    Ok(ocm_apiserver::metrics::sum_requests(&metrics, |c| {
        c.label("code").starts_with('5')
    }))
}

/// Makes the churn.
struct Driver<'a> {
    admin: kube::Client,
    names: Vec<String>,
    args: &'a BenchSoakArgs,
}

impl Driver<'_> {
    /// Short leases, a zone label on every cluster, the namespace bound to the global set,
    /// the works and the placements.
    async fn set_up(&self) -> anyhow::Result<()> {
        let clusters: Api<ManagedCluster> = Api::all(self.admin.clone());
        let lease_seconds = self.args.lease_seconds;
        let failed = self
            .each(self.names.clone(), |name, i| {
                let clusters = clusters.clone();
                async move {
                    let zone = if i.is_multiple_of(2) { "a" } else { "b" };
                    let patch = json!({"metadata": {"labels": {ZONE: zone}},
                                       "spec": {"leaseDurationSeconds": lease_seconds}});
                    clusters
                        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                        .await
                        .map(|_| ())
                }
            })
            .await;
        anyhow::ensure!(failed == 0, "{failed} clusters could not be labelled");
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.admin.clone());
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": NS}}))?,
            )
            .await
            .context("creating the soak namespace")?;
        Api::<ocm_api::cluster::v1beta2::ManagedClusterSetBinding>::namespaced(
            self.admin.clone(),
            NS,
        )
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"name": "global", "namespace": NS},
                "spec": {"clusterSet": "global"},
            }))?,
        )
        .await
        .context("binding the soak namespace to the global set")?;
        let works = self.work_names();
        let failed = self
            .each(works, |(cluster, work), _| {
                let api: Api<ManifestWork> = Api::namespaced(self.admin.clone(), &cluster);
                async move {
                    api.create(&PostParams::default(), &work_of(&work, 0)?)
                        .await
                        .map(|_| ())
                }
            })
            .await;
        anyhow::ensure!(failed == 0, "{failed} works could not be created");
        let placements: Api<Placement> = Api::namespaced(self.admin.clone(), NS);
        for i in 0..self.args.placements {
            placements
                .create(&PostParams::default(), &placement_of(i, 0)?)
                .await
                .with_context(|| format!("creating placement {i}"))?;
        }
        Ok(())
    }

    /// Every (cluster, work name).
    fn work_names(&self) -> Vec<(String, String)> {
        self.names
            .iter()
            .flat_map(|c| {
                (0..self.args.works_per_cluster).map(move |w| (c.clone(), format!("soak-{w}")))
            })
            .collect()
    }

    /// One minute's changes; returns how many requests failed.
    async fn churn(&self, minute: u64) -> u64 {
        let m = usize::try_from(minute).unwrap_or(0);
        let works = self.work_names();
        // A quarter of the works get new data, a tenth are deleted and created again.
        let updated: Vec<_> = works
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + m).is_multiple_of(4))
            .map(|(_, w)| w.clone())
            .collect();
        let mut failed = self
            .each(updated, |(cluster, work), _| {
                let api: Api<ManifestWork> = Api::namespaced(self.admin.clone(), &cluster);
                async move {
                    let patch =
                        json!({"spec": {"workload": {"manifests": [config_map(&work, minute)]}}});
                    api.patch(&work, &PatchParams::default(), &Patch::Merge(patch))
                        .await
                        .map(|_| ())
                }
            })
            .await;
        let recreated: Vec<_> = works
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + m).is_multiple_of(10))
            .map(|(_, w)| w.clone())
            .collect();
        failed += self
            .each(recreated, |(cluster, work), _| {
                let api: Api<ManifestWork> = Api::namespaced(self.admin.clone(), &cluster);
                async move {
                    let deleting = api.delete(&work, &DeleteParams::default()).await?;
                    // The agent's finalizer holds the work until its resources are gone.
                    if let Some(uid) = deleting.left().and_then(|w| w.metadata.uid) {
                        let gone = await_condition(api.clone(), &work, is_deleted(&uid));
                        if let Ok(Err(err)) = tokio::time::timeout(GONE, gone).await {
                            tracing::warn!(%err, work, "watching a deleted work");
                        }
                    }
                    api.create(&PostParams::default(), &work_of(&work, minute)?)
                        .await
                        .map(|_| ())
                }
            })
            .await;
        // A twentieth of the clusters change zone.
        let moved: Vec<_> = self
            .names
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + m).is_multiple_of(20))
            .map(|(_, n)| n.clone())
            .collect();
        let clusters: Api<ManagedCluster> = Api::all(self.admin.clone());
        failed += self
            .each(moved, |name, i| {
                let clusters = clusters.clone();
                async move {
                    let zone = if (i + m).is_multiple_of(2) { "a" } else { "b" };
                    let patch = json!({"metadata": {"labels": {ZONE: zone}}});
                    clusters
                        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                        .await
                        .map(|_| ())
                }
            })
            .await;
        // Half of the placements change what they ask for.
        let placements: Api<Placement> = Api::namespaced(self.admin.clone(), NS);
        for i in (0..self.args.placements).filter(|i| (i + m).is_multiple_of(2)) {
            let Ok(placement) = placement_of(i, minute) else {
                failed += 1;
                continue;
            };
            let patch = json!({"spec": placement.spec});
            if placements
                .patch(&name_of(i), &PatchParams::default(), &Patch::Merge(patch))
                .await
                .is_err()
            {
                failed += 1;
            }
        }
        failed
    }

    /// Runs `op` on every item, [`PARALLEL`] at a time; returns how many failed.
    async fn each<T, F, Fut>(&self, items: Vec<T>, op: F) -> u64
    where
        F: Fn(T, usize) -> Fut,
        Fut: std::future::Future<Output = kube::Result<()>>,
    {
        let results: Vec<kube::Result<()>> = futures::stream::iter(items)
            .enumerate()
            .map(|(i, item)| op(item, i))
            .buffer_unordered(PARALLEL)
            .collect()
            .await;
        let failed = results.iter().filter(|r| r.is_err()).count();
        if let Some(Err(err)) = results.iter().find(|r| r.is_err()) {
            tracing::warn!(%err, failed, "soak requests failed");
        }
        u64::try_from(failed).unwrap_or(u64::MAX)
    }

    /// How many clusters are not Joined and Available.
    async fn not_available(&self) -> anyhow::Result<usize> {
        let clusters: Api<ManagedCluster> = Api::all(self.admin.clone());
        let available: BTreeMap<String, bool> = clusters
            .list(&Default::default())
            .await?
            .items
            .iter()
            .filter_map(|c| {
                Some((
                    c.metadata.name.clone()?,
                    ocm_setup::wait::joined_and_available(c),
                ))
            })
            .collect();
        Ok(self
            .names
            .iter()
            .filter(|n| !available.get(*n).copied().unwrap_or(false))
            .count())
    }
}

fn name_of(i: usize) -> String {
    format!("soak-{i}")
}

/// The ConfigMap a soak work carries, with data that changes with `round`.
fn config_map(work: &str, round: u64) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": work, "namespace": "default"},
           "data": {"round": round.to_string()}})
}

fn work_of(name: &str, round: u64) -> kube::Result<ManifestWork> {
    let value = json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": name},
        "spec": {"workload": {"manifests": [config_map(name, round)]}},
    });
    serde_json::from_value(value).map_err(kube::Error::SerdeError)
}

/// Placement `i` as it is in round `round`: some clusters of one zone, the zone and the
/// number turning with the round.
fn placement_of(i: usize, round: u64) -> anyhow::Result<Placement> {
    let r = usize::try_from(round).unwrap_or(0);
    let zone = if (i + r).is_multiple_of(2) { "a" } else { "b" };
    let number = 1 + (i + r) % 5;
    Ok(serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": name_of(i), "namespace": NS},
        "spec": {
            "clusterSets": ["global"],
            "numberOfClusters": number,
            "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {ZONE: zone}}}}],
        },
    }))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_turn_between_zones_and_sizes() {
        let first = placement_of(0, 0).unwrap();
        let next = placement_of(0, 1).unwrap();
        assert_ne!(
            serde_json::to_value(&first.spec).unwrap(),
            serde_json::to_value(&next.spec).unwrap()
        );
        assert_eq!(first.spec.number_of_clusters, Some(1));
        assert_eq!(next.spec.number_of_clusters, Some(2));
    }

    #[test]
    fn works_carry_the_round() {
        let work = work_of("soak-0", 7).unwrap();
        let manifest = serde_json::to_value(&work.spec.workload.manifests[0]).unwrap();
        assert_eq!(manifest["data"]["round"], "7");
        assert_eq!(work.metadata.name.as_deref(), Some("soak-0"));
    }
}

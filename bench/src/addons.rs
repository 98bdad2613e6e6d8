//! `ocm bench addons`: `--addons` addons enabled on `--clusters` simulated clusters.
//!
//! The clusters join first (auto-approved, not measured) and run their work agents. Then, with
//! the hub's RSS noted, `--addons` ClusterManagementAddOns are created at once with a Placements
//! install strategy whose placement selects every cluster (set `global`), and an
//! [`AddonManager`] runs them (each addon: a namespace, a ConfigMap and a Deployment on every
//! cluster, judged by Deployment availability). Printed: the time until every
//! ManagedClusterAddOn exists and until every one is `Available`, and the process RSS before
//! and after (hub, API server, simulated clusters and agents share this process, unless
//! `--fleet-process` puts the clusters and agents in processes of their own), and how many
//! passes the hub's addon install controller ran and how many ManagedClusterAddOns they
//! looked at, during the rollout and during `--settle-seconds` after it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_addon_framework::manager::{AddonManager, InstallStats};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use crate::support::{BenchHub, process_usage, start_bench_hub};
use ocm_hub::embedded::EmbeddedHubOptions;

/// Flags of `ocm bench addons`.
#[derive(Debug, Args)]
pub struct BenchAddonsArgs {
    /// Simulated clusters.
    #[arg(long, default_value_t = 100)]
    clusters: usize,
    /// Addons enabled on every cluster.
    #[arg(long, default_value_t = 3)]
    addons: usize,
    /// Work agents' status sync interval, in seconds (upstream's default: 10).
    #[arg(long, default_value_t = 10)]
    status_sync_seconds: u64,
    /// Run the simulated clusters and their agents in other processes, so that this one's RSS
    /// is the hub's alone.
    #[arg(long)]
    fleet_process: bool,
    /// Run the addons' manager in a process of its own (as an addon's manager runs in its own
    /// Deployment), so that this one's RSS leaves it out; its RSS is printed apart.
    #[arg(long)]
    manager_process: bool,
    /// After every addon is Available, measure the hub's RSS again this many seconds later,
    /// once the rollout's last writes and their watch traffic are over (0: do not).
    #[arg(long, default_value_t = 0)]
    settle_seconds: u64,
}

/// The hub's `/metrics` document as it stands.
async fn hub_metrics(admin: &kube::Client) -> anyhow::Result<String> {
    admin
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await
        .context("reading the hub's /metrics")
}

/// The hub's `LIST` and `WATCH` requests so far, and any request it refused as too many (429),
/// by (verb, what): the resource with the request's scope (a cluster namespace's agent lists
/// in its namespace, a manager across all) and its code when not 200.
async fn list_and_watch_counts(
    admin: &kube::Client,
) -> anyhow::Result<std::collections::BTreeMap<(String, String), u64>> {
    Ok(scoped_request_counts(&hub_metrics(admin).await?))
}

/// Every request the hub served so far, by verb and resource (with its subresource).
async fn verb_counts(
    admin: &kube::Client,
) -> anyhow::Result<std::collections::BTreeMap<String, u64>> {
    Ok(verb_request_counts(&hub_metrics(admin).await?))
}

/// [`verb_counts`] of one `/metrics` document.
fn verb_request_counts(metrics: &str) -> std::collections::BTreeMap<String, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for sample in ocm_apiserver::metrics::request_counts(metrics) {
        let mut what = format!("{} {}", sample.label("verb"), sample.label("resource"));
        if !sample.label("subresource").is_empty() {
            what.push_str(&format!("/{}", sample.label("subresource")));
        }
        *counts.entry(what).or_default() += sample.value;
    }
    counts
}

/// [`list_and_watch_counts`] of one `/metrics` document.
fn scoped_request_counts(metrics: &str) -> std::collections::BTreeMap<(String, String), u64> {
    let mut counts = std::collections::BTreeMap::new();
    for sample in ocm_apiserver::metrics::request_counts(metrics) {
        let verb = sample.label("verb");
        let code = sample.label("code");
        if verb != "LIST" && verb != "WATCH" && code != "429" {
            continue;
        }
        let mut what = format!("{} ({})", sample.label("resource"), sample.label("scope"));
        if code != "200" {
            what.push_str(&format!(" {code}"));
        }
        *counts.entry((verb.to_owned(), what)).or_default() += sample.value;
    }
    counts
}

/// Runs the benchmark.
pub async fn bench(args: BenchAddonsArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-addons-{}", std::process::id()));
    let install_stats = Arc::new(InstallStats::default());
    let BenchHub { hub, bootstrap, .. } = start_bench_hub(EmbeddedHubOptions {
        memory: true,
        extra_controllers: ocm_setup::controllers::addon_controllers_counted(install_stats.clone()),
        ..EmbeddedHubOptions::new(&dir)
    })
    .await?;
    let admin = hub.admin_client();
    let names: Vec<String> = (1..=args.clusters).map(|i| format!("bench-{i}")).collect();
    println!(
        "ocm bench addons: {} addons x {} clusters, status sync {} s, hub {}",
        args.addons, args.clusters, args.status_sync_seconds, hub.url
    );
    let joining = Instant::now();
    let shutdown = Shutdown::new();
    let status_sync = Duration::from_secs(args.status_sync_seconds);
    let mut fleet = Vec::new();
    if args.fleet_process {
        fleet = crate::fleet::FleetProcess::join_all(
            &admin,
            &dir,
            &bootstrap,
            names.len(),
            Some(status_sync),
        )
        .await?;
    } else {
        let spokes = crate::support::join_fleet(&hub, &bootstrap, &names, &shutdown).await?;
        crate::fleet::start_work_agents(&spokes, status_sync, &shutdown);
    }
    println!(
        "  {} clusters joined in {:.1} s (not part of the measurement{})",
        names.len(),
        joining.elapsed().as_secs_f64(),
        if args.fleet_process {
            "; clusters and agents in other processes"
        } else {
            ""
        }
    );
    bind_everything(&admin).await?;
    let requests_before = list_and_watch_counts(&admin).await?;
    let (rss_before, _) = process_usage();
    let parts_before = crate::support::rss_parts();
    let stored_before = hub.server.store().stats();
    let by_resource_before = hub.server.store().object_bytes_by_resource();
    // Printed now, not only at the end: a rollout that does not finish still leaves the
    // starting point of the hub's growth on record.
    println!(
        "  RSS of this process before the rollout: {:.0} MiB",
        rss_before as f64 / 1024.0
    );

    let addon_names = crate::addon::addon_names(args.addons);
    let expected: BTreeSet<(String, String)> = names
        .iter()
        .flat_map(|c| addon_names.iter().map(move |a| (c.clone(), a.clone())))
        .collect();
    let waiter = tokio::spawn(watch_addons(admin.clone(), expected.clone()));
    let started = Instant::now();
    let install_before = InstallCounts::of(&install_stats);
    let cmas: Api<ClusterManagementAddOn> = Api::all(admin.clone());
    for name in &addon_names {
        let cma: ClusterManagementAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": name},
            "spec": {"installStrategy": {"type": "Placements",
                     "placements": [{"namespace": "addons", "name": "all"}]}},
        }))?;
        cmas.create(&PostParams::default(), &cma)
            .await
            .with_context(|| format!("creating ClusterManagementAddOn {name}"))?;
    }
    let manager_process = if args.manager_process {
        std::fs::create_dir_all(&dir)?;
        Some(
            crate::addon_manager::ManagerProcess::start(
                &admin,
                |token| hub.token_kubeconfig(token),
                &dir,
                args.addons,
            )
            .await?,
        )
    } else {
        let mut manager = AddonManager::new(admin.clone());
        for name in &addon_names {
            manager = manager.with_addon(Arc::new(crate::addon::BenchAddon::new(name.clone())));
        }
        tokio::spawn(manager.run(shutdown.child()));
        None
    };
    let (created, available) = waiter.await.context("watching the addons")??;
    let (rss_after, _) = process_usage();
    let parts_after = crate::support::rss_parts();
    let requests_after = list_and_watch_counts(&admin).await?;
    println!(
        "  {} ManagedClusterAddOns: all created after {:.1} s, all Available after {:.1} s",
        expected.len(),
        created.as_secs_f64(),
        available.as_secs_f64()
    );
    let install_rolled = InstallCounts::of(&install_stats);
    println!(
        "  install controller during the rollout: {}",
        install_rolled.since(&install_before)
    );
    if args.settle_seconds > 0 {
        let manager_pid = manager_process
            .as_ref()
            .and_then(crate::addon_manager::ManagerProcess::pid);
        let manager_cpu = || manager_pid.map(crate::support::cpu_of);
        let (_, hub_cpu_before) = process_usage();
        let manager_cpu_before = manager_cpu();
        let verbs_before = verb_counts(&admin).await?;
        // A deliberate wait: the figures asked for are the RSS and the steady work some time
        // after the rollout.
        tokio::time::sleep(std::time::Duration::from_secs(args.settle_seconds)).await;
        println!(
            "  install controller in the {} s after (agents' status writes only): {}",
            args.settle_seconds,
            InstallCounts::of(&install_stats).since(&install_rolled)
        );
        let seconds = args.settle_seconds as f64;
        let (_, hub_cpu_after) = process_usage();
        let share = |used: f64| used / seconds * 100.0;
        let manager_share = match (manager_cpu_before, manager_cpu()) {
            (Some(before), Some(after)) => {
                format!(", addon manager {:.1} %", share(after - before))
            }
            _ => String::new(),
        };
        println!(
            "  CPU in the {} s after, of one core: this process {:.1} %{manager_share}",
            args.settle_seconds,
            share(hub_cpu_after - hub_cpu_before),
        );
        let verbs_after = verb_counts(&admin).await?;
        let served: Vec<String> = verbs_after
            .iter()
            .filter_map(|(verb, after)| {
                let grown = after - verbs_before.get(verb).copied().unwrap_or(0);
                (grown > 0).then(|| format!("{verb} {grown}"))
            })
            .collect();
        println!(
            "  requests the hub served in the {} s after: {}",
            args.settle_seconds,
            if served.is_empty() {
                "none".to_owned()
            } else {
                served.join(", ")
            }
        );
        let (rss_settled, _) = process_usage();
        println!(
            "  RSS of this process {} s after all Available: {:.0} MiB ({:+.0} MiB from before)",
            args.settle_seconds,
            rss_settled as f64 / 1024.0,
            (rss_settled as f64 - rss_before as f64) / 1024.0
        );
    }
    let manager_rss = manager_process
        .as_ref()
        .and_then(crate::addon_manager::ManagerProcess::pid)
        .map(crate::support::rss_of);
    let with_manager = if manager_rss.is_some() {
        ""
    } else {
        " and the addon manager"
    };
    let contents = if args.fleet_process {
        format!("hub, its API server{with_manager}")
    } else {
        format!(
            "hub, API server{with_manager}, {} clusters and their agents",
            names.len()
        )
    };
    println!(
        "  RSS of this process ({contents}): {:.0} MiB before, {:.0} MiB after ({:+.0} MiB)",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / 1024.0
    );
    println!(
        "    anonymous {:.0} → {:.0} MiB, file-backed {:.0} → {:.0} MiB",
        parts_before.0 as f64 / 1024.0,
        parts_after.0 as f64 / 1024.0,
        parts_before.1 as f64 / 1024.0,
        parts_after.1 as f64 / 1024.0,
    );
    let stored = hub.server.store().stats();
    let mib = |bytes: usize| bytes as f64 / f64::from(1 << 20);
    println!(
        "  of which the API server's store: {} objects, {:.0} MiB ({:+.0} MiB); history window {} events, {:.0} MiB ({:+.0} MiB)",
        stored.objects,
        mib(stored.object_bytes),
        mib(stored.object_bytes) - mib(stored_before.object_bytes),
        stored.history_events,
        mib(stored.history_bytes),
        mib(stored.history_bytes) - mib(stored_before.history_bytes),
    );
    for (resource, count, bytes) in hub.server.store().object_bytes_by_resource() {
        let (count_before, bytes_before) = by_resource_before
            .iter()
            .find(|(r, _, _)| *r == resource)
            .map_or((0, 0), |(_, n, b)| (*n, *b));
        if bytes == bytes_before {
            continue;
        }
        println!(
            "    {resource}: {count} objects ({:+}), {:.1} MiB ({:+.1} MiB)",
            count as i64 - count_before as i64,
            mib(bytes),
            mib(bytes) - mib(bytes_before),
        );
    }
    let served: Vec<String> = requests_after
        .iter()
        .filter_map(|(key, after)| {
            let grown = after - requests_before.get(key).copied().unwrap_or(0);
            (grown > 0).then(|| format!("{} {} {grown}", key.0, key.1))
        })
        .collect();
    println!(
        "  LISTs and WATCHes (and refusals) the hub served during the rollout: {}",
        if served.is_empty() {
            "none".to_owned()
        } else {
            served.join(", ")
        }
    );
    if let Some(rss) = manager_rss {
        println!(
            "  RSS of the addon manager process: {:.0} MiB",
            rss as f64 / 1024.0
        );
    }
    if !fleet.is_empty() {
        let fleet_rss: u64 = fleet
            .iter()
            .filter_map(crate::fleet::FleetProcess::pid)
            .map(crate::support::rss_of)
            .sum();
        println!(
            "  RSS of the fleet processes (clusters and agents): {:.0} MiB",
            fleet_rss as f64 / 1024.0
        );
    }
    let _ = started;
    if let Some(process) = manager_process {
        process.stop().await;
    }
    for process in fleet {
        process.stop().await;
    }
    shutdown.cancel();
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The install controller's counts at one moment.
struct InstallCounts {
    passes: u64,
    full: u64,
    examined: u64,
}

impl InstallCounts {
    fn of(stats: &InstallStats) -> InstallCounts {
        InstallCounts {
            passes: stats.passes(),
            full: stats.full_passes(),
            examined: stats.examined(),
        }
    }

    /// What happened since `before`, as printed.
    fn since(&self, before: &InstallCounts) -> String {
        let passes = self.passes - before.passes;
        let examined = self.examined - before.examined;
        format!(
            "{passes} passes ({} full), {examined} ManagedClusterAddOns looked at ({:.0} per pass)",
            self.full - before.full,
            examined as f64 / passes.max(1) as f64
        )
    }
}

/// Namespace `addons` bound to the `global` set, with Placement `all` selecting every cluster.
async fn bind_everything(admin: &kube::Client) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "addons"}}))?,
        )
        .await
        .context("creating namespace addons")?;
    Api::<ocm_api::cluster::v1beta2::ManagedClusterSetBinding>::namespaced(admin.clone(), "addons")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"name": "global", "namespace": "addons"},
                "spec": {"clusterSet": "global"},
            }))?,
        )
        .await
        .context("binding addons to the global set")?;
    Api::<ocm_api::cluster::v1beta1::Placement>::namespaced(admin.clone(), "addons")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                "kind": "Placement",
                "metadata": {"name": "all", "namespace": "addons"},
                "spec": {"clusterSets": ["global"]},
            }))?,
        )
        .await
        .context("creating placement addons/all")?;
    Ok(())
}

/// Watches every ManagedClusterAddOn until all of `expected` exist, then are Available; returns
/// both durations from the call.
async fn watch_addons(
    admin: kube::Client,
    expected: BTreeSet<(String, String)>,
) -> anyhow::Result<(Duration, Duration)> {
    let began = Instant::now();
    let mut seen = BTreeSet::new();
    let mut available = BTreeSet::new();
    let mut created_at = None;
    let mut stream = watcher(
        Api::<ManagedClusterAddOn>::all(admin),
        watcher::Config::default(),
    )
    .backoff_on_errors()
    .applied_objects()
    .boxed();
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = tick.tick() => {
                println!("  {:>5.1} s: {} created, {} available of {}",
                    began.elapsed().as_secs_f64(), seen.len(), available.len(), expected.len());
                continue;
            }
        };
        let Some(event) = event else {
            anyhow::bail!("lost the watch on the hub")
        };
        let Ok(addon) = event else { continue };
        let key = (
            addon.metadata.namespace.clone().unwrap_or_default(),
            addon.metadata.name.clone().unwrap_or_default(),
        );
        if !expected.contains(&key) {
            continue;
        }
        seen.insert(key.clone());
        if seen.len() == expected.len() && created_at.is_none() {
            created_at = Some(began.elapsed());
        }
        let is_available = addon.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        });
        if is_available {
            available.insert(key);
        }
        if available.len() == expected.len() {
            return Ok((created_at.unwrap_or_default(), began.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_told_apart_by_scope_and_refusals_are_counted() {
        let metrics = "\
apiserver_request_total{verb=\"LIST\",dry_run=\"\",group=\"work.open-cluster-management.io\",version=\"v1\",resource=\"manifestworks\",subresource=\"\",scope=\"namespace\",component=\"apiserver\",code=\"200\"} 3
apiserver_request_total{verb=\"LIST\",dry_run=\"\",group=\"work.open-cluster-management.io\",version=\"v1\",resource=\"manifestworks\",subresource=\"\",scope=\"cluster\",component=\"apiserver\",code=\"200\"} 1
apiserver_request_total{verb=\"PATCH\",dry_run=\"\",group=\"work.open-cluster-management.io\",version=\"v1\",resource=\"manifestworks\",subresource=\"status\",scope=\"resource\",component=\"apiserver\",code=\"429\"} 2
apiserver_request_total{verb=\"GET\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"secrets\",subresource=\"\",scope=\"resource\",component=\"apiserver\",code=\"200\"} 9
";
        let counts = scoped_request_counts(metrics);
        let key = |verb: &str, what: &str| (verb.to_owned(), what.to_owned());
        assert_eq!(
            counts,
            std::collections::BTreeMap::from([
                (key("LIST", "manifestworks (namespace)"), 3),
                (key("LIST", "manifestworks (cluster)"), 1),
                (key("PATCH", "manifestworks (resource) 429"), 2),
            ])
        );
    }
}

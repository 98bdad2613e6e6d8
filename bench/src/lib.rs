//! `ocm bench`: the benchmarks that print ocm-rs's speed and memory figures
//! (docs/performance.md) — registration, work, placement, addons, operator, rotation, proxy,
//! soak, dashboard, footprint — and the helper processes they start (`ocm bench fleet`,
//! `ocm bench addon-manager`). The `ocm` binary serves them as `ocm bench …`; they build on
//! the embedded hub (`ocm-hub`) and the setup steps the `ocm` commands use (`ocm-setup`).
//!
//! `ocm bench registration --clusters N` (this file): N simulated clusters, each with its own
//! registration agent talking to an embedded hub over TLS, all in this process. Prints the
//! time until every cluster is Joined and Available, then process RSS and CPU while the fleet
//! heartbeats. Clusters are accepted by the hub's auto-approval (the bootstrap token's user is
//! listed in `auto_approved_users`), so the figures measure registration, not a human.

pub mod addon;
pub mod addon_manager;
pub mod addons;
pub mod dashboard;
pub mod fleet;
pub mod footprint;
pub mod operator;
pub mod placement;
pub mod proxy;
pub mod proxy_load;
pub mod proxy_tunnels;
pub mod restart;
pub mod rotation;
pub mod soak;
pub mod support;
pub mod work;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;

use crate::support::{
    BenchHub, cpu_of, prepare_fleet, process_usage, rss_of, start_agents, start_bench_hub,
};
use ocm_hub::embedded::EmbeddedHubOptions;

/// Flags of `ocm bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Join N simulated clusters and measure the steady heartbeat.
    Registration(RegistrationArgs),
    /// Placements over clusters, in upstream's benchmark shape.
    Placement(crate::placement::BenchPlacementArgs),
    /// ManifestWorks over simulated clusters, and one agent under load.
    Work(crate::work::BenchWorkArgs),
    /// Addons enabled on simulated clusters: time until every one is Available, hub RSS.
    Addons(crate::addons::BenchAddonsArgs),
    /// The operator path, every component a process: ClusterManager → hub ready, Klusterlet →
    /// cluster Available, each process's memory when idle.
    Operator(crate::operator::BenchOperatorArgs),
    /// Certificate rotation with short-lived certificates: rotations, renewal CSRs,
    /// rebootstraps and 401s over a while.
    Rotation(crate::rotation::BenchRotationArgs),
    /// The cluster-proxy addon: requests/s and MB/s through the tunnel against direct access,
    /// and one proxy server process holding many clusters' tunnels (its RSS).
    Proxy(crate::proxy::BenchProxyArgs),
    /// A hub under steady churn for a long while: RSS, CPU and errors every minute.
    Soak(crate::soak::BenchSoakArgs),
    /// The dashboard over N clusters: time until its watch holds them all, page load times
    /// idle and while clusters change.
    Dashboard(crate::dashboard::BenchDashboardArgs),
    /// `ocm hub` and one `ocm join --simulated` agent as processes, one cluster Available:
    /// each process's resident memory once idle.
    Footprint(crate::footprint::BenchFootprintArgs),
    /// The simulated clusters and agents of `registration --fleet-process` (internal).
    #[command(hide = true)]
    Fleet(crate::fleet::FleetArgs),
    /// The addon manager of `addons --manager-process` (internal).
    #[command(hide = true)]
    AddonManager(crate::addon_manager::AddonManagerArgs),
}

/// Flags of `ocm bench registration`.
#[derive(Debug, Args)]
pub struct RegistrationArgs {
    /// How many simulated clusters.
    #[arg(long, default_value_t = 100)]
    clusters: usize,
    /// Lease duration of every cluster, in seconds.
    #[arg(long, default_value_t = 60)]
    lease_seconds: i32,
    /// How long to measure the steady heartbeat, in seconds.
    #[arg(long, default_value_t = 60)]
    steady_seconds: u64,
    /// Keep the hub's objects in SQLite under a temporary dir instead of memory.
    #[arg(long)]
    durable: bool,
    /// Run the simulated clusters and their agents in other processes (one per 4,000
    /// clusters, to stay under open-file limits), so that this one holds only the hub and its
    /// API server (their RSS and CPU are then reported apart).
    #[arg(long)]
    fleet_process: bool,
    /// After the steady heartbeat, stop the hub and start it again on its data directory
    /// (implies `--durable`): time until every agent renewed its lease on the new hub, and the
    /// list and watch requests it served meanwhile.
    #[arg(long)]
    restart: bool,
}

/// Runs a benchmark.
#[inline(never)]
pub fn run(args: BenchArgs) -> futures::future::LocalBoxFuture<'static, anyhow::Result<()>> {
    Box::pin(run_body(args))
}

async fn run_body(args: BenchArgs) -> anyhow::Result<()> {
    match args.what {
        What::Registration(args) => registration(args).await,
        What::Placement(args) => crate::placement::bench(args).await,
        What::Work(args) => crate::work::bench(args).await,
        What::Addons(args) => crate::addons::bench(args).await,
        What::Rotation(args) => crate::rotation::bench(args).await,
        What::Operator(args) => crate::operator::bench(args).await,
        What::Proxy(args) => crate::proxy::bench(args).await,
        What::Soak(args) => crate::soak::bench(args).await,
        What::Dashboard(args) => crate::dashboard::bench(args).await,
        What::Footprint(args) => crate::footprint::bench(args).await,
        What::Fleet(args) => crate::fleet::fleet(args).await,
        What::AddonManager(args) => crate::addon_manager::run(args).await,
    }
}

async fn registration(args: RegistrationArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-{}", std::process::id()));
    let BenchHub {
        hub,
        options,
        bootstrap,
    } = start_bench_hub(EmbeddedHubOptions {
        memory: !(args.durable || args.restart),
        ..EmbeddedHubOptions::new(&dir)
    })
    .await?;
    let admin = hub.admin_client();
    let (rss_start, _) = process_usage();
    println!(
        "ocm bench registration: {} clusters, {} s leases, hub {}",
        args.clusters, args.lease_seconds, hub.url
    );

    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let lease_seconds = args.lease_seconds;
    // Watch the fleet before starting it so no transition is missed.
    let expected: BTreeSet<String> = (1..=args.clusters).map(|i| format!("bench-{i}")).collect();
    let watch_clusters = clusters.clone();
    let watch_expected = expected.clone();
    let waiter = tokio::spawn(async move {
        let mut ready = BTreeSet::new();
        let mut patched = BTreeSet::new();
        let mut seen: std::collections::BTreeMap<String, (bool, bool)> = Default::default();
        let mut stream = watcher(watch_clusters.clone(), watcher::Config::default())
            .backoff_on_errors()
            .applied_objects()
            .boxed();
        let mut tick = tokio::time::interval(Duration::from_secs(10));
        let began = Instant::now();
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                _ = tick.tick() => {
                    let accepted = seen.values().filter(|(a, _)| *a).count();
                    let joined = seen.values().filter(|(_, j)| *j).count();
                    println!(
                        "  {:>4.0} s: {} registered, {} accepted, {} joined, {} available",
                        began.elapsed().as_secs_f64(), seen.len(), accepted, joined, ready.len()
                    );
                    continue;
                }
            };
            let Some(event) = event else { return };
            let Ok(cluster) = event else { continue };
            let name = cluster.metadata.name.clone().unwrap_or_default();
            if !watch_expected.contains(&name) {
                continue;
            }
            if cluster.spec.lease_duration_seconds != Some(lease_seconds)
                && patched.insert(name.clone())
            {
                let api = watch_clusters.clone();
                let target = name.clone();
                tokio::spawn(async move {
                    let patch =
                        serde_json::json!({"spec": {"leaseDurationSeconds": lease_seconds}});
                    let _ = api
                        .patch(
                            &target,
                            &Default::default(),
                            &kube::api::Patch::Merge(patch),
                        )
                        .await;
                });
            }
            let conditions = cluster
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default();
            let is = |t: &str| ocm_runtime::conditions::is_true(conditions, t);
            seen.insert(
                name.clone(),
                (is("HubAcceptedManagedCluster"), is("ManagedClusterJoined")),
            );
            if ocm_setup::wait::joined_and_available(&cluster) {
                ready.insert(name);
                if ready.len() == watch_expected.len() {
                    return;
                }
            }
        }
    });

    // Simulated clusters first (not part of the measurement), many at a time.
    let preparing = Instant::now();
    let shutdown = Shutdown::new();
    let mut agents = Vec::new();
    let mut fleet = Vec::new();
    let started = if args.fleet_process {
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("bootstrap.kubeconfig");
        std::fs::write(&path, &bootstrap)?;
        fleet = crate::fleet::FleetProcess::start_all(&path, args.clusters, None).await?;
        let pids: Vec<String> = fleet
            .iter()
            .filter_map(crate::fleet::FleetProcess::pid)
            .map(|pid| pid.to_string())
            .collect();
        println!(
            "  {} simulated clusters prepared in {:.1} s (in processes {})",
            args.clusters,
            preparing.elapsed().as_secs_f64(),
            pids.join(", ")
        );
        let started = Instant::now();
        for process in &mut fleet {
            process.go().await?;
        }
        started
    } else {
        let prepared = prepare_fleet(&hub.server, &bootstrap, expected.iter().cloned()).await?;
        println!(
            "  {} simulated clusters prepared in {:.1} s",
            args.clusters,
            preparing.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        agents = start_agents(prepared, &shutdown);
        started
    };
    let fleet_pids: Vec<u32> = fleet
        .iter()
        .filter_map(crate::fleet::FleetProcess::pid)
        .collect();
    let fleet_cpu = || fleet_pids.iter().map(|pid| cpu_of(*pid)).sum::<f64>();
    let (_, hub_cpu_start) = process_usage();
    let fleet_cpu_start = fleet_cpu();
    waiter.await.context("waiting for the fleet")?;
    let joined = started.elapsed();
    println!(
        "  all {} agents started; every cluster Joined and Available {:.1} s after the start",
        args.clusters,
        joined.as_secs_f64()
    );
    let (rss_joined, cpu_joined) = process_usage();
    if !fleet_pids.is_empty() {
        // Whether the join waits on work or on the machine: two cores give 2 s of CPU a second.
        let seconds = joined.as_secs_f64().max(0.001);
        let hub = cpu_joined - hub_cpu_start;
        let agents = fleet_cpu() - fleet_cpu_start;
        println!(
            "  CPU during the join: hub and API server {hub:.0} s ({:.0} % of one core), fleet processes {agents:.0} s ({:.0} %); {} cores",
            hub / seconds * 100.0,
            agents / seconds * 100.0,
            std::thread::available_parallelism().map_or(1, usize::from),
        );
    }
    let fleet_rss = || -> Option<u64> {
        let pids: Vec<u32> = fleet
            .iter()
            .filter_map(crate::fleet::FleetProcess::pid)
            .collect();
        (!pids.is_empty()).then(|| pids.into_iter().map(rss_of).sum())
    };
    let fleet_joined = fleet_rss();

    tokio::time::sleep(Duration::from_secs(args.steady_seconds)).await;
    let (rss_steady, cpu_steady) = process_usage();
    let cpu_share = (cpu_steady - cpu_joined) / args.steady_seconds.max(1) as f64;
    let holds = if !fleet.is_empty() {
        "hub and API server"
    } else {
        "hub, API server, simulated clusters and agents"
    };
    println!(
        "  RSS ({holds}): {:.0} MiB at start, {:.0} MiB when joined, {:.0} MiB after {} s of heartbeats",
        rss_start as f64 / 1024.0,
        rss_joined as f64 / 1024.0,
        rss_steady as f64 / 1024.0,
        args.steady_seconds
    );
    if let (Some(joined), Some(steady)) = (fleet_joined, fleet_rss()) {
        println!(
            "  RSS of the fleet processes (simulated clusters and agents): {:.0} MiB when joined, {:.0} MiB after the heartbeats",
            joined as f64 / 1024.0,
            steady as f64 / 1024.0
        );
    }
    println!(
        "  CPU in steady heartbeat ({holds}): {:.1} % of one core",
        cpu_share * 100.0,
    );
    crate::support::print_store_per_cluster(hub.server.store(), args.clusters);
    let hub = if args.restart {
        crate::restart::measure(hub, options, &expected, &fleet_pids).await?
    } else {
        hub
    };
    for process in fleet {
        process.stop().await;
    }
    shutdown.cancel();
    for agent in agents {
        let _ = tokio::time::timeout(Duration::from_secs(5), agent).await;
    }
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

//! `ocm bench work`: two measurements of the work path.
//!
//! 1. **Fleet**: `--clusters` simulated clusters (logical clusters of the hub's server), each
//!    joined by its registration agent (auto-approved, not measured) and running a work agent;
//!    then `--works` ManifestWorks per cluster (a ConfigMap and a Deployment each) are created
//!    at once, and the time until every work is `Applied`, then `Available`, is printed.
//! 2. **One agent under load**: a simulated cluster served over TLS, joined in this process,
//!    and its work agent as a separate `ocm work agent` process so that its memory is its own.
//!    Prints the agent's RSS idle, then creates `--solo-works` works of `--solo-manifests`
//!    ConfigMaps each and prints the time until all are Applied (apply throughput), the peak
//!    RSS while applying and the RSS once idle again.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::work::v1::ManifestWork;
use ocm_registration::hub::HubOptions;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use crate::support::{process_usage, rss_of};
use ocm_hub::embedded::{EmbeddedHub, EmbeddedHubOptions};

/// Flags of `ocm bench work`.
#[derive(Debug, Args)]
pub struct BenchWorkArgs {
    /// Simulated clusters in the fleet measurement (0 skips it).
    #[arg(long, default_value_t = 100)]
    clusters: usize,
    /// ManifestWorks per cluster in the fleet measurement.
    #[arg(long, default_value_t = 5)]
    works: usize,
    /// Works for the single agent (0 skips the measurement).
    #[arg(long, default_value_t = 1000)]
    solo_works: usize,
    /// ConfigMaps per work for the single agent.
    #[arg(long, default_value_t = 10)]
    solo_manifests: usize,
    /// Work agents' status sync interval, in seconds (upstream's default: 10).
    #[arg(long, default_value_t = 10)]
    status_sync_seconds: u64,
}

/// Runs the benchmark.
pub async fn bench(args: BenchWorkArgs) -> anyhow::Result<()> {
    if args.clusters > 0 {
        fleet(&args).await?;
    }
    if args.solo_works > 0 {
        solo(&args).await?;
    }
    Ok(())
}

/// A hub in memory whose bootstrap token is auto-approved.
async fn bench_hub(dir: &std::path::Path) -> anyhow::Result<(EmbeddedHub, String)> {
    let token = ocm_hub::bootstrap::BootstrapToken::generate()?;
    let hub = EmbeddedHub::start(EmbeddedHubOptions {
        memory: true,
        listen: ([127, 0, 0, 1], 0).into(),
        hub: HubOptions {
            auto_approved_users: vec![format!("system:bootstrap:{}", token.id)],
            ..HubOptions::default()
        },
        ..EmbeddedHubOptions::new(dir)
    })
    .await?;
    ocm_hub::bootstrap::init_with_token(&hub.admin_client(), &token, None).await?;
    let bootstrap = ocm_hub::join::bootstrap_kubeconfig(&hub.url, &hub.ca_pem, &token.to_string());
    Ok((hub, bootstrap))
}

fn work_options(cluster: &str, args: &BenchWorkArgs) -> ocm_work::agent::WorkAgentOptions {
    ocm_work::agent::WorkAgentOptions {
        cluster_name: cluster.to_owned(),
        status_sync_interval: Duration::from_secs(args.status_sync_seconds),
        ..Default::default()
    }
}

async fn fleet(args: &BenchWorkArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-work-{}", std::process::id()));
    let (hub, bootstrap) = bench_hub(&dir).await?;
    let admin = hub.admin_client();
    let names: Vec<String> = (1..=args.clusters).map(|i| format!("bench-{i}")).collect();
    println!(
        "ocm bench work: {} clusters x {} works, status sync {} s, hub {}",
        args.clusters, args.works, args.status_sync_seconds, hub.url
    );
    let joining = Instant::now();
    let shutdown = Shutdown::new();
    let spokes = crate::support::join_fleet(&hub, &bootstrap, &names, &shutdown).await?;
    println!(
        "  {} clusters joined in {:.1} s (not part of the measurement)",
        names.len(),
        joining.elapsed().as_secs_f64()
    );
    for spoke in &spokes {
        let agent =
            ocm_work::agent::WorkAgent::new(spoke.client.clone(), work_options(&spoke.name, args))
                .with_shared_hub_client(spoke.hub.clone());
        let token = shutdown.child();
        tokio::spawn(async move { agent.run(token).await });
    }

    let expected: BTreeSet<(String, String)> = names
        .iter()
        .flat_map(|c| (1..=args.works).map(move |i| (c.clone(), format!("bench-work-{i}"))))
        .collect();
    let total = expected.len();
    let waiter = tokio::spawn(watch_works(admin.clone(), expected));
    let started = Instant::now();
    futures::stream::iter(
        names
            .iter()
            .flat_map(|c| (1..=args.works).map(move |i| (c, i))),
    )
    .map(|(cluster, i)| {
        let api: Api<ManifestWork> = Api::namespaced(admin.clone(), cluster);
        async move {
            api.create(&PostParams::default(), &fleet_work(i)?)
                .await
                .with_context(|| format!("creating bench-work-{i} for {cluster}"))
        }
    })
    .buffer_unordered(32)
    .try_collect::<Vec<_>>()
    .await?;
    let created = started.elapsed();
    let (applied, available) = waiter.await.context("watching the works")??;
    let (rss, _) = process_usage();
    println!(
        "  {total} works created in {:.1} s; all Applied after {:.1} s, all Available after {:.1} s",
        created.as_secs_f64(),
        applied.as_secs_f64(),
        available.as_secs_f64()
    );
    println!(
        "  RSS of this process (hub, API server, {} clusters and their agents): {:.0} MiB",
        names.len(),
        rss as f64 / 1024.0
    );
    shutdown.cancel();
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn fleet_work(i: usize) -> anyhow::Result<ManifestWork> {
    let ns = format!("bench-{i}");
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": format!("bench-work-{i}")},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "settings", "namespace": ns}, "data": {"work": i.to_string()}},
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "app", "namespace": ns},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bench"}},
                      "template": {"metadata": {"labels": {"app": "bench"}},
                                   "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}
        ]}}
    }))
    .context("building a work")
}

/// Watches every ManifestWork until all of `expected` are Applied, then Available; returns
/// both durations from the call.
async fn watch_works(
    admin: kube::Client,
    expected: BTreeSet<(String, String)>,
) -> anyhow::Result<(Duration, Duration)> {
    let began = Instant::now();
    let mut applied = BTreeSet::new();
    let mut available = BTreeSet::new();
    let mut applied_at = None;
    let mut stream = watcher(Api::<ManifestWork>::all(admin), watcher::Config::default())
        .backoff_on_errors()
        .applied_objects()
        .boxed();
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = tick.tick() => {
                println!("  {:>5.1} s: {} applied, {} available of {}",
                    began.elapsed().as_secs_f64(), applied.len(), available.len(), expected.len());
                continue;
            }
        };
        let Some(event) = event else {
            anyhow::bail!("lost the watch on the hub")
        };
        let Ok(work) = event else { continue };
        let key = (
            work.metadata.namespace.clone().unwrap_or_default(),
            work.metadata.name.clone().unwrap_or_default(),
        );
        if !expected.contains(&key) {
            continue;
        }
        let conditions = work
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        if ocm_runtime::conditions::is_true(conditions, "Applied") {
            applied.insert(key.clone());
        }
        if ocm_runtime::conditions::is_true(conditions, "Available") {
            available.insert(key);
        }
        if applied_at.is_none() && applied.len() == expected.len() {
            applied_at = Some(began.elapsed());
        }
        if available.len() == expected.len() {
            return Ok((
                applied_at.unwrap_or_else(|| began.elapsed()),
                began.elapsed(),
            ));
        }
    }
}

async fn solo(args: &BenchWorkArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-work-solo-{}", std::process::id()));
    let (hub, bootstrap) = bench_hub(&dir.join("hub")).await?;
    let admin = hub.admin_client();
    let cluster =
        ocm_hub::simulated::SimulatedCluster::start(&dir.join("spoke"), ([127, 0, 0, 1], 0).into())
            .await?;
    let shutdown = Shutdown::new();
    let name = "solo".to_owned();
    ocm_hub::join::prepare_spoke(&cluster.client(), &bootstrap).await?;
    crate::support::join_fleet_with(
        &hub,
        &[crate::support::Spoke::new(name.clone(), cluster.client())],
        &shutdown,
    )
    .await?;
    println!(
        "ocm bench work (one agent): {} works x {} ConfigMaps, agent as a separate process",
        args.solo_works, args.solo_manifests
    );
    let exe = std::env::current_exe().context("finding the ocm executable")?;
    let mut child = std::process::Command::new(exe)
        .args([
            "work",
            "agent",
            "--cluster-name",
            &name,
            "--spoke-kubeconfig",
        ])
        .arg(&cluster.kubeconfig)
        .args([
            "--status-sync-interval",
            &format!("{}s", args.status_sync_seconds),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting `ocm work agent`")?;
    let pid = child.id();
    // Idle: the agent has connected and listed its (empty) namespace; give it a moment to
    // settle before reading its memory.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle = rss_of(pid);
    println!(
        "  agent RSS idle (no works): {:.1} MiB",
        idle as f64 / 1024.0
    );

    let expected: BTreeSet<(String, String)> = (1..=args.solo_works)
        .map(|i| (name.clone(), format!("solo-{i}")))
        .collect();
    let waiter = tokio::spawn(watch_works(admin.clone(), expected));
    let sampling = shutdown.child();
    let sampler = {
        let token = sampling.clone();
        tokio::spawn(async move {
            let mut peak = 0u64;
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tokio::select! {
                    _ = token.cancelled() => return peak,
                    _ = tick.tick() => peak = peak.max(rss_of(pid)),
                }
            }
        })
    };
    let api: Api<ManifestWork> = Api::namespaced(admin.clone(), &name);
    let manifests = args.solo_manifests;
    futures::stream::iter(1..=args.solo_works)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &solo_work(i, manifests)?)
                    .await
                    .with_context(|| format!("creating solo-{i}"))
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    let (applied, _) = waiter.await.context("watching the works")??;
    let total = args.solo_works * args.solo_manifests;
    println!(
        "  {} works ({total} objects) Applied {:.1} s after the first was created: {:.0} objects/s",
        args.solo_works,
        applied.as_secs_f64(),
        total as f64 / applied.as_secs_f64().max(0.001),
    );
    // Idle again: let the last status writes finish before reading the memory.
    tokio::time::sleep(Duration::from_secs(5)).await;
    sampling.cancel();
    let peak = sampler.await.unwrap_or(0);
    let after = rss_of(pid);
    println!(
        "  agent RSS: peak {:.1} MiB while applying, {:.1} MiB idle with {} works",
        peak as f64 / 1024.0,
        after as f64 / 1024.0,
        args.solo_works
    );
    shutdown.cancel();
    let _ = child.kill();
    let _ = child.wait();
    cluster.stop().await;
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn solo_work(i: usize, manifests: usize) -> anyhow::Result<ManifestWork> {
    let items: Vec<_> = (1..=manifests)
        .map(|m| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("solo-{i}-{m}"), "namespace": "default"},
                   "data": {"work": i.to_string(), "item": m.to_string()}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": format!("solo-{i}")},
        "spec": {"workload": {"manifests": items}}
    }))
    .context("building a work")
}

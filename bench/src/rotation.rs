//! `ocm bench rotation`: simulated clusters joined to an embedded hub whose signer issues
//! short certificates (60 s by default, as `ocm hub --cluster-signing-duration-seconds 60`),
//! with agents on their default options (five-minute check period). For a while it counts
//! what certificate rotation did: rotations, renewal CSRs the hub approved by itself,
//! bootstrap CSRs, rebootstraps and 401s, and whether every cluster stayed Available.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::{
    Agent, AgentOptions, AgentProgress, DEFAULT_AGENT_NAMESPACE, HUB_KUBECONFIG_SECRET,
};
use ocm_registration::hub::HubOptions;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;

use ocm_hub::embedded::{EmbeddedHub, EmbeddedHubOptions};

/// Flags of `ocm bench rotation`.
#[derive(Debug, Args)]
pub struct BenchRotationArgs {
    /// How many simulated clusters.
    #[arg(long, default_value_t = 1)]
    clusters: usize,
    /// Lifetime of every certificate the hub signs, in seconds.
    #[arg(long, default_value_t = 60)]
    signing_seconds: u64,
    /// How long to watch after every cluster is Available, in seconds.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Lease duration of every cluster, in seconds.
    #[arg(long, default_value_t = 10)]
    lease_seconds: i32,
}

/// What was counted.
#[derive(Debug, Default)]
struct Counts {
    /// Certificate changes in each cluster's hub kubeconfig secret, with the time of each.
    rotations: BTreeMap<String, Vec<Instant>>,
    /// CSRs by name: (requested by a bootstrap token, approved by the hub's renewal approver).
    csrs: BTreeMap<String, (bool, bool)>,
    /// Progress messages of agents going back to bootstrap.
    rebootstraps: Vec<String>,
    /// Times a cluster stopped being Joined and Available.
    unavailable: usize,
}

/// Runs the benchmark.
pub async fn bench(args: BenchRotationArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-rotation-{}", std::process::id()));
    let token = ocm_hub::bootstrap::BootstrapToken::generate()?;
    let hub = EmbeddedHub::start(EmbeddedHubOptions {
        memory: true,
        listen: ([127, 0, 0, 1], 0).into(),
        csr_signing_duration: Duration::from_secs(args.signing_seconds),
        hub: HubOptions {
            auto_approved_users: vec![format!("system:bootstrap:{}", token.id)],
            ..HubOptions::default()
        },
        ..EmbeddedHubOptions::new(&dir)
    })
    .await?;
    let admin = hub.admin_client();
    ocm_hub::bootstrap::init_with_token(&admin, &token, None).await?;
    let bootstrap = ocm_hub::join::bootstrap_kubeconfig(&hub.url, &hub.ca_pem, &token.to_string());
    println!(
        "ocm bench rotation: {} cluster(s), {} s certificates, agents with default options (certificate check period {} s), {} s leases",
        args.clusters,
        args.signing_seconds,
        AgentOptions::default().cert_check_period.as_secs(),
        args.lease_seconds
    );
    let counts = Arc::new(Mutex::new(Counts::default()));
    let shutdown = Shutdown::new();
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(watch_csrs(admin.clone(), counts.clone())));

    let names: Vec<String> = (1..=args.clusters).map(|i| format!("rot-{i}")).collect();
    for name in &names {
        let spoke = ocm_hub::simulated::logical_spoke(&hub.server, name).await?;
        ocm_hub::join::prepare_spoke(&spoke, &bootstrap).await?;
        tasks.push(tokio::spawn(watch_secret(
            spoke.clone(),
            name.clone(),
            counts.clone(),
        )));
        let agent = Agent::new(
            spoke,
            AgentOptions {
                cluster_name: name.clone(),
                ..AgentOptions::default()
            },
        );
        tasks.push(tokio::spawn(watch_progress(
            agent.progress(),
            counts.clone(),
        )));
        let token = shutdown.child();
        tasks.push(tokio::spawn(async move {
            if let Err(err) = agent.run(token).await {
                tracing::warn!(%err, "agent stopped");
            }
        }));
    }
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    ocm_setup::wait::wait_all_available(&clusters, &names).await?;
    for name in &names {
        let patch = serde_json::json!({"spec": {"leaseDurationSeconds": args.lease_seconds}});
        clusters
            .patch(name, &Default::default(), &kube::api::Patch::Merge(patch))
            .await?;
    }
    let joined = Instant::now();
    // Rotations before this point are the bootstrap certificates being written.
    counts
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .rotations
        .clear();
    println!(
        "  every cluster Joined and Available; watching {} s",
        args.seconds
    );
    tasks.push(tokio::spawn(watch_availability(
        clusters.clone(),
        counts.clone(),
    )));

    let mut tick = tokio::time::interval(Duration::from_secs(60));
    tick.tick().await;
    let end = tokio::time::Instant::now() + Duration::from_secs(args.seconds);
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(end) => break,
            _ = tick.tick() => {
                let c = counts.lock().unwrap_or_else(|p| p.into_inner());
                let rotations: usize = c.rotations.values().map(Vec::len).sum();
                println!(
                    "  {:>4} s: {rotations} rotations, {} rebootstraps",
                    joined.elapsed().as_secs(),
                    c.rebootstraps.len()
                );
            }
        }
    }

    report(
        &counts.lock().unwrap_or_else(|p| p.into_inner()),
        &names,
        args.seconds,
    );
    shutdown.cancel();
    for task in tasks {
        task.abort();
    }
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Prints what was counted over `seconds`.
fn report(c: &Counts, names: &[String], seconds: u64) {
    let rotations: Vec<usize> = names
        .iter()
        .map(|n| c.rotations.get(n).map_or(0, Vec::len))
        .collect();
    let gaps: Vec<f64> = c
        .rotations
        .values()
        .flat_map(|times| {
            times
                .windows(2)
                .map(|w| w[1].duration_since(w[0]).as_secs_f64())
                .collect::<Vec<_>>()
        })
        .collect();
    let bootstrap_csrs = c.csrs.values().filter(|(b, _)| *b).count();
    let renewals = c.csrs.values().filter(|(b, _)| !*b).count();
    let auto_approved = c.csrs.values().filter(|(b, a)| !*b && *a).count();
    let unauthorized = c.rebootstraps.iter().filter(|r| r.contains("401")).count();
    println!("  after {} s:", seconds);
    println!(
        "    rotations per cluster: min {}, max {} (total {})",
        rotations.iter().min().unwrap_or(&0),
        rotations.iter().max().unwrap_or(&0),
        rotations.iter().sum::<usize>()
    );
    if !gaps.is_empty() {
        let min = gaps.iter().copied().fold(f64::INFINITY, f64::min);
        let max = gaps.iter().copied().fold(0.0, f64::max);
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        println!("    time between rotations: min {min:.1} s, mean {mean:.1} s, max {max:.1} s");
    }
    println!("    renewal CSRs: {renewals}, approved by the hub automatically: {auto_approved}");
    println!(
        "    bootstrap CSRs: {bootstrap_csrs} (one per cluster is the join), rebootstraps: {}, of them after a 401: {unauthorized}",
        c.rebootstraps.len()
    );
    println!(
        "    clusters leaving Joined and Available: {}",
        c.unavailable
    );
    for reason in &c.rebootstraps {
        println!("    rebootstrap: {reason}");
    }
}

/// Records each new certificate in the cluster's hub kubeconfig secret.
async fn watch_secret(spoke: kube::Client, cluster: String, counts: Arc<Mutex<Counts>>) {
    let api: Api<Secret> = Api::namespaced(spoke, DEFAULT_AGENT_NAMESPACE);
    let config =
        watcher::Config::default().fields(&format!("metadata.name={HUB_KUBECONFIG_SECRET}"));
    let mut events = std::pin::pin!(watcher(api, config).backoff_on_errors().applied_objects());
    let mut last: Option<Vec<u8>> = None;
    while let Some(event) = events.next().await {
        let Ok(secret) = event else { continue };
        let cert = secret
            .data
            .as_ref()
            .and_then(|d| d.get("tls.crt"))
            .map(|b| b.0.clone());
        if cert.is_some() && cert != last {
            last = cert;
            counts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .rotations
                .entry(cluster.clone())
                .or_default()
                .push(Instant::now());
        }
    }
}

/// Records every CSR: whether a bootstrap token asked, whether the hub approved it itself.
async fn watch_csrs(admin: kube::Client, counts: Arc<Mutex<Counts>>) {
    let api: Api<CertificateSigningRequest> = Api::all(admin);
    let mut events = std::pin::pin!(
        watcher(api, watcher::Config::default())
            .backoff_on_errors()
            .applied_objects()
    );
    while let Some(event) = events.next().await {
        let Ok(csr) = event else { continue };
        let bootstrap = csr
            .spec
            .username
            .as_deref()
            .is_some_and(|u| u.starts_with("system:bootstrap:"));
        let auto = csr
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| {
                c.type_ == "Approved"
                    && c.reason.as_deref() == Some("AutoApprovedByHubCSRApprovingController")
            });
        let name = csr.metadata.name.clone().unwrap_or_default();
        counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .csrs
            .insert(name, (bootstrap, auto));
    }
}

/// Records every time an agent goes back to bootstrap.
async fn watch_progress(
    mut progress: tokio::sync::watch::Receiver<AgentProgress>,
    counts: Arc<Mutex<Counts>>,
) {
    while progress.changed().await.is_ok() {
        let p = progress.borrow_and_update().clone();
        if let AgentProgress::Rebootstrapping { reason } = p {
            counts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .rebootstraps
                .push(reason);
        }
    }
}

/// Counts the clusters' transitions out of Joined and Available.
async fn watch_availability(clusters: Api<ManagedCluster>, counts: Arc<Mutex<Counts>>) {
    let mut events = std::pin::pin!(
        watcher(clusters, watcher::Config::default())
            .backoff_on_errors()
            .applied_objects()
    );
    let mut up: BTreeMap<String, bool> = BTreeMap::new();
    while let Some(event) = events.next().await {
        let Ok(cluster) = event else { continue };
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let now = ocm_setup::wait::joined_and_available(&cluster);
        let before = up.insert(name, now).unwrap_or(true);
        if before && !now {
            counts.lock().unwrap_or_else(|p| p.into_inner()).unavailable += 1;
        }
    }
}

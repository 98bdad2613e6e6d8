//! `ocm bench operator`: the operator path timed, every component a real process (the
//! process kubelet runs the ocm Deployments). Prints the time from ClusterManager created to
//! every hub component running, from Klusterlet created to its cluster Available, and then,
//! after an idle period, the resident memory of each process: operators, hub components,
//! agents.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::shutdown::Shutdown;

use ocm_hub::simulated::SimulatedCluster;
use ocm_setup::kubelet::start_kubelet;
use ocm_setup::operators::{
    KlusterletRequest, create_cluster_manager, create_klusterlet, install_hub_operator,
    install_klusterlet_operator, wait_hub_ready,
};

/// Flags of `ocm bench operator`.
#[derive(Debug, Args)]
pub struct BenchOperatorArgs {
    /// How many managed clusters join through a Klusterlet.
    #[arg(long, default_value_t = 2)]
    clusters: usize,
    /// How long everything idles before memory is read, in seconds.
    #[arg(long, default_value_t = 30)]
    idle_seconds: u64,
}

/// How long each stage may take.
const STAGE: Duration = Duration::from_secs(180);

/// Waits until Deployment `namespace/name` has a replica available.
async fn wait_available(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<()> {
    let api: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), namespace);
    ocm_setup::wait::wait_until(api, name, STAGE, |d| {
        d.status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or_default()
            >= 1
    })
    .await
}

/// `(pid, command line)` of this process's children.
fn children() -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent pid is the second field after the command in parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(me) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let words: Vec<String> = cmdline
            .split(|b| *b == 0)
            .skip(1)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .filter(|w| {
                !w.starts_with("--")
                    || w.starts_with("--only")
                    || w.starts_with("--registration-only")
            })
            .collect();
        out.push((pid, words.join(" ")));
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// Resident memory of `pid` in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    crate::support::memory_of(pid).map(|m| m.rss as f64 / 1024.0)
}

/// Runs the benchmark.
pub async fn bench(args: BenchOperatorArgs) -> anyhow::Result<()> {
    let dir = tempfile_dir()?;
    let image = ocm_setup::operators::default_image();
    let shutdown = Shutdown::new();
    let hub = SimulatedCluster::start(&dir.join("hub"), ([127, 0, 0, 1], 0).into()).await?;
    start_kubelet(&hub, &image, &[], &dir.join("hub"), &shutdown)?;
    let admin = hub.client();
    install_hub_operator(&admin, &image).await?;
    wait_available(&admin, "open-cluster-management", "cluster-manager").await?;
    let started = Instant::now();
    create_cluster_manager(&admin).await?;
    wait_hub_ready(&admin, STAGE).await?;
    let hub_ready = started.elapsed();
    println!(
        "ClusterManager created → every hub component running: {:.2} s",
        hub_ready.as_secs_f64()
    );

    let token = ocm_hub::bootstrap::init_hub(&admin, None).await?;
    let server = ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(
        &std::fs::read_to_string(&hub.kubeconfig)?,
    )?)?;
    let bootstrap = ocm_hub::join::bootstrap_kubeconfig(
        &hub.url,
        server
            .ca_pem
            .as_deref()
            .context("the hub kubeconfig has no CA")?,
        &token.to_string(),
    );
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let mut spokes = Vec::new();
    let mut times = Vec::new();
    for i in 1..=args.clusters {
        let name = format!("cluster{i}");
        let spoke_dir = dir.join(&name);
        let spoke = SimulatedCluster::start(&spoke_dir, ([127, 0, 0, 1], 0).into()).await?;
        start_kubelet(&spoke, &image, &[], &spoke_dir, &shutdown)?;
        install_klusterlet_operator(&spoke.client(), &image).await?;
        wait_available(&spoke.client(), "open-cluster-management", "klusterlet").await?;
        let started = Instant::now();
        create_klusterlet(
            &spoke.client(),
            &KlusterletRequest {
                image: &image,
                bootstrap: &bootstrap,
                cluster_name: &name,
                singleton: false,
                client_cert_expiration_seconds: None,
                several_hubs: None,
                eviction_grace: None,
            },
        )
        .await?;
        tokio::time::timeout(
            STAGE,
            ocm_registration::accept::accept_when_asked(&admin, &name, false),
        )
        .await
        .with_context(|| format!("{name} did not ask to join"))??;
        ocm_setup::wait::wait_until(clusters.clone(), &name, STAGE, |c| {
            ocm_setup::wait::joined_and_available(c)
        })
        .await?;
        let took = started.elapsed();
        println!(
            "Klusterlet created → {name} Available (accepted at once): {:.2} s",
            took.as_secs_f64()
        );
        times.push(took.as_secs_f64());
        spokes.push(spoke);
    }
    println!("idling {} s…", args.idle_seconds);
    tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
    println!("resident memory after idling (each a process started by the process kubelet):");
    let mut total = 0.0;
    for (pid, command) in children() {
        if let Some(rss) = rss_mib(pid) {
            total += rss;
            println!("  {rss:7.1} MiB  ocm {command}");
        }
    }
    println!("  {total:7.1} MiB  in all");
    if let Some(rss) = rss_mib(std::process::id()) {
        println!(
            "  ({rss:.1} MiB: this process — {} API servers and the kubelets)",
            args.clusters + 1
        );
    }
    shutdown.cancel();
    for spoke in spokes {
        spoke.stop().await;
    }
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A fresh folder under the system's temporary directory.
fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-operator-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

//! `ocm bench footprint`: the memory of an idle hub and an idle agent, each the process a
//! user runs. Starts `ocm hub` (embedded API server and every controller) and one
//! `ocm join --simulated` agent against it, accepts the cluster, waits until it is Available,
//! lets both settle and prints each process's resident memory from `/proc/<pid>/status`.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;

use super::bench_support::{ProcessMemory, memory_of, ocm_child, spawn_until_ready};

/// Flags of `ocm bench footprint`.
#[derive(Debug, Args)]
pub struct BenchFootprintArgs {
    /// How long both processes idle after the cluster is Available before memory is read,
    /// in seconds.
    #[arg(long, default_value_t = 60)]
    settle: u64,
}

/// How long each stage (hub ready, join asked, cluster Available) may take.
const STAGE: Duration = Duration::from_secs(180);

/// Name of the joined cluster.
const CLUSTER: &str = "footprint1";

/// Runs the benchmark.
pub async fn bench(args: BenchFootprintArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-footprint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = run(&args, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn run(args: &BenchFootprintArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    let hub_dir = dir.join("hub");
    let mut hub = ocm_child()?;
    hub.env("OCM_HOME", dir)
        .arg("hub")
        .arg("--data-dir")
        .arg(&hub_dir)
        .args(["--listen", "127.0.0.1:0"]);
    let (hub, _) = tokio::time::timeout(
        STAGE,
        spawn_until_ready(hub, "ocm hub", |l| l == "ocm hub ready"),
    )
    .await
    .context("ocm hub not ready in time")??;
    let kubeconfig = hub_dir.join("admin.kubeconfig");
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    let server = ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(
        &std::fs::read_to_string(&kubeconfig)?,
    )?)?;
    let token = crate::bootstrap::init_hub(&admin, None).await?;

    let mut join = ocm_child()?;
    join.env("OCM_HOME", dir)
        .args(["join", "--hub-apiserver", &server.server])
        .args(["--hub-token", &token.to_string()])
        .args(["--cluster-name", CLUSTER, "--simulated", "--data-dir"])
        .arg(dir.join(CLUSTER));
    let (agent, _) = tokio::time::timeout(
        STAGE,
        spawn_until_ready(join, "ocm join", |l| l.contains("token accepted")),
    )
    .await
    .context("ocm join did not reach the hub in time")??;
    tokio::time::timeout(
        STAGE,
        crate::accept::accept_when_asked(&admin, CLUSTER, false),
    )
    .await
    .context("the cluster did not ask to join in time")??;
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    crate::operator_install::wait_until(clusters, CLUSTER, STAGE, |c| {
        crate::clusters_table::joined_and_available(c)
    })
    .await?;
    let hub_pid = hub.id().context("the hub process has exited")?;
    let agent_pid = agent.id().context("the agent process has exited")?;
    println!("cluster {CLUSTER} Joined and Available (hub pid {hub_pid}, agent pid {agent_pid})");
    println!("settling {} s…", args.settle);
    tokio::time::sleep(Duration::from_secs(args.settle)).await;

    let rows = [
        ("ocm hub (embedded, 1 cluster)", memory_of(hub_pid)),
        ("ocm join --simulated (agent)", memory_of(agent_pid)),
    ];
    println!("resident memory after settling (MiB, from /proc/<pid>/status and smaps_rollup):");
    println!(
        "  {:<32} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "process", "VmRSS", "VmHWM", "anon", "file", "PSS", "threads"
    );
    for (name, memory) in rows {
        let ProcessMemory {
            rss,
            peak,
            anon,
            file,
            pss,
            threads,
        } = memory.with_context(|| format!("{name}: process gone"))?;
        let mib = |kib: u64| kib as f64 / 1024.0;
        println!(
            "  {name:<32} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {threads:>7}",
            mib(rss),
            mib(peak),
            mib(anon),
            mib(file),
            mib(pss)
        );
    }
    drop(agent);
    drop(hub);
    Ok(())
}

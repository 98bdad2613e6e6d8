//! `ocm bench footprint`: the memory of an idle hub and of idle agents, each the process a
//! user runs. Starts `ocm hub` (embedded API server and every controller) and joins clusters
//! to it: one `ocm join --simulated` (the agents and the simulated cluster's own API server in
//! one process), and the agents alone against an `ocm apiserver` process as the klusterlet
//! runs them on a real cluster: `ocm agent`, and `ocm-agent agent` (the small executable, when
//! it was built beside this one). Accepts every cluster, waits until each is Available, lets
//! everything settle and prints each process's resident memory from `/proc/<pid>/status`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use tokio::process::{Child, Command};

use crate::support::{
    ProcessMemory, child_of, memory_of, ocm_child, spawn_until_logged, spawn_until_ready,
};

/// Flags of `ocm bench footprint`.
#[derive(Debug, Args)]
pub struct BenchFootprintArgs {
    /// How long the processes idle after every cluster is Available before memory is read,
    /// in seconds.
    #[arg(long, default_value_t = 60)]
    settle: u64,
    /// The `ocm-agent` executable to measure (default: the one beside this `ocm`; the image's
    /// is built with `cargo build --profile agent -p ocm-agent`, in target/agent/).
    #[arg(long)]
    agent_binary: Option<PathBuf>,
    /// Measure this many times, each with fresh processes, and print each process's range of
    /// `VmRSS` over the runs at the end (one run's figure varies by a MiB or two).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
}

/// How long each stage (hub ready, join asked, cluster Available) may take.
const STAGE: Duration = Duration::from_secs(180);

/// Name of the simulated cluster (`ocm join --simulated`).
const SIMULATED: &str = "footprint1";

/// Name of the cluster whose agents `ocm agent` runs, against an `ocm apiserver` process.
const OCM_AGENT: &str = "footprint2";

/// Name of the cluster whose agents `ocm-agent agent` runs, against an `ocm apiserver` process.
const SMALL_AGENT: &str = "footprint3";

/// Runs the benchmark.
pub async fn bench(args: BenchFootprintArgs) -> anyhow::Result<()> {
    let mut runs = Vec::new();
    for n in 1..=args.runs {
        if args.runs > 1 {
            println!("run {n} of {}", args.runs);
        }
        let dir =
            std::env::temp_dir().join(format!("ocm-bench-footprint-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let result = run(&args, &dir).await;
        let _ = std::fs::remove_dir_all(&dir);
        runs.push(result?);
    }
    if runs.len() > 1 {
        println!("VmRSS over {} runs (MiB):", runs.len());
        for (name, low, high) in rss_ranges(&runs) {
            println!("  {name:<32} {:>5.1}–{:.1}", mib(low), mib(high));
        }
    }
    Ok(())
}

/// Each process's lowest and highest `VmRSS` (KiB) over the runs, in the order of the first.
fn rss_ranges(runs: &[Vec<(String, u64)>]) -> Vec<(String, u64, u64)> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .map(|(name, _)| {
            let seen = runs
                .iter()
                .flat_map(|run| run.iter().filter(|(n, _)| n == name).map(|(_, rss)| *rss));
            let low = seen.clone().min().unwrap_or_default();
            let high = seen.max().unwrap_or_default();
            (name.clone(), low, high)
        })
        .collect()
}

/// KiB in MiB.
fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The `ocm-agent` executable to measure: `--agent-binary`, else the one beside this `ocm`
/// when it was built.
fn small_agent_executable(args: &BenchFootprintArgs) -> anyhow::Result<Option<PathBuf>> {
    if let Some(path) = &args.agent_binary {
        anyhow::ensure!(
            path.is_file(),
            "--agent-binary {}: no such file",
            path.display()
        );
        return Ok(Some(path.clone()));
    }
    let exe = std::env::current_exe().context("finding the ocm executable")?;
    Ok(ocm_hub::process_kubelet::agent_beside(&exe))
}

/// How the agents reach the hub: its URL and the bootstrap token.
struct HubAccess<'a> {
    url: &'a str,
    token: &'a str,
}

/// Starts an `ocm apiserver` process as cluster `name`'s API server under `dir`, puts the
/// hub's bootstrap kubeconfig on it (as `ocm join` does) and starts `agent` (an `ocm agent`
/// command line still without its flags) against it. Returns the API server and the agent.
async fn agents_alone(
    dir: &Path,
    name: &str,
    hub: &HubAccess<'_>,
    mut agent: Command,
) -> anyhow::Result<(Child, Child)> {
    let cluster_dir = dir.join(format!("{name}-apiserver"));
    let mut apiserver = ocm_child()?;
    apiserver
        .env("OCM_HOME", dir)
        .arg("apiserver")
        .arg("--data-dir")
        .arg(&cluster_dir)
        .args(["--listen", "127.0.0.1:0"]);
    let (cluster, _) = tokio::time::timeout(
        STAGE,
        spawn_until_logged(apiserver, "ocm apiserver", |l| {
            l.contains("ocm apiserver ready")
        }),
    )
    .await
    .with_context(|| format!("{name}'s ocm apiserver not ready in time"))??;
    let kubeconfig = cluster_dir.join("admin.kubeconfig");
    let spoke = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    let ca = ocm_setup::discovery::discover_ca(hub.url, hub.token).await?;
    let bootstrap = ocm_hub::join::bootstrap_kubeconfig(hub.url, &ca, hub.token);
    ocm_hub::join::prepare_spoke(&spoke, &bootstrap).await?;
    agent
        .env("OCM_HOME", dir.join(name))
        .args(["agent", "--cluster-name", name, "--spoke-kubeconfig"])
        .arg(&kubeconfig);
    // The agent prints its progress as `[<cluster>] …`; its first line says it runs.
    let (agent, _) = tokio::time::timeout(
        STAGE,
        spawn_until_ready(agent, name, |l| l.starts_with(&format!("[{name}]"))),
    )
    .await
    .with_context(|| format!("{name}'s agent did not start in time"))??;
    Ok((cluster, agent))
}

/// One run: starts, joins and measures every process; returns each one's `VmRSS` (KiB).
async fn run(args: &BenchFootprintArgs, dir: &Path) -> anyhow::Result<Vec<(String, u64)>> {
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
    let token = ocm_hub::bootstrap::init_hub(&admin, None)
        .await?
        .to_string();
    let access = HubAccess {
        url: &server.server,
        token: &token,
    };

    let mut join = ocm_child()?;
    join.env("OCM_HOME", dir)
        .args(["join", "--hub-apiserver", &server.server])
        .args(["--hub-token", &token])
        .args(["--cluster-name", SIMULATED, "--simulated", "--data-dir"])
        .arg(dir.join(SIMULATED));
    let (simulated, _) = tokio::time::timeout(
        STAGE,
        spawn_until_ready(join, "ocm join --simulated", |l| {
            l.contains("token accepted")
        }),
    )
    .await
    .context("ocm join --simulated did not reach the hub in time")??;
    let (cluster, agent) = agents_alone(dir, OCM_AGENT, &access, ocm_child()?).await?;
    let small = match small_agent_executable(args)? {
        Some(exe) => Some(agents_alone(dir, SMALL_AGENT, &access, child_of(&exe)).await?),
        None => {
            println!(
                "no ocm-agent beside this ocm (cargo build --release -p ocm-agent, or \
                 --agent-binary): measuring without it"
            );
            None
        }
    };

    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let names: Vec<&str> = [SIMULATED, OCM_AGENT]
        .into_iter()
        .chain(small.is_some().then_some(SMALL_AGENT))
        .collect();
    for name in &names {
        tokio::time::timeout(
            STAGE,
            ocm_registration::accept::accept_when_asked(&admin, name, false),
        )
        .await
        .with_context(|| format!("{name} did not ask to join in time"))??;
    }
    for name in &names {
        ocm_setup::wait::wait_until(clusters.clone(), name, STAGE, |c| {
            ocm_setup::wait::joined_and_available(c)
        })
        .await?;
    }
    let pid = |child: &Child, what: &str| {
        child
            .id()
            .with_context(|| format!("the {what} process has exited"))
    };
    let mut rows = vec![
        (
            format!("ocm hub (embedded, {} clusters)", names.len()),
            pid(&hub, "ocm hub")?,
        ),
        (
            "ocm join --simulated".to_owned(),
            pid(&simulated, "ocm join --simulated")?,
        ),
        ("ocm agent".to_owned(), pid(&agent, "ocm agent")?),
    ];
    if let Some((_, small)) = &small {
        rows.push(("ocm-agent agent".to_owned(), pid(small, "ocm-agent agent")?));
    }
    rows.push((
        "ocm apiserver (a cluster)".to_owned(),
        pid(&cluster, "ocm apiserver")?,
    ));
    println!("clusters {} Joined and Available", names.join(", "));
    println!("settling {} s…", args.settle);
    tokio::time::sleep(Duration::from_secs(args.settle)).await;

    println!("resident memory after settling (MiB, from /proc/<pid>/status and smaps_rollup):");
    println!(
        "  {:<32} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "process", "VmRSS", "VmHWM", "anon", "file", "PSS", "threads"
    );
    let mut measured = Vec::new();
    for (name, pid) in rows {
        let ProcessMemory {
            rss,
            peak,
            anon,
            file,
            pss,
            threads,
        } = memory_of(pid).with_context(|| format!("{name}: process gone"))?;
        println!(
            "  {name:<32} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {threads:>7}",
            mib(rss),
            mib(peak),
            mib(anon),
            mib(file),
            mib(pss)
        );
        measured.push((name, rss));
    }
    drop(small);
    drop((agent, cluster));
    drop(simulated);
    drop(hub);
    Ok(measured)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_per_process_over_every_run() {
        let run = |hub: u64, agent: u64| vec![("hub".to_owned(), hub), ("agent".to_owned(), agent)];
        assert_eq!(
            rss_ranges(&[run(30, 12), run(28, 14), run(31, 13)]),
            vec![("hub".to_owned(), 28, 31), ("agent".to_owned(), 12, 14)]
        );
        assert!(rss_ranges(&[]).is_empty());
    }
}

//! The other processes of `ocm bench registration --fleet-process`: each runs a share of the
//! simulated managed clusters (logical clusters of an API server of its own) and their
//! registration agents, joining the hub named in the bootstrap kubeconfig. Kept apart so that
//! the hub's process measures only the hub and its API server.
//!
//! Protocol with the parent, line by line: the child prints `prepared` once every simulated
//! cluster exists with its bootstrap secret, starts the agents when it reads `go` on stdin,
//! and exits when stdin closes. `ocm bench addons --fleet-process` uses it with work agents.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use ocm_apiserver::ApiServer;
use ocm_runtime::shutdown::Shutdown;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Flags of the hidden `ocm bench fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Bootstrap kubeconfig of the hub.
    #[arg(long)]
    bootstrap_kubeconfig: PathBuf,
    /// How many clusters, named `bench-<first>` … `bench-<first + N - 1>`.
    #[arg(long)]
    clusters: usize,
    /// Number of the first cluster.
    #[arg(long, default_value_t = 1)]
    first: usize,
    /// Also run a work agent per cluster, with this status sync interval in seconds.
    #[arg(long)]
    work_status_sync_seconds: Option<u64>,
}

/// Runs the fleet until stdin closes.
pub async fn fleet(args: FleetArgs) -> anyhow::Result<()> {
    let bootstrap = std::fs::read_to_string(&args.bootstrap_kubeconfig)
        .with_context(|| format!("reading {}", args.bootstrap_kubeconfig.display()))?;
    let server = ApiServer::in_memory()
        .await
        .map_err(|e| anyhow::anyhow!("starting the fleet's API server: {e}"))?;
    let names: Vec<String> = (args.first..args.first + args.clusters)
        .map(|i| format!("bench-{i}"))
        .collect();
    let spokes = crate::support::prepare_fleet(&server, &bootstrap, names.into_iter()).await?;
    let mut stdout = tokio::io::stdout();
    stdout.write_all(b"prepared\n").await?;
    stdout.flush().await?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim() == "go" {
            break;
        }
    }
    let shutdown = Shutdown::new();
    if let Some(seconds) = args.work_status_sync_seconds {
        start_work_agents(&spokes, std::time::Duration::from_secs(seconds), &shutdown);
    }
    let _agents = crate::support::start_agents(spokes, &shutdown);
    // Until the parent closes stdin (or goes away).
    while lines.next_line().await?.is_some() {}
    shutdown.cancel();
    Ok(())
}

/// Starts a work agent for each spoke (each follows its cluster's hub kubeconfig secret, so it
/// waits for its registration agent); they run until `shutdown`.
pub(crate) fn start_work_agents(
    spokes: &[crate::support::Spoke],
    status_sync_interval: std::time::Duration,
    shutdown: &Shutdown,
) {
    for spoke in spokes {
        let agent = ocm_work::agent::WorkAgent::new(
            spoke.client.clone(),
            ocm_work::agent::WorkAgentOptions {
                cluster_name: spoke.name.clone(),
                status_sync_interval,
                ..Default::default()
            },
        )
        .with_shared_hub_client(spoke.hub.clone());
        let token = shutdown.child();
        tokio::spawn(async move { agent.run(token).await });
    }
}

/// The fleet process, seen from the hub's side.
pub struct FleetProcess {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
}

/// Most clusters one fleet process simulates: each agent keeps a connection to the hub (two
/// for a moment while it trades its bootstrap credentials for a certificate), so a process
/// stays well under a 20,000 open-file limit.
const MAX_CLUSTERS_PER_PROCESS: usize = 4_000;

impl FleetProcess {
    /// Starts as many fleet processes as `clusters` needs (clusters `bench-1` …
    /// `bench-<clusters>` shared out in order), all preparing at once; returns when every one
    /// is prepared.
    /// With `work_status_sync`, each cluster also runs a work agent.
    pub async fn start_all(
        bootstrap_kubeconfig: &std::path::Path,
        clusters: usize,
        work_status_sync: Option<std::time::Duration>,
    ) -> anyhow::Result<Vec<Self>> {
        let processes = clusters.div_ceil(MAX_CLUSTERS_PER_PROCESS).max(1);
        let starts = (0..processes).map(|i| {
            let first = 1 + i * clusters / processes;
            let end = 1 + (i + 1) * clusters / processes;
            Self::start(bootstrap_kubeconfig, first, end - first, work_status_sync)
        });
        futures::future::join_all(starts)
            .await
            .into_iter()
            .collect()
    }

    /// Joins clusters `bench-1` … `bench-<clusters>` to the hub from fleet processes: writes
    /// the bootstrap kubeconfig under `dir`, starts the processes, lets them go and returns
    /// once every cluster is Available.
    pub async fn join_all(
        admin: &kube::Client,
        dir: &std::path::Path,
        bootstrap: &str,
        clusters: usize,
        work_status_sync: Option<std::time::Duration>,
    ) -> anyhow::Result<Vec<Self>> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("bootstrap.kubeconfig");
        std::fs::write(&path, bootstrap)?;
        let mut fleet = Self::start_all(&path, clusters, work_status_sync).await?;
        let managed: kube::Api<ocm_api::cluster::v1::ManagedCluster> =
            kube::Api::all(admin.clone());
        let names: Vec<String> = (1..=clusters).map(|i| format!("bench-{i}")).collect();
        let waiter =
            tokio::spawn(
                async move { ocm_setup::wait::wait_all_available(&managed, &names).await },
            );
        for process in &mut fleet {
            process.go().await?;
        }
        waiter.await.context("waiting for the fleet")??;
        Ok(fleet)
    }

    /// Starts `ocm bench fleet` for clusters `first` … `first + clusters - 1` and waits until
    /// they are prepared.
    pub async fn start(
        bootstrap_kubeconfig: &std::path::Path,
        first: usize,
        clusters: usize,
        work_status_sync: Option<std::time::Duration>,
    ) -> anyhow::Result<Self> {
        let mut command = crate::support::ocm_child()?;
        command
            .args(["bench", "fleet", "--clusters", &clusters.to_string()])
            .args(["--first", &first.to_string()])
            .arg("--bootstrap-kubeconfig")
            .arg(bootstrap_kubeconfig);
        if let Some(interval) = work_status_sync {
            command.args([
                "--work-status-sync-seconds",
                &interval.as_secs().to_string(),
            ]);
        }
        let (mut child, _) =
            crate::support::spawn_until_ready(command, "fleet", |l| l == "prepared").await?;
        let stdin = child.stdin.take().context("fleet stdin")?;
        Ok(FleetProcess { child, stdin })
    }

    /// Starts the agents.
    pub async fn go(&mut self) -> anyhow::Result<()> {
        self.stdin.write_all(b"go\n").await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// Process id, for its RSS and CPU.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Stops the fleet.
    pub async fn stop(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(std::time::Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

//! What the benchmarks of `ocm bench …` share: this and other processes' memory and CPU
//! figures from `/proc`, child `ocm` processes started and awaited, a hub that auto-approves
//! its clusters, and fleets of simulated clusters joined to it.

use anyhow::Context;
use futures::StreamExt;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::{Agent, AgentOptions};
use ocm_runtime::shutdown::Shutdown;

use ocm_hub::embedded::{EmbeddedHub, EmbeddedHubOptions};

/// Prints what the API server's store holds, in total and per cluster, largest resources
/// first, and the sockets this process holds open (the per-cluster costs of docs/scaling.md).
pub(crate) fn print_store_per_cluster(store: &ocm_apiserver_storage::Store, clusters: usize) {
    let stats = store.stats();
    let mib = |bytes: usize| bytes as f64 / f64::from(1 << 20);
    let per_cluster = |n: usize| n as f64 / clusters.max(1) as f64;
    println!(
        "  store: {} objects ({:.1} per cluster), {:.1} MiB ({:.0} bytes per cluster); history window {} events, {:.1} MiB",
        stats.objects,
        per_cluster(stats.objects),
        mib(stats.object_bytes),
        per_cluster(stats.object_bytes),
        stats.history_events,
        mib(stats.history_bytes),
    );
    for (resource, count, bytes) in store.object_bytes_by_resource().into_iter().take(10) {
        println!(
            "    {resource}: {count} objects ({:.2} per cluster), {:.1} MiB ({:.0} bytes per cluster)",
            per_cluster(count),
            mib(bytes),
            per_cluster(bytes),
        );
    }
    let sockets = std::fs::read_dir("/proc/self/fd")
        .map(|fds| {
            fds.filter_map(Result::ok)
                .filter(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
                })
                .count()
        })
        .unwrap_or(0);
    println!("  sockets open in this process: {sockets}");
}

/// Resident set size and CPU seconds (user + system) of this process, from `/proc/self`.
pub(crate) fn process_usage() -> (u64, f64) {
    (rss_from("/proc/self/status"), cpu_from("/proc/self/stat"))
}

/// CPU seconds (user + system) process `pid` has used, from `/proc/<pid>/stat` (0 when it
/// cannot be read).
pub(crate) fn cpu_of(pid: u32) -> f64 {
    cpu_from(&format!("/proc/{pid}/stat"))
}

/// CPU seconds (user + system) from a `/proc/<pid>/stat` file: fields 14 and 15 (after the
/// parenthesised command name), in clock ticks of 100 per second on Linux.
fn cpu_from(path: &str) -> f64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let user: f64 = fields.get(11)?.parse().ok()?;
            let system: f64 = fields.get(12)?.parse().ok()?;
            Some((user + system) / 100.0)
        })
        .unwrap_or(0.0)
}

/// The anonymous (heap, stacks) and file-backed (program text, mapped files) parts of this
/// process's resident set, in KiB, from `/proc/self/status` (zeros when they cannot be read).
pub(crate) fn rss_parts() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    (
        status_field(&status, "RssAnon:"),
        status_field(&status, "RssFile:"),
    )
}

/// Resident set size of process `pid` in KiB (0 when it cannot be read).
pub(crate) fn rss_of(pid: u32) -> u64 {
    rss_from(&format!("/proc/{pid}/status"))
}

/// Memory figures of one process, in KiB, and its thread count, from `/proc/<pid>/status`
/// (and `smaps_rollup`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProcessMemory {
    /// Resident set (`VmRSS`).
    pub rss: u64,
    /// Peak resident set (`VmHWM`).
    pub peak: u64,
    /// Anonymous part of the resident set: heap, stacks (`RssAnon`).
    pub anon: u64,
    /// File-backed part: program text, mapped files (`RssFile`).
    pub file: u64,
    /// Proportional set size: the resident set with each page shared with other processes
    /// divided among them (`Pss` of `/proc/<pid>/smaps_rollup`; 0 when it cannot be read).
    pub pss: u64,
    /// Threads.
    pub threads: u64,
}

/// Memory figures of process `pid`, `None` when it cannot be read (gone).
pub(crate) fn memory_of(pid: u32) -> Option<ProcessMemory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let threads = status
        .lines()
        .find(|l| l.starts_with("Threads:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    Some(ProcessMemory {
        rss: status_field(&status, "VmRSS:"),
        peak: status_field(&status, "VmHWM:"),
        anon: status_field(&status, "RssAnon:"),
        file: status_field(&status, "RssFile:"),
        pss: std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .map_or(0, |rollup| status_field(&rollup, "Pss:")),
        threads,
    })
}

/// `VmRSS` of a `/proc/<pid>/status` file, in KiB (0 when it cannot be read).
fn rss_from(path: &str) -> u64 {
    std::fs::read_to_string(path).map_or(0, |status| status_field(&status, "VmRSS:"))
}

/// The KiB figure of field `name` (with its colon) of a `/proc/<pid>/status` text (0 when
/// absent).
fn status_field(status: &str, name: &str) -> u64 {
    status
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
}

/// A command that runs this `ocm` executable again (stdin and stdout piped, killed when
/// dropped), for benchmarks' child processes. A profiler preloaded into the measured process
/// (heaptrack) stays out of the children.
pub(crate) fn ocm_child() -> anyhow::Result<tokio::process::Command> {
    let exe = std::env::current_exe().context("finding the ocm executable")?;
    Ok(child_of(&exe))
}

/// A child process of the executable `exe`, set up like [`ocm_child`].
pub(crate) fn child_of(exe: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(exe);
    command
        .env_remove("LD_PRELOAD")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Spawns `command` (see [`ocm_child`]) and waits until it prints a line that `ready` accepts;
/// returns the child and that line. The rest of its output is read and dropped, so it never
/// blocks on a full pipe.
pub(crate) async fn spawn_until_ready(
    mut command: tokio::process::Command,
    what: &str,
    ready: impl Fn(&str) -> bool,
) -> anyhow::Result<(tokio::process::Child, String)> {
    let mut child = command
        .spawn()
        .with_context(|| format!("starting the {what} process"))?;
    let stdout = child
        .stdout
        .take()
        .with_context(|| format!("{what} stdout"))?;
    let line = first_line(stdout, what, ready).await?;
    Ok((child, line))
}

/// Like [`spawn_until_ready`], for a process that says it is ready in its log (stderr), such
/// as `ocm apiserver`; its stdout is dropped.
pub(crate) async fn spawn_until_logged(
    mut command: tokio::process::Command,
    what: &str,
    ready: impl Fn(&str) -> bool,
) -> anyhow::Result<(tokio::process::Child, String)> {
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = command
        .spawn()
        .with_context(|| format!("starting the {what} process"))?;
    let stderr = child
        .stderr
        .take()
        .with_context(|| format!("{what} stderr"))?;
    let line = first_line(stderr, what, ready).await?;
    Ok((child, line))
}

/// Reads `output` until a line that `ready` accepts and returns it; the rest is read and
/// dropped in a task of its own.
async fn first_line(
    output: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    what: &str,
    ready: impl Fn(&str) -> bool,
) -> anyhow::Result<String> {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(output).lines();
    let line = loop {
        match lines.next_line().await? {
            Some(line) if ready(line.trim()) => break line,
            Some(_) => {}
            None => anyhow::bail!("the {what} process exited before it was ready"),
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(line)
}

/// A simulated cluster of a benchmark: its name, an admin client of its API server, and the
/// hub connection its agents share (as the agents of one `ocm agent` process do).
#[derive(Clone)]
pub(crate) struct Spoke {
    /// The cluster's name.
    pub name: String,
    /// An admin client of the cluster's API server.
    pub client: kube::Client,
    /// The hub connection its registration and work agents share.
    pub hub: ocm_runtime::kubeconfig::SharedClient,
}

impl Spoke {
    /// The cluster `name` served through `client`, with a hub connection of its own.
    pub(crate) fn new(name: String, client: kube::Client) -> Spoke {
        Spoke {
            name,
            client,
            hub: ocm_runtime::kubeconfig::SharedClient::new(),
        }
    }
}

/// Prepares `names` as simulated clusters of `hub`'s server with `bootstrap` in place, and
/// joins them (see [`join_fleet_with`]).
pub(crate) async fn join_fleet(
    hub: &EmbeddedHub,
    bootstrap: &str,
    names: &[String],
    shutdown: &Shutdown,
) -> anyhow::Result<Vec<Spoke>> {
    let spokes = prepare_fleet(&hub.server, bootstrap, names.iter().cloned()).await?;
    join_fleet_with(hub, &spokes, shutdown).await?;
    Ok(spokes)
}

/// Creates the simulated clusters `names` on `server` (many at a time) with the bootstrap
/// kubeconfig in place.
pub(crate) async fn prepare_fleet(
    server: &ocm_apiserver::ApiServer,
    bootstrap: &str,
    names: impl Iterator<Item = String>,
) -> anyhow::Result<Vec<Spoke>> {
    futures::stream::iter(names)
        .map(|name| {
            let server = server.clone();
            async move {
                let spoke = ocm_hub::simulated::logical_spoke(&server, &name).await?;
                ocm_hub::join::prepare_spoke(&spoke, bootstrap).await?;
                anyhow::Ok(Spoke::new(name, spoke))
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

/// Runs a registration agent for each prepared spoke (until `shutdown`) and waits until every
/// cluster is Joined and Available; the hub must auto-approve their bootstrap user.
pub(crate) async fn join_fleet_with(
    hub: &EmbeddedHub,
    spokes: &[Spoke],
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    let names: Vec<String> = spokes.iter().map(|s| s.name.clone()).collect();
    let waiter =
        tokio::spawn(async move { ocm_setup::wait::wait_all_available(&clusters, &names).await });
    drop(start_agents(spokes.to_vec(), shutdown));
    waiter.await.context("waiting for the fleet")?
}

/// Starts a registration agent (default options) for each spoke; they run until `shutdown`.
pub(crate) fn start_agents(
    spokes: Vec<Spoke>,
    shutdown: &Shutdown,
) -> Vec<tokio::task::JoinHandle<()>> {
    spokes
        .into_iter()
        .map(|spoke| {
            let agent = Agent::new(
                spoke.client,
                AgentOptions {
                    cluster_name: spoke.name,
                    ..AgentOptions::default()
                },
            )
            .with_shared_hub_client(spoke.hub);
            let token = shutdown.child();
            tokio::spawn(async move {
                if let Err(err) = agent.run(token).await {
                    tracing::warn!(%err, "agent stopped");
                }
            })
        })
        .collect()
}

/// A hub for benchmarks: it auto-approves the clusters of one bootstrap token.
pub(crate) struct BenchHub {
    /// The running hub.
    pub hub: EmbeddedHub,
    /// The options it runs with (its address filled in), to start it again on the same data.
    pub options: EmbeddedHubOptions,
    /// The bootstrap kubeconfig simulated clusters join with.
    pub bootstrap: String,
}

/// Starts an embedded hub on a loopback port that auto-approves a new bootstrap token's
/// clusters, and sets the token up on it.
pub(crate) async fn start_bench_hub(mut options: EmbeddedHubOptions) -> anyhow::Result<BenchHub> {
    let token = ocm_hub::bootstrap::BootstrapToken::generate()?;
    options.listen = ([127, 0, 0, 1], 0).into();
    options
        .hub
        .auto_approved_users
        .push(format!("system:bootstrap:{}", token.id));
    let hub = EmbeddedHub::start(options.clone()).await?;
    options.listen = hub
        .url
        .trim_start_matches("https://")
        .parse()
        .context("the hub's address")?;
    ocm_hub::bootstrap::init_with_token(&hub.admin_client(), &token, None).await?;
    let bootstrap = ocm_hub::join::bootstrap_kubeconfig(&hub.url, &hub.ca_pem, &token.to_string());
    Ok(BenchHub {
        hub,
        options,
        bootstrap,
    })
}

//! `ocm bench proxy`, tunnel scale: one `ocm proxy server` process (a child, against the hub's
//! admin kubeconfig) and `N` cluster-proxy agents in this process, each opening its tunnel with
//! its own client certificate. Printed: the server's RSS idle, with every tunnel open and per
//! tunnel, and the time until every agent's tunnel is open.
//!
//! Addon registration is bypassed: N agents through the full registration path (CSR, approval,
//! signed certificate per cluster) would measure registration, not the proxy. Each agent's
//! certificate is issued directly with the hub's client CA (kept in the hub's data directory,
//! `pki/ca.crt` and `pki/ca.key`) with the exact subject registration gives it, and written as
//! `tls.crt` / `tls.key` where its pod would mount them. The agents share one simulated
//! cluster's client (they forward nothing here) and renew no health Lease.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use ocm_addon_framework::agent_helpers::{TLS_CRT_FILE, TLS_KEY_FILE};
use ocm_apiserver_pki::CertificateAuthority;
use ocm_cluster_proxy::agent::{self, TunnelAgentOptions, TunnelState};
use ocm_cluster_proxy::{ADDON_NAME, pki};
use ocm_runtime::shutdown::Shutdown;
use tokio::sync::watch;

use crate::support::rss_of;
use ocm_hub::embedded::EmbeddedHub;

/// How long all tunnels may take to open before the benchmark gives up.
const OPEN_TIMEOUT: Duration = Duration::from_secs(600);

/// The bench clusters' names: `tunnel-0001` … (they need not exist on the hub: the proxy
/// server trusts the hub's signature on the agent's certificate).
fn cluster_names(count: usize) -> Vec<String> {
    (1..=count).map(|i| format!("tunnel-{i:04}")).collect()
}

/// Writes `cluster`'s agent credentials under `dir`, signed by `ca` with the subject addon
/// registration gives the cluster-proxy agent.
fn issue_credentials(ca: &CertificateAuthority, cluster: &str, dir: &Path) -> anyhow::Result<()> {
    let user = format!(
        "system:open-cluster-management:cluster:{cluster}:addon:{ADDON_NAME}:agent:{ADDON_NAME}"
    );
    let group = ocm_addon_framework::registration::cluster_addon_group(cluster, ADDON_NAME);
    let issued = ca.issue_client(
        &user,
        &[group.as_str()],
        jiff::Timestamp::now(),
        jiff::SignedDuration::from_hours(24),
    )?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    ocm_apiserver::tls::write_file(&dir.join(TLS_CRT_FILE), &issued.cert_pem, false)?;
    ocm_apiserver::tls::write_file(&dir.join(TLS_KEY_FILE), &issued.key_pem, true)?;
    Ok(())
}

/// `ocm proxy server` as a child against `hub`; returns it and its pid once it serves.
async fn start_server(hub: &EmbeddedHub) -> anyhow::Result<(tokio::process::Child, u32)> {
    let mut command = crate::support::ocm_child()?;
    command
        .args([
            "proxy",
            "server",
            "--listen",
            "127.0.0.1:0",
            "--image",
            "ocm:bench",
        ])
        .arg("--kubeconfig")
        .arg(&hub.admin_kubeconfig);
    let (child, _) = crate::support::spawn_until_ready(command, "proxy server", |l| {
        l.starts_with("cluster proxy server at ")
    })
    .await?;
    let pid = child.id().context("the proxy server exited")?;
    Ok((child, pid))
}

/// How many tunnels the server lists, asked until it lists `count` (each answer is awaited,
/// so this waits on the server, not on a timer) or `deadline` passes.
async fn server_lists(hub: &EmbeddedHub, count: usize, deadline: Instant) -> anyhow::Result<usize> {
    loop {
        let listed = ocm_cluster_proxy::access::tunnels(&hub.admin_kubeconfig)
            .await?
            .len();
        if listed >= count || Instant::now() >= deadline {
            return Ok(listed);
        }
    }
}

/// Runs the tunnel scale measurement with `count` tunnels; `dir` is the hub's data directory.
pub async fn run(hub: &EmbeddedHub, dir: &Path, count: usize) -> anyhow::Result<()> {
    let (mut server, pid) = start_server(hub).await?;
    let endpoint = pki::read_endpoint(&hub.admin_client(), pki::PROXY_NAMESPACE).await?;
    // The server answers (and has cached the admin's authorization) before it is measured.
    let listed = server_lists(hub, 0, Instant::now()).await?;
    anyhow::ensure!(listed == 0, "the new proxy server lists {listed} tunnels");
    let idle = rss_of(pid);

    let issuing = Instant::now();
    let ca = CertificateAuthority::load(&dir.join("pki"), "ca")?
        .with_context(|| format!("no hub CA in {}", dir.join("pki").display()))?;
    let names = cluster_names(count);
    let agents_dir = dir.join("tunnel-agents");
    for name in &names {
        issue_credentials(&ca, name, &agents_dir.join(name))?;
    }
    println!(
        "  tunnel scale: proxy server process {pid} at {}; {count} agent certificates issued \
         directly with the hub's client CA in {:.1} s (addon registration bypassed)",
        endpoint.url,
        issuing.elapsed().as_secs_f64()
    );

    let spoke = ocm_hub::simulated::logical_spoke(&hub.server, "proxy-bench-tunnels").await?;
    let stop = Shutdown::new();
    let started = Instant::now();
    let mut states: Vec<watch::Receiver<TunnelState>> = Vec::with_capacity(count);
    for name in &names {
        let mut options = TunnelAgentOptions::new(
            name.clone(),
            "open-cluster-management-agent-addon",
            endpoint.url.clone(),
            endpoint.ca_pem.clone(),
            agents_dir.join(name),
        );
        options.lease = false;
        options.max_backoff = Duration::from_secs(5);
        let (state, watch) = watch::channel(TunnelState::default());
        states.push(watch);
        tokio::spawn(agent::run_with_state(
            spoke.clone(),
            options,
            state,
            stop.child(),
        ));
    }
    let all_open = futures::future::try_join_all(
        states
            .iter_mut()
            .map(|state| async move { state.wait_for(|s| s.connected).await.map(|_| ()) }),
    );
    tokio::time::timeout(OPEN_TIMEOUT, all_open)
        .await
        .context("the tunnels did not all open in time")?
        .context("an agent stopped")?;
    let opened = started.elapsed();
    let listed = server_lists(hub, count, Instant::now() + Duration::from_secs(30)).await?;
    let open = rss_of(pid);
    let attempts: u64 = states.iter().map(|s| s.borrow().opened).sum();
    println!(
        "  {count} tunnels open {:.2} s after the agents started ({} tunnels opened in all; \
         the server lists {listed})",
        opened.as_secs_f64(),
        attempts
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "  RSS of the proxy server process: {:.1} MiB idle, {:.1} MiB with {count} tunnels open, \
         {:.1} KiB per tunnel",
        mib(idle),
        mib(open),
        (open as f64 - idle as f64) / count as f64
    );
    stop.cancel();
    let _ = server.kill().await;
    let _ = std::fs::remove_dir_all(&agents_dir);
    Ok(())
}

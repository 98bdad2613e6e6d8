//! `ocm proxy`: the cluster-proxy addon from the command line — run its server on the hub
//! (`server`), its agent on a cluster (`agent`), and reach clusters through it with the
//! caller's own hub credentials (`kubeconfig`, `kubectl`, `health`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use kube::api::Api;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_cluster_proxy::tunnel::TunnelInfo;
use ocm_cluster_proxy::{ADDON_NAME, access, server};
use ocm_runtime::shutdown::Shutdown;

/// Flags of `ocm proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    #[command(subcommand)]
    command: ProxyCommand,
}

#[derive(Debug, Subcommand)]
enum ProxyCommand {
    /// Run the proxy server and the cluster-proxy addon manager against a hub.
    Server(ServerArgs),
    /// Run the cluster-proxy agent on a managed cluster (what its Deployment runs).
    Agent(AgentArgs),
    /// Print (or write) a kubeconfig that reaches a cluster through the proxy with your hub
    /// credentials.
    Kubeconfig(KubeconfigArgs),
    /// Run kubectl against a cluster through the proxy: `ocm proxy kubectl --cluster c1 -- get ns`.
    Kubectl(KubectlArgs),
    /// List clusters with the cluster-proxy addon and whether their tunnel is open.
    Health(HealthArgs),
}

/// Flags of `ocm proxy server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:8090")]
    listen: SocketAddr,
    /// Name or address clusters and users reach the server at (repeatable; the first one is
    /// published in the URL unless --public-url is given).
    #[arg(long = "hostname")]
    hostnames: Vec<String>,
    /// URL to publish for agents and users (default https://<first hostname>:<port>).
    #[arg(long)]
    public_url: Option<String>,
    /// Image of the agent (the `ocm` image).
    #[arg(long, default_value = "ocm:latest")]
    image: String,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm proxy agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// This cluster's name on the hub.
    #[arg(long)]
    cluster_name: String,
    /// The addon's install namespace on this cluster.
    #[arg(long)]
    namespace: String,
    /// URL of the proxy server.
    #[arg(long)]
    proxy_server: String,
    /// PEM CA of the proxy server.
    #[arg(long)]
    proxy_ca_file: PathBuf,
    /// Where `cluster-proxy-hub-kubeconfig` is mounted.
    #[arg(long, default_value = ocm_cluster_proxy::addon::HUB_KUBECONFIG_DIR)]
    hub_kubeconfig_dir: PathBuf,
    /// Kubeconfig of this cluster (default: in-cluster credentials).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

/// Flags of `ocm proxy kubeconfig`.
#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    /// The managed cluster.
    #[arg(long)]
    cluster: String,
    /// Write here instead of printing.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm proxy kubectl`.
#[derive(Debug, Args)]
pub struct KubectlArgs {
    /// The managed cluster.
    #[arg(long)]
    cluster: String,
    #[command(flatten)]
    hub: super::HubAccess,
    /// Arguments for kubectl.
    #[arg(last = true)]
    args: Vec<String>,
}

/// Flags of `ocm proxy health`.
#[derive(Debug, Args)]
pub struct HealthArgs {
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Runs `ocm proxy …`.
pub async fn run(args: ProxyArgs) -> anyhow::Result<()> {
    match args.command {
        ProxyCommand::Server(args) => run_server(args).await,
        ProxyCommand::Agent(args) => run_agent(args).await,
        ProxyCommand::Kubeconfig(args) => {
            let hub = args.hub.connect().await?;
            let text = access::proxy_kubeconfig(hub.single_file()?, &args.cluster).await?;
            match &args.output {
                Some(path) => write_private(path, &text),
                None => {
                    print!("{text}");
                    Ok(())
                }
            }
        }
        ProxyCommand::Kubectl(args) => kubectl(args).await,
        ProxyCommand::Health(args) => health(args).await,
    }
}

async fn run_server(args: ServerArgs) -> anyhow::Result<()> {
    let hub = args.hub.client().await?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let running = server::start(
        hub.clone(),
        server::ProxyServerOptions {
            listen: args.listen,
            hostnames: args.hostnames.clone(),
            public_url: args.public_url.clone(),
            ..Default::default()
        },
        shutdown.child(),
    )
    .await?;
    access::ensure_cluster_management_addon(&hub).await?;
    println!("cluster proxy server at {}", running.endpoint.url);
    if args.hostnames.is_empty() && args.public_url.is_none() {
        println!(
            "agents on other machines need an address they can dial: pass --hostname (or \
             --public-url)"
        );
    }
    println!("enable it on clusters with `ocm addon enable --names {ADDON_NAME} --clusters …`");
    ocm_addon_framework::manager::AddonManager::new(hub)
        .with_addon(Arc::new(ocm_cluster_proxy::addon::ClusterProxy::new(
            args.image,
            running.endpoint.clone(),
        )))
        .run(shutdown.child())
        .await;
    running.stop().await;
    Ok(())
}

async fn run_agent(args: AgentArgs) -> anyhow::Result<()> {
    let spoke = match &args.kubeconfig {
        Some(path) => super::client_from(path).await?,
        None => kube::Client::try_default()
            .await
            .context("in-cluster credentials")?,
    };
    // Upgrade requests (exec, port-forward) need an HTTP/1.1 connection to the cluster.
    let upgrades = match &args.kubeconfig {
        Some(path) => ocm_runtime::kubeconfig::http1_client_from_file(path).await?,
        None => {
            kube::Client::try_from(kube::Config::incluster().context("in-cluster credentials")?)?
        }
    };
    let ca = std::fs::read_to_string(&args.proxy_ca_file)
        .with_context(|| format!("reading {}", args.proxy_ca_file.display()))?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let mut options = ocm_cluster_proxy::agent::TunnelAgentOptions::new(
        args.cluster_name,
        args.namespace,
        args.proxy_server,
        ca,
        args.hub_kubeconfig_dir,
    );
    options.upgrades = Some(ocm_cluster_proxy::agent::UpgradeClient(upgrades));
    ocm_cluster_proxy::agent::run(spoke, options, shutdown).await;
    Ok(())
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    ocm_apiserver::tls::write_file(path, text, true)
        .with_context(|| format!("writing {}", path.display()))
}

async fn kubectl(args: KubectlArgs) -> anyhow::Result<()> {
    let hub = args.hub.connect().await?;
    let text = access::proxy_kubeconfig(hub.single_file()?, &args.cluster).await?;
    let dir = super::ocm_home().join("proxy");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!(
        "{}-{}.kubeconfig",
        args.cluster,
        std::process::id()
    ));
    write_private(&path, &text)?;
    let status = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&path)
        .args(&args.args)
        .status()
        .await;
    let _ = std::fs::remove_file(&path);
    let status = status.context("running kubectl (is it on PATH?)")?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

async fn health(args: HealthArgs) -> anyhow::Result<()> {
    let connected = args.hub.connect().await?;
    let tunnels = access::tunnels(connected.single_file()?).await?;
    let hub = connected.client;
    let clusters: Api<ManagedCluster> = Api::all(hub.clone());
    let mut rows = Vec::new();
    for cluster in clusters.list(&Default::default()).await?.items {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(hub.clone(), &name);
        let Some(addon) = mcas.get_opt(ADDON_NAME).await? else {
            continue;
        };
        let available = addon
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Available"))
            .map(|c| c.status.clone())
            .unwrap_or_else(|| "Unknown".into());
        let tunnel = tunnels.iter().find(|t| t.cluster == name);
        rows.push(render_row(&name, &available, tunnel));
    }
    if rows.is_empty() {
        bail!(
            "no cluster has the {ADDON_NAME} addon (enable it with `ocm addon enable --names {ADDON_NAME} --clusters …`)"
        );
    }
    println!(
        "{:<24} {:<16} {:<8} CONNECTED SINCE",
        "CLUSTER", "ADDON AVAILABLE", "TUNNEL"
    );
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

fn render_row(cluster: &str, available: &str, tunnel: Option<&TunnelInfo>) -> String {
    let (state, since) = match tunnel {
        Some(t) => ("open", t.connected_since.as_str()),
        None => ("none", "-"),
    };
    format!("{cluster:<24} {available:<16} {state:<8} {since}")
}

/// How long `ocm demo` waits for each simulated cluster's tunnel.
pub const DEMO_TUNNEL_WAIT: Duration = Duration::from_secs(120);

//! `ocm join`: the managed cluster's half of the double opt-in. Checks everything it can
//! before anything is written to the hub (cluster name, hub URL, hub CA, token; a hub this
//! cluster joined before that does not answer now is kept, see [`super::join_plan`]), installs the
//! klusterlet CRDs and the bootstrap kubeconfig on the managed cluster, then runs the
//! registration agent in the foreground and shows its progress. With `--operator` it installs
//! the klusterlet operator and a Klusterlet instead, whose agents then run as Deployments of
//! the `ocm` image on the managed cluster.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::join_hubs::check_hub_url;
use anyhow::{Context, bail};
use clap::Args;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::shutdown::Shutdown;

pub use ocm_hub::join::{
    AGENT_NAMESPACE, BOOTSTRAP_SECRET, bootstrap_kubeconfig, prepare_spoke, prepare_spoke_for_hubs,
};

/// Flags of `ocm join`.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// URL of the hub's API server (https://host:port). Repeat it, each with its own
    /// --hub-token, to join several hubs (upstream's `MultipleHubs`): the agent registers with
    /// the first and moves to the next that answers when its hub stays out of reach for
    /// --hub-connection-timeout-seconds.
    #[arg(long, required_unless_present = "bootstrap_kubeconfig")]
    pub hub_apiserver: Vec<String>,
    /// Bootstrap token printed by `ocm init` (one per --hub-apiserver, in the same order).
    #[arg(long, required_unless_present = "bootstrap_kubeconfig")]
    pub hub_token: Vec<String>,
    /// With several hubs: how long the hub the agent uses may stay out of reach (counted from
    /// its last lease renewal) before the agent moves to the next hub that answers (with
    /// --operator, the Klusterlet's `hubConnectionTimeoutSeconds`, at least 180).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub hub_connection_timeout_seconds: u64,
    /// With --operator: a kubeconfig of the hub to bootstrap with, instead of --hub-apiserver
    /// and --hub-token (what upstream's klusterlet Helm chart takes as
    /// `bootstrapHubKubeConfig`). It must carry its credentials inline.
    #[arg(long, requires = "operator", conflicts_with_all = ["hub_apiserver", "hub_token", "ca_file"])]
    pub bootstrap_kubeconfig: Option<PathBuf>,
    /// Name of this cluster on the hub (a DNS label, at most 63 characters).
    #[arg(long, required_unless_present = "no_klusterlet")]
    pub cluster_name: Option<String>,
    /// With --operator: install the klusterlet operator and the bootstrap kubeconfig only, and
    /// no Klusterlet (upstream's Helm chart with `klusterlet.create=false`); Klusterlets are
    /// then created by hand, each naming its cluster.
    #[arg(long, requires = "operator", conflicts_with_all = ["cluster_name", "singleton", "wait"])]
    pub no_klusterlet: bool,
    /// CA bundle of the hub (default: read from the hub's kube-public/cluster-info); with
    /// several hubs, one per --hub-apiserver or none.
    #[arg(long)]
    pub ca_file: Vec<PathBuf>,
    /// Kubeconfig of the managed cluster.
    #[arg(
        long,
        conflicts_with = "simulated",
        required_unless_present = "simulated"
    )]
    pub spoke_kubeconfig: Option<PathBuf>,
    /// Run a simulated managed cluster (embedded server under --data-dir) instead.
    #[arg(long)]
    pub simulated: bool,
    /// Data directory of the simulated cluster (default ~/.ocm/clusters/<cluster-name>).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Address the simulated cluster's API server listens on.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub simulated_listen: SocketAddr,
    /// Requested lifetime of the agent's hub client certificate, in seconds.
    #[arg(long, default_value_t = 31_536_000)]
    pub client_cert_expiration_seconds: i64,
    /// Address of the agent's /metrics, /healthz and /readyz endpoint.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub metrics_addr: SocketAddr,
    /// Install the klusterlet operator and a Klusterlet on the managed cluster instead of
    /// running the agent here (needs --spoke-kubeconfig).
    #[arg(long, conflicts_with = "simulated", requires = "spoke_kubeconfig")]
    pub operator: bool,
    /// The `ocm` image the klusterlet operator and the agents run (with --operator).
    #[arg(long, default_value_t = ocm_setup::operators::default_image(), requires = "operator")]
    pub image: String,
    /// With --operator: one agent Deployment (registration and work) instead of two.
    #[arg(long, requires = "operator")]
    pub singleton: bool,
    /// With --operator: wait until the agent has asked the hub to join.
    #[arg(long, requires = "operator")]
    pub wait: bool,
    /// Seconds to wait with --wait.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// How the agent `ocm join` runs gets addons' hub credentials (not with --operator: there
    /// the Klusterlet's `registrationConfiguration.addOnKubeClientRegistrationDriver` says).
    #[command(flatten)]
    pub addon_auth: super::agent::AddonAuthArgs,
    /// The agent's work agent (with --operator, the Klusterlet's
    /// `workConfiguration.appliedManifestWorkEvictionGracePeriod`).
    #[command(flatten)]
    pub eviction: super::agent_flags::EvictionArgs,
}

/// Installs the klusterlet operator, the bootstrap kubeconfig and (unless `--no-klusterlet`) a
/// Klusterlet `klusterlet` on the managed cluster; with `--wait`, returns once the cluster's
/// ManagedCluster exists on the hub (its agent runs and registered).
async fn join_with_operator(
    spoke: &kube::Client,
    hubs: &[String],
    args: &JoinArgs,
) -> anyhow::Result<()> {
    use ocm_setup::operators::{
        KlusterletRequest, SeveralHubs, install_klusterlet, install_klusterlet_operator,
    };
    let Some(bootstrap) = hubs.first() else {
        bail!("no hub to join");
    };
    let Some(cluster_name) = args.cluster_name.as_deref() else {
        install_klusterlet_operator(spoke, &args.image).await?;
        let secrets = if hubs.len() > 1 {
            prepare_spoke_for_hubs(spoke, hubs).await?.join(", ")
        } else {
            prepare_spoke(spoke, bootstrap).await?;
            BOOTSTRAP_SECRET.to_owned()
        };
        println!(
            "installed the klusterlet operator ({}) and Secret(s) {secrets} in {AGENT_NAMESPACE} \
             on the managed cluster; no Klusterlet (create one naming its cluster)",
            args.image
        );
        return Ok(());
    };
    install_klusterlet(
        spoke,
        &KlusterletRequest {
            image: &args.image,
            bootstrap,
            cluster_name,
            singleton: args.singleton,
            client_cert_expiration_seconds: Some(args.client_cert_expiration_seconds),
            several_hubs: (hubs.len() > 1).then_some(SeveralHubs {
                bootstrap_kubeconfigs: hubs,
                hub_connection_timeout_seconds: args.hub_connection_timeout_seconds,
            }),
            // Written only when not the default, as a user would leave the field out.
            eviction_grace: Some(args.eviction.grace)
                .filter(|g| *g != ocm_work::agent::WorkAgentOptions::default().eviction_grace),
        },
    )
    .await?;
    let mode = if args.singleton {
        "Singleton"
    } else {
        "Default"
    };
    println!(
        "installed the klusterlet operator ({}) and Klusterlet klusterlet ({mode} mode) on the managed cluster",
        args.image
    );
    if args.wait {
        let timeout = std::time::Duration::from_secs(args.timeout);
        let hub = registered_on(hubs, cluster_name, timeout).await.context(
            "waiting for the agent to register (kubectl get klusterlet klusterlet -o yaml on the managed cluster)",
        )?;
        println!("cluster {cluster_name} asked to join the hub {hub}");
    }
    println!("On the hub, accept it with: ocm accept --clusters {cluster_name}");
    Ok(())
}

/// The server of the first of `hubs` (bootstrap kubeconfigs) on which ManagedCluster
/// `cluster_name` appears within `timeout`: the agent registers with whichever hub it chose,
/// so every hub is watched at once (one out of reach only fails its own watch).
async fn registered_on(
    hubs: &[String],
    cluster_name: &str,
    timeout: std::time::Duration,
) -> anyhow::Result<String> {
    let mut waits = Vec::new();
    for bootstrap in hubs {
        let config = ocm_runtime::kubeconfig::parse(bootstrap)?;
        let server = ocm_runtime::kubeconfig::current_server(&config)?.server;
        let hub = ocm_runtime::kubeconfig::client_from_kubeconfig(config).await?;
        let clusters: Api<ManagedCluster> = Api::all(hub);
        waits.push(Box::pin(async move {
            ocm_setup::wait::wait_until(clusters, cluster_name, timeout, |_| true)
                .await
                .with_context(|| format!("on hub {server}"))
                .map(|()| server)
        }));
    }
    let (server, _) = futures::future::select_ok(waits).await?;
    Ok(server)
}

/// The bootstrap kubeconfig given with `--bootstrap-kubeconfig`, checked: it parses, carries its
/// credentials inline (it goes into a Secret the agents read on another machine) and names an
/// https server; returns it with that server's URL.
fn read_bootstrap_kubeconfig(path: &std::path::Path) -> anyhow::Result<(String, String)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the bootstrap kubeconfig {}", path.display()))?;
    let config = ocm_runtime::kubeconfig::parse(&text)
        .with_context(|| format!("the bootstrap kubeconfig {} is not valid", path.display()))?;
    if let Some(feature) = ocm_runtime::kubeconfig::untrusted_features(&config) {
        bail!(
            "the bootstrap kubeconfig {}: {feature}; it goes into a Secret on the managed \
             cluster, so its credentials and CA must be inline (client-certificate-data, \
             client-key-data, token, certificate-authority-data)",
            path.display()
        );
    }
    let server = ocm_runtime::kubeconfig::current_server(&config)
        .with_context(|| format!("the bootstrap kubeconfig {}", path.display()))?;
    check_hub_url(&server.server)?;
    Ok((text, server.server))
}

/// Runs `ocm join` until SIGINT/SIGTERM.
pub async fn run(args: JoinArgs) -> anyhow::Result<()> {
    if let Some(name) = &args.cluster_name {
        super::agent_flags::check_cluster_name(name)?;
    }
    if args.operator && args.addon_auth.uses_token() {
        bail!(
            "--addon-kubeclient-registration-auth is for the agent ocm join runs; with --operator \
             set the Klusterlet's registrationConfiguration.addOnKubeClientRegistrationDriver"
        );
    }
    let hubs = match &args.bootstrap_kubeconfig {
        Some(path) => {
            let (text, url) = read_bootstrap_kubeconfig(path)?;
            ocm_setup::discovery::check_token(&url, &text, args.cluster_name.as_deref()).await?;
            println!("hub {url} reachable, bootstrap kubeconfig accepted");
            vec![(url, text)]
        }
        None => {
            super::join_hubs::hub_bootstrap_kubeconfigs(&super::join_hubs::HubFlags {
                urls: &args.hub_apiserver,
                tokens: &args.hub_token,
                ca_files: &args.ca_file,
                cluster_name: args.cluster_name.as_deref(),
                spoke_kubeconfig: args.spoke_kubeconfig.as_deref(),
                operator: args.operator,
                hub_connection_timeout_seconds: args.hub_connection_timeout_seconds,
            })
            .await?
        }
    };
    let Some((_, bootstrap)) = hubs.first().cloned() else {
        bail!("no hub to join");
    };

    if args.operator
        && let Some(path) = &args.spoke_kubeconfig
    {
        let spoke = ocm_runtime::kubeconfig::client_from_file(path)
            .await
            .with_context(|| format!("loading {}", path.display()))?;
        let kubeconfigs: Vec<String> = hubs.into_iter().map(|(_, k)| k).collect();
        return join_with_operator(&spoke, &kubeconfigs, &args).await;
    }
    let Some(cluster_name) = args.cluster_name.clone() else {
        bail!("--cluster-name is needed to run the agent");
    };
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let mut simulated = None;
    let spoke = match (&args.spoke_kubeconfig, args.simulated) {
        (Some(path), _) => ocm_runtime::kubeconfig::client_from_file(path)
            .await
            .with_context(|| format!("loading {}", path.display()))?,
        (None, _) => {
            let dir = args
                .data_dir
                .clone()
                .unwrap_or_else(|| super::ocm_home().join("clusters").join(&cluster_name));
            let cluster =
                crate::simulated::SimulatedCluster::start(&dir, args.simulated_listen).await?;
            println!(
                "simulated cluster {} running at {} (kubeconfig {})",
                cluster_name,
                cluster.url,
                cluster.kubeconfig.display()
            );
            let client = cluster.client();
            simulated = Some(cluster);
            client
        }
    };
    let mut options = ocm_registration::agent::AgentOptions {
        cluster_name,
        client_cert_expiration_seconds: Some(args.client_cert_expiration_seconds),
        addon_kube_client_auth: args.addon_auth.auth(),
        ..Default::default()
    };
    if hubs.len() > 1 {
        let kubeconfigs: Vec<String> = hubs.into_iter().map(|(_, k)| k).collect();
        options.bootstrap_kubeconfig_secrets = prepare_spoke_for_hubs(&spoke, &kubeconfigs).await?;
        options.hub_connection_timeout =
            std::time::Duration::from_secs(args.hub_connection_timeout_seconds);
    } else {
        prepare_spoke(&spoke, &bootstrap).await?;
    }
    let result = super::agent::run_agent(
        spoke,
        options,
        args.eviction.grace,
        args.metrics_addr,
        shutdown,
    )
    .await;
    if let Some(cluster) = simulated {
        cluster.stop().await;
    }
    result
}

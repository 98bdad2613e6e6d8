//! `ocm agent` (and `ocm-agent agent`): runs the agent of a managed cluster whose bootstrap
//! kubeconfig Secret is already in place — registration and work together (the Singleton klusterlet's
//! `klusterlet-agent`), or registration alone (`--registration-only`, the Default klusterlet's
//! registration Deployment); also the shared runner `ocm join` and `ocm demo` use.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use ocm_registration::agent::addon_tokens::AddonKubeClientAuth;
use ocm_registration::agent::{Agent, AgentOptions, AgentProgress};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;

/// Flags of `ocm agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Kubeconfig of the managed cluster; without it, the in-cluster service account (or
    /// $KUBECONFIG).
    #[arg(long)]
    spoke_kubeconfig: Option<PathBuf>,
    /// Name of this cluster on the hub. Without it (registration only), the name stored in the
    /// hub kubeconfig secret, else a random UUID.
    #[arg(long, default_value = "")]
    cluster_name: String,
    /// Run the registration agent alone (the work agent runs elsewhere: `ocm work agent`).
    #[arg(long)]
    registration_only: bool,
    /// Hosted mode: the agent runs on a management cluster, which it reaches through its
    /// in-cluster configuration and which holds its bootstrap and hub kubeconfig secrets; the
    /// managed cluster is --spoke-kubeconfig.
    #[arg(long, requires = "spoke_kubeconfig")]
    hosted: bool,
    /// Namespace of the agent (bootstrap and hub kubeconfig secrets) on the managed cluster.
    #[arg(long, default_value = ocm_registration::agent::DEFAULT_AGENT_NAMESPACE)]
    agent_namespace: String,
    /// Requested lifetime of the hub client certificate, in seconds.
    #[arg(long)]
    client_cert_expiration_seconds: Option<i64>,
    /// A label put on the ManagedCluster when the agent creates it (`key=value`; repeatable).
    #[arg(long = "cluster-label", value_parser = key_value)]
    cluster_labels: Vec<(String, String)>,
    /// An annotation put on the ManagedCluster when the agent creates it (`key=value`, keys
    /// prefixed `agent.open-cluster-management.io/`; repeatable).
    #[arg(long = "cluster-annotation", value_parser = key_value)]
    cluster_annotations: Vec<(String, String)>,
    /// Most custom cluster claims reported.
    #[arg(long, default_value_t = 20)]
    max_custom_cluster_claims: usize,
    /// Registration feature gates, upstream's syntax (`ClusterProperty=true,ClusterClaim=false`;
    /// repeatable). The agent knows `ClusterClaim` (on by default) and `ClusterProperty` (off);
    /// other gates are accepted and ignored.
    #[arg(long)]
    feature_gates: Vec<String>,
    /// How often each work's objects are read back, repaired and reported (with the work agent).
    #[arg(long, default_value = "10s", value_parser = crate::flags::parse_duration)]
    status_sync_interval: Duration,
    #[command(flatten)]
    addon_auth: AddonAuthArgs,
    #[command(flatten)]
    eviction: crate::flags::EvictionArgs,
    /// Several hubs to choose from (upstream's `MultipleHubs`): bootstrap kubeconfig secrets in
    /// the agent namespace, in order of preference (comma-separated or repeated). The agent
    /// registers with the first whose hub answers, and moves to the next that answers when its
    /// hub stays out of reach for --hub-connection-timeout-seconds.
    #[arg(long, value_delimiter = ',')]
    bootstrap_kubeconfig_secrets: Vec<String>,
    /// With --bootstrap-kubeconfig-secrets: how long the hub may stay out of reach, counted
    /// from the last lease renewal, before the agent moves to another hub.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    hub_connection_timeout_seconds: u64,
    /// Address of the /metrics, /healthz and /readyz endpoint.
    #[arg(long, default_value = "127.0.0.1:0")]
    metrics_addr: SocketAddr,
}

/// Flags of how addons' kubeClient registrations get hub credentials (`ocm agent`, `ocm join`).
#[derive(Debug, Clone, Args)]
pub struct AddonAuthArgs {
    /// How addons' kubeClient registrations get hub credentials: `csr` (client certificates)
    /// or `token` (ServiceAccount tokens the hub's addon manager provides for).
    #[arg(long, default_value = "csr", value_parser = ["csr", "token"])]
    pub addon_kubeclient_registration_auth: String,
    /// Lifetime of addon agents' tokens (with `--addon-kubeclient-registration-auth=token`),
    /// at least 600 seconds.
    #[arg(long, default_value_t = ocm_registration::agent::addon_tokens::AddonKubeClientAuth::DEFAULT_TOKEN_EXPIRATION_SECONDS,
          value_parser = clap::value_parser!(i64).range(600..))]
    pub addon_token_expiration_seconds: i64,
}

impl AddonAuthArgs {
    /// Whether the flags ask for the token driver.
    pub fn uses_token(&self) -> bool {
        self.addon_kubeclient_registration_auth == "token"
    }

    /// The registration agent's option the flags say.
    pub fn auth(&self) -> AddonKubeClientAuth {
        if self.uses_token() {
            AddonKubeClientAuth::Token {
                expiration_seconds: self.addon_token_expiration_seconds,
            }
        } else {
            AddonKubeClientAuth::Csr
        }
    }
}

/// Parses `key=value`.
pub fn key_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{text:?} is not key=value"))
}

/// Runs until SIGINT/SIGTERM.
#[inline(never)]
pub fn run(args: AgentArgs) -> futures::future::BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(run_body(args))
}

async fn run_body(args: AgentArgs) -> anyhow::Result<()> {
    if !args.cluster_name.is_empty() {
        crate::flags::check_cluster_name(&args.cluster_name)?;
    } else if !args.registration_only {
        bail!("--cluster-name is needed when the work agent runs too (or use --registration-only)");
    }
    let spoke = crate::cluster_client(args.spoke_kubeconfig.as_deref())
        .await
        .context("connecting to the managed cluster")?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let mut options = AgentOptions {
        cluster_name: args.cluster_name.clone(),
        agent_namespace: args.agent_namespace.clone(),
        client_cert_expiration_seconds: args.client_cert_expiration_seconds,
        cluster_labels: args.cluster_labels.into_iter().collect::<BTreeMap<_, _>>(),
        cluster_annotations: args
            .cluster_annotations
            .into_iter()
            .collect::<BTreeMap<_, _>>(),
        max_custom_cluster_claims: args.max_custom_cluster_claims,
        addon_kube_client_auth: args.addon_auth.auth(),
        bootstrap_kubeconfig_secrets: args.bootstrap_kubeconfig_secrets.clone(),
        hub_connection_timeout: Duration::from_secs(args.hub_connection_timeout_seconds),
        ..Default::default()
    };
    for gates in &args.feature_gates {
        let ignored = options
            .apply_feature_gates(gates)
            .map_err(|e| anyhow::anyhow!("--feature-gates: {e}"))?;
        if !ignored.is_empty() {
            tracing::info!(gates = ?ignored, "feature gates the registration agent does not use");
        }
    }
    let work = (!args.registration_only).then(|| ocm_work::agent::WorkAgentOptions {
        cluster_name: args.cluster_name.clone(),
        agent_namespace: args.agent_namespace.clone(),
        status_sync_interval: args.status_sync_interval,
        eviction_grace: args.eviction.grace,
        ..Default::default()
    });
    let secrets = if args.hosted {
        Some(
            crate::cluster_client(None)
                .await
                .context("connecting to the management cluster (in-cluster configuration)")?,
        )
    } else {
        None
    };
    run_agents(
        Clients { spoke, secrets },
        options,
        work,
        args.metrics_addr,
        shutdown,
    )
    .await
}

/// The clusters an agent talks to besides the hub.
struct Clients {
    /// The managed cluster.
    spoke: kube::Client,
    /// Where its secrets are, when not on the managed cluster (Hosted mode).
    secrets: Option<kube::Client>,
}

/// Runs an agent (registration, and beside it the work agent, which evicts AppliedManifestWorks
/// no longer managed after `eviction_grace`) with a health endpoint, printing its progress in
/// plain words.
#[inline(never)]
pub fn run_agent(
    spoke: kube::Client,
    options: AgentOptions,
    eviction_grace: Duration,
    metrics_addr: SocketAddr,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(run_agent_body(
        spoke,
        options,
        eviction_grace,
        metrics_addr,
        shutdown,
    ))
}

async fn run_agent_body(
    spoke: kube::Client,
    options: AgentOptions,
    eviction_grace: Duration,
    metrics_addr: SocketAddr,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let work = ocm_work::agent::WorkAgentOptions {
        cluster_name: options.cluster_name.clone(),
        agent_namespace: options.agent_namespace.clone(),
        eviction_grace,
        ..Default::default()
    };
    let clients = Clients {
        spoke,
        secrets: None,
    };
    run_agents(clients, options, Some(work), metrics_addr, shutdown).await
}

/// Runs the registration agent, and the work agent when `work` is given, with a health
/// endpoint, printing the registration's progress in plain words.
async fn run_agents(
    clients: Clients,
    options: AgentOptions,
    work: Option<ocm_work::agent::WorkAgentOptions>,
    metrics_addr: SocketAddr,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let cluster = options.cluster_name.clone();
    let Clients { spoke, secrets } = clients;
    // One hub connection for both agents: they authenticate with the same certificate.
    let hub_client = ocm_runtime::kubeconfig::SharedClient::new();
    let work_task = work.map(|work| {
        let mut agent = ocm_work::agent::WorkAgent::new(spoke.clone(), work)
            .with_shared_hub_client(hub_client.clone());
        if let Some(management) = &secrets {
            agent = agent.with_secrets_on(management.clone());
        }
        tokio::spawn(agent.run(shutdown.child()))
    });
    let mut agent = Agent::new(spoke, options).with_shared_hub_client(hub_client);
    if let Some(management) = secrets {
        agent = agent.with_secrets_on(management);
    }
    let mut progress = agent.progress();
    let (ready_tx, ready) = tokio::sync::watch::channel(false);
    let metrics = ControllerMetrics::new("ocm_agent");
    let health = ocm_runtime::serve_health(metrics_addr, metrics, ready, shutdown.clone())
        .await
        .context("starting the metrics endpoint")?;
    tracing::info!(addr = %health.local_addr, "agent health endpoint");
    let printer = tokio::spawn(async move {
        let mut last = String::new();
        loop {
            let now = progress.borrow_and_update().clone();
            let text = now.to_string();
            if text != last {
                println!("[{cluster}] {text}");
                last = text;
            }
            let _ = ready_tx.send(matches!(
                now,
                AgentProgress::Joined | AgentProgress::Available
            ));
            if progress.changed().await.is_err() {
                break;
            }
        }
    });
    let result = agent.run(shutdown).await;
    printer.abort();
    if let Some(task) = work_task {
        task.abort();
    }
    result.map_err(Into::into)
}

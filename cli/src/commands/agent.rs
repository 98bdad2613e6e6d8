//! `ocm agent`: runs the registration agent of a managed cluster whose bootstrap kubeconfig
//! Secret is already in place (what the klusterlet deployment runs); also the shared runner
//! `ocm join` and `ocm demo` use.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use ocm_registration::agent::{Agent, AgentOptions, AgentProgress};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;

/// Flags of `ocm agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Kubeconfig of the managed cluster.
    #[arg(long)]
    spoke_kubeconfig: PathBuf,
    /// Name of this cluster on the hub.
    #[arg(long)]
    cluster_name: String,
    /// Namespace of the agent (bootstrap and hub kubeconfig secrets) on the managed cluster.
    #[arg(long, default_value = super::join::AGENT_NAMESPACE)]
    agent_namespace: String,
    /// Requested lifetime of the hub client certificate, in seconds.
    #[arg(long)]
    client_cert_expiration_seconds: Option<i64>,
    /// Address of the /metrics, /healthz and /readyz endpoint.
    #[arg(long, default_value = "127.0.0.1:0")]
    metrics_addr: SocketAddr,
}

/// Runs until SIGINT/SIGTERM.
pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    super::join::check_cluster_name(&args.cluster_name)?;
    let spoke = ocm_runtime::kubeconfig::client_from_file(&args.spoke_kubeconfig)
        .await
        .with_context(|| format!("loading {}", args.spoke_kubeconfig.display()))?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let options = AgentOptions {
        cluster_name: args.cluster_name.clone(),
        agent_namespace: args.agent_namespace.clone(),
        client_cert_expiration_seconds: args.client_cert_expiration_seconds,
        ..Default::default()
    };
    run_agent(spoke, options, args.metrics_addr, shutdown).await
}

/// Runs an agent (registration, and beside it the work agent) with a health endpoint,
/// printing its progress in plain words.
pub async fn run_agent(
    spoke: kube::Client,
    options: AgentOptions,
    metrics_addr: SocketAddr,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let cluster = options.cluster_name.clone();
    let work = ocm_work::agent::WorkAgent::new(
        spoke.clone(),
        ocm_work::agent::WorkAgentOptions {
            cluster_name: options.cluster_name.clone(),
            agent_namespace: options.agent_namespace.clone(),
            ..Default::default()
        },
    );
    let work_task = tokio::spawn(work.run(shutdown.child()));
    let agent = Agent::new(spoke, options);
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
    work_task.abort();
    result.map_err(Into::into)
}

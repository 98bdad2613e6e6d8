//! `ocm work agent` (and `ocm-agent work agent`): the work agent alone, with the hub credentials the registration agent
//! keeps in the managed cluster's hub kubeconfig secret.

use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use ocm_runtime::shutdown::Shutdown;
use ocm_work::agent::{WorkAgent, WorkAgentOptions};

/// Flags of `ocm work`.
#[derive(Debug, Args)]
pub struct WorkArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Run the work agent of a joined managed cluster.
    Agent(WorkAgentArgs),
}

/// Flags of `ocm work agent`.
#[derive(Debug, Args)]
pub struct WorkAgentArgs {
    /// Kubeconfig of the managed cluster; without it, the in-cluster service account (or
    /// $KUBECONFIG).
    #[arg(long)]
    spoke_kubeconfig: Option<std::path::PathBuf>,
    /// Name of this cluster on the hub.
    #[arg(long)]
    cluster_name: String,
    /// Namespace of the hub kubeconfig secret on the managed cluster.
    #[arg(long, default_value = ocm_registration::agent::DEFAULT_AGENT_NAMESPACE)]
    agent_namespace: String,
    /// How often each work's objects are read back, repaired and reported (e.g. 10s, 1m).
    #[arg(long, default_value = "10s", value_parser = crate::flags::parse_duration)]
    status_sync_interval: Duration,
    /// Hosted mode: the agent runs on a management cluster (in-cluster configuration), which
    /// holds the hub kubeconfig secret; the managed cluster is --spoke-kubeconfig.
    #[arg(long, requires = "spoke_kubeconfig")]
    hosted: bool,
    #[command(flatten)]
    eviction: crate::flags::EvictionArgs,
}

/// Runs until SIGINT/SIGTERM.
#[inline(never)]
pub fn run(args: WorkArgs) -> futures::future::BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(run_body(args))
}

async fn run_body(args: WorkArgs) -> anyhow::Result<()> {
    let What::Agent(args) = args.what;
    crate::flags::check_cluster_name(&args.cluster_name)?;
    let spoke = crate::cluster_client(args.spoke_kubeconfig.as_deref())
        .await
        .context("connecting to the managed cluster")?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let mut agent = WorkAgent::new(
        spoke,
        WorkAgentOptions {
            cluster_name: args.cluster_name,
            agent_namespace: args.agent_namespace,
            status_sync_interval: args.status_sync_interval,
            eviction_grace: args.eviction.grace,
            ..WorkAgentOptions::default()
        },
    );
    if args.hosted {
        let management = crate::cluster_client(None)
            .await
            .context("connecting to the management cluster (in-cluster configuration)")?;
        agent = agent.with_secrets_on(management);
    }
    agent.run(shutdown).await.map_err(Into::into)
}

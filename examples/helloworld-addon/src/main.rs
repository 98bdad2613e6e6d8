//! `helloworld-addon manager` runs the addon's hub side next to a hub; `helloworld-addon agent`
//! is what its Deployment runs on each managed cluster.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use helloworld_addon::HelloWorld;
use ocm_addon_framework::agent_helpers::RotatingHubClient;
use ocm_addon_framework::manager::AddonManager;
use ocm_runtime::shutdown::Shutdown;

/// The helloworld addon.
#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The addon's hub side (install, register, health) against the hub in `--kubeconfig`.
    Manager {
        /// Kubeconfig of the hub.
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: PathBuf,
        /// Image of the agent.
        #[arg(long, default_value = "helloworld-addon:latest")]
        image: String,
    },
    /// The agent on a managed cluster (in-cluster credentials for the cluster).
    Agent {
        /// This cluster's name on the hub.
        #[arg(long)]
        cluster_name: String,
        /// The addon's install namespace on this cluster.
        #[arg(long)]
        namespace: String,
        /// Where `helloworld-hub-kubeconfig` is mounted.
        #[arg(long, default_value = helloworld_addon::HUB_KUBECONFIG_DIR)]
        hub_kubeconfig_dir: PathBuf,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    ocm_runtime::telemetry::init("info");
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    match Cli::parse().command {
        Command::Manager { kubeconfig, image } => {
            let hub = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
                .await
                .with_context(|| format!("loading {}", kubeconfig.display()))?;
            AddonManager::new(hub)
                .with_addon(Arc::new(HelloWorld::new(image)))
                .run(shutdown)
                .await;
        }
        Command::Agent {
            cluster_name,
            namespace,
            hub_kubeconfig_dir,
        } => {
            let spoke = kube::Client::try_default()
                .await
                .context("in-cluster credentials")?;
            helloworld_addon::agent::run(
                RotatingHubClient::new(hub_kubeconfig_dir),
                spoke,
                cluster_name,
                namespace,
                shutdown,
            )
            .await;
        }
    }
    Ok(())
}

//! `ocm operator hub`: the ClusterManager operator (see `ocm_operator::cluster_manager`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use ocm_runtime::shutdown::Shutdown;

/// Flags of `ocm operator`.
#[derive(Debug, Args)]
pub struct OperatorArgs {
    #[command(subcommand)]
    command: OperatorCommand,
}

#[derive(Debug, Subcommand)]
enum OperatorCommand {
    /// Run the ClusterManager operator: installs the hub components a ClusterManager asks for.
    Hub(HubOperatorArgs),
}

/// Flags of `ocm operator hub`.
#[derive(Debug, Args)]
pub struct HubOperatorArgs {
    /// Kubeconfig of the hub cluster; without it, the in-cluster service account (or
    /// $KUBECONFIG).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The `ocm` image the hub components run (unless a ClusterManager names its own).
    #[arg(long)]
    image: String,
}

/// Runs `ocm operator …`.
pub async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    match args.command {
        OperatorCommand::Hub(hub) => run_hub(hub).await,
    }
}

async fn run_hub(args: HubOperatorArgs) -> anyhow::Result<()> {
    let client = super::hub::hub_client(args.kubeconfig.as_deref()).await?;
    // Its own API first: the ClusterManager CRD.
    let crds: Vec<_> = ocm_api::crds::hub()
        .into_iter()
        .filter(|c| {
            c.metadata.name.as_deref()
                == Some("clustermanagers.operator.open-cluster-management.io")
        })
        .collect();
    crate::embedded::install_crds(&client, &crds).await?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    println!("ocm operator hub running (image {})", args.image);
    ocm_operator::cluster_manager::controller::run(
        client,
        ocm_operator::cluster_manager::controller::OperatorOptions { image: args.image },
        shutdown,
    )
    .await;
    Ok(())
}

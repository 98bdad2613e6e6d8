//! `ocm operator hub`: the ClusterManager operator (see `ocm_operator::cluster_manager`);
//! `ocm operator klusterlet`: the Klusterlet operator (`ocm_operator::klusterlet`);
//! `ocm operator manifests --hub | --klusterlet`: their install manifests.

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
    /// Run the Klusterlet operator: installs the agents a Klusterlet asks for on this
    /// managed cluster.
    Klusterlet(HubOperatorArgs),
    /// Print an operator's install manifests (CRD, namespace, RBAC, Deployment) as YAML.
    Manifests(ManifestsArgs),
}

/// Flags of `ocm operator manifests`.
#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// The hub operator (ClusterManager).
    #[arg(
        long,
        required_unless_present = "klusterlet",
        conflicts_with = "klusterlet"
    )]
    hub: bool,
    /// The managed cluster's operator (Klusterlet).
    #[arg(long)]
    klusterlet: bool,
    /// The `ocm` image the operator (and the components it installs) run.
    #[arg(long)]
    image: String,
}

/// Flags of `ocm operator hub` and `ocm operator klusterlet`.
#[derive(Debug, Args)]
pub struct HubOperatorArgs {
    /// Kubeconfig of the cluster (the hub, or the managed cluster); without it, the
    /// in-cluster service account (or $KUBECONFIG).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The `ocm` image the components run (unless the ClusterManager or Klusterlet names its
    /// own).
    #[arg(long)]
    image: String,
}

/// Runs `ocm operator …`.
pub async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    match args.command {
        OperatorCommand::Hub(hub) => run_operator(Which::Hub, hub).await,
        OperatorCommand::Klusterlet(klusterlet) => {
            run_operator(Which::Klusterlet, klusterlet).await
        }
        OperatorCommand::Manifests(manifests) => print_manifests(&manifests),
    }
}

/// An operator's install manifests as multi-document YAML on stdout.
fn print_manifests(args: &ManifestsArgs) -> anyhow::Result<()> {
    let objects = if args.klusterlet {
        ocm_operator::manifests::klusterlet_operator(
            &args.image,
            serde_json::to_value(ocm_setup::operators::klusterlet_crd()?)?,
        )
    } else {
        ocm_operator::manifests::hub_operator(
            &args.image,
            serde_json::to_value(ocm_setup::operators::cluster_manager_crd()?)?,
        )
    };
    let mut out = String::new();
    for object in &objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object)?);
    }
    print!("{out}");
    Ok(())
}

/// Which operator `ocm operator` runs.
#[derive(Clone, Copy)]
enum Which {
    Hub,
    Klusterlet,
}

/// Runs an operator until SIGINT/SIGTERM, after installing its own CRD.
async fn run_operator(which: Which, args: HubOperatorArgs) -> anyhow::Result<()> {
    let client = ocm_agent::cluster_client(args.kubeconfig.as_deref()).await?;
    let (crd, name) = match which {
        Which::Hub => (ocm_setup::operators::cluster_manager_crd()?, "hub"),
        Which::Klusterlet => (ocm_setup::operators::klusterlet_crd()?, "klusterlet"),
    };
    crate::embedded::install_crds(&client, &[crd]).await?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    println!("ocm operator {name} running (image {})", args.image);
    let options = ocm_operator::OperatorOptions { image: args.image };
    match which {
        Which::Hub => {
            ocm_operator::cluster_manager::controller::run(client, options, shutdown).await;
        }
        Which::Klusterlet => {
            ocm_operator::klusterlet::controller::run(client, options, shutdown).await;
        }
    }
    Ok(())
}

//! `ocm operator hub`: the ClusterManager operator (see `ocm_operator::cluster_manager`);
//! `ocm operator manifests --hub`: its install manifests.

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
    /// Print an operator's install manifests (CRD, namespace, RBAC, Deployment) as YAML.
    Manifests(ManifestsArgs),
}

/// Flags of `ocm operator manifests`.
#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// The hub operator (ClusterManager); the only one so far.
    #[arg(long, required = true)]
    hub: bool,
    /// The `ocm` image the operator (and the components it installs) run.
    #[arg(long)]
    image: String,
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
        OperatorCommand::Manifests(manifests) => print_manifests(&manifests),
    }
}

/// Name of the ClusterManager CRD.
const CLUSTER_MANAGER_CRD: &str = "clustermanagers.operator.open-cluster-management.io";

/// The ClusterManager CRD.
fn cluster_manager_crd() -> anyhow::Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
> {
    ocm_api::crds::hub()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(CLUSTER_MANAGER_CRD))
        .ok_or_else(|| anyhow::anyhow!("the ClusterManager CRD is missing from ocm-api"))
}

/// The hub operator's install manifests as multi-document YAML on stdout.
fn print_manifests(args: &ManifestsArgs) -> anyhow::Result<()> {
    let objects = ocm_operator::manifests::hub_operator(
        &args.image,
        serde_json::to_value(cluster_manager_crd()?)?,
    );
    let mut out = String::new();
    for object in &objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object)?);
    }
    print!("{out}");
    Ok(())
}

async fn run_hub(args: HubOperatorArgs) -> anyhow::Result<()> {
    let client = super::hub::hub_client(args.kubeconfig.as_deref()).await?;
    // Its own API first: the ClusterManager CRD.
    crate::embedded::install_crds(&client, &[cluster_manager_crd()?]).await?;
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

//! `ocm get clusters|works|placements|decisions|addons`: hub objects with the columns kubectl
//! shows, or with `-o yaml|json` the objects themselves (see [`super::get_output`]).

use clap::{Args, Subcommand};
use kube::api::ListParams;
use ocm_api::cluster::v1::ManagedCluster;

use super::get_output::{OutputFlag, OutputFormat, Scope, get_and_print};

/// Flags of `ocm get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Managed clusters (`-o wide` adds their reported claims).
    Clusters {
        #[command(flatten)]
        hub: super::HubAccess,
        #[command(flatten)]
        output: OutputFlag,
    },
    /// ManifestWorks of a cluster (or of every cluster).
    Works(super::work::GetWorksArgs),
    /// Placements and how many clusters each selected.
    Placements(super::placement::GetPlacementsArgs),
    /// The clusters placements decided on.
    Decisions(super::placement::GetDecisionsArgs),
    /// ManagedClusterAddOns of a cluster (or of every cluster).
    Addons(super::addon::GetAddonsArgs),
}

/// Prints the objects.
pub async fn run(args: GetArgs) -> anyhow::Result<()> {
    match args.what {
        What::Clusters { hub, output } => get_clusters(&hub, output.output).await,
        What::Works(args) => super::work::get_works(args).await,
        What::Placements(args) => super::placement::get_placements(args).await,
        What::Decisions(args) => super::placement::get_decisions(args).await,
        What::Addons(args) => super::addon::get_addons(args).await,
    }
}

async fn get_clusters(hub: &super::HubAccess, output: Option<OutputFormat>) -> anyhow::Result<()> {
    let hub = hub.connect().await?;
    get_and_print::<ManagedCluster>(
        &hub.client,
        &Scope::All,
        &ListParams::default(),
        output,
        |clusters, style| {
            crate::clusters_table::render_with(clusters, jiff::Timestamp::now(), style.wide)
        },
        "No managed clusters found. Join one with `ocm init` and `ocm join`.",
    )
    .await
}

//! `ocm get clusters|works|placements|decisions|addons`: hub objects with the columns kubectl
//! shows.

use clap::{Args, Subcommand};
use kube::api::{Api, ListParams};
use ocm_api::cluster::v1::ManagedCluster;

/// Flags of `ocm get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Managed clusters.
    Clusters {
        #[command(flatten)]
        hub: super::HubAccess,
        /// `wide` adds the reported cluster claims (ClusterClaims and ClusterProperties).
        #[arg(short = 'o', long, value_parser = ["wide"])]
        output: Option<String>,
    },
    /// ManifestWorks of a cluster (or of every cluster).
    Works(super::work::GetWorksArgs),
    /// Placements and how many clusters each selected.
    Placements(super::placement::GetPlacementsArgs),
    /// The clusters a placement decided on.
    Decisions(super::placement::GetDecisionsArgs),
    /// ManagedClusterAddOns of a cluster (or of every cluster).
    Addons(super::addon::GetAddonsArgs),
}

/// Prints the table.
pub async fn run(args: GetArgs) -> anyhow::Result<()> {
    match args.what {
        What::Clusters { hub, output } => {
            let client = hub.client().await?;
            let api: Api<ManagedCluster> = Api::all(client);
            let list = api.list(&ListParams::default()).await?;
            if list.items.is_empty() {
                println!("No managed clusters. Join one with `ocm init` and `ocm join`.");
            } else {
                print!(
                    "{}",
                    crate::clusters_table::render_with(
                        &list.items,
                        jiff::Timestamp::now(),
                        output.as_deref() == Some("wide")
                    )
                );
            }
            Ok(())
        }
        What::Works(args) => super::work::get_works(args).await,
        What::Placements(args) => super::placement::get_placements(args).await,
        What::Decisions(args) => super::placement::get_decisions(args).await,
        What::Addons(args) => super::addon::get_addons(args).await,
    }
}

//! `ocm get clusters`: the hub's clusters with the columns kubectl shows.

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
    },
}

/// Prints the table.
pub async fn run(args: GetArgs) -> anyhow::Result<()> {
    match args.what {
        What::Clusters { hub } => {
            let client = hub.client().await?;
            let api: Api<ManagedCluster> = Api::all(client);
            let list = api.list(&ListParams::default()).await?;
            if list.items.is_empty() {
                println!("No managed clusters. Join one with `ocm init` and `ocm join`.");
            } else {
                print!(
                    "{}",
                    crate::clusters_table::render(&list.items, jiff::Timestamp::now())
                );
            }
            Ok(())
        }
    }
}

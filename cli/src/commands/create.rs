//! `ocm create work NAME --cluster C -f manifests.yaml`.

use clap::{Args, Subcommand};

/// Flags of `ocm create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// A ManifestWork for one cluster from a file of manifests.
    Work(super::work::CreateWorkArgs),
}

/// Creates the object.
pub async fn run(args: CreateArgs) -> anyhow::Result<()> {
    match args.what {
        What::Work(args) => super::work::create_work(args).await,
    }
}

//! `ocm accept --clusters a,b`: approves the clusters' pending CSRs and sets hubAcceptsClient.

use std::time::Duration;

use anyhow::Context;
use clap::Args;

/// Flags of `ocm accept`.
#[derive(Debug, Args)]
pub struct AcceptArgs {
    #[command(flatten)]
    hub: super::HubAccess,
    /// Clusters to accept (comma separated).
    #[arg(long, short = 'c', value_delimiter = ',', required = true)]
    clusters: Vec<String>,
    /// Wait (up to --timeout seconds) for each cluster to ask to join.
    #[arg(long)]
    wait: bool,
    /// Seconds to wait with --wait.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Approve even when several identities ask for one cluster, or when the request does not
    /// come from a bootstrap identity (a cluster bootstrapped with a hub admin's kubeconfig);
    /// the request must still name an agent of the cluster.
    #[arg(long)]
    skip_approve_check: bool,
}

/// Accepts each cluster; fails on the first that cannot be accepted.
pub async fn run(args: AcceptArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    for cluster in &args.clusters {
        let accepted = if args.wait {
            tokio::time::timeout(
                Duration::from_secs(args.timeout),
                crate::accept::accept_when_asked(&client, cluster, args.skip_approve_check),
            )
            .await
            .with_context(|| {
                format!(
                    "cluster {cluster:?} did not ask to join within {}s",
                    args.timeout
                )
            })??
        } else {
            crate::accept::accept_cluster(&client, cluster, args.skip_approve_check).await?
        };
        for csr in &accepted.approved_csrs {
            println!("CSR {csr} approved");
        }
        if accepted.accepted_now {
            println!("cluster {cluster} accepted");
        } else {
            println!("cluster {cluster} was already accepted");
        }
    }
    Ok(())
}

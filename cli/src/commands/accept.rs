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
    /// Seconds to wait with --wait, and for the hub to make each accepted cluster's namespace.
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
        wait_for_cluster_namespace(&client, cluster, Duration::from_secs(args.timeout)).await;
    }
    Ok(())
}

/// Waits until the hub has made `cluster`'s namespace, which it does once the cluster is
/// accepted: a script's next step (enabling an addon, creating a ManifestWork) writes there.
/// Only warns when it does not come within `timeout` (the hub's registration controller not
/// running) or when these credentials may not watch namespaces: the acceptance itself is done.
async fn wait_for_cluster_namespace(client: &kube::Client, cluster: &str, timeout: Duration) {
    use k8s_openapi::api::core::v1::Namespace;
    let namespaces: kube::Api<Namespace> = kube::Api::all(client.clone());
    let made =
        kube::runtime::wait::await_condition(namespaces, cluster, |ns: Option<&Namespace>| {
            ns.is_some()
        });
    match tokio::time::timeout(timeout, made).await {
        Ok(Ok(_)) => {}
        Ok(Err(err)) => {
            tracing::debug!(%err, cluster, "not waiting for the cluster namespace");
        }
        Err(_) => eprintln!(
            "warning: the hub has not made namespace {cluster} within {}s of accepting the \
             cluster (is its registration controller running?)",
            timeout.as_secs()
        ),
    }
}

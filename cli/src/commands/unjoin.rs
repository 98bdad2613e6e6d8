//! `ocm unjoin`: removes the registration agent's namespace and credentials from a managed
//! cluster. The hub keeps the ManagedCluster; its admin deletes it (`kubectl delete
//! managedcluster NAME`) or denies it (`hubAcceptsClient: false`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams};

/// Flags of `ocm unjoin`.
#[derive(Debug, Args)]
pub struct UnjoinArgs {
    /// Name of this cluster on the hub.
    #[arg(long)]
    cluster_name: String,
    /// Kubeconfig of the managed cluster (default: the simulated cluster's under
    /// ~/.ocm/clusters/<cluster-name>).
    #[arg(long)]
    spoke_kubeconfig: Option<PathBuf>,
}

/// Deletes the agent namespace (and with it the bootstrap and hub kubeconfig secrets).
pub async fn run(args: UnjoinArgs) -> anyhow::Result<()> {
    super::agent_flags::check_cluster_name(&args.cluster_name)?;
    let path = args.spoke_kubeconfig.clone().unwrap_or_else(|| {
        super::ocm_home()
            .join("clusters")
            .join(&args.cluster_name)
            .join("admin.kubeconfig")
    });
    let spoke = ocm_runtime::kubeconfig::client_from_file(&path)
        .await
        .with_context(|| format!("loading {}", path.display()))?;
    let namespaces: Api<Namespace> = Api::all(spoke);
    match namespaces
        .delete(ocm_hub::join::AGENT_NAMESPACE, &DeleteParams::default())
        .await
    {
        Ok(_) => println!(
            "removed namespace {} (agent credentials) from the managed cluster",
            ocm_hub::join::AGENT_NAMESPACE
        ),
        Err(kube::Error::Api(s)) if s.code == 404 => println!("nothing to remove: not joined"),
        Err(err) => return Err(err).context("deleting the agent namespace"),
    }
    println!(
        "on the hub, the admin can now remove the cluster: kubectl delete managedcluster {}",
        args.cluster_name
    );
    Ok(())
}

//! `ocm unjoin`: removes the registration agent's namespace and credentials from a managed
//! cluster. The hub keeps the ManagedCluster; its admin deletes it (`kubectl delete
//! managedcluster NAME`) or denies it (`hubAcceptsClient: false`).

use std::path::{Path, PathBuf};

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
    /// Kubeconfig of the managed cluster (default: the simulated cluster's, that
    /// `ocm join --simulated` keeps under ~/.ocm/clusters/<cluster-name> or
    /// `ocm demo --operator` under ~/.ocm/demo-operator/clusters/<cluster-name>).
    #[arg(long)]
    spoke_kubeconfig: Option<PathBuf>,
}

/// The admin kubeconfigs of a simulated cluster named `cluster`, where `ocm join --simulated`
/// and `ocm demo --operator` keep them under `home`.
fn simulated_cluster_kubeconfigs(home: &Path, cluster: &str) -> [PathBuf; 2] {
    [
        home.join("clusters").join(cluster).join("admin.kubeconfig"),
        home.join(super::hub_access::OPERATOR_DEMO_DIR)
            .join("clusters")
            .join(cluster)
            .join("admin.kubeconfig"),
    ]
}

/// The managed cluster's kubeconfig: the flag, else the first simulated cluster's that
/// exists; the error names the places looked at.
fn spoke_kubeconfig(args: &UnjoinArgs, home: &Path) -> anyhow::Result<PathBuf> {
    if let Some(path) = &args.spoke_kubeconfig {
        return Ok(path.clone());
    }
    let candidates = simulated_cluster_kubeconfigs(home, &args.cluster_name);
    if let Some(found) = candidates.iter().find(|p| p.exists()) {
        return Ok(found.clone());
    }
    let looked_at: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    anyhow::bail!(
        "no kubeconfig of cluster {} found (looked at {}); pass --spoke-kubeconfig FILE \
         (the clusters of `ocm demo` live inside its process and leave with it)",
        args.cluster_name,
        looked_at.join(", ")
    )
}

/// Deletes the agent namespace (and with it the bootstrap and hub kubeconfig secrets).
pub async fn run(args: UnjoinArgs) -> anyhow::Result<()> {
    super::agent_flags::check_cluster_name(&args.cluster_name)?;
    let path = spoke_kubeconfig(&args, &super::ocm_home())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spoke_kubeconfig_is_the_flag_else_a_simulated_clusters() {
        let home = tempfile::tempdir().unwrap();
        let args = |flag: Option<&str>| UnjoinArgs {
            cluster_name: "cluster1".into(),
            spoke_kubeconfig: flag.map(PathBuf::from),
        };
        assert_eq!(
            spoke_kubeconfig(&args(Some("/k")), home.path()).unwrap(),
            PathBuf::from("/k")
        );
        let err = spoke_kubeconfig(&args(None), home.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("clusters/cluster1/admin.kubeconfig"), "{err}");
        assert!(err.contains("demo-operator/clusters/cluster1"), "{err}");
        let operator_demo = &simulated_cluster_kubeconfigs(home.path(), "cluster1")[1];
        std::fs::create_dir_all(operator_demo.parent().unwrap()).unwrap();
        std::fs::write(operator_demo, "").unwrap();
        assert_eq!(
            spoke_kubeconfig(&args(None), home.path()).unwrap(),
            *operator_demo
        );
    }
}

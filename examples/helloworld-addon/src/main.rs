//! `helloworld-addon manager` runs the addon's hub side next to a hub; `helloworld-addon agent`
//! is what its Deployment runs on each managed cluster; `helloworld-addon cleanup` removes what
//! the agent copied there (what a pre-delete Job runs).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use helloworld_addon::HelloWorld;
use ocm_addon_framework::agent_helpers::RotatingHubClient;
use ocm_addon_framework::manager::AddonManager;
use ocm_runtime::shutdown::Shutdown;

/// The helloworld addon.
#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The addon's hub side (install, register, health) against the hub in `--kubeconfig`.
    Manager {
        /// Kubeconfig of the hub.
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: PathBuf,
        /// Image of the agent.
        #[arg(long, default_value = "helloworld-addon:latest")]
        image: String,
    },
    /// The agent on a managed cluster (in-cluster credentials for the cluster). Upstream's
    /// example agent's flags (`--addon-namespace`, `--addon-name`, `--hub-kubeconfig`) are
    /// understood too, so templates written for it run this agent unchanged.
    Agent {
        /// This cluster's name on the hub.
        #[arg(long)]
        cluster_name: String,
        /// The addon's install namespace on this cluster.
        #[arg(long, alias = "addon-namespace")]
        namespace: String,
        /// The addon's name: the Lease the agent renews in its namespace.
        #[arg(long, default_value = helloworld_addon::ADDON_NAME)]
        addon_name: String,
        /// Where `<addon>-hub-kubeconfig` is mounted.
        #[arg(long, default_value = helloworld_addon::HUB_KUBECONFIG_DIR)]
        hub_kubeconfig_dir: PathBuf,
        /// The hub kubeconfig file in the mounted secret (its folder is the mount: takes the
        /// place of --hub-kubeconfig-dir).
        #[arg(long, conflicts_with = "hub_kubeconfig_dir")]
        hub_kubeconfig: Option<PathBuf>,
    },
    /// Deletes the ConfigMaps the agent copied into its namespace on this cluster (in-cluster
    /// credentials, or `KUBECONFIG`), as upstream's example image's `cleanup` does in the
    /// addon's pre-delete Job.
    Cleanup {
        /// The addon's install namespace on this cluster.
        #[arg(long, alias = "addon-namespace")]
        namespace: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    ocm_runtime::telemetry::init("info");
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    match Cli::parse().command {
        Command::Manager { kubeconfig, image } => {
            let hub = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
                .await
                .with_context(|| format!("loading {}", kubeconfig.display()))?;
            AddonManager::new(hub)
                .with_addon(Arc::new(HelloWorld::new(image)))
                .run(shutdown)
                .await;
        }
        Command::Agent {
            cluster_name,
            namespace,
            addon_name,
            hub_kubeconfig_dir,
            hub_kubeconfig,
        } => {
            let dir = match hub_kubeconfig {
                Some(file) => file
                    .parent()
                    .map(PathBuf::from)
                    .with_context(|| format!("{} names no folder", file.display()))?,
                None => hub_kubeconfig_dir,
            };
            let spoke = kube::Client::try_default()
                .await
                .context("in-cluster credentials")?;
            helloworld_addon::agent::run(
                RotatingHubClient::new(dir),
                spoke,
                cluster_name,
                namespace,
                addon_name,
                shutdown,
            )
            .await;
        }
        Command::Cleanup { namespace } => {
            let spoke = kube::Client::try_default()
                .await
                .context("in-cluster credentials")?;
            let deleted = helloworld_addon::agent::cleanup(&spoke, &namespace)
                .await
                .with_context(|| format!("deleting the copies in {namespace}"))?;
            tracing::info!(
                namespace,
                deleted,
                "removed the ConfigMaps the agent copied"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn the_agent_takes_upstream_example_agent_flags() {
        let cli = Cli::try_parse_from([
            "helloworld-addon",
            "agent",
            "--cluster-name=c1",
            "--addon-namespace=open-cluster-management-agent-addon",
            "--addon-name=hello-template",
            "--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig",
        ])
        .unwrap();
        let Command::Agent {
            cluster_name,
            namespace,
            addon_name,
            hub_kubeconfig,
            ..
        } = cli.command
        else {
            panic!("not the agent: {cli:?}");
        };
        assert_eq!(cluster_name, "c1");
        assert_eq!(namespace, "open-cluster-management-agent-addon");
        assert_eq!(addon_name, "hello-template");
        assert_eq!(
            hub_kubeconfig,
            Some(PathBuf::from("/managed/hub-kubeconfig/kubeconfig"))
        );
        // Upstream's pre-delete Job: `/helloworld_helm cleanup --addon-namespace=<ns>`, the
        // first word standing for this executable.
        let cli = Cli::try_parse_from([
            "helloworld-addon",
            "cleanup",
            "--addon-namespace=open-cluster-management-agent-addon",
        ])
        .unwrap();
        let Command::Cleanup { namespace } = cli.command else {
            panic!("not the cleanup: {cli:?}");
        };
        assert_eq!(namespace, "open-cluster-management-agent-addon");
        // The two ways of naming the credentials exclude each other.
        assert!(
            Cli::try_parse_from([
                "helloworld-addon",
                "agent",
                "--cluster-name=c1",
                "--namespace=ns",
                "--hub-kubeconfig=/a/kubeconfig",
                "--hub-kubeconfig-dir=/b",
            ])
            .is_err()
        );
    }
}

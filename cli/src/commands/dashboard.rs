//! `ocm dashboard`: serves the fleet's web page with the user's kubeconfig (or, in a pod,
//! with `--in-cluster`, as its service account), and the `--dashboard-listen` /
//! `--no-dashboard` flags with which `ocm hub` and `ocm demo` (with or without `--kubeconfig`
//! and `--operator`) serve it too.

use std::net::SocketAddr;

use anyhow::Context;
use clap::Args;
use ocm_dashboard::Dashboard;
use ocm_runtime::shutdown::Shutdown;

/// The port the dashboard tries first.
pub const DEFAULT_PORT: u16 = 8090;

/// Flags of `ocm dashboard`.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    #[command(flatten)]
    hub: super::HubAccess,
    /// Address to serve on (default 127.0.0.1:8090, else a free port). Anyone who can reach
    /// it acts on the hub as the kubeconfig's user: keep it on loopback unless you mean it.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Act as this pod's service account (the in-cluster configuration, or $KUBECONFIG as
    /// Kubernetes clients read it) instead of looking for a hub: what the ClusterManager's
    /// dashboard Deployment runs.
    #[arg(long, conflicts_with = "kubeconfig")]
    in_cluster: bool,
}

/// The dashboard flags of `ocm hub` and `ocm demo` (embedded or not).
#[derive(Clone, Debug, Default, Args)]
pub struct DashboardFlags {
    /// Address the dashboard listens on (default 127.0.0.1:8090, else a free port).
    #[arg(long)]
    pub dashboard_listen: Option<SocketAddr>,
    /// Do not serve the dashboard.
    #[arg(long)]
    pub no_dashboard: bool,
}

impl DashboardFlags {
    /// Starts the dashboard with `client` unless `--no-dashboard`.
    pub async fn start(
        &self,
        client: kube::Client,
        shutdown: &Shutdown,
    ) -> anyhow::Result<Option<Dashboard>> {
        if self.no_dashboard {
            return Ok(None);
        }
        Ok(Some(start(client, self.dashboard_listen, shutdown).await?))
    }
}

/// The addresses to try: the flag, else the default port on loopback, else a free one.
pub fn addresses(listen: Option<SocketAddr>) -> Vec<SocketAddr> {
    match listen {
        Some(address) => vec![address],
        None => vec![
            SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            SocketAddr::from(([127, 0, 0, 1], 0)),
        ],
    }
}

/// Starts a dashboard, warning when it is reachable from other machines.
pub async fn start(
    client: kube::Client,
    listen: Option<SocketAddr>,
    shutdown: &Shutdown,
) -> anyhow::Result<Dashboard> {
    let dashboard = Dashboard::start(client, &addresses(listen), shutdown.clone())
        .await
        .context("starting the dashboard")?;
    if !dashboard.local_addr.ip().is_loopback() {
        eprintln!(
            "warning: the dashboard listens on {}: whoever reaches it acts on the hub with these credentials",
            dashboard.local_addr
        );
    }
    Ok(dashboard)
}

/// Serves the dashboard until Ctrl-C.
pub async fn run(args: DashboardArgs) -> anyhow::Result<()> {
    let (client, acting_as) = if args.in_cluster {
        let client = ocm_agent::cluster_client(None).await?;
        (client, "this pod's service account".to_owned())
    } else {
        let hub = args.hub.connect().await?;
        let files: Vec<String> = hub.files.iter().map(|f| f.display().to_string()).collect();
        (hub.client, format!("the user of {}", files.join(", ")))
    };
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let dashboard = start(client, args.listen, &shutdown).await?;
    println!("ocm dashboard: {}", dashboard.url);
    println!("  as {acting_as} (the hub's RBAC decides what it shows and allows); Ctrl-C to stop");
    shutdown.cancelled().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_loopback_8090_then_a_free_port() {
        assert_eq!(
            addresses(None),
            [
                "127.0.0.1:8090".parse::<SocketAddr>().unwrap(),
                "127.0.0.1:0".parse().unwrap(),
            ]
        );
        let given: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(addresses(Some(given)), [given]);
    }

    /// `ocm` parsing `args`.
    fn parses(args: &[&str]) -> bool {
        use clap::Parser;
        super::super::Cli::try_parse_from(std::iter::once("ocm").chain(args.iter().copied()))
            .is_ok()
    }

    #[test]
    fn the_operators_dashboard_command_lines_parse() {
        use ocm_operator::cluster_manager::render::{RenderInput, render};
        for spec in [
            serde_json::json!({}),
            serde_json::json!({"deployOption": {"mode": "Hosted"}}),
        ] {
            let cm = serde_json::from_value(serde_json::json!({
                "apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
                "metadata": {"name": "cluster-manager", "annotations": {
                    "operator.open-cluster-management.io/dashboard": "enabled"}},
                "spec": spec}))
            .unwrap();
            let objects = render(&RenderInput {
                cluster_manager: &cm,
                image: "ocm:test",
                control_plane_nodes: 1,
            });
            let deployment = objects
                .iter()
                .find(|o| o["metadata"]["name"] == "cluster-manager-dashboard")
                .unwrap();
            let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|a| a.as_str())
                .collect();
            assert!(parses(&args), "{args:?}");
        }
        assert!(!parses(&["dashboard", "--in-cluster", "--kubeconfig", "x"]));
    }
}

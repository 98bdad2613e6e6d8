//! What both demos (`ocm demo` and `ocm demo --operator`) share: the clusters' names, the
//! printed steps, the hub's listen address and the dashboard.

use std::net::SocketAddr;
use std::path::Path;

use ocm_dashboard::Dashboard;
use ocm_runtime::shutdown::Shutdown;

use super::dashboard::DashboardFlags;

/// Names of the demo's simulated clusters.
pub fn cluster_names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("cluster{i}")).collect()
}

/// Prints a demo step's heading.
pub fn step(text: &str) {
    println!();
    println!("==> {text}");
}

/// The hub's listen address: the flag, else the previous run's (kept in `<data_dir>/listen`),
/// else a free port.
pub fn listen_address(data_dir: &Path, flag: Option<SocketAddr>) -> SocketAddr {
    if let Some(addr) = flag {
        return addr;
    }
    std::fs::read_to_string(data_dir.join("listen"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)))
}

/// Starts the dashboard with the hub's admin client (unless `--no-dashboard`) and says where
/// it is.
pub async fn start_dashboard(
    flags: &DashboardFlags,
    admin: &kube::Client,
    shutdown: &Shutdown,
) -> anyhow::Result<Option<Dashboard>> {
    let dashboard = flags.start(admin.clone(), shutdown).await?;
    if let Some(dashboard) = &dashboard {
        println!(
            "    dashboard:      {} (open it now and watch the clusters join)",
            dashboard.url
        );
    }
    Ok(dashboard)
}

/// The dashboard's line under "Try it alongside:".
pub fn suggest_dashboard(dashboard: Option<&Dashboard>) {
    if let Some(dashboard) = dashboard {
        println!("    open {} in a browser", dashboard.url);
    }
}

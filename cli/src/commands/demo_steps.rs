//! What both demos (`ocm demo` and `ocm demo --operator`) and the benchmarks share: the
//! clusters' names, the printed steps, the hub's listen address, and the wait until every
//! cluster is Joined and Available.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::backoff::WatchBackoffExt;

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

/// Waits until every cluster in `names` is Joined and Available.
pub async fn wait_all_available(
    clusters: &Api<ManagedCluster>,
    names: &[String],
) -> anyhow::Result<()> {
    let mut stream = watcher(clusters.clone(), watcher::Config::default())
        .backoff_on_errors()
        .applied_objects()
        .boxed();
    let mut ready: BTreeMap<String, bool> = names.iter().map(|n| (n.clone(), false)).collect();
    if ready.is_empty() {
        return Ok(());
    }
    while let Some(event) = stream.next().await {
        let Ok(cluster) = event else { continue };
        let name = cluster.metadata.name.clone().unwrap_or_default();
        if let Some(flag) = ready.get_mut(&name) {
            *flag = crate::clusters_table::joined_and_available(&cluster);
        }
        if ready.values().all(|r| *r) {
            return Ok(());
        }
    }
    anyhow::bail!("lost the watch on the hub")
}

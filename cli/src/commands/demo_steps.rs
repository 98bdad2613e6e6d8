//! What both demos (`ocm demo` and `ocm demo --operator`) share: the clusters' names, the
//! printed steps and the hub's listen address.

use std::net::SocketAddr;
use std::path::Path;

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

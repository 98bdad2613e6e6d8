//! What the process kubelet records of a pod's running process, in the pod's folder: the
//! executable and environment an exec in it runs with, and where its container ports listen
//! on this machine (for port-forward). Written by the supervisor while the process runs, read
//! by the exec, attach, log-follow and port-forward endpoints.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

/// File in a pod's folder naming its running process's executable and environment.
pub(super) const PROCESS_FILE: &str = "process.json";

/// Records, while a pod's process runs, what an exec in it runs with and where its container
/// ports listen on this machine (`ports`: container port → local port), for port-forward.
pub fn record(
    pod_dir: &Path,
    executable: &Path,
    env: &[(String, String)],
    ports: &BTreeMap<i64, u16>,
) -> std::io::Result<()> {
    let ports: serde_json::Map<String, Value> = ports
        .iter()
        .map(|(port, local)| (port.to_string(), json!(local)))
        .collect();
    let value = json!({"executable": executable, "env": env, "ports": ports});
    std::fs::write(pod_dir.join(PROCESS_FILE), value.to_string())
}

/// Where the container ports of a pod's running process listen (container port → local
/// port); `None` when no process runs.
pub fn recorded_ports(pod_dir: &Path) -> Option<BTreeMap<u16, u16>> {
    let text = std::fs::read_to_string(pod_dir.join(PROCESS_FILE)).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    let ports = value["ports"].as_object().cloned().unwrap_or_default();
    Some(
        ports
            .iter()
            .filter_map(|(port, local)| {
                Some((port.parse().ok()?, u16::try_from(local.as_u64()?).ok()?))
            })
            .collect(),
    )
}

/// Whether a pod's process is recorded as running.
pub fn is_recorded(pod_dir: &Path) -> bool {
    pod_dir.join(PROCESS_FILE).is_file()
}

/// Forgets the record of a pod's process once it has ended.
pub fn forget(pod_dir: &Path) {
    let _ = std::fs::remove_file(pod_dir.join(PROCESS_FILE));
}

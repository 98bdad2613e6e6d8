//! A process kubelet for a simulated managed cluster: the cluster's pods of the `ocm` image
//! run as this machine's `ocm` (and `ocm-agent`) processes, as `ocm demo --operator` and the
//! operator benchmark run them.

use std::path::Path;

use anyhow::Context;
use ocm_hub::process_kubelet::{
    DEFAULT_SYNC_PERIOD, DEFAULT_TOKEN_REFRESH, LocalImage, ProcessKubeletOptions, agent_beside,
    run as run_kubelet,
};
use ocm_hub::simulated::SimulatedCluster;
use ocm_runtime::shutdown::Shutdown;

/// Starts a process kubelet for `cluster`, running the `ocm` image as this executable and
/// each of `local_images` as its executable.
pub fn start_kubelet(
    cluster: &SimulatedCluster,
    image: &str,
    local_images: &[LocalImage],
    dir: &Path,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&cluster.kubeconfig)?;
    let server = ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(&text)?)?;
    let binary = std::env::current_exe().context("finding the ocm executable")?;
    let options = ProcessKubeletOptions {
        agent_binary: agent_beside(&binary),
        binary,
        images: vec![image.to_owned()],
        local_images: local_images.to_vec(),
        work_dir: dir.join("pods"),
        server,
        node_name: "node-1".into(),
        echo_logs: false,
        sync_period: DEFAULT_SYNC_PERIOD,
        token_refresh: DEFAULT_TOKEN_REFRESH,
    };
    tokio::spawn(run_kubelet(cluster.client(), options, shutdown.child()));
    Ok(())
}

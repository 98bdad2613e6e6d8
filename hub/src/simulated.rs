//! Simulated managed clusters: an embedded API server (or a logical cluster on one) that
//! plays the part of a managed cluster, with the klusterlet CRDs installed and a few Nodes
//! whose capacity the agent reports.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, PostParams};
use ocm_apiserver::serve::Serving;
use ocm_apiserver::tls::{TlsMaterial, write_file};
use ocm_apiserver::{ApiServer, ApiServerConfig};
use serde_json::json;

/// How long after a change the workload simulator reports a workload as settled.
pub const READY_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// Nodes a simulated cluster starts with: name, CPU cores, memory.
const SIMULATED_NODES: [(&str, &str, &str); 2] = [("node-1", "4", "16Gi"), ("node-2", "4", "16Gi")];

/// Installs the klusterlet CRDs and, when the cluster has no Node yet, the simulated Nodes.
#[inline(never)]
pub fn prepare(spoke: &kube::Client) -> futures::future::BoxFuture<'_, anyhow::Result<()>> {
    Box::pin(prepare_body(spoke))
}

async fn prepare_body(spoke: &kube::Client) -> anyhow::Result<()> {
    crate::embedded::install_crds(spoke, &crate::join::klusterlet_crds()?).await?;
    let nodes: Api<Node> = Api::all(spoke.clone());
    if !nodes
        .list(&ListParams::default().limit(1))
        .await
        .context("listing nodes")?
        .items
        .is_empty()
    {
        return Ok(());
    }
    for (name, cpu, memory) in SIMULATED_NODES {
        let resources = json!({"cpu": cpu, "memory": memory, "pods": "110"});
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        }))?;
        nodes
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("creating node {name}"))?;
        let status = json!({"status": {
            "capacity": resources, "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "simulated kubelet is posting ready status"}],
            "nodeInfo": {"kubeletVersion": ocm_apiserver::version::git_version(), "architecture": "amd64",
                         "operatingSystem": "linux", "bootID": "", "containerRuntimeVersion": "",
                         "kernelVersion": "", "kubeProxyVersion": "", "machineID": "",
                         "osImage": "ocm simulated", "systemUUID": ""},
        }});
        nodes
            .patch_status(name, &Default::default(), &kube::api::Patch::Merge(status))
            .await
            .with_context(|| format!("setting status of node {name}"))?;
    }
    Ok(())
}

/// The logical cluster of `server` that plays managed cluster `name`.
pub fn logical_cluster_name(name: &str) -> String {
    format!("managed-{name}")
}

/// Creates (or resumes) the logical cluster of `server` that plays managed cluster `name`,
/// prepared with [`prepare`]; returns an admin client of it.
pub async fn logical_spoke(server: &ApiServer, name: &str) -> anyhow::Result<kube::Client> {
    let logical = logical_cluster_name(name);
    server
        .ensure_cluster(&logical)
        .await
        .map_err(|e| anyhow::anyhow!("creating simulated cluster {name} ({logical}): {e}"))?;
    server.simulate_workloads(&logical, READY_AFTER);
    let spoke = kube::Client::new(server.service_for_cluster(&logical), "default");
    prepare(&spoke).await?;
    Ok(spoke)
}

/// A simulated managed cluster served over TLS from its own data directory.
pub struct SimulatedCluster {
    /// The server.
    pub server: ApiServer,
    /// Its admin kubeconfig (in the data dir).
    pub kubeconfig: PathBuf,
    /// `https://host:port`.
    pub url: String,
    serving: Serving,
}

impl SimulatedCluster {
    /// Starts (or resumes) the cluster stored in `data_dir`, listening on `listen`.
    #[inline(never)]
    pub fn start(
        data_dir: &Path,
        listen: SocketAddr,
    ) -> futures::future::BoxFuture<'_, anyhow::Result<SimulatedCluster>> {
        Box::pin(Self::start_body(data_dir, listen))
    }

    async fn start_body(data_dir: &Path, listen: SocketAddr) -> anyhow::Result<SimulatedCluster> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let tls = TlsMaterial::load_or_create(&data_dir.join("pki"), &[])?;
        let server = ApiServer::start(ApiServerConfig {
            data_dir: Some(data_dir.to_owned()),
            advertise_address: listen.to_string(),
            client_ca: Some(tls.ca_cert.clone()),
            serving_ca: Some(tls.ca_cert.clone()),
            client_ca_key: Some(tls.ca_key.clone()),
            ..ApiServerConfig::default()
        })
        .await?;
        server.simulate_workloads("", READY_AFTER);
        let serving =
            ocm_apiserver::serve::serve_tls(server.clone(), listen, tls.server_config()?).await?;
        let url = format!("https://127.0.0.1:{}", serving.local_addr.port());
        let kubeconfig = data_dir.join("admin.kubeconfig");
        write_file(&kubeconfig, &tls.admin_kubeconfig(&url), true)?;
        prepare(&kube::Client::new(server.service(), "default")).await?;
        Ok(SimulatedCluster {
            server,
            kubeconfig,
            url,
            serving,
        })
    }

    /// An admin client (in-process).
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.server.service(), "default")
    }

    /// Stops serving.
    pub async fn stop(self) {
        self.serving.shutdown().await;
        self.server.shutdown();
    }
}

//! The kubelet's HTTP endpoint: logs (`/containerLogs/…`, [`super::logs`]), `/exec/…` and
//! `/attach/…` ([`super::exec`]) and `/portForward/…` ([`super::portforward`]). It listens on
//! a free loopback port over plain HTTP, and the kubelet's Node names it
//! (`status.daemonEndpoints.kubeletEndpoint.Port`, address `InternalIP` 127.0.0.1), which is
//! where the API server looks for a pod's kubelet. The Node also lists the images the kubelet
//! runs (`status.images`).

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use http::Request;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_runtime::accept::accept_until;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use super::logs::Answer;
use super::stdin::Stdins;

/// Sends a request to the endpoint that serves its path.
fn answer(work_dir: &Path, stdins: &Stdins, req: Request<Incoming>) -> Answer {
    let path = req.uri().path();
    if path.starts_with("/exec/") || path.starts_with("/attach/") {
        return super::exec::answer(work_dir, stdins, req).map(BodyExt::boxed_unsync);
    }
    if path.starts_with("/portForward/") {
        return super::portforward::answer(work_dir, req).map(BodyExt::boxed_unsync);
    }
    super::logs::answer(work_dir, req)
}

/// Serves the endpoint on a free loopback port until `shutdown`; returns the port. Attach
/// sessions write to the pod processes' stdins kept in `stdins`.
pub async fn serve(work_dir: PathBuf, stdins: Stdins, shutdown: Shutdown) -> std::io::Result<u16> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(accept_until(
        "process kubelet",
        listener,
        shutdown,
        move |stream, _| {
            let work_dir = work_dir.clone();
            let stdins = stdins.clone();
            async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let response = answer(&work_dir, &stdins, req);
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
            }
        },
    ));
    Ok(port)
}

/// Makes the Node `node` name this kubelet's endpoint, when it serves one, and list the images
/// it runs (`status.images`, as a kubelet lists the images it has; see
/// [`super::ProcessKubeletOptions::node_images`]), creating the Node if missing.
pub async fn register_node(
    client: &kube::Client,
    node: &str,
    port: Option<u16>,
    images: serde_json::Value,
) -> Result<(), kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    if nodes.get_opt(node).await?.is_none() {
        let object: Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}},
        }))
        .map_err(kube::Error::SerdeError)?;
        match nodes.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    let mut status = json!({"status": {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                      {"type": "Hostname", "address": node}],
        "images": images,
    }});
    if let Some(port) = port {
        status["status"]["daemonEndpoints"] = json!({"kubeletEndpoint": {"Port": port}});
    }
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

//! What joining needs on the managed cluster's side, shared by `ocm join`, simulated fleets and
//! tests: the bootstrap kubeconfig (hub URL, CA and token) and preparing a managed cluster for
//! its registration agent (klusterlet CRDs, agent namespace, bootstrap secret).

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use ocm_runtime::kubeconfig::{KubeconfigAuth, KubeconfigSpec, ServerInfo};
use serde_json::json;

/// Namespace of the registration agent on the managed cluster.
pub const AGENT_NAMESPACE: &str = "open-cluster-management-agent";

/// Secret holding the bootstrap kubeconfig on the managed cluster.
pub const BOOTSTRAP_SECRET: &str = "bootstrap-hub-kubeconfig";

/// The bootstrap kubeconfig: hub URL and CA, authenticating with the token.
pub fn bootstrap_kubeconfig(url: &str, ca_pem: &str, token: &str) -> String {
    ocm_runtime::kubeconfig::render(&KubeconfigSpec {
        server: ServerInfo {
            server: url.to_owned(),
            ca_pem: Some(ca_pem.to_owned()),
            proxy_url: None,
        },
        auth: KubeconfigAuth::Token(token.to_owned()),
        context: "bootstrap".into(),
        user: "bootstrap".into(),
        namespace: None,
    })
}

/// The klusterlet CRDs, generated from the API types once per process: a fleet prepares
/// thousands of simulated clusters, and generating the schemas was a tenth of that work.
pub(crate) fn klusterlet_crds() -> &'static [CustomResourceDefinition] {
    static CRDS: std::sync::LazyLock<Vec<CustomResourceDefinition>> =
        std::sync::LazyLock::new(ocm_api::crds::klusterlet);
    &CRDS
}

/// Installs what the agent needs on the managed cluster: klusterlet CRDs, the agent namespace
/// and the bootstrap kubeconfig Secret.
pub async fn prepare_spoke(spoke: &kube::Client, bootstrap_kubeconfig: &str) -> anyhow::Result<()> {
    crate::embedded::install_crds(spoke, klusterlet_crds()).await?;
    crate::embedded::ensure_namespace(spoke, AGENT_NAMESPACE).await?;
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": BOOTSTRAP_SECRET, "namespace": AGENT_NAMESPACE},
        "type": "Opaque",
        "stringData": {"kubeconfig": bootstrap_kubeconfig},
    }))?;
    Api::<Secret>::namespaced(spoke.clone(), AGENT_NAMESPACE)
        .patch(
            BOOTSTRAP_SECRET,
            &PatchParams::apply("ocm-join").force(),
            &Patch::Apply(&secret),
        )
        .await
        .context("writing the bootstrap kubeconfig secret on the managed cluster")?;
    Ok(())
}

//! What joining needs on the managed cluster's side, shared by `ocm join`, simulated fleets and
//! tests: the bootstrap kubeconfig (hub URL, CA and token) and preparing a managed cluster for
//! its registration agent (klusterlet CRDs, agent namespace, bootstrap secret).

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
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

/// The klusterlet CRDs as checked in ([`ocm_api::crds::stored`]), read from the embedded
/// text at each use (20 KB of JSON: cheaper than keeping them parsed in every joined process,
/// and than generating the schemas from the API types, which a fleet preparing thousands of
/// clusters once spent a tenth of its work on).
pub(crate) fn klusterlet_crds() -> anyhow::Result<Vec<serde_json::Value>> {
    ocm_api::crds::stored_values(ocm_api::crds::Target::Klusterlet)
        .context("reading the klusterlet CRDs")
}

/// Installs what the agent needs on the managed cluster: klusterlet CRDs, the agent namespace
/// and the bootstrap kubeconfig Secret.
pub async fn prepare_spoke(spoke: &kube::Client, bootstrap_kubeconfig: &str) -> anyhow::Result<()> {
    crate::embedded::install_crds(spoke, &klusterlet_crds()?).await?;
    crate::embedded::ensure_namespace(spoke, AGENT_NAMESPACE).await?;
    write_bootstrap_secret(spoke, BOOTSTRAP_SECRET, bootstrap_kubeconfig).await
}

/// Name of the bootstrap kubeconfig secret of the `n`th hub (from 1) when a cluster joins
/// several hubs: `bootstrap-hub-kubeconfig-<n>`.
pub fn hub_bootstrap_secret(n: usize) -> String {
    format!("{BOOTSTRAP_SECRET}-{n}")
}

/// Whether `name` is one of the bootstrap kubeconfig secrets a join writes: the one the agent
/// starts with, or a hub's own ([`hub_bootstrap_secret`]).
pub fn is_bootstrap_secret(name: &str) -> bool {
    name == BOOTSTRAP_SECRET
        || name
            .strip_prefix(BOOTSTRAP_SECRET)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// [`prepare_spoke`] for several hubs (in order of preference): each bootstrap kubeconfig in
/// its own secret ([`hub_bootstrap_secret`]), and the first in the bootstrap secret the agent
/// starts with — unless that secret already holds one of them (the agent moved to another of
/// these hubs earlier, and joining again keeps it there). Returns the names of the per-hub
/// secrets, for the agent's list.
pub async fn prepare_spoke_for_hubs(
    spoke: &kube::Client,
    bootstrap_kubeconfigs: &[String],
) -> anyhow::Result<Vec<String>> {
    let Some(first) = bootstrap_kubeconfigs.first() else {
        anyhow::bail!("no hub to join");
    };
    crate::embedded::install_crds(spoke, &klusterlet_crds()?).await?;
    crate::embedded::ensure_namespace(spoke, AGENT_NAMESPACE).await?;
    let current = Api::<Secret>::namespaced(spoke.clone(), AGENT_NAMESPACE)
        .get_opt(BOOTSTRAP_SECRET)
        .await
        .context("reading the bootstrap kubeconfig secret on the managed cluster")?
        .and_then(|s| s.data?.remove("kubeconfig"))
        .and_then(|b| String::from_utf8(b.0).ok());
    if !current.is_some_and(|c| bootstrap_kubeconfigs.contains(&c)) {
        write_bootstrap_secret(spoke, BOOTSTRAP_SECRET, first).await?;
    }
    let mut names = Vec::new();
    for (i, kubeconfig) in bootstrap_kubeconfigs.iter().enumerate() {
        let name = hub_bootstrap_secret(i + 1);
        write_bootstrap_secret(spoke, &name, kubeconfig).await?;
        names.push(name);
    }
    Ok(names)
}

/// Writes bootstrap kubeconfig Secret `name` in the agent namespace.
async fn write_bootstrap_secret(
    spoke: &kube::Client,
    name: &str,
    bootstrap_kubeconfig: &str,
) -> anyhow::Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": AGENT_NAMESPACE},
        "type": "Opaque",
        "stringData": {"kubeconfig": bootstrap_kubeconfig},
    }))?;
    Api::<Secret>::namespaced(spoke.clone(), AGENT_NAMESPACE)
        .patch(
            name,
            &PatchParams::apply("ocm-join").force(),
            &Patch::Apply(&secret),
        )
        .await
        .with_context(|| {
            format!("writing the bootstrap kubeconfig secret {name} on the managed cluster")
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bootstrap_secrets_a_join_writes_are_recognised() {
        for n in [1, 12] {
            assert!(is_bootstrap_secret(&hub_bootstrap_secret(n)));
        }
        assert!(is_bootstrap_secret(BOOTSTRAP_SECRET));
        for name in [
            "bootstrap-hub-kubeconfig-",
            "bootstrap-hub-kubeconfig-a",
            "bootstrap-hub-kubeconfigs",
            "hub-kubeconfig-secret",
            "my-bootstrap-hub-kubeconfig",
        ] {
            assert!(!is_bootstrap_secret(name), "{name}");
        }
    }
}

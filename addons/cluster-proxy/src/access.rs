//! Reaching clusters through the proxy with a user's own hub credentials: the user's hub
//! kubeconfig turned toward the proxy server (same user entry, the proxy's CA), the list of
//! open tunnels, and the ClusterManagementAddOn that lets clusters enable the addon.

use std::path::Path;

use base64::Engine;
use kube::api::{Api, PostParams};
use kube::config::{Kubeconfig, NamedCluster, NamedContext};
use ocm_api::addon::v1beta1::ClusterManagementAddOn;

use crate::pki::{self, Endpoint};
use crate::tunnel::TunnelInfo;
use crate::{ADDON_NAME, ProxyError};

/// Creates the cluster-proxy ClusterManagementAddOn (Manual install) unless it exists.
pub async fn ensure_cluster_management_addon(hub: &kube::Client) -> Result<(), ProxyError> {
    let cmas: Api<ClusterManagementAddOn> = Api::all(hub.clone());
    let cma: ClusterManagementAddOn = serde_json::from_value(serde_json::json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": ADDON_NAME},
        "spec": {"addOnMeta": {"displayName": "Cluster Proxy",
                               "description": "reach each cluster's API server from the hub \
                                               through a tunnel its agent opens"},
                 "installStrategy": {"type": "Manual"}},
    }))
    .map_err(|e| ProxyError::Config(format!("ClusterManagementAddOn {ADDON_NAME}: {e}")))?;
    match cmas.create(&PostParams::default(), &cma).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(err) => Err(ProxyError::Config(format!(
            "creating ClusterManagementAddOn {ADDON_NAME}: {err}"
        ))),
    }
}

/// The user's hub kubeconfig `config` turned towards the proxy: same user entry (same
/// credentials), server `<proxy>/<suffix>` trusted through the proxy's CA, named `name`.
pub fn retarget(
    config: &Kubeconfig,
    endpoint: &Endpoint,
    suffix: &str,
    name: &str,
) -> Result<Kubeconfig, ProxyError> {
    let current = config
        .current_context
        .clone()
        .or_else(|| config.contexts.first().map(|c| c.name.clone()))
        .ok_or_else(|| ProxyError::Config("the hub kubeconfig has no current context".into()))?;
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == current)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| {
            ProxyError::Config(format!(
                "context {current:?} not found in the hub kubeconfig"
            ))
        })?;
    let user = config
        .auth_infos
        .iter()
        .find(|a| Some(&a.name) == context.user.as_ref())
        .cloned()
        .ok_or_else(|| ProxyError::Config("the hub kubeconfig's context names no user".into()))?;
    let cluster = kube::config::Cluster {
        server: Some(format!("{}{suffix}", endpoint.url.trim_end_matches('/'))),
        certificate_authority_data: Some(
            base64::engine::general_purpose::STANDARD.encode(endpoint.ca_pem.as_bytes()),
        ),
        ..Default::default()
    };
    Ok(Kubeconfig {
        clusters: vec![NamedCluster {
            name: name.to_owned(),
            cluster: Some(cluster),
            other: Default::default(),
        }],
        auth_infos: vec![user.clone()],
        contexts: vec![NamedContext {
            name: name.to_owned(),
            context: Some(kube::config::Context {
                cluster: name.to_owned(),
                user: Some(user.name.clone()),
                namespace: None,
                extensions: None,
                other: Default::default(),
            }),
            other: Default::default(),
        }],
        current_context: Some(name.to_owned()),
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        ..Default::default()
    })
}

/// The hub kubeconfig at `hub_kubeconfig` and the proxy's endpoint, as the hub publishes it.
pub async fn read_access(hub_kubeconfig: &Path) -> Result<(Kubeconfig, Endpoint), ProxyError> {
    if !hub_kubeconfig.exists() {
        return Err(ProxyError::Config(format!(
            "kubeconfig {} does not exist (start a hub with `ocm hub`, or pass --kubeconfig)",
            hub_kubeconfig.display()
        )));
    }
    let hub = ocm_runtime::kubeconfig::client_from_file(hub_kubeconfig)
        .await
        .map_err(|e| ProxyError::Config(format!("loading {}: {e}", hub_kubeconfig.display())))?;
    let config = Kubeconfig::read_from(hub_kubeconfig)
        .map_err(|e| ProxyError::Config(format!("reading {}: {e}", hub_kubeconfig.display())))?;
    let endpoint = pki::read_endpoint(&hub, pki::PROXY_NAMESPACE).await?;
    Ok((config, endpoint))
}

/// A kubeconfig (JSON, which kubectl reads as YAML) for `cluster` through the proxy, with the
/// credentials of the hub kubeconfig at `hub_kubeconfig`.
pub async fn proxy_kubeconfig(hub_kubeconfig: &Path, cluster: &str) -> Result<String, ProxyError> {
    let (config, endpoint) = read_access(hub_kubeconfig).await?;
    let proxied = retarget(
        &config,
        &endpoint,
        &format!("/clusters/{cluster}"),
        &format!("{cluster}-via-proxy"),
    )?;
    let text = serde_json::to_string_pretty(&proxied)
        .map_err(|e| ProxyError::Config(format!("encoding the kubeconfig: {e}")))?;
    Ok(text + "\n")
}

/// The proxy's open tunnels, asked with the credentials of the hub kubeconfig at
/// `hub_kubeconfig`.
pub async fn tunnels(hub_kubeconfig: &Path) -> Result<Vec<TunnelInfo>, ProxyError> {
    let (config, endpoint) = read_access(hub_kubeconfig).await?;
    let proxied = retarget(&config, &endpoint, "", "cluster-proxy")?;
    let client = ocm_runtime::kubeconfig::client_from_kubeconfig(proxied)
        .await
        .map_err(|e| ProxyError::Config(format!("a client of the proxy: {e}")))?;
    let request = http::Request::get("/tunnels")
        .body(Vec::new())
        .map_err(|e| ProxyError::Config(e.to_string()))?;
    let text = client.request_text(request).await.map_err(|e| {
        ProxyError::Config(format!(
            "asking the proxy server at {} for its tunnels: {e}",
            endpoint.url
        ))
    })?;
    #[derive(serde::Deserialize)]
    struct List {
        tunnels: Vec<TunnelInfo>,
    }
    serde_json::from_str::<List>(&text)
        .map(|list| list.tunnels)
        .map_err(|e| ProxyError::Config(format!("the proxy's tunnel list: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub_kubeconfig() -> Kubeconfig {
        Kubeconfig::from_yaml(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: hub\n  cluster:\n    \
             server: https://hub:6443\ncontexts:\n- name: admin@hub\n  context:\n    \
             cluster: hub\n    user: admin\ncurrent-context: admin@hub\nusers:\n- name: admin\n  \
             user:\n    token: secret-token\n",
        )
        .unwrap()
    }

    #[test]
    fn the_users_credentials_go_to_the_proxy_with_its_ca() {
        let endpoint = Endpoint {
            url: "https://proxy:8090/".into(),
            ca_pem: "PEM".into(),
        };
        let out = retarget(&hub_kubeconfig(), &endpoint, "/clusters/c1", "c1-via-proxy").unwrap();
        let cluster = out.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(
            cluster.server.as_deref(),
            Some("https://proxy:8090/clusters/c1")
        );
        assert_eq!(
            cluster.certificate_authority_data.as_deref(),
            Some(
                base64::engine::general_purpose::STANDARD
                    .encode("PEM")
                    .as_str()
            )
        );
        assert_eq!(out.auth_infos.len(), 1);
        assert_eq!(out.auth_infos[0].name, "admin");
        assert_eq!(out.current_context.as_deref(), Some("c1-via-proxy"));
    }

    #[test]
    fn a_kubeconfig_without_a_context_is_refused() {
        let mut config = hub_kubeconfig();
        config.contexts.clear();
        config.current_context = None;
        let endpoint = Endpoint {
            url: "https://proxy".into(),
            ca_pem: String::new(),
        };
        let err = retarget(&config, &endpoint, "", "x").unwrap_err();
        assert!(err.to_string().contains("no current context"), "{err}");
    }
}

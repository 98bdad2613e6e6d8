//! Before a cluster joins: learn the hub's CA from its `kube-public/cluster-info` (as kubeadm
//! and clusteradm do), check that a bootstrap token authenticates and may register, and turn
//! the hub's refusals into messages a user can act on. A 401/403 right after `ocm init` may be
//! the hub still propagating a new token or role, so those are retried for a while.

use anyhow::Context;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::json;

/// How long `ocm join` keeps retrying a 401/403 that may be the hub still propagating a new
/// token or role (kube-apiserver's own lag is milliseconds; a hub behind a load balancer or
/// with webhook authentication may take longer).
pub const PROPAGATION_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

fn refused(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 401 || status.code == 403)
}

/// Runs `attempt` until it succeeds, fails with something other than 401/403, or
/// [`PROPAGATION_RETRY`] has passed; says once on stderr why it waits.
pub async fn retry_while_propagating<T, F, Fut>(
    what: &str,
    mut attempt: F,
) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let deadline = tokio::time::Instant::now() + PROPAGATION_RETRY;
    let mut delay = std::time::Duration::from_millis(100);
    let mut said = false;
    loop {
        match attempt().await {
            Err(err) if refused(&err) && tokio::time::Instant::now() + delay < deadline => {
                if !said {
                    eprintln!(
                        "{what}: the hub refused the request ({err}); a new token or role may \
                         still be propagating, retrying for up to {} s",
                        PROPAGATION_RETRY.as_secs()
                    );
                    said = true;
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// A client of `url` that does not verify the hub's certificate (we are learning its CA),
/// anonymous or with `token`.
async fn discovery_client(url: &str, token: Option<&str>) -> anyhow::Result<kube::Client> {
    let mut user = json!({});
    if let Some(token) = token {
        user = json!({"token": token});
    }
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "hub", "cluster": {"server": url, "insecure-skip-tls-verify": true}}],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "discovery"}}],
        "current-context": "hub",
        "users": [{"name": "discovery", "user": user}],
    });
    Ok(ocm_runtime::kubeconfig::client_from_yaml(&kubeconfig.to_string()).await?)
}

/// The CA in a `cluster-info` ConfigMap's kubeconfig.
pub fn cluster_info_ca(cm: &ConfigMap) -> anyhow::Result<String> {
    use base64::Engine;
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get("kubeconfig").cloned())
        .context("kube-public/cluster-info has no kubeconfig")?;
    // cluster-info carries clusters only (no context), so read its first cluster directly.
    let value: serde_json::Value =
        serde_saphyr::from_str(&text).context("cluster-info's kubeconfig is not YAML")?;
    let ca = value
        .pointer("/clusters/0/cluster/certificate-authority-data")
        .and_then(|v| v.as_str())
        .context("cluster-info has no certificate-authority-data")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(ca.trim())
        .context("cluster-info CA is not base64")?;
    String::from_utf8(bytes).context("cluster-info CA is not PEM")
}

/// Learns the CA of the hub at `url` from its `kube-public/cluster-info`: anonymously, else
/// with the bootstrap `token`.
pub async fn discover_ca(url: &str, token: &str) -> anyhow::Result<String> {
    let read = |client: kube::Client| async move {
        Api::<ConfigMap>::namespaced(client, "kube-public")
            .get("cluster-info")
            .await
    };
    let anonymous = discovery_client(url, None).await?;
    let cm = match read(anonymous).await {
        Ok(cm) => cm,
        Err(err) if refused(&err) => {
            let with_token = discovery_client(url, Some(token)).await?;
            retry_while_propagating("reading kube-public/cluster-info", || {
                read(with_token.clone())
            })
            .await
            .map_err(|e| describe_hub_error(url, e))
            .context("reading the hub CA from kube-public/cluster-info (or pass --ca-file)")?
        }
        Err(err) => {
            return Err(describe_hub_error(url, err))
                .context("reading the hub CA from kube-public/cluster-info (or pass --ca-file)");
        }
    };
    cluster_info_ca(&cm)
}

/// The hub did not answer (connection refused, no route, TLS handshake failed, timed out), as
/// opposed to a hub that answered and refused.
#[derive(Debug)]
pub struct HubUnreachable {
    /// The hub's URL.
    pub url: String,
    /// What the client said.
    pub reason: String,
}

impl std::fmt::Display for HubUnreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot reach the hub at {}: {}", self.url, self.reason)
    }
}

impl std::error::Error for HubUnreachable {}

/// Whether `err` (or what caused it) is a [`HubUnreachable`].
pub fn is_unreachable(err: &anyhow::Error) -> bool {
    err.chain().any(|e| e.is::<HubUnreachable>())
}

/// Turns a client error against the hub into a message a user can act on; a hub that does not
/// answer gives a [`HubUnreachable`].
pub fn describe_hub_error(url: &str, err: kube::Error) -> anyhow::Error {
    match &err {
        kube::Error::Api(status) if status.code == 401 => {
            anyhow::anyhow!("the hub at {url} rejected the token (wrong, expired or deleted)")
        }
        kube::Error::Api(status) if status.code == 403 => anyhow::anyhow!(
            "the token is valid but may not register clusters on {url} (create one with `ocm init`): {}",
            status.message
        ),
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            anyhow::Error::new(HubUnreachable {
                url: url.to_owned(),
                reason: err.to_string(),
            })
        }
        _ => anyhow::anyhow!("hub at {url}: {err}"),
    }
}

/// Verifies with the hub that the token authenticates and may read ManagedClusters; nothing is
/// written. Without a cluster name any name does: only whether the hub allows the read counts.
pub async fn check_token(
    url: &str,
    bootstrap_kubeconfig: &str,
    cluster: Option<&str>,
) -> anyhow::Result<()> {
    let client = ocm_runtime::kubeconfig::client_from_yaml(bootstrap_kubeconfig).await?;
    let clusters = Api::<ManagedCluster>::all(client);
    let cluster = cluster.unwrap_or("ocm-join-access-check");
    retry_while_propagating("checking the bootstrap token", || clusters.get_opt(cluster))
        .await
        .map_err(|e| describe_hub_error(url, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn cluster_info(kubeconfig: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        if let Some(text) = kubeconfig {
            cm.data = Some([("kubeconfig".to_owned(), text.to_owned())].into());
        }
        cm
    }

    #[test]
    fn the_ca_is_read_from_the_first_cluster_of_cluster_info() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let data = base64::engine::general_purpose::STANDARD.encode(pem);
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ''\n  cluster:\n    \
             server: https://hub:6443\n    certificate-authority-data: {data}\n"
        );
        assert_eq!(cluster_info_ca(&cluster_info(Some(&text))).unwrap(), pem);
    }

    #[test]
    fn cluster_info_without_a_kubeconfig_or_a_ca_is_refused_by_name() {
        let missing = cluster_info_ca(&cluster_info(None)).unwrap_err();
        assert!(
            missing.to_string().contains("has no kubeconfig"),
            "{missing}"
        );
        let text = "apiVersion: v1\nclusters:\n- name: ''\n  cluster:\n    server: https://h\n";
        let no_ca = cluster_info_ca(&cluster_info(Some(text))).unwrap_err();
        assert!(
            no_ca.to_string().contains("no certificate-authority-data"),
            "{no_ca}"
        );
    }

    #[test]
    fn a_refused_token_and_an_unreachable_hub_are_told_apart() {
        let status = |code: u16| {
            kube::Error::Api(
                kube::core::Status::failure("refused", "Forbidden")
                    .with_code(code)
                    .boxed(),
            )
        };
        let unauthorized = describe_hub_error("https://hub", status(401)).to_string();
        assert!(
            unauthorized.contains("rejected the token"),
            "{unauthorized}"
        );
        let forbidden = describe_hub_error("https://hub", status(403)).to_string();
        assert!(
            forbidden.contains("may not register clusters"),
            "{forbidden}"
        );
        for code in [401, 403] {
            assert!(!is_unreachable(&describe_hub_error(
                "https://hub",
                status(code)
            )));
        }
        let refused_connection = kube::Error::Service(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        let down =
            describe_hub_error("https://hub", refused_connection).context("reading the hub CA");
        assert!(is_unreachable(&down));
        assert!(
            format!("{down:#}").contains("cannot reach the hub at https://hub"),
            "{down:#}"
        );
    }
}

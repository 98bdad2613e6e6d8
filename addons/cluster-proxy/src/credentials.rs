//! The consumer's side of the Cluster Inventory API's access protocol, with no I/O:
//!
//! - [`consumer_kubeconfig`] does what a consumer library does with a ClusterProfile: picks
//!   the access provider it has a credential plugin for and turns it into a kubeconfig whose
//!   user runs that plugin, the provider's `client.authentication.k8s.io/exec` extension
//!   passed to it as cluster info.
//! - [`exec_credential`] is the plugin's answer: the consumer's own hub credentials (token or
//!   client certificate) as an `ExecCredential`, since the proxy authenticates users as the
//!   hub does and authorizes them with `managedclusters/proxy`.

use ocm_api::multicluster::v1alpha1::{AccessProvider, ClusterProfile};
use ocm_runtime::kubeconfig::UserCredentials;
use serde_json::{Value, json};

use crate::ProxyError;

/// The ExecCredential API versions a plugin may be asked for (client-go's).
pub const EXEC_API_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];

/// The environment variable client-go passes the request in.
pub const EXEC_INFO_ENV: &str = "KUBERNETES_EXEC_INFO";

/// The ExecCredential version the caller wants, from its `KUBERNETES_EXEC_INFO` (v1 when
/// absent, as for a plugin run by hand).
pub fn requested_api_version(exec_info: Option<&str>) -> Result<&'static str, ProxyError> {
    let Some(text) = exec_info.filter(|t| !t.trim().is_empty()) else {
        return Ok(EXEC_API_VERSIONS[0]);
    };
    let info: Value = serde_json::from_str(text)
        .map_err(|e| ProxyError::Config(format!("{EXEC_INFO_ENV} is not JSON: {e}")))?;
    let asked = info
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if info.get("kind").and_then(Value::as_str) != Some("ExecCredential") {
        return Err(ProxyError::Config(format!(
            "{EXEC_INFO_ENV} is not an ExecCredential"
        )));
    }
    EXEC_API_VERSIONS
        .into_iter()
        .find(|v| *v == asked)
        .ok_or_else(|| {
            ProxyError::Config(format!(
                "ExecCredential apiVersion {asked:?} is not supported (use {})",
                EXEC_API_VERSIONS.join(" or ")
            ))
        })
}

/// The plugin's answer carrying `credentials`, in `api_version`.
pub fn exec_credential(api_version: &str, credentials: &UserCredentials) -> Value {
    let status = match credentials {
        UserCredentials::Token(token) => json!({"token": token}),
        UserCredentials::ClientCertificate { cert_pem, key_pem } => {
            json!({"clientCertificateData": cert_pem, "clientKeyData": key_pem})
        }
    };
    json!({"apiVersion": api_version, "kind": "ExecCredential", "status": status})
}

/// The exec plugin a consumer runs for a provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecPlugin {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
}

/// The provider named `provider` on the profile: `accessProviders` first, the deprecated
/// `credentialProviders` only when it is not there (the API's preference).
pub fn find_provider<'a>(
    profile: &'a ClusterProfile,
    provider: &str,
) -> Option<&'a AccessProvider> {
    let status = profile.status.as_ref()?;
    status
        .access_providers
        .iter()
        .find(|p| p.name == provider)
        .or_else(|| {
            status
                .credential_providers
                .iter()
                .find(|p| p.name == provider)
        })
}

/// A kubeconfig (as JSON) reaching the profile's cluster through `provider`, its user running
/// `plugin` with the cluster info handed over, never interactively.
pub fn consumer_kubeconfig(
    profile: &ClusterProfile,
    provider: &str,
    plugin: &ExecPlugin,
) -> Result<Value, ProxyError> {
    let name = profile.metadata.name.clone().unwrap_or_default();
    let found = find_provider(profile, provider).ok_or_else(|| {
        ProxyError::Config(format!(
            "cluster profile {name} has no access provider {provider:?} (is the cluster-proxy \
             server running, and the hub's ClusterProfile gate on?)"
        ))
    })?;
    let cluster = found.cluster.as_ref().ok_or_else(|| {
        ProxyError::Config(format!(
            "access provider {provider:?} of cluster profile {name} names no cluster"
        ))
    })?;
    let cluster = serde_json::to_value(cluster)
        .map_err(|e| ProxyError::Config(format!("access provider {provider:?}: {e}")))?;
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": provider, "user": {"exec": {
            "apiVersion": EXEC_API_VERSIONS[0],
            "command": plugin.command,
            "args": plugin.args,
            "provideClusterInfo": true,
            "interactiveMode": "Never",
        }}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": provider}}],
        "current-context": name,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::Endpoint;
    use ocm_api::multicluster::v1alpha1::{ClusterProfileSpec, ClusterProfileStatus};

    #[test]
    fn the_plugin_answers_in_the_version_it_is_asked_for() {
        assert_eq!(requested_api_version(None).unwrap(), EXEC_API_VERSIONS[0]);
        let info = r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{"interactive":false}}"#;
        assert_eq!(
            requested_api_version(Some(info)).unwrap(),
            EXEC_API_VERSIONS[1]
        );
        let alpha =
            r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1alpha1"}"#;
        assert!(
            requested_api_version(Some(alpha))
                .unwrap_err()
                .to_string()
                .contains("not supported")
        );
        assert!(requested_api_version(Some("{")).is_err());
        let token = exec_credential(EXEC_API_VERSIONS[0], &UserCredentials::Token("t".into()));
        assert_eq!(
            token,
            json!({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                   "status": {"token": "t"}})
        );
        let cert = exec_credential(
            EXEC_API_VERSIONS[0],
            &UserCredentials::ClientCertificate {
                cert_pem: "C".into(),
                key_pem: "K".into(),
            },
        );
        assert_eq!(
            cert["status"],
            json!({"clientCertificateData": "C", "clientKeyData": "K"})
        );
    }

    #[test]
    fn the_kubeconfig_runs_the_plugin_against_the_providers_cluster() {
        let endpoint = Endpoint {
            url: "https://p:1".into(),
            ca_pem: "PEM".into(),
        };
        let mut profile = ClusterProfile::new("c1", ClusterProfileSpec::default());
        let plugin = ExecPlugin {
            command: "/bin/ocm".into(),
            args: vec!["clusterprofile".into(), "credentials".into()],
        };
        assert!(consumer_kubeconfig(&profile, "open-cluster-management", &plugin).is_err());
        profile.status = Some(ClusterProfileStatus {
            credential_providers: vec![AccessProvider {
                name: "open-cluster-management".into(),
                cluster: None,
            }],
            access_providers: vec![crate::profiles::access_provider(&endpoint, "c1")],
            ..ClusterProfileStatus::default()
        });
        let config = consumer_kubeconfig(&profile, "open-cluster-management", &plugin).unwrap();
        assert_eq!(
            config["clusters"][0]["cluster"]["server"],
            "https://p:1/clusters/c1"
        );
        assert_eq!(
            config["clusters"][0]["cluster"]["extensions"][0]["extension"],
            json!({"clusterName": "c1"})
        );
        assert_eq!(
            config["users"][0]["user"]["exec"]["provideClusterInfo"],
            true
        );
        assert_eq!(config["users"][0]["user"]["exec"]["command"], "/bin/ocm");
        assert!(consumer_kubeconfig(&profile, "other", &plugin).is_err());
    }
}

//! The agent's two secrets on the managed cluster: the bootstrap kubeconfig it is given and the
//! hub kubeconfig secret it writes.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::kubeconfig::{self, KubeconfigAuth, KubeconfigSpec, ServerInfo};
use serde_json::json;

use super::certs::{self, CertInfo};
use super::rotation::CertValidity;
use super::{HUB_KUBECONFIG_SECRET, keys};

/// Context, user and namespace of the hub kubeconfig the agent writes (upstream's names).
pub(crate) const HUB_CONTEXT: &str = "default-context";
pub(crate) const HUB_USER: &str = "default-auth";
pub(crate) const HUB_NAMESPACE: &str = "configuration";

/// A parsed bootstrap kubeconfig.
#[derive(Clone, Debug)]
pub(crate) struct Bootstrap {
    /// The kubeconfig text.
    pub(crate) raw: String,
    /// Its current cluster.
    pub(crate) server: ServerInfo,
}

/// Usable hub credentials.
#[derive(Clone, Debug)]
pub(crate) struct HubCreds {
    pub(crate) server: ServerInfo,
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
    pub(crate) cert: CertInfo,
    /// When the agent received the certificate from its CSR (`None`: read from the secret).
    pub(crate) received: Option<jiff::Timestamp>,
}

impl HubCreds {
    /// The certificate's validity, as the rotation schedule sees it.
    pub(crate) fn validity(&self) -> CertValidity {
        CertValidity::from_seconds(self.cert.not_before, self.cert.not_after, self.received)
    }

    /// A hub client authenticating with this certificate, taken from `shared` when it holds
    /// one for the same credentials.
    pub(crate) async fn client(
        &self,
        shared: &kubeconfig::SharedClient,
    ) -> Result<kube::Client, kubeconfig::KubeconfigError> {
        shared
            .client_for(
                &self.server,
                &KubeconfigAuth::ClientCertData {
                    cert_pem: self.cert_pem.clone(),
                    key_pem: self.key_pem.clone(),
                },
            )
            .await
    }
}

/// The secret `name` in `ns`, if it exists.
pub(crate) async fn read_secret(
    spoke: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Option<Secret>, kube::Error> {
    Api::<Secret>::namespaced(spoke.clone(), ns)
        .get_opt(name)
        .await
}

/// The bytes under `key` (from `data`, else `stringData`).
pub(crate) fn data(secret: &Secret, key: &str) -> Option<Vec<u8>> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|s| s.clone().into_bytes())
        })
}

/// The UTF-8 text under `key`, trimmed.
pub(crate) fn text(secret: &Secret, key: &str) -> Option<String> {
    data(secret, key)
        .and_then(|b| String::from_utf8(b).ok())
        .map(|s| s.trim().to_owned())
}

/// Parses a bootstrap kubeconfig; the error says what is wrong with it.
pub(crate) fn parse_bootstrap(raw: &[u8]) -> Result<Bootstrap, String> {
    let raw = String::from_utf8(raw.to_vec()).map_err(|_| "not UTF-8 text".to_owned())?;
    let config = kubeconfig::parse(&raw).map_err(|e| e.to_string())?;
    let server = kubeconfig::current_server(&config).map_err(|e| e.to_string())?;
    if !server.server.starts_with("https://") {
        return Err(format!("server {:?} is not an https URL", server.server));
    }
    Ok(Bootstrap { raw, server })
}

/// The credentials in the hub kubeconfig secret, if they are usable for `cluster`/`agent`:
/// certificate and key present and matching, issued for this cluster and agent, valid now,
/// the stored names agree, and (when a bootstrap kubeconfig is given) the stored kubeconfig
/// points at the same hub with the same CA and proxy.
pub(crate) fn usable_credentials(
    secret: &Secret,
    cluster: &str,
    agent: &str,
    bootstrap: Option<&Bootstrap>,
) -> Result<HubCreds, String> {
    let get = |key: &str| text(secret, key).ok_or_else(|| format!("no {key} in the secret"));
    let cert_pem = get(keys::TLS_CRT)?;
    let key_pem = get(keys::TLS_KEY)?;
    let stored_kubeconfig = get(keys::KUBECONFIG)?;
    if get(keys::CLUSTER_NAME)? != cluster {
        return Err("the secret belongs to another cluster".into());
    }
    if get(keys::AGENT_NAME)? != agent {
        return Err("the secret belongs to another agent".into());
    }
    let cert = certs::parse_cert(cert_pem.as_bytes()).map_err(|e| e.to_string())?;
    let key = rcgen::KeyPair::from_pem(&key_pem).map_err(|e| format!("tls.key: {e}"))?;
    if !certs::matches_key(&cert, &key) {
        return Err("tls.crt does not match tls.key".into());
    }
    if let Some(reason) =
        certs::unusable_reason(&cert, cluster, agent, jiff::Timestamp::now().as_second())
    {
        return Err(reason);
    }
    let stored = kubeconfig::parse(&stored_kubeconfig).map_err(|e| e.to_string())?;
    let server = kubeconfig::current_server(&stored).map_err(|e| e.to_string())?;
    if let Some(bootstrap) = bootstrap
        && bootstrap.server != server
    {
        return Err(
            "the hub kubeconfig points at another hub than the bootstrap kubeconfig".into(),
        );
    }
    Ok(HubCreds {
        server,
        cert_pem,
        key_pem,
        cert,
        received: None,
    })
}

/// The hub kubeconfig the agent stores: the hub server, CA and proxy with the certificate
/// and key files next to it.
pub(crate) fn hub_kubeconfig(server: &ServerInfo) -> String {
    kubeconfig::render(&KubeconfigSpec {
        server: server.clone(),
        auth: KubeconfigAuth::ClientCertFiles {
            cert_path: keys::TLS_CRT.to_owned(),
            key_path: keys::TLS_KEY.to_owned(),
        },
        context: HUB_CONTEXT.to_owned(),
        user: HUB_USER.to_owned(),
        namespace: Some(HUB_NAMESPACE.to_owned()),
    })
}

/// Writes `creds` (and the names) into the hub kubeconfig secret, creating it if needed and
/// keeping other keys.
pub(crate) async fn write_hub_secret(
    spoke: &kube::Client,
    ns: &str,
    creds: &HubCreds,
    cluster: &str,
    agent: &str,
) -> Result<(), kube::Error> {
    let api = Api::<Secret>::namespaced(spoke.clone(), ns);
    let entries = [
        (keys::KUBECONFIG, hub_kubeconfig(&creds.server)),
        (keys::TLS_CRT, creds.cert_pem.clone()),
        (keys::TLS_KEY, creds.key_pem.clone()),
        (keys::CLUSTER_NAME, cluster.to_owned()),
        (keys::AGENT_NAME, agent.to_owned()),
    ];
    let data: BTreeMap<String, ByteString> = entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), ByteString(v.clone().into_bytes())))
        .collect();
    upsert_opaque_secret(&api, HUB_KUBECONFIG_SECRET, ns, &BTreeMap::new(), data).await
}

/// Creates Opaque secret `name` in `ns` with `labels` and `data`, or merges them into the one
/// there (other keys are kept).
pub(crate) async fn upsert_opaque_secret(
    api: &Api<Secret>,
    name: &str,
    ns: &str,
    labels: &BTreeMap<String, String>,
    data: BTreeMap<String, ByteString>,
) -> Result<(), kube::Error> {
    if api.get_opt(name).await?.is_none() {
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(ns.to_owned()),
                labels: (!labels.is_empty()).then(|| labels.clone()),
                ..Default::default()
            },
            type_: Some("Opaque".to_owned()),
            data: Some(data.clone()),
            ..Default::default()
        };
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    let patch = if labels.is_empty() {
        json!({"data": data})
    } else {
        json!({"metadata": {"labels": labels}, "data": data})
    };
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

/// Completes when the `kubeconfig` of secret `name` holds something other than `initial`
/// (a deleted secret is not a change).
pub(crate) async fn wait_for_change(
    spoke: &kube::Client,
    ns: &str,
    name: &str,
    initial: Option<Vec<u8>>,
) {
    let api = Api::<Secret>::namespaced(spoke.clone(), ns);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api, config).backoff_on_errors().applied_objects());
    while let Some(event) = events.next().await {
        match event {
            Ok(secret) => {
                let current = data(&secret, keys::KUBECONFIG);
                if current.is_some() && current != initial {
                    return;
                }
            }
            Err(err) => tracing::debug!(error = %err, secret = name, "watching secret"),
        }
    }
    // The stream never ends; if it did, never report a change.
    std::future::pending::<()>().await;
}

/// Completes at the next change of the hub kubeconfig secret's certificate away from
/// `current_cert` (deleted or rewritten by someone else).
pub(crate) async fn wait_for_hub_secret_change(spoke: &kube::Client, ns: &str, current_cert: &str) {
    let api = Api::<Secret>::namespaced(spoke.clone(), ns);
    let config =
        watcher::Config::default().fields(&format!("metadata.name={HUB_KUBECONFIG_SECRET}"));
    let mut events = std::pin::pin!(watcher(api, config).backoff_on_errors());
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(secret) | watcher::Event::InitApply(secret)) => {
                if text(&secret, keys::TLS_CRT).as_deref() != Some(current_cert.trim()) {
                    return;
                }
            }
            Ok(watcher::Event::Delete(_)) => return,
            Ok(_) => {}
            Err(err) => tracing::debug!(error = %err, "watching the hub kubeconfig secret"),
        }
    }
    std::future::pending::<()>().await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn server() -> ServerInfo {
        ServerInfo {
            server: "https://hub.example:6443".into(),
            ca_pem: Some("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".into()),
            proxy_url: None,
        }
    }

    #[test]
    fn hub_kubeconfig_uses_upstream_names_and_files() {
        let yaml = hub_kubeconfig(&server());
        for needle in [
            "default-context",
            "default-auth",
            "namespace: configuration",
            "client-certificate: tls.crt",
            "client-key: tls.key",
        ] {
            assert!(yaml.contains(needle), "{needle} in {yaml}");
        }
        let parsed = kubeconfig::parse(&yaml).unwrap();
        assert_eq!(kubeconfig::current_server(&parsed).unwrap(), server());
    }

    #[test]
    fn malformed_bootstrap_kubeconfigs_say_what_is_wrong() {
        assert!(
            parse_bootstrap(b"{{{")
                .unwrap_err()
                .contains("not a valid kubeconfig")
        );
        assert!(
            parse_bootstrap(&[0xff, 0xfe])
                .unwrap_err()
                .contains("UTF-8")
        );
        let plain = hub_kubeconfig(&ServerInfo {
            server: "http://hub:80".into(),
            ..server()
        });
        assert!(
            parse_bootstrap(plain.as_bytes())
                .unwrap_err()
                .contains("https")
        );
        assert!(parse_bootstrap(hub_kubeconfig(&server()).as_bytes()).is_ok());
    }

    #[test]
    fn a_secret_without_a_certificate_is_not_usable() {
        let secret = Secret::default();
        let err = usable_credentials(&secret, "c1", "a1", None).unwrap_err();
        assert!(err.contains("tls.crt"), "{err}");
    }
}

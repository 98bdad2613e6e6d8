//! Helpers for addon agents: hub credentials from the secret the registration agent writes,
//! and the Lease an addon agent renews for Lease health.
//!
//! The registration agent keeps `<addon>-hub-kubeconfig` (keys `kubeconfig`, `tls.crt`,
//! `tls.key`) in the addon's install namespace; the addon's pod mounts it at a directory. The
//! kubeconfig names `tls.crt` and `tls.key` relative to that directory.
//!
//! - [`hub_client_from_dir`] builds a hub client from such a directory;
//! - [`RotatingHubClient`] rebuilds it when the files change (the agent rotates the
//!   certificate at 75–80 % of its lifetime), checked on use;
//! - [`write_secret_to_dir`] does what the pod's mount does, so in-process tests run an addon
//!   agent with exactly its pod credentials;
//! - [`LeaseUpdater`] renews Lease `<addon>` in the install namespace on the managed cluster.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use ocm_runtime::kubeconfig::{self, KubeconfigError};
use ocm_runtime::shutdown::Shutdown;
use tokio::sync::Mutex;

/// File name of the kubeconfig in a mounted hub kubeconfig secret.
pub const KUBECONFIG_FILE: &str = "kubeconfig";
/// File name of the client certificate.
pub const TLS_CRT_FILE: &str = "tls.crt";
/// File name of the private key.
pub const TLS_KEY_FILE: &str = "tls.key";
/// Upstream's lease renewal period of addon agents.
pub const DEFAULT_LEASE_PERIOD: Duration = Duration::from_secs(60);

/// Why an addon agent helper failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentHelperError {
    /// The kubeconfig (or the files it names) could not be read or used.
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A call to an API server failed.
    #[error("API: {0}")]
    Api(#[from] kube::Error),
    /// Something did not appear in time.
    #[error("{0}")]
    Timeout(String),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> AgentHelperError + '_ {
    move |source| AgentHelperError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// What `addon`'s agent pod on `cluster` would mount, for running the agent in this process:
/// waits (up to `timeout`) for the addon's install namespace (`status.namespace` of its
/// ManagedClusterAddOn, read through `hub`) and the `<addon>-hub-kubeconfig` Secret there
/// (through `spoke`, the managed cluster), writes the Secret's keys into `dir` and returns the
/// install namespace.
pub async fn mount_agent_credentials(
    hub: &kube::Client,
    spoke: &kube::Client,
    cluster: &str,
    addon: &str,
    dir: &Path,
    timeout: Duration,
) -> Result<String, AgentHelperError> {
    use kube::runtime::wait::await_condition;
    use ocm_api::addon::v1beta1::ManagedClusterAddOn;
    let late = |what: String| AgentHelperError::Timeout(format!("{what} did not appear in time"));
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(hub.clone(), cluster);
    let mca = tokio::time::timeout(
        timeout,
        await_condition(mcas, addon, |m: Option<&ManagedClusterAddOn>| {
            m.and_then(|m| m.status.as_ref())
                .is_some_and(|s| !s.namespace.is_empty())
        }),
    )
    .await
    .map_err(|_| late(format!("the install namespace of {addon} on {cluster}")))?
    .map_err(|e| AgentHelperError::Timeout(e.to_string()))?;
    let namespace = mca
        .and_then(|m| m.status)
        .map(|s| s.namespace)
        .unwrap_or_default();
    let name = format!("{addon}-hub-kubeconfig");
    let secrets: Api<Secret> = Api::namespaced(spoke.clone(), &namespace);
    let secret = tokio::time::timeout(
        timeout,
        await_condition(secrets, &name, |s: Option<&Secret>| s.is_some()),
    )
    .await
    .map_err(|_| late(format!("{name} on {cluster}")))?
    .map_err(|e| AgentHelperError::Timeout(e.to_string()))?
    .ok_or_else(|| late(format!("{name} on {cluster}")))?;
    write_secret_to_dir(&secret, dir)?;
    Ok(namespace)
}

/// A hub client from `<dir>/kubeconfig`, with `tls.crt` / `tls.key` read from `dir`.
pub async fn hub_client_from_dir(dir: &Path) -> Result<kube::Client, AgentHelperError> {
    Ok(kubeconfig::client_from_file(&dir.join(KUBECONFIG_FILE)).await?)
}

/// Writes every key of `secret` (`data`, then `stringData`) as a file in `dir` (created if
/// missing), as a pod's secret volume would; each file is replaced atomically.
pub fn write_secret_to_dir(secret: &Secret, dir: &Path) -> Result<(), AgentHelperError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let data = secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()));
    let string_data = secret
        .string_data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()));
    for (key, bytes) in data.chain(string_data) {
        if key.is_empty() || key.contains('/') || key == "." || key == ".." {
            continue;
        }
        let path = dir.join(&key);
        let temp = dir.join(format!(".{key}.tmp"));
        std::fs::write(&temp, &bytes).map_err(io_error(&temp))?;
        std::fs::rename(&temp, &path).map_err(io_error(&path))?;
    }
    Ok(())
}

/// The contents of the three files, to notice a change.
fn fingerprint(dir: &Path) -> Result<Vec<u8>, AgentHelperError> {
    let mut out = Vec::new();
    for name in [KUBECONFIG_FILE, TLS_CRT_FILE, TLS_KEY_FILE] {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => out.extend(bytes),
            // A custom kubeconfig may embed its credentials.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && name != KUBECONFIG_FILE => {}
            Err(e) => return Err(io_error(&path)(e)),
        }
        out.push(0);
    }
    Ok(out)
}

/// A hub client that follows certificate rotation: [`RotatingHubClient::client`] rebuilds the
/// client when the files in the directory changed since it was built.
pub struct RotatingHubClient {
    dir: PathBuf,
    current: Mutex<Option<(Vec<u8>, kube::Client)>>,
}

impl std::fmt::Debug for RotatingHubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RotatingHubClient")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl RotatingHubClient {
    /// Follows the mounted secret in `dir` (nothing is read yet).
    pub fn new(dir: impl Into<PathBuf>) -> RotatingHubClient {
        RotatingHubClient {
            dir: dir.into(),
            current: Mutex::new(None),
        }
    }

    /// The directory followed.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A client with the credentials now in the directory (the previous one while the files
    /// are unchanged).
    pub async fn client(&self) -> Result<kube::Client, AgentHelperError> {
        let now = fingerprint(&self.dir)?;
        let mut current = self.current.lock().await;
        if let Some((seen, client)) = current.as_ref()
            && *seen == now
        {
            return Ok(client.clone());
        }
        let client = hub_client_from_dir(&self.dir).await?;
        if current.is_some() {
            tracing::info!(dir = %self.dir.display(), "hub credentials changed; new client");
        }
        *current = Some((now, client.clone()));
        Ok(client)
    }
}

/// Renews Lease `name` in `namespace` on the managed cluster, as an addon agent does for Lease
/// health (the registration agent judges it).
#[derive(Clone)]
pub struct LeaseUpdater {
    client: kube::Client,
    namespace: String,
    name: String,
    period: Duration,
}

impl std::fmt::Debug for LeaseUpdater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseUpdater")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

impl LeaseUpdater {
    /// Renews Lease `addon` in `namespace` through `client` (the managed cluster) every
    /// [`DEFAULT_LEASE_PERIOD`].
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        addon: impl Into<String>,
    ) -> LeaseUpdater {
        LeaseUpdater {
            client,
            namespace: namespace.into(),
            name: addon.into(),
            period: DEFAULT_LEASE_PERIOD,
        }
    }

    /// Renews every `period` instead.
    pub fn with_period(mut self, period: Duration) -> LeaseUpdater {
        self.period = period;
        self
    }

    /// Sets the Lease's `renewTime` to now, creating the Lease if it is missing.
    pub async fn renew(&self) -> Result<(), AgentHelperError> {
        let api = Api::<Lease>::namespaced(self.client.clone(), &self.namespace);
        let now = MicroTime(jiff::Timestamp::now());
        for _ in 0..3 {
            match api.get_opt(&self.name).await? {
                None => {
                    let lease = Lease {
                        metadata: ObjectMeta {
                            name: Some(self.name.clone()),
                            namespace: Some(self.namespace.clone()),
                            ..Default::default()
                        },
                        spec: Some(LeaseSpec {
                            renew_time: Some(now.clone()),
                            ..Default::default()
                        }),
                    };
                    match api.create(&PostParams::default(), &lease).await {
                        Ok(_) => return Ok(()),
                        Err(kube::Error::Api(s)) if s.code == 409 => continue,
                        Err(err) => return Err(err.into()),
                    }
                }
                Some(mut lease) => {
                    lease.spec.get_or_insert_default().renew_time = Some(now.clone());
                    match api
                        .replace(&self.name, &PostParams::default(), &lease)
                        .await
                    {
                        Ok(_) => return Ok(()),
                        Err(kube::Error::Api(s)) if s.code == 409 => continue,
                        Err(err) => return Err(err.into()),
                    }
                }
            }
        }
        Ok(())
    }

    /// Renews the Lease now and every period until `shutdown` (failures are logged and
    /// retried at the next period).
    pub async fn run(self, shutdown: Shutdown) {
        loop {
            if let Err(err) = self.renew().await {
                tracing::warn!(error = %err, lease = self.name, namespace = self.namespace, "renewing the addon lease");
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.period) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::ByteString;

    #[test]
    fn secrets_become_files_like_a_mount() {
        let dir = tempfile::tempdir().unwrap();
        let secret = Secret {
            data: Some(
                [
                    ("tls.crt".to_owned(), ByteString(b"CERT".to_vec())),
                    ("../evil".to_owned(), ByteString(b"x".to_vec())),
                ]
                .into_iter()
                .collect(),
            ),
            string_data: Some(
                [("kubeconfig".to_owned(), "K".to_owned())]
                    .into_iter()
                    .collect(),
            ),
            ..Default::default()
        };
        let target = dir.path().join("mount");
        write_secret_to_dir(&secret, &target).unwrap();
        assert_eq!(std::fs::read(target.join("tls.crt")).unwrap(), b"CERT");
        assert_eq!(std::fs::read(target.join("kubeconfig")).unwrap(), b"K");
        assert!(!dir.path().join("evil").exists());
        let first = fingerprint(&target).unwrap();
        let rotated = Secret {
            data: Some(
                [("tls.crt".to_owned(), ByteString(b"CERT2".to_vec()))]
                    .into_iter()
                    .collect(),
            ),
            ..Default::default()
        };
        write_secret_to_dir(&rotated, &target).unwrap();
        assert_ne!(fingerprint(&target).unwrap(), first);
        assert!(fingerprint(dir.path()).is_err());
    }
}

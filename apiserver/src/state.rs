//! The server's shared state: the store, the registry of served resources, the configuration
//! and the caches every request and background controller reads. It knows nothing of
//! requests or controllers; they receive it as `Arc<Inner>`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::registry::Registry;
use ocm_apiserver_storage::{Store, StoreConfig};

/// Converts a custom resource to another version: `(object, "group/version") -> object`.
pub type ConversionHook = Arc<dyn Fn(Value, &str) -> Result<Value, String> + Send + Sync>;

/// The namespaces every logical cluster has from the start.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The internal name of the default logical cluster (the unprefixed URLs).
pub const DEFAULT_CLUSTER: &str = "";

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ApiServerConfig {
    /// Where the SQLite database lives; `None` keeps everything in memory.
    pub data_dir: Option<PathBuf>,
    /// Largest the database may grow (etcd's `--quota-backend-bytes`): past it writes fail
    /// with a 500 `InternalError` until objects are deleted, as on a full disk. `None`: as
    /// large as the disk allows.
    pub database_quota_bytes: Option<u64>,
    /// Store tuning.
    pub store: StoreConfig,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// How often a watch with `allowWatchBookmarks` gets a bookmark.
    pub bookmark_interval: Duration,
    /// Longest watch when the client gives no `timeoutSeconds`.
    pub max_watch_timeout: Duration,
    /// Whether `/clusters/{name}` creates an unknown logical cluster on first use.
    pub auto_create_clusters: bool,
    /// Most requests handled at once before answering 429.
    pub max_in_flight: usize,
    /// Period of the full resync of the garbage collector and namespace controller.
    pub resync_interval: Duration,
    /// How long the namespace controller waits after it sees a namespace marked for deletion
    /// before deleting its content (kube-controller-manager's namespace controller waits 5 s,
    /// so that a client deleting a namespace and then its objects still finds them).
    pub namespace_deletion_grace_period: Duration,
    /// `host:port` clients reach the server at, reported by `GET /api`.
    pub advertise_address: String,
    /// Whether network requests without credentials run as `system:anonymous` (else 401).
    pub anonymous_auth: bool,
    /// PEM bundle of the CAs client certificates must chain to; `None` trusts no certificate.
    pub client_ca: Option<String>,
    /// PEM bundle that verifies the serving certificate, published as `ca.crt` of every
    /// namespace's `kube-root-ca.crt` ConfigMap (kube-controller-manager's `--root-ca-file`);
    /// `None`: the client CA bundle (one CA signs both when they come from one
    /// [`crate::tls::TlsMaterial`]).
    pub serving_ca: Option<String>,
    /// PEM private key of the client CA (the first certificate of `client_ca`): with it, the
    /// built-in `kubernetes.io/kube-apiserver-client` signer signs approved CSRs.
    pub client_ca_key: Option<String>,
    /// Longest lifetime the `kubernetes.io/kube-apiserver-client` signer gives a certificate
    /// (kube-controller-manager's `--cluster-signing-duration`, default one year); a CSR's
    /// `expirationSeconds` can only shorten it.
    pub csr_signing_duration: Duration,
    /// The CSR cleaner removes approved, denied and failed requests this old.
    pub csr_decided_ttl: Duration,
    /// The CSR cleaner removes pending requests this old.
    pub csr_pending_ttl: Duration,
    /// How service-account tokens are issued and accepted.
    pub service_account_tokens: crate::tokens::ServiceAccountTokenConfig,
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        ApiServerConfig {
            data_dir: None,
            database_quota_bytes: None,
            store: StoreConfig::default(),
            max_body_bytes: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(60),
            max_watch_timeout: Duration::from_secs(1800),
            auto_create_clusters: true,
            max_in_flight: 10_000,
            resync_interval: Duration::from_secs(30),
            namespace_deletion_grace_period: Duration::from_secs(5),
            advertise_address: "127.0.0.1:6443".into(),
            anonymous_auth: true,
            client_ca: None,
            serving_ca: None,
            client_ca_key: None,
            csr_signing_duration: Duration::from_secs(365 * 24 * 3600),
            csr_decided_ttl: Duration::from_secs(3600),
            csr_pending_ttl: Duration::from_secs(24 * 3600),
            service_account_tokens: crate::tokens::ServiceAccountTokenConfig::default(),
        }
    }
}

/// What every part of the server shares: storage, the served resources, the configuration
/// and the caches kept beside them. One per server, behind an `Arc`.
pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) registry: Registry,
    pub(crate) config: ApiServerConfig,
    pub(crate) conversions: RwLock<HashMap<(String, String), ConversionHook>>,
    pub(crate) admission: RwLock<Vec<crate::admission::Registered>>,
    pub(crate) clusters: Mutex<HashSet<String>>,
    /// Logical clusters whose workloads the simulator drives, with the delay.
    pub(crate) simulated: Mutex<HashMap<String, Duration>>,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) in_flight: std::sync::atomic::AtomicUsize,
    pub(crate) sa_key: crate::tokens::SigningKey,
    pub(crate) sa_config: crate::tokens::ServiceAccountTokenConfig,
    pub(crate) client_ca: crate::pki::ClientCaBundle,
    pub(crate) client_signer: Option<crate::pki::CertificateAuthority>,
    pub(crate) policies: crate::rbac_policies::PolicyCache,
    pub(crate) webhooks: crate::webhook::WebhookCache,
    /// Each cluster's API Priority and Fairness configuration, for classifying requests.
    pub(crate) apf: crate::apf::ApfCache,
    /// The bound ValidatingAdmissionPolicies of each logical cluster.
    pub(crate) admission_policies: crate::policy::PolicyCache,
    /// The port the server serves on: the advertised one until a listener is bound.
    pub(crate) serving_port: watch::Sender<u16>,
    /// Request counters of the default cluster, served at `/metrics`.
    pub(crate) metrics: crate::metrics::Metrics,
    /// Watch events of converted resources, encoded once for all their watchers.
    pub(crate) watch_encodings: crate::watch_encodings::SharedEncodings,
}

impl Inner {
    /// The current RBAC policy of `cluster`.
    pub(crate) fn policy(&self, cluster: &str) -> Arc<ocm_apiserver_rbac::Policy> {
        self.policies.policy(&self.store, cluster)
    }

    /// What authenticating a request reads.
    pub(crate) fn credentials(&self) -> crate::authn::Credentials<'_> {
        crate::authn::Credentials {
            store: &self.store,
            sa_key: &self.sa_key,
            sa_config: &self.sa_config,
            client_ca: &self.client_ca,
            anonymous_auth: self.config.anonymous_auth,
        }
    }

    /// The simulator's delay for `cluster`, when its workloads are simulated.
    pub(crate) fn simulated_delay(&self, cluster: &str) -> Option<Duration> {
        self.simulated
            .lock()
            .ok()
            .and_then(|m| m.get(cluster).copied())
    }

    pub(crate) fn conversion(&self, group: &str, kind: &str) -> Option<ConversionHook> {
        let map = self.conversions.read().unwrap_or_else(|p| p.into_inner());
        map.get(&(group.to_owned(), kind.to_owned())).cloned()
    }

    pub(crate) fn admission_hooks(
        &self,
        group: &str,
        resource: &str,
        subresource: Option<&str>,
    ) -> Vec<crate::admission::AdmissionHook> {
        let hooks = self.admission.read().unwrap_or_else(|p| p.into_inner());
        hooks
            .iter()
            .filter(|r| {
                r.group == group
                    && r.resource == resource
                    && r.subresource.as_deref() == subresource
            })
            .map(|r| r.hook.clone())
            .collect()
    }

    pub(crate) fn cluster_known(&self, cluster: &str) -> bool {
        self.clusters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(cluster)
    }

    /// Records the port a listener serves on (the target port of `default/kubernetes`).
    pub(crate) fn set_serving_port(&self, port: u16) {
        self.serving_port.send_if_modified(|current| {
            let changed = *current != port;
            *current = port;
            changed
        });
    }

    /// Records that `cluster` has its system namespaces and default objects.
    pub(crate) fn mark_cluster_known(&self, cluster: &str) {
        self.clusters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cluster.to_owned());
    }
}

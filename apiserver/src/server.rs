//! The API server object: storage, registry, conversion hooks and background controllers,
//! shared by the HTTP service, the TLS listener and the in-process clients.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::error::ApiError;
use crate::http::ApiService;
use crate::registry::{Registry, resource_from_crd};
use crate::storage::{Bucket, SqliteBackend, StorageError, Store, StoreConfig};

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

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Storage could not be opened.
    #[error("opening storage: {0}")]
    Storage(#[from] StorageError),
    /// The database in the data directory could not be read: the server refuses to start
    /// rather than serve an empty or partial state.
    #[error(
        "reading the database {path}: {source} (restore it from a backup, or move the data directory away to start empty)"
    )]
    Database {
        /// The database file.
        path: PathBuf,
        /// The cause.
        source: StorageError,
    },
    /// Key material could not be loaded or generated.
    #[error("key material: {0}")]
    Pki(#[from] crate::pki::PkiError),
    /// The data directory could not be created.
    #[error("creating data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) registry: Registry,
    pub(crate) config: ApiServerConfig,
    conversions: RwLock<HashMap<(String, String), ConversionHook>>,
    admission: RwLock<Vec<crate::admission::Registered>>,
    clusters: Mutex<HashSet<String>>,
    /// Logical clusters whose workloads the simulator drives, with the delay.
    simulated: Mutex<HashMap<String, Duration>>,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) in_flight: std::sync::atomic::AtomicUsize,
    pub(crate) sa_key: crate::tokens::SigningKey,
    pub(crate) sa_config: crate::tokens::ServiceAccountTokenConfig,
    pub(crate) client_ca: crate::pki::ClientCaBundle,
    pub(crate) client_signer: Option<crate::pki::CertificateAuthority>,
    pub(crate) policies: crate::authz::PolicyCache,
    pub(crate) webhooks: crate::webhook::WebhookCache,
    /// The bound ValidatingAdmissionPolicies of each logical cluster.
    pub(crate) admission_policies: crate::policy::PolicyCache,
    /// The port the server serves on: the advertised one until a listener is bound.
    pub(crate) serving_port: watch::Sender<u16>,
    /// Request counters of the default cluster, served at `/metrics`.
    pub(crate) metrics: crate::metrics::Metrics,
    /// Watch events of converted resources, encoded once for all their watchers.
    pub(crate) watch_encodings: crate::handlers::watch_shared::SharedEncodings,
}

/// An embedded Kubernetes-compatible API server. Cheap to clone.
#[derive(Clone)]
pub struct ApiServer {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("revision", &self.inner.store.revision())
            .finish()
    }
}

impl ApiServer {
    /// Opens storage, registers resources, creates the default cluster's system namespaces and
    /// starts the background controllers (garbage collector, namespaces, CRDs). Must be called
    /// inside a Tokio runtime.
    #[inline(never)]
    pub fn start(
        config: ApiServerConfig,
    ) -> futures::future::BoxFuture<'static, Result<ApiServer, StartError>> {
        Box::pin(Self::start_body(config))
    }

    async fn start_body(config: ApiServerConfig) -> Result<ApiServer, StartError> {
        let store = match &config.data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|source| StartError::DataDir {
                    path: dir.clone(),
                    source,
                })?;
                let path = dir.join("objects.db");
                let store_config = config.store.clone();
                let opening = path.clone();
                let quota = config.database_quota_bytes;
                tokio::task::spawn_blocking(move || {
                    let mut backend = SqliteBackend::open(&opening)?;
                    if let Some(bytes) = quota {
                        backend.limit_size(bytes)?;
                    }
                    Store::open(backend, store_config)
                })
                .await
                .map_err(|err| StorageError::Backend(err.to_string()))?
                .map_err(|source| StartError::Database { path, source })?
            }
            None => Store::open(crate::storage::MemoryBackend, config.store.clone())?,
        };
        let sa_key = match &config.data_dir {
            Some(dir) => crate::tokens::load_or_generate_signing_key(&dir.join("pki"))?,
            None => crate::tokens::SigningKey::generate()
                .map_err(|e| crate::pki::PkiError::Crypto(e.to_string()))?,
        };
        let client_ca = config
            .client_ca
            .as_deref()
            .map(crate::pki::ClientCaBundle::from_pem)
            .unwrap_or_default();
        let client_signer = match (&config.client_ca, &config.client_ca_key) {
            (Some(cert), Some(key)) => Some(crate::pki::CertificateAuthority::from_pem(cert, key)?),
            _ => None,
        };
        let sa_config = config.service_account_tokens.clone();
        let (shutdown, _) = watch::channel(false);
        let (serving_port, _) = watch::channel(advertised_port(&config.advertise_address));
        let inner = Arc::new(Inner {
            store,
            registry: Registry::new(),
            config,
            conversions: RwLock::new(HashMap::new()),
            admission: RwLock::new(Vec::new()),
            clusters: Mutex::new(HashSet::new()),
            simulated: Mutex::new(HashMap::new()),
            shutdown,
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            sa_key,
            sa_config,
            client_ca,
            client_signer,
            policies: crate::authz::PolicyCache::default(),
            webhooks: crate::webhook::WebhookCache::default(),
            admission_policies: crate::policy::PolicyCache::default(),
            serving_port,
            metrics: crate::metrics::Metrics::default(),
            watch_encodings: Default::default(),
        });
        let server = ApiServer { inner };
        server.load_crds();
        let mut known: HashSet<String> = server
            .inner
            .store
            .buckets()
            .into_iter()
            .map(|b| b.cluster.to_string())
            .collect();
        known.insert(DEFAULT_CLUSTER.to_owned());
        for cluster in known {
            if let Err(err) = server.ensure_cluster(&cluster).await {
                tracing::warn!(cluster, %err, "cannot initialize logical cluster");
            }
        }
        crate::controllers::start(server.inner.clone());
        Ok(server)
    }

    /// An in-memory server with default settings.
    #[inline(never)]
    pub fn in_memory() -> futures::future::BoxFuture<'static, Result<ApiServer, StartError>> {
        Box::pin(Self::in_memory_body())
    }

    async fn in_memory_body() -> Result<ApiServer, StartError> {
        ApiServer::start(ApiServerConfig::default()).await
    }

    fn load_crds(&self) {
        let crd_resource = "apiextensions.k8s.io/customresourcedefinitions";
        for bucket in self.inner.store.buckets() {
            if &*bucket.resource != crd_resource {
                continue;
            }
            let (_, items) = self.inner.store.list(&bucket, None, None);
            for (_, name, object) in items {
                let Ok(crd) = serde_json::from_slice::<Value>(&object.value) else {
                    continue;
                };
                match resource_from_crd(&crd) {
                    Ok(info) => self
                        .inner
                        .registry
                        .set_crd(&bucket.cluster, &name, &crd, info),
                    Err(err) => tracing::warn!(crd = name, %err, "stored CRD cannot be served"),
                }
            }
        }
    }

    /// The HTTP service for the default cluster (and `/clusters/{name}` prefixes).
    pub fn service(&self) -> ApiService {
        ApiService::new(self.inner.clone(), None)
    }

    /// The HTTP service acting as `identity` on every request (for tests and tools that need
    /// a given user without TLS); authorization applies as for any request.
    pub fn service_as(&self, identity: crate::Identity) -> ApiService {
        ApiService::new(self.inner.clone(), None).with_identity(identity)
    }

    /// The HTTP service bound to one logical cluster: unprefixed paths address `cluster`.
    pub fn service_for_cluster(&self, cluster: &str) -> ApiService {
        ApiService::new(self.inner.clone(), Some(cluster.to_owned()))
    }

    /// Creates a logical cluster (its system namespaces) if it does not exist yet.
    pub async fn ensure_cluster(&self, cluster: &str) -> Result<(), ApiError> {
        self.inner.ensure_cluster(cluster).await
    }

    /// Turns on the workload simulator for logical cluster `cluster` ("" = the default
    /// cluster): Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and Pods there get
    /// the status a real cluster would report once settled, `ready_after` after each change.
    pub fn simulate_workloads(&self, cluster: &str, ready_after: Duration) {
        if let Ok(mut map) = self.inner.simulated.lock() {
            map.insert(cluster.to_owned(), ready_after);
        }
    }

    /// Registers the conversion of a custom resource kind between its versions.
    pub fn register_conversion(&self, group: &str, kind: &str, hook: ConversionHook) {
        let mut map = self
            .inner
            .conversions
            .write()
            .unwrap_or_else(|p| p.into_inner());
        map.insert((group.to_owned(), kind.to_owned()), hook);
    }

    /// Registers an admission hook for writes (create, update, patch, apply, delete) of
    /// `resource` (plural) in API `group`, in every logical cluster. Hooks run in
    /// registration order. Subresource writes (e.g. `status`) are not included; see
    /// [`ApiServer::register_subresource_admission`].
    pub fn register_admission(
        &self,
        group: &str,
        resource: &str,
        hook: crate::admission::AdmissionHook,
    ) {
        self.push_admission(group, resource, None, hook);
    }

    /// Registers an admission hook for writes of `resource/subresource` in API `group`.
    pub fn register_subresource_admission(
        &self,
        group: &str,
        resource: &str,
        subresource: &str,
        hook: crate::admission::AdmissionHook,
    ) {
        self.push_admission(group, resource, Some(subresource), hook);
    }

    fn push_admission(
        &self,
        group: &str,
        resource: &str,
        subresource: Option<&str>,
        hook: crate::admission::AdmissionHook,
    ) {
        let mut hooks = self
            .inner
            .admission
            .write()
            .unwrap_or_else(|p| p.into_inner());
        hooks.push(crate::admission::Registered {
            group: group.to_owned(),
            resource: resource.to_owned(),
            subresource: subresource.map(str::to_owned),
            hook,
        });
    }

    /// The store (for tests and tools).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Stops the background controllers.
    pub fn shutdown(&self) {
        let _ = self.inner.shutdown.send(true);
    }
}

/// The port of a `host:port` address; 6443 (kube-apiserver's secure port) when there is none.
fn advertised_port(address: &str) -> u16 {
    address
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse::<u16>().ok())
        .filter(|p| *p != 0)
        .unwrap_or(6443)
}

impl Inner {
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

    pub(crate) async fn ensure_cluster(self: &Arc<Self>, cluster: &str) -> Result<(), ApiError> {
        if self.cluster_known(cluster) {
            return Ok(());
        }
        let bucket = Bucket::new(cluster, "/namespaces");
        for ns in SYSTEM_NAMESPACES {
            let key = crate::storage::ObjectKey::new(bucket.clone(), "", ns);
            if self.store.get(&key).is_some() {
                continue;
            }
            let object = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns,
                    "uid": uuid::Uuid::new_v4().to_string(),
                    "creationTimestamp": crate::meta::now(),
                    "labels": {"kubernetes.io/metadata.name": ns},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            });
            match self.store.create(key, object).await {
                Ok(_) | Err(StorageError::AlreadyExists) => {}
                Err(err) => {
                    return Err(ApiError::from_storage(
                        err,
                        crate::error::Gr {
                            group: "",
                            resource: "namespaces",
                        },
                        ns,
                    ));
                }
            }
        }
        self.create_default_rbac(cluster).await?;
        for ns in SYSTEM_NAMESPACES {
            // What is not made now, the publisher makes once it runs.
            crate::controllers::publish(self, cluster, ns).await;
        }
        crate::controllers::bootstrap_flowcontrol(self, cluster).await;
        self.clusters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cluster.to_owned());
        Ok(())
    }

    /// Creates the default RBAC objects (kube's bootstrap policy) that are missing.
    async fn create_default_rbac(&self, cluster: &str) -> Result<(), ApiError> {
        // Aggregated roles are stored with their rules filled, as the aggregation controller
        // would leave them, so a fresh cluster is quiet.
        let aggregated = crate::rbac::Policy::bootstrap();
        for mut object in crate::rbac::bootstrap::default_objects() {
            let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
            if kind == "ClusterRole"
                && object.get("aggregationRule").is_some()
                && let Some(role) = aggregated.cluster_role(crate::meta::meta_str(&object, "name"))
                && let Ok(rules) = serde_json::to_value(role.rules.clone().unwrap_or_default())
            {
                object["rules"] = rules;
            }
            let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
            let plural = match kind {
                "ClusterRole" => "clusterroles",
                "ClusterRoleBinding" => "clusterrolebindings",
                "Role" => "roles",
                _ => "rolebindings",
            };
            let name = crate::meta::meta_str(&object, "name").to_owned();
            let namespace = crate::meta::meta_str(&object, "namespace").to_owned();
            let bucket = Bucket::new(cluster, &format!("{}/{plural}", crate::rbac::RBAC_GROUP));
            let key = crate::storage::ObjectKey::new(bucket, &namespace, &name);
            if self.store.get(&key).is_some() {
                continue;
            }
            crate::meta::set_meta(
                &mut object,
                "uid",
                Some(json!(uuid::Uuid::new_v4().to_string())),
            );
            crate::meta::set_meta(
                &mut object,
                "creationTimestamp",
                Some(json!(crate::meta::now())),
            );
            match self.store.create(key, object).await {
                Ok(_) | Err(StorageError::AlreadyExists) => {}
                Err(err) => {
                    return Err(ApiError::from_storage(
                        err,
                        crate::error::Gr {
                            group: crate::rbac::RBAC_GROUP,
                            resource: plural,
                        },
                        &name,
                    ));
                }
            }
        }
        Ok(())
    }
}

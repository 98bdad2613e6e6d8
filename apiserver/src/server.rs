//! The API server object: storage, registry, conversion hooks and background controllers,
//! shared by the HTTP service, the TLS listener and the in-process clients.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::http::ApiService;
use crate::registry::{Registry, resource_from_crd};
use crate::state::Inner;
pub use crate::state::{ApiServerConfig, ConversionHook, DEFAULT_CLUSTER, SYSTEM_NAMESPACES};
use ocm_apiserver_status::ApiError;
use ocm_apiserver_storage::{SqliteBackend, StorageError, Store};

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
            None => Store::open(ocm_apiserver_storage::MemoryBackend, config.store.clone())?,
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
            policies: crate::rbac_policies::PolicyCache::default(),
            webhooks: crate::webhook::WebhookCache::default(),
            apf: crate::apf::ApfCache::default(),
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
        let access = crate::control::ServerAccess::new(server.inner.clone());
        // kube-apiserver registers its local APIServices as it starts.
        crate::controllers::register_apiservices_at_start(&access, DEFAULT_CLUSTER).await;
        crate::controllers::start(access);
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
    pub fn service_as(&self, identity: crate::auth::Identity) -> ApiService {
        ApiService::new(self.inner.clone(), None).with_identity(identity)
    }

    /// The HTTP service bound to one logical cluster: unprefixed paths address `cluster`.
    pub fn service_for_cluster(&self, cluster: &str) -> ApiService {
        ApiService::new(self.inner.clone(), Some(cluster.to_owned()))
    }

    /// Creates a logical cluster (its system namespaces) if it does not exist yet.
    pub async fn ensure_cluster(&self, cluster: &str) -> Result<(), ApiError> {
        crate::controllers::ensure_cluster(
            &crate::control::ServerAccess::new(self.inner.clone()),
            cluster,
        )
        .await
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

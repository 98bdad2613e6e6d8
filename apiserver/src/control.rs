//! What the server's own controllers may use of the server — the narrow interface they get in
//! place of its shared state, as kube-controller-manager gets a client and informers: the
//! store's read side (get, list, every change as it happens), writes through the same pipeline
//! as requests (as the server, under a field manager), the resources served and the CRDs being
//! served, their settings, the logical clusters already set up, and the stop signal. Nothing
//! of a request (authentication, authorization, admission caches, metrics) is reachable here.

use std::sync::Arc;
use std::time::Duration;

use ocm_apiserver_pki::CertificateAuthority;
use ocm_apiserver_storage::{Bucket, Event, ObjectKey, Revision, StorageError, StoredObject};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::ops::Ctx;
use crate::registry::ResourceInfo;
use crate::state::{ApiServerConfig, Inner};

/// The server as its controllers see it; cheap to clone.
#[derive(Clone)]
pub(crate) struct ServerAccess {
    inner: Arc<Inner>,
}

impl ServerAccess {
    /// Access to the server whose shared state is `inner`.
    pub(crate) fn new(inner: Arc<Inner>) -> ServerAccess {
        ServerAccess { inner }
    }

    /// The stored object at `key`.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<StoredObject> {
        self.inner.store.get(key)
    }

    /// Every object of `bucket` (of one namespace if given) after `after`, in key order, and the
    /// revision they were read at.
    pub(crate) fn list(
        &self,
        bucket: &Bucket,
        namespace: Option<&str>,
        after: Option<(&str, &str)>,
    ) -> (Revision, Vec<(String, String, StoredObject)>) {
        self.inner.store.list(bucket, namespace, after)
    }

    /// Every bucket (logical cluster and storage resource) holding objects.
    pub(crate) fn buckets(&self) -> Vec<Bucket> {
        self.inner.store.buckets()
    }

    /// Every change from now on, and the revision it starts after.
    pub(crate) fn watch_all(&self) -> (Revision, mpsc::UnboundedReceiver<Arc<Event>>) {
        self.inner.store.subscribe_all()
    }

    /// Stores `object` at `key` as it is, without the write pipeline: for the objects a logical
    /// cluster is born with, which exist before any admission could run.
    pub(crate) async fn create_stored(
        &self,
        key: ObjectKey,
        object: Value,
    ) -> Result<Arc<Event>, StorageError> {
        self.inner.store.create(key, object).await
    }

    /// A pipeline context for the server's own writes to the objects of `bucket`, under field
    /// manager `manager`; `None` when `bucket` is not a served resource.
    pub(crate) fn writer(&self, bucket: &Bucket, manager: &str) -> Option<Ctx> {
        let res = self
            .inner
            .registry
            .by_storage_resource(&bucket.cluster, &bucket.resource)?;
        let version = res.storage_version.clone();
        let mut ctx = Ctx::new(self.inner.clone(), &bucket.cluster, res, &version);
        ctx.manager = manager.to_owned();
        Some(ctx)
    }

    /// The resources `cluster` serves.
    pub(crate) fn served_resources(&self, cluster: &str) -> Vec<Arc<ResourceInfo>> {
        self.inner.registry.all(cluster)
    }

    /// The resource of kind `kind` in `group` that `cluster` serves.
    pub(crate) fn lookup_kind(
        &self,
        cluster: &str,
        group: &str,
        kind: &str,
    ) -> Option<Arc<ResourceInfo>> {
        self.inner.registry.lookup_kind(cluster, group, kind)
    }

    /// Serves the resource of CRD `name` of `cluster` as `info` describes it.
    pub(crate) fn serve_crd(&self, cluster: &str, name: &str, crd: &Value, info: ResourceInfo) {
        self.inner.registry.set_crd(cluster, name, crd, info);
    }

    /// Stops serving the resource of CRD `name` of `cluster`.
    pub(crate) fn stop_serving_crd(&self, cluster: &str, name: &str) {
        self.inner.registry.remove_crd(cluster, name);
    }

    /// How the server runs.
    pub(crate) fn config(&self) -> &ApiServerConfig {
        &self.inner.config
    }

    /// The signer of the `kubernetes.io/kube-apiserver-client` signer name, when the server
    /// has the client CA's key.
    pub(crate) fn client_signer(&self) -> Option<&CertificateAuthority> {
        self.inner.client_signer.as_ref()
    }

    /// The port the server serves on (0 until a listener starts), and its changes.
    pub(crate) fn serving_port(&self) -> watch::Receiver<u16> {
        self.inner.serving_port.subscribe()
    }

    /// How long the workload simulator of `cluster` takes to bring workloads up; `None` when
    /// `cluster` simulates none.
    pub(crate) fn simulated_delay(&self, cluster: &str) -> Option<Duration> {
        self.inner.simulated_delay(cluster)
    }

    /// Whether `cluster` already has its system namespaces and default objects.
    pub(crate) fn cluster_known(&self, cluster: &str) -> bool {
        self.inner.cluster_known(cluster)
    }

    /// Records that `cluster` has its system namespaces and default objects.
    pub(crate) fn mark_cluster_known(&self, cluster: &str) {
        self.inner.mark_cluster_known(cluster);
    }

    /// Changes to `true` when the server stops.
    pub(crate) fn shutdown(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.subscribe()
    }
}

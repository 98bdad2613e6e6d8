//! One watch per kind per dashboard process, whatever the number of open pages: each kind's
//! objects are kept in a reflector store (managed fields left out), every change is announced
//! on a broadcast channel as the [`Kind`] that changed, and the ManagedClusters' condition
//! changes are remembered ([`crate::history`]) for the cluster page. Pages render from
//! [`Cache::snapshot`], never by listing from the hub per request.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::work::v1::ManifestWork;
use ocm_api::work::v1alpha1::ManifestWorkReplicaSet;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::cache::strip_managed_fields;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

use crate::history::History;

/// Label on join requests (CSRs) naming the cluster that asks.
pub const CLUSTER_NAME_LABEL: &str = ocm_registration::accept::CLUSTER_NAME_LABEL;

/// The kinds the dashboard watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// ManagedCluster.
    Clusters,
    /// CertificateSigningRequest labelled with a cluster name (join requests and renewals).
    Csrs,
    /// ManagedClusterSet.
    ClusterSets,
    /// ManagedClusterSetBinding.
    SetBindings,
    /// Placement.
    Placements,
    /// PlacementDecision.
    Decisions,
    /// AddOnPlacementScore.
    Scores,
    /// ManifestWork.
    Works,
    /// ManifestWorkReplicaSet.
    ReplicaSets,
    /// ClusterManagementAddOn.
    Addons,
    /// ManagedClusterAddOn.
    ClusterAddons,
    /// The clusters' `managed-cluster-lease` Leases.
    Leases,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 12] = [
        Kind::Clusters,
        Kind::Csrs,
        Kind::ClusterSets,
        Kind::SetBindings,
        Kind::Placements,
        Kind::Decisions,
        Kind::Scores,
        Kind::Works,
        Kind::ReplicaSets,
        Kind::Addons,
        Kind::ClusterAddons,
        Kind::Leases,
    ];

    /// The kind's name in the live-update protocol (`clusters`, `csrs`, …).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Clusters => "clusters",
            Kind::Csrs => "csrs",
            Kind::ClusterSets => "clustersets",
            Kind::SetBindings => "clustersetbindings",
            Kind::Placements => "placements",
            Kind::Decisions => "placementdecisions",
            Kind::Scores => "addonplacementscores",
            Kind::Works => "manifestworks",
            Kind::ReplicaSets => "manifestworkreplicasets",
            Kind::Addons => "clustermanagementaddons",
            Kind::ClusterAddons => "managedclusteraddons",
            Kind::Leases => "leases",
        }
    }

    /// The kind called `name`.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What a person calls it.
    pub fn title(self) -> &'static str {
        match self {
            Kind::Clusters => "ManagedClusters",
            Kind::Csrs => "CertificateSigningRequests",
            Kind::ClusterSets => "ManagedClusterSets",
            Kind::SetBindings => "ManagedClusterSetBindings",
            Kind::Placements => "Placements",
            Kind::Decisions => "PlacementDecisions",
            Kind::Scores => "AddOnPlacementScores",
            Kind::Works => "ManifestWorks",
            Kind::ReplicaSets => "ManifestWorkReplicaSets",
            Kind::Addons => "ClusterManagementAddOns",
            Kind::ClusterAddons => "ManagedClusterAddOns",
            Kind::Leases => "Leases",
        }
    }

    fn index(self) -> usize {
        Kind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

/// Whether a kind's watch has listed once, and its last error.
#[derive(Debug, Default)]
struct KindState {
    ready: AtomicBool,
    error: Mutex<Option<String>>,
}

impl KindState {
    /// Records `error`; returns whether it differs from the one before.
    fn set_error(&self, error: Option<String>) -> bool {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        let changed = *slot != error;
        *slot = error;
        changed
    }
}

/// Everything the pages read, at one moment.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// ManagedClusters.
    pub clusters: Vec<Arc<ManagedCluster>>,
    /// CSRs labelled with a cluster name.
    pub csrs: Vec<Arc<CertificateSigningRequest>>,
    /// ManagedClusterSets.
    pub cluster_sets: Vec<Arc<ManagedClusterSet>>,
    /// ManagedClusterSetBindings.
    pub bindings: Vec<Arc<ManagedClusterSetBinding>>,
    /// Placements.
    pub placements: Vec<Arc<Placement>>,
    /// PlacementDecisions.
    pub decisions: Vec<Arc<PlacementDecision>>,
    /// AddOnPlacementScores.
    pub scores: Vec<Arc<AddOnPlacementScore>>,
    /// ManifestWorks.
    pub works: Vec<Arc<ManifestWork>>,
    /// ManifestWorkReplicaSets.
    pub replica_sets: Vec<Arc<ManifestWorkReplicaSet>>,
    /// ClusterManagementAddOns.
    pub addons: Vec<Arc<ClusterManagementAddOn>>,
    /// ManagedClusterAddOns.
    pub cluster_addons: Vec<Arc<ManagedClusterAddOn>>,
    /// The clusters' leases, by cluster (namespace) name.
    pub leases: BTreeMap<String, Arc<Lease>>,
    /// Kinds not listed yet.
    pub loading: Vec<Kind>,
    /// Kinds whose watch fails, with the error.
    pub errors: Vec<(Kind, String)>,
    /// When the snapshot was taken.
    pub now: jiff::Timestamp,
}

/// The watch caches of one dashboard process.
pub struct Cache {
    clusters: Store<ManagedCluster>,
    csrs: Store<CertificateSigningRequest>,
    cluster_sets: Store<ManagedClusterSet>,
    bindings: Store<ManagedClusterSetBinding>,
    placements: Store<Placement>,
    decisions: Store<PlacementDecision>,
    scores: Store<AddOnPlacementScore>,
    works: Store<ManifestWork>,
    replica_sets: Store<ManifestWorkReplicaSet>,
    addons: Store<ClusterManagementAddOn>,
    cluster_addons: Store<ManagedClusterAddOn>,
    leases: Store<Lease>,
    states: Vec<Arc<KindState>>,
    changes: broadcast::Sender<Kind>,
    /// Condition changes of each cluster seen by this process.
    pub history: Arc<History>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("clusters", &self.clusters.len())
            .finish_non_exhaustive()
    }
}

/// What a watch task needs besides its API.
struct WatchCtx {
    kind: Kind,
    state: Arc<KindState>,
    changes: broadcast::Sender<Kind>,
    shutdown: Shutdown,
}

impl Cache {
    /// Starts one watch per kind with `client`; they stop when `shutdown` is cancelled.
    pub fn start(client: &kube::Client, shutdown: &Shutdown) -> Arc<Cache> {
        let (changes, _) = broadcast::channel(1024);
        let states: Vec<Arc<KindState>> = Kind::ALL.iter().map(|_| Arc::default()).collect();
        let history = Arc::new(History::default());
        let ctx = |kind: Kind| WatchCtx {
            kind,
            state: states[kind.index()].clone(),
            changes: changes.clone(),
            shutdown: shutdown.clone(),
        };
        let all = watcher::Config::default();
        let recorder = history.clone();
        let clusters = watch(
            Api::all(client.clone()),
            all.clone(),
            ctx(Kind::Clusters),
            move |cluster: &ManagedCluster| recorder.record(cluster),
        );
        let csrs = watch(
            Api::all(client.clone()),
            all.clone().labels(CLUSTER_NAME_LABEL),
            ctx(Kind::Csrs),
            |_: &CertificateSigningRequest| {},
        );
        let leases = watch(
            Api::all(client.clone()),
            all.clone().fields(&format!(
                "metadata.name={}",
                ocm_api::cluster::names::MANAGED_CLUSTER_LEASE
            )),
            ctx(Kind::Leases),
            |_: &Lease| {},
        );
        let cluster_sets = watch_all(client, ctx(Kind::ClusterSets));
        let bindings = watch_all(client, ctx(Kind::SetBindings));
        let placements = watch_all(client, ctx(Kind::Placements));
        let decisions = watch_all(client, ctx(Kind::Decisions));
        let scores = watch_all(client, ctx(Kind::Scores));
        let works = watch_all(client, ctx(Kind::Works));
        let replica_sets = watch_all(client, ctx(Kind::ReplicaSets));
        let addons = watch_all(client, ctx(Kind::Addons));
        let cluster_addons = watch_all(client, ctx(Kind::ClusterAddons));
        Arc::new(Cache {
            clusters,
            csrs,
            cluster_sets,
            bindings,
            placements,
            decisions,
            scores,
            works,
            replica_sets,
            addons,
            cluster_addons,
            leases,
            states,
            changes,
            history,
        })
    }

    /// Announcements of changed kinds.
    pub fn subscribe(&self) -> broadcast::Receiver<Kind> {
        self.changes.subscribe()
    }

    /// The objects of every kind now.
    pub fn snapshot(&self) -> Snapshot {
        let mut loading = Vec::new();
        let mut errors = Vec::new();
        for kind in Kind::ALL {
            let state = &self.states[kind.index()];
            if !state.ready.load(Ordering::Acquire) {
                loading.push(kind);
            }
            if let Some(err) = state
                .error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
            {
                errors.push((kind, err));
            }
        }
        Snapshot {
            clusters: self.clusters.state(),
            csrs: self.csrs.state(),
            cluster_sets: self.cluster_sets.state(),
            bindings: self.bindings.state(),
            placements: self.placements.state(),
            decisions: self.decisions.state(),
            scores: self.scores.state(),
            works: self.works.state(),
            replica_sets: self.replica_sets.state(),
            addons: self.addons.state(),
            cluster_addons: self.cluster_addons.state(),
            leases: self
                .leases
                .state()
                .into_iter()
                .filter_map(|l| Some((l.metadata.namespace.clone()?, l)))
                .collect(),
            loading,
            errors,
            now: jiff::Timestamp::now(),
        }
    }
}

/// A watch of every object of `K`.
fn watch_all<K>(client: &kube::Client, ctx: WatchCtx) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    watch(
        Api::all(client.clone()),
        watcher::Config::default(),
        ctx,
        |_: &K| {},
    )
}

/// Starts a watch of `api` filling a store; `on_apply` sees each object as it arrives.
fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
    ctx: WatchCtx,
    on_apply: impl Fn(&K) + Send + 'static,
) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let (reader, mut writer) = reflector::store();
    tokio::spawn(async move {
        let WatchCtx {
            kind,
            state,
            changes,
            shutdown,
        } = ctx;
        let mut stream = watcher(api, config)
            .backoff_on_errors()
            .modify(strip_managed_fields::<K>)
            .boxed();
        loop {
            let item = tokio::select! {
                _ = shutdown.cancelled() => break,
                item = stream.next() => item,
            };
            let event = match item {
                None => break,
                Some(Err(err)) => {
                    tracing::debug!(kind = kind.name(), %err, "dashboard watch failed");
                    if state.set_error(Some(err.to_string())) {
                        let _ = changes.send(kind);
                    }
                    continue;
                }
                Some(Ok(event)) => event,
            };
            writer.apply_watcher_event(&event);
            match &event {
                watcher::Event::Apply(object) => {
                    on_apply(object);
                    let _ = changes.send(kind);
                }
                watcher::Event::InitApply(object) => on_apply(object),
                watcher::Event::Delete(_) => {
                    let _ = changes.send(kind);
                }
                watcher::Event::Init => {}
                watcher::Event::InitDone => {
                    state.ready.store(true, Ordering::Release);
                    state.set_error(None);
                    let _ = changes.send(kind);
                }
            }
        }
    });
    reader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.name()), Some(kind));
            assert_eq!(Kind::ALL[kind.index()], kind);
        }
        assert_eq!(Kind::parse("nodes"), None);
    }
}

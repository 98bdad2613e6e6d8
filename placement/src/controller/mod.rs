//! The placement controller: keeps every Placement's PlacementDecisions and status equal to
//! what the [`scheduler`](crate::scheduler) decides for the hub's current objects.
//!
//! It caches ManagedClusters, ManagedClusterSets, ManagedClusterSetBindings,
//! AddOnPlacementScores, PlacementDecisions and Placements with watches. Each event becomes a
//! [`Change`](changes::Change); a pass takes every change that arrived, builds one
//! [`Snapshot`], and schedules only the placements those changes can affect
//! ([`changes::Affected`]): a cluster or score change reaches the placements of namespaces
//! bound to the cluster's sets (before and after the change), a set change those bound to the
//! set, a binding change its namespace, a placement change that placement. A placement's own
//! writes do not schedule it again: status-only placement updates and decision pages equal to
//! what it last wrote are recognised. It also schedules placements again when their result
//! changes by the clock alone (toleration expiry, score validity) and retries failed writes
//! with a growing delay.
//!
//! Writes per placement go through [`write::write`]: pages in an order that never leaves a
//! still-selected cluster out of all pages, surplus pages last, the status at the end.

mod changes;
mod events;
mod pages;
mod write;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::Api;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::labels::PLACEMENT;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::cache::SharedCache;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use crate::scheduler::{Snapshot, SnapshotInput, schedule};
use changes::{Affected, Change, PlacementKey, ToChange};
use write::{Pages, clusters_of};

/// Errors of one placement's writes (logged; the placement is retried).
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// A call to the hub failed.
    #[error("hub API: {0}")]
    Api(#[from] kube::Error),
}

/// The reporting controller of the Events this controller publishes.
const REPORTER: &str = "placementController";

/// How many placements' writes are in flight at once.
const WRITERS: usize = 16;

/// Longest delay between retries of a placement whose writes keep failing.
const MAX_RETRY: Duration = Duration::from_secs(30);

fn cache<K>(api: Api<K>, changes: mpsc::UnboundedSender<Change>, shutdown: &Shutdown) -> Store<K>
where
    K: Resource + ToChange + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default().any_semantic())
            .modify(ocm_runtime::cache::strip_managed_fields),
    )
    .backoff_on_errors()
    .touched_objects();
    let token = shutdown.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                next = stream.next() => match next {
                    Some(Ok(object)) => {
                        if let Some(change) = object.to_change()
                            && changes.send(change).is_err()
                        {
                            return;
                        }
                    }
                    Some(Err(err)) => tracing::debug!(%err, "placement controller watch"),
                    None => return,
                },
            }
        }
    });
    reader
}

/// Passes the changes of `shared` (a ManagedCluster cache another component of the process
/// keeps filled) to `changes`, until shutdown; returns its store.
fn shared_clusters(
    shared: &SharedCache<ManagedCluster>,
    changes: mpsc::UnboundedSender<Change>,
    shutdown: &Shutdown,
) -> Store<ManagedCluster> {
    let mut stream = Box::pin(shared.touched());
    let token = shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                next = stream.next() => match next {
                    Some(cluster) => {
                        if let Some(change) = cluster.to_change()
                            && changes.send(change).is_err()
                        {
                            return;
                        }
                    }
                    None => return,
                },
            }
        }
    });
    shared.store()
}

/// What of a placement decides whether it must be scheduled again (its status does not).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    uid: Option<String>,
    generation: Option<i64>,
    deleting: bool,
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

impl Fingerprint {
    fn of(placement: &Placement) -> Fingerprint {
        let meta = &placement.metadata;
        Fingerprint {
            uid: meta.uid.clone(),
            generation: meta.generation,
            deleting: meta.deletion_timestamp.is_some(),
            annotations: meta.annotations.clone(),
        }
    }
}

/// What the controller remembers of one placement between passes.
#[derive(Default)]
struct Memory {
    /// The placement as last scheduled.
    fingerprint: Option<Fingerprint>,
    /// The pages as last written.
    written: Option<Pages>,
    /// When the result changes by the clock alone.
    requeue_at: Option<Timestamp>,
    /// Failed writes in a row, and when to try again.
    retry: Option<(u32, Timestamp)>,
}

impl Memory {
    fn due(&self) -> Option<Timestamp> {
        match (self.requeue_at, self.retry.map(|(_, at)| at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

struct Caches {
    clusters: Store<ManagedCluster>,
    sets: Store<ManagedClusterSet>,
    bindings: Store<ManagedClusterSetBinding>,
    scores: Store<AddOnPlacementScore>,
    decisions: Store<PlacementDecision>,
    placements: Store<Placement>,
}

impl Caches {
    fn start(
        client: &kube::Client,
        clusters: Option<&SharedCache<ManagedCluster>>,
        tx: &mpsc::UnboundedSender<Change>,
        shutdown: &Shutdown,
    ) -> Caches {
        Caches {
            clusters: match clusters {
                Some(shared) => shared_clusters(shared, tx.clone(), shutdown),
                None => cache(Api::all(client.clone()), tx.clone(), shutdown),
            },
            sets: cache(Api::all(client.clone()), tx.clone(), shutdown),
            bindings: cache(Api::all(client.clone()), tx.clone(), shutdown),
            scores: cache(Api::all(client.clone()), tx.clone(), shutdown),
            decisions: cache(Api::all(client.clone()), tx.clone(), shutdown),
            placements: cache(Api::all(client.clone()), tx.clone(), shutdown),
        }
    }

    async fn ready(&self) -> bool {
        let waits = [
            self.clusters.wait_until_ready().await,
            self.sets.wait_until_ready().await,
            self.bindings.wait_until_ready().await,
            self.scores.wait_until_ready().await,
            self.decisions.wait_until_ready().await,
            self.placements.wait_until_ready().await,
        ];
        waits.iter().all(Result::is_ok)
    }
}

/// Runs the controller until `shutdown` is cancelled.
#[inline(never)]
pub fn run(client: kube::Client, shutdown: Shutdown) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(client, None, shutdown))
}

/// Like [`run`], reading ManagedClusters from `clusters`, a cache shared with other
/// components of the process that the caller keeps filled ([`SharedCache::run`]).
#[inline(never)]
pub fn run_sharing(
    client: kube::Client,
    clusters: SharedCache<ManagedCluster>,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(client, Some(clusters), shutdown))
}

async fn run_body(
    client: kube::Client,
    clusters: Option<SharedCache<ManagedCluster>>,
    shutdown: Shutdown,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let caches = Caches::start(&client, clusters.as_ref(), &tx, &shutdown);
    drop(tx);
    if !caches.ready().await {
        tracing::warn!("placement controller: caches never became ready; not running");
        return;
    }
    let recorder = EventSink::start(&client, &shutdown);
    let mut memory: HashMap<PlacementKey, Memory> = HashMap::new();
    let mut previous: Option<Snapshot> = None;
    let mut everything = true;
    let mut pending: Vec<Change> = Vec::new();
    loop {
        while let Ok(change) = rx.try_recv() {
            pending.push(change);
        }
        // With no placement there is nothing to schedule: a hub that has none (a fleet
        // being registered) skips the snapshot of every cluster that each pass would build.
        // The first placement to appear is then scheduled against a fresh snapshot.
        if memory.is_empty() && caches.placements.state().is_empty() {
            pending.clear();
            previous = None;
            everything = true;
            if !wait_for_work(&mut rx, &mut pending, &memory, &shutdown).await {
                return;
            }
            continue;
        }
        let now = Timestamp::now();
        let decisions = caches.decisions.state();
        let snapshot = Snapshot::new(SnapshotInput {
            clusters: caches.clusters.state(),
            cluster_sets: caches.sets.state(),
            bindings: caches.bindings.state(),
            scores: caches.scores.state(),
            decisions: decisions.clone(),
            now,
        });
        let mut by_placement: HashMap<PlacementKey, Vec<Arc<PlacementDecision>>> = HashMap::new();
        for d in decisions {
            if let (Some(ns), Some(p)) = (d.namespace(), d.labels().get(PLACEMENT)) {
                by_placement.entry((ns, p.clone())).or_default().push(d);
            }
        }
        let keys: Vec<PlacementKey> = caches
            .placements
            .state()
            .iter()
            .filter_map(|p| Some((p.namespace()?, p.name_any())))
            .collect();
        let mut dirty: HashSet<PlacementKey> = HashSet::new();
        if std::mem::take(&mut everything) {
            dirty.extend(keys.iter().cloned());
        } else {
            let bindings = caches.bindings.state();
            let affected = Affected::new(&keys, &bindings);
            for change in pending.drain(..) {
                if let Change::Decision(key, name) = &change
                    && own_write(&memory, &by_placement, key, name)
                {
                    continue;
                }
                if let Change::Placement(key) = &change
                    && status_only(&memory, &caches.placements, key)
                {
                    continue;
                }
                affected.resolve(&change, previous.as_ref(), &snapshot, &mut dirty);
            }
        }
        pending.clear();
        for (key, mem) in &memory {
            if mem.due().is_some_and(|at| at <= now) {
                dirty.insert(key.clone());
            }
        }
        // Scheduling is quick and runs here; the writes of up to WRITERS placements are in
        // flight at once. Results are made lazily, so only those are held in memory.
        let outcomes: Vec<Outcome> = futures::stream::iter(dirty)
            .map(|key| {
                let job = prepare(&key, &caches, &memory, &by_placement, &snapshot);
                let client = client.clone();
                let recorder = recorder.clone();
                async move {
                    match job {
                        Job::Gone => Outcome::Gone(key),
                        Job::Skipped(fingerprint) => Outcome::Skipped(key, fingerprint),
                        Job::Write(job) => {
                            let job = *job;
                            let written = write::write(
                                &client,
                                &job.placement,
                                &job.cached,
                                job.written.as_ref(),
                                job.decisions,
                                job.status,
                            )
                            .await;
                            let written = match written {
                                Ok((pages, report)) => {
                                    recorder.send(
                                        &job.placement,
                                        &report,
                                        &job.warnings,
                                        &job.ranking,
                                    );
                                    Ok(pages)
                                }
                                Err(err) => Err(err),
                            };
                            Outcome::Written {
                                key,
                                fingerprint: job.fingerprint,
                                requeue_at: job.requeue_at,
                                written,
                            }
                        }
                    }
                }
            })
            .buffer_unordered(WRITERS)
            .collect()
            .await;
        for outcome in outcomes {
            remember(&mut memory, outcome, now);
        }
        previous = Some(snapshot);
        if !wait_for_work(&mut rx, &mut pending, &memory, &shutdown).await {
            return;
        }
    }
}

/// Waits for the next change (added to `pending`) or the earliest requeue remembered in
/// `memory`; `false` when the controller is to stop.
async fn wait_for_work(
    rx: &mut mpsc::UnboundedReceiver<Change>,
    pending: &mut Vec<Change>,
    memory: &HashMap<PlacementKey, Memory>,
    shutdown: &Shutdown,
) -> bool {
    let due = memory.values().filter_map(Memory::due).min();
    let sleep = async {
        match due {
            Some(at) => {
                let wait = at.duration_since(Timestamp::now());
                tokio::time::sleep(Duration::try_from(wait).unwrap_or_default()).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = shutdown.cancelled() => false,
        change = rx.recv() => match change {
            Some(change) => {
                pending.push(change);
                true
            }
            None => false,
        },
        () = sleep => true,
    }
}

/// Whether a decision change is the echo of this controller's own last write: the page, as
/// cached now, equals what was written (absent when it was deleted or never written).
fn own_write(
    memory: &HashMap<PlacementKey, Memory>,
    cached: &HashMap<PlacementKey, Vec<Arc<PlacementDecision>>>,
    key: &PlacementKey,
    name: &str,
) -> bool {
    let Some(written) = memory.get(key).and_then(|m| m.written.as_ref()) else {
        return false;
    };
    let now = cached
        .get(key)
        .and_then(|ds| ds.iter().find(|d| d.name_any() == name))
        .map(|d| clusters_of(d));
    now.as_ref() == written.get(name)
}

/// Whether a placement change touched only what scheduling does not read (its status, which
/// this controller writes itself).
fn status_only(
    memory: &HashMap<PlacementKey, Memory>,
    placements: &Store<Placement>,
    key: &PlacementKey,
) -> bool {
    let Some(seen) = memory.get(key).and_then(|m| m.fingerprint.as_ref()) else {
        return false;
    };
    placements
        .get(&ObjectRef::new(&key.1).within(&key.0))
        .is_some_and(|p| Fingerprint::of(&p) == *seen)
}

/// One placement's scheduled result, ready to be written.
struct WriteJob {
    placement: Arc<Placement>,
    fingerprint: Fingerprint,
    cached: Vec<Arc<PlacementDecision>>,
    written: Option<Pages>,
    decisions: Vec<PlacementDecision>,
    status: ocm_api::cluster::v1beta1::PlacementStatus,
    requeue_at: Option<Timestamp>,
    ranking: crate::scheduler::Ranking,
    warnings: Vec<crate::scheduler::Warning>,
}

/// What scheduling one dirty placement asks for.
enum Job {
    /// The placement no longer exists.
    Gone,
    /// Scheduling is disabled for it or it is being deleted.
    Skipped(Fingerprint),
    /// Its result must be written.
    Write(Box<WriteJob>),
}

/// How handling one placement ended.
enum Outcome {
    Gone(PlacementKey),
    Skipped(PlacementKey, Fingerprint),
    Written {
        key: PlacementKey,
        fingerprint: Fingerprint,
        requeue_at: Option<Timestamp>,
        written: Result<Pages, PlacementError>,
    },
}

/// Schedules placement `key` against `snapshot`.
fn prepare(
    key: &PlacementKey,
    caches: &Caches,
    memory: &HashMap<PlacementKey, Memory>,
    by_placement: &HashMap<PlacementKey, Vec<Arc<PlacementDecision>>>,
    snapshot: &Snapshot,
) -> Job {
    let Some(placement) = caches
        .placements
        .get(&ObjectRef::new(&key.1).within(&key.0))
    else {
        return Job::Gone;
    };
    let fingerprint = Fingerprint::of(&placement);
    let result = schedule(&placement, snapshot);
    if result.skipped.is_some() {
        return Job::Skipped(fingerprint);
    }
    Job::Write(Box::new(WriteJob {
        fingerprint,
        cached: by_placement.get(key).cloned().unwrap_or_default(),
        written: memory.get(key).and_then(|m| m.written.clone()),
        decisions: result.decisions,
        status: result.status,
        requeue_at: result.requeue_at,
        ranking: result.ranking,
        warnings: result.warnings,
        placement,
    }))
}

/// Records how handling a placement ended.
fn remember(memory: &mut HashMap<PlacementKey, Memory>, outcome: Outcome, now: Timestamp) {
    match outcome {
        Outcome::Gone(key) => {
            memory.remove(&key);
        }
        Outcome::Skipped(key, fingerprint) => {
            let mem = memory.entry(key).or_default();
            mem.fingerprint = Some(fingerprint);
            mem.requeue_at = None;
            mem.retry = None;
        }
        Outcome::Written {
            key,
            fingerprint,
            requeue_at,
            written,
        } => {
            let mem = memory.entry(key.clone()).or_default();
            mem.fingerprint = Some(fingerprint);
            mem.requeue_at = requeue_at;
            match written {
                Ok(pages) => {
                    mem.written = Some(pages);
                    mem.retry = None;
                }
                Err(err) => {
                    let attempts = mem.retry.map_or(0, |(n, _)| n) + 1;
                    let delay = Duration::from_millis(500)
                        .saturating_mul(1 << attempts.min(6))
                        .min(MAX_RETRY);
                    tracing::warn!(%err, namespace = %key.0, placement = %key.1, attempts, "writing placement decisions failed; retrying");
                    mem.written = None;
                    mem.retry = Some((
                        attempts,
                        now + SignedDuration::try_from(delay)
                            .unwrap_or(SignedDuration::from_secs(1)),
                    ));
                }
            }
        }
    }
}

/// Events waiting to be published, at most this many (more are dropped, as client-go's
/// event broadcaster drops events when its queue is full).
const EVENT_QUEUE: usize = 1000;

/// Publishes placement Events from a task of its own, so that they never hold up writes.
#[derive(Clone)]
struct EventSink {
    tx: mpsc::Sender<(ObjectReference, Event)>,
}

impl EventSink {
    fn start(client: &kube::Client, shutdown: &Shutdown) -> EventSink {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: REPORTER.to_string(),
                instance: None,
            },
        );
        let (tx, mut rx) = mpsc::channel::<(ObjectReference, Event)>(EVENT_QUEUE);
        let token = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let (regarding, event) = tokio::select! {
                    () = token.cancelled() => return,
                    next = rx.recv() => match next {
                        Some(next) => next,
                        None => return,
                    },
                };
                if let Err(err) = recorder.publish(&event, &regarding).await {
                    tracing::debug!(%err, "publishing a placement event");
                }
            }
        });
        EventSink { tx }
    }

    /// Queues the Events of one placement's write.
    fn send(
        &self,
        placement: &Placement,
        report: &events::WriteReport,
        warnings: &[crate::scheduler::Warning],
        ranking: &crate::scheduler::Ranking,
    ) {
        if report.created.is_empty() && report.updated.is_empty() && report.deleted.is_empty() {
            return;
        }
        let scores = events::score_note(ranking);
        let regarding = placement.object_ref(&());
        for event in events::decision_events(placement, report, warnings, &scores) {
            let related = ObjectReference {
                api_version: regarding.api_version.clone(),
                kind: Some("PlacementDecision".to_string()),
                name: Some(event.decision.clone()),
                namespace: regarding.namespace.clone(),
                ..ObjectReference::default()
            };
            let event = Event {
                type_: if event.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: event.reason.to_string(),
                note: Some(event.note),
                action: event.action.to_string(),
                secondary: Some(related),
            };
            if self.tx.try_send((regarding.clone(), event)).is_err() {
                tracing::debug!("placement event queue full; dropping an event");
            }
        }
    }
}

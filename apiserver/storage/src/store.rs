//! The store: an in-memory index of every object (serving get, list and watch) in front of a
//! durable [`Backend`]. All writes go through one committer thread, which checks
//! preconditions, assigns revisions, makes a whole batch of concurrent writes durable with one
//! backend commit (group commit), and only then publishes them to readers and watchers and
//! acknowledges them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{
    Backend, Batch, Bucket, Event, EventKind, ObjectKey, Revision, StorageError, StoredObject,
};

/// Tuning of the store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// How many events the history window keeps for watch resumption and paged lists.
    pub history_window: usize,
    /// Most bytes the history window's events keep alive (see `event_bytes`): past it the
    /// oldest events go, down to `history_min_events` (a fleet's busy minute of large objects
    /// would otherwise hold hundreds of megabytes of superseded versions).
    pub history_bytes: usize,
    /// Events the history window keeps whatever their size and age.
    pub history_min_events: usize,
    /// Oldest an event in the history window may be, above `history_min_events`: an idle
    /// store's window would otherwise fill with hours of lease renewals up to the byte budget.
    /// (kube-apiserver compacts etcd's revisions every five minutes.)
    pub history_max_age: Duration,
    /// Most writes grouped into one durable commit.
    pub max_batch: usize,
    /// Capacity of one watcher's queue; a watcher that falls this far behind is closed.
    pub watcher_queue: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_window: 100_000,
            history_bytes: 48 << 20,
            history_min_events: 1_000,
            history_max_age: Duration::from_secs(5 * 60),
            max_batch: 512,
            watcher_queue: 16_384,
        }
    }
}

/// Sizes of what a [`Store`] holds, from [`Store::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Objects stored.
    pub objects: usize,
    /// Their serialized size.
    pub object_bytes: usize,
    /// Events in the history window.
    pub history_events: usize,
    /// Bytes of the objects (and previous objects) those events carry.
    pub history_bytes: usize,
}

/// A write operation on one object.
#[derive(Debug)]
enum WriteOp {
    Create {
        key: ObjectKey,
        value: Unrevisioned,
    },
    Update {
        key: ObjectKey,
        value: Unrevisioned,
        expected: Option<Revision>,
    },
    Delete {
        key: ObjectKey,
        expected: Option<Revision>,
    },
}

struct Request {
    op: WriteOp,
    reply: oneshot::Sender<Result<Arc<Event>, StorageError>>,
}

type Objects = BTreeMap<(String, String), StoredObject>;

struct State {
    revision: Revision,
    /// Events with a revision at or below this one may be missing from `history`.
    compacted: Revision,
    /// Per bucket, the newest of its events that left `history`: a bucket's own changes after
    /// that are all still there, however many events of busier buckets left since (10,000
    /// clusters' lease renewals must not push out the ManagedCluster history agents resume
    /// from).
    bucket_floors: HashMap<Bucket, Revision>,
    /// The floors that moved since the backend last stored them: the committer sends these
    /// with its next batch (not every floor — a fleet's store has tens of thousands).
    unpersisted_floors: HashMap<Bucket, Revision>,
    /// Below this revision no bucket's events are known.
    floor_base: Revision,
    buckets: HashMap<Bucket, Objects>,
    /// Revision of the last write (create, update or delete) to each bucket.
    bucket_writes: HashMap<Bucket, Revision>,
    history: VecDeque<Arc<Event>>,
    /// When the events of `history` were published: per published batch, its last revision
    /// and the time, oldest first (marks at or below `compacted` are dropped).
    history_marks: VecDeque<(Revision, Instant)>,
    /// The events of `history` by bucket, oldest first: a watch resumed on one resource reads
    /// that resource's changes without stepping over every other resource's.
    bucket_history: HashMap<Bucket, VecDeque<Arc<Event>>>,
    /// What the events in `history` keep alive (see [`event_bytes`] and `shared_prevs`).
    history_bytes: usize,
    /// Sizes of previous versions not yet counted in `history_bytes`, by the revision of the
    /// event in the window that also holds them as its object: counted once that event leaves.
    shared_prevs: HashMap<Revision, usize>,
    watchers: Mutex<Watchers>,
}

/// A registered watcher's queue.
type WatcherSlot = mpsc::Sender<Arc<Event>>;

/// Which objects of a bucket a watcher can care about: every event of an object outside its
/// scope is one its own filter would drop, so it is not sent. Names and namespaces are part
/// of an object's key and never change, so the scope is exact for them; the watcher still
/// applies its whole filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchScope {
    /// Only objects of this namespace (`""` for cluster-scoped objects).
    pub namespace: Option<String>,
    /// Only objects of this name.
    pub name: Option<String>,
}

impl WatchScope {
    /// Whether the object at `key` is within the scope.
    pub fn holds(&self, key: &ObjectKey) -> bool {
        self.namespace
            .as_ref()
            .is_none_or(|ns| *ns == key.namespace)
            && self.name.as_ref().is_none_or(|name| *name == key.name)
    }
}

/// The watchers of one bucket, by the narrowest part of their scope.
#[derive(Default)]
struct BucketWatchers {
    /// Watchers of the whole bucket.
    any: Vec<WatcherSlot>,
    /// Watchers of one namespace.
    by_namespace: HashMap<String, Vec<WatcherSlot>>,
    /// Watchers of one name, in one namespace (`Some`) or any (`None`).
    by_name: HashMap<(Option<String>, String), Vec<WatcherSlot>>,
}

impl BucketWatchers {
    fn slots(&mut self, scope: WatchScope) -> &mut Vec<WatcherSlot> {
        match scope {
            WatchScope {
                namespace,
                name: Some(name),
            } => self.by_name.entry((namespace, name)).or_default(),
            WatchScope {
                namespace: Some(namespace),
                name: None,
            } => self.by_namespace.entry(namespace).or_default(),
            WatchScope {
                namespace: None,
                name: None,
            } => &mut self.any,
        }
    }

    /// Queues `event` for every watcher whose scope holds its object; drops the watchers
    /// that are gone or too far behind.
    fn send(&mut self, event: &Arc<Event>) {
        let deliver = |list: &mut Vec<WatcherSlot>| {
            list.retain(|tx| tx.try_send(event.clone()).is_ok());
        };
        deliver(&mut self.any);
        let namespace = &event.key.namespace;
        if let Some(list) = self.by_namespace.get_mut(namespace) {
            deliver(list);
            if list.is_empty() {
                self.by_namespace.remove(namespace);
            }
        }
        for key in [
            (Some(namespace.clone()), event.key.name.clone()),
            (None, event.key.name.clone()),
        ] {
            if let Some(list) = self.by_name.get_mut(&key) {
                deliver(list);
                if list.is_empty() {
                    self.by_name.remove(&key);
                }
            }
        }
    }

    /// Drops the watchers whose receiving side is gone.
    fn sweep(&mut self) {
        self.any.retain(|tx| !tx.is_closed());
        for list in self.by_namespace.values_mut() {
            list.retain(|tx| !tx.is_closed());
        }
        self.by_namespace.retain(|_, list| !list.is_empty());
        for list in self.by_name.values_mut() {
            list.retain(|tx| !tx.is_closed());
        }
        self.by_name.retain(|_, list| !list.is_empty());
    }

    fn is_empty(&self) -> bool {
        self.any.is_empty() && self.by_namespace.is_empty() && self.by_name.is_empty()
    }
}

/// Registrations between two sweeps of watchers that ended without an event to notice it.
const SWEEP_EVERY: u64 = 1024;

#[derive(Default)]
struct Watchers {
    registered: u64,
    by_bucket: HashMap<Bucket, BucketWatchers>,
    all: Vec<mpsc::UnboundedSender<Arc<Event>>>,
}

impl State {
    fn get(&self, key: &ObjectKey) -> Option<&StoredObject> {
        self.buckets
            .get(&key.bucket)?
            .get(&(key.namespace.clone(), key.name.clone()))
    }
}

struct Shared {
    state: RwLock<State>,
    config: StoreConfig,
    /// Why the last commit to the backend failed; `None` once one succeeds.
    commit_error: Mutex<Option<String>>,
}

/// The revisioned object store. Cheap to clone; all clones share one index and committer.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
    tx: std_mpsc::Sender<Request>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("revision", &self.revision())
            .finish()
    }
}

/// Events for one watcher: the replayed history first, then live events from `receiver`.
#[derive(Debug)]
pub struct WatchSubscription {
    /// Events after the requested revision that were already committed at subscription time.
    pub replay: Vec<Arc<Event>>,
    /// The store revision at subscription time.
    pub revision: Revision,
    /// Live events committed after `revision`, in order. Ends when the watcher falls too far
    /// behind or the store shuts down.
    pub receiver: mpsc::Receiver<Arc<Event>>,
}

fn read_state(shared: &Shared) -> std::sync::RwLockReadGuard<'_, State> {
    shared
        .state
        .read()
        .unwrap_or_else(|poison| poison.into_inner())
}

fn write_state(shared: &Shared) -> std::sync::RwLockWriteGuard<'_, State> {
    shared
        .state
        .write()
        .unwrap_or_else(|poison| poison.into_inner())
}

impl State {
    /// The oldest revision a watch or list of `bucket` may start from.
    fn floor_of(&self, bucket: &Bucket) -> Revision {
        self.bucket_floors
            .get(bucket)
            .copied()
            .unwrap_or(0)
            .max(self.floor_base)
    }

    /// Whether a watch of `scope` in `bucket` from revision `from` has nothing to miss even
    /// though events of the bucket after `from` left the window: it names one object, which
    /// exists and was last written at or before `from` — any later write of it, a delete and
    /// re-create included, would carry a later revision. (An agent watching its own
    /// ManagedCluster resumes after a hub restart although thousands of other clusters'
    /// changes have left the window since; kube-apiserver resumes it from etcd's history.)
    fn untouched_since(&self, bucket: &Bucket, scope: &WatchScope, from: Revision) -> bool {
        let Some(name) = scope.name.as_deref() else {
            return false;
        };
        // A watch by name in every namespace can only be one object if it is cluster-scoped.
        let namespace = scope.namespace.as_deref().unwrap_or("");
        from >= self.floor_base
            && from <= self.revision
            && self
                .buckets
                .get(bucket)
                .and_then(|objects| objects.get(&(namespace.to_owned(), name.to_owned())))
                .is_some_and(|object| object.rev <= from)
    }

    /// The events of `bucket` in the history window after revision `from`, oldest first.
    fn bucket_events_after(
        &self,
        bucket: &Bucket,
        from: Revision,
    ) -> std::collections::vec_deque::Iter<'_, Arc<Event>> {
        match self.bucket_history.get(bucket) {
            Some(events) => {
                let start = events.partition_point(|event| event.rev <= from);
                events.range(start..)
            }
            None => EMPTY_EVENTS.range(..),
        }
    }
}

/// No events (what [`State::bucket_events_after`] iterates for a bucket without history).
static EMPTY_EVENTS: VecDeque<Arc<Event>> = VecDeque::new();

fn lock_watchers(state: &State) -> std::sync::MutexGuard<'_, Watchers> {
    state
        .watchers
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

impl Store {
    /// Loads everything from `backend` and starts the committer thread.
    pub fn open<B: Backend>(mut backend: B, config: StoreConfig) -> Result<Store, StorageError> {
        let loaded = backend.load()?;
        let mut buckets: HashMap<Bucket, Objects> = HashMap::new();
        let mut bucket_writes: HashMap<Bucket, Revision> = HashMap::new();
        for (key, object) in loaded.objects {
            let last = bucket_writes.entry(key.bucket.clone()).or_default();
            *last = (*last).max(object.rev);
            buckets
                .entry(key.bucket)
                .or_default()
                .insert((key.namespace, key.name), object);
        }
        // What the backend holds; floors that move from here on (the trim below included) are
        // sent with the committer's next batch.
        let mut state = State {
            revision: loaded.revision,
            compacted: loaded.history_floor.min(loaded.revision),
            bucket_floors: loaded.bucket_floors.into_iter().collect(),
            unpersisted_floors: HashMap::new(),
            floor_base: loaded.floor_base.min(loaded.revision),
            buckets,
            bucket_writes,
            history: VecDeque::new(),
            history_marks: VecDeque::new(),
            bucket_history: HashMap::new(),
            history_bytes: 0,
            shared_prevs: HashMap::new(),
            watchers: Mutex::new(Watchers::default()),
        };
        let kept: VecDeque<Arc<Event>> = loaded.history.into_iter().map(Arc::new).collect();
        // The revision of each key's latest kept event so far: the previous write of the key's
        // next kept event.
        let mut latest: HashMap<&ObjectKey, Revision> = HashMap::new();
        for event in &kept {
            state
                .bucket_history
                .entry(event.key.bucket.clone())
                .or_default()
                .push_back(event.clone());
            let prev_rev = latest.insert(&event.key, event.rev);
            count_new_event(&mut state, event, prev_rev);
        }
        // The window read back counts as published now: its events' ages were not stored.
        let now = Instant::now();
        if let Some(last) = kept.back() {
            state.history_marks.push_back((last.rev, now));
        }
        state.history = kept;
        trim_history(&mut state, &config, now);
        let shared = Arc::new(Shared {
            state: RwLock::new(state),
            config,
            commit_error: Mutex::new(None),
        });
        let (tx, rx) = std_mpsc::channel::<Request>();
        let committer_shared = shared.clone();
        std::thread::Builder::new()
            .name("apiserver-committer".into())
            .spawn(move || committer(backend, committer_shared, rx))
            .map_err(|err| StorageError::Backend(format!("spawning committer: {err}")))?;
        Ok(Store { shared, tx })
    }

    /// A store without persistence.
    pub fn memory() -> Result<Store, StorageError> {
        Store::open(super::MemoryBackend, StoreConfig::default())
    }

    /// What the store holds in memory: objects and the history window.
    pub fn stats(&self) -> StoreStats {
        let state = read_state(&self.shared);
        let (objects, object_bytes) = state
            .buckets
            .values()
            .flat_map(|objects| objects.values())
            .fold((0, 0), |(n, bytes), o| (n + 1, bytes + o.value.len()));
        StoreStats {
            objects,
            object_bytes,
            history_events: state.history.len(),
            history_bytes: state.history_bytes,
        }
    }

    /// How many objects of each resource the store holds and their serialized size, by
    /// `group/resource` over all logical clusters, largest first.
    pub fn object_bytes_by_resource(&self) -> Vec<(String, usize, usize)> {
        let state = read_state(&self.shared);
        let mut by_resource: HashMap<&str, (usize, usize)> = HashMap::new();
        for (bucket, objects) in &state.buckets {
            let entry = by_resource.entry(&bucket.resource).or_default();
            for object in objects.values() {
                entry.0 += 1;
                entry.1 += object.value.len();
            }
        }
        let mut sizes: Vec<_> = by_resource
            .into_iter()
            .map(|(resource, (n, bytes))| (resource.to_owned(), n, bytes))
            .collect();
        sizes.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        sizes
    }

    /// Whether the store takes writes: `Err` with the backend's reason when its last commit
    /// failed (the health checks' `etcd`), `Ok` once a commit succeeds again.
    pub fn health(&self) -> Result<(), String> {
        match &*self
            .shared
            .commit_error
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
        {
            Some(reason) => Err(reason.clone()),
            None => Ok(()),
        }
    }

    /// The last committed revision.
    pub fn revision(&self) -> Revision {
        read_state(&self.shared).revision
    }

    /// The oldest revision a watch of any bucket may start from.
    pub fn compacted_revision(&self) -> Revision {
        read_state(&self.shared).compacted
    }

    /// The oldest revision a watch of `bucket` may start from: every change of the bucket
    /// after it is still in the history window.
    pub fn bucket_floor(&self, bucket: &Bucket) -> Revision {
        read_state(&self.shared).floor_of(bucket)
    }

    /// The revision of the last write (create, update or delete) to `bucket`; 0 if none since
    /// the store was opened and it holds no object. Cheap: for change detection.
    pub fn bucket_revision(&self, bucket: &Bucket) -> Revision {
        read_state(&self.shared)
            .bucket_writes
            .get(bucket)
            .copied()
            .unwrap_or(0)
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<StoredObject> {
        read_state(&self.shared).get(key).cloned()
    }

    /// Every object of a bucket (of one namespace if given) whose (namespace, name) comes
    /// after `after`, in key order, and the current revision.
    pub fn list(
        &self,
        bucket: &Bucket,
        namespace: Option<&str>,
        after: Option<(&str, &str)>,
    ) -> (Revision, Vec<(String, String, StoredObject)>) {
        let state = read_state(&self.shared);
        let items = match state.buckets.get(bucket) {
            Some(objects) => collect_range(objects, namespace, after),
            None => Vec::new(),
        };
        (state.revision, items)
    }

    /// The object `name` in `namespace` of a bucket (none or one) and the current revision,
    /// read together: a list that names its object without scanning the bucket.
    pub fn list_named(
        &self,
        bucket: &Bucket,
        namespace: &str,
        name: &str,
    ) -> (Revision, Vec<(String, String, StoredObject)>) {
        let state = read_state(&self.shared);
        let key = (namespace.to_owned(), name.to_owned());
        let items = state
            .buckets
            .get(bucket)
            .and_then(|objects| objects.get(&key))
            .map(|object| (key.0.clone(), key.1.clone(), object.clone()))
            .into_iter()
            .collect();
        (state.revision, items)
    }

    /// Like [`Store::list`], but the state as it was at revision `at` (reconstructed from the
    /// history window); fails with [`StorageError::Compacted`] when `at` is too old.
    pub fn list_at(
        &self,
        bucket: &Bucket,
        namespace: Option<&str>,
        after: Option<(&str, &str)>,
        at: Revision,
    ) -> Result<Vec<(String, String, StoredObject)>, StorageError> {
        let state = read_state(&self.shared);
        if at >= state.revision {
            let items = match state.buckets.get(bucket) {
                Some(objects) => collect_range(objects, namespace, after),
                None => Vec::new(),
            };
            return Ok(items);
        }
        let floor = state.floor_of(bucket);
        if at < floor {
            return Err(StorageError::Compacted {
                requested: at,
                oldest: floor + 1,
            });
        }
        // Undo, newest first, every change of this bucket made after `at`.
        let mut undo: HashMap<(String, String), Option<StoredObject>> = HashMap::new();
        for event in state.bucket_events_after(bucket, at).rev() {
            if let Some(ns) = namespace
                && event.key.namespace != ns
            {
                continue;
            }
            let before = event.prev.as_ref().map(|value| StoredObject {
                rev: revision_of(value).unwrap_or(0),
                value: value.clone(),
            });
            undo.insert(
                (event.key.namespace.clone(), event.key.name.clone()),
                before,
            );
        }
        let mut objects: Objects = match state.buckets.get(bucket) {
            Some(objects) => range_map(objects, namespace),
            None => BTreeMap::new(),
        };
        drop(state);
        for (k, before) in undo {
            match before {
                Some(object) => {
                    objects.insert(k, object);
                }
                None => {
                    objects.remove(&k);
                }
            }
        }
        Ok(collect_range(&objects, namespace, after))
    }

    /// Atomically the current objects of a bucket (in `namespace`, when given) and a
    /// subscription to every later change within `scope`.
    pub fn list_and_watch(
        &self,
        bucket: &Bucket,
        namespace: Option<&str>,
        scope: WatchScope,
    ) -> (Vec<(String, String, StoredObject)>, WatchSubscription) {
        let state = read_state(&self.shared);
        let items = match state.buckets.get(bucket) {
            Some(objects) => collect_range(objects, namespace, None),
            None => Vec::new(),
        };
        let receiver = self.register(&state, bucket, scope);
        (
            items,
            WatchSubscription {
                replay: Vec::new(),
                revision: state.revision,
                receiver,
            },
        )
    }

    /// Every change of a bucket within `scope` after revision `from`: the part still in the
    /// history window is replayed, later ones arrive live. Fails when `from` is older than the
    /// window.
    pub fn watch_from(
        &self,
        bucket: &Bucket,
        from: Revision,
        scope: WatchScope,
    ) -> Result<WatchSubscription, StorageError> {
        let state = read_state(&self.shared);
        let floor = state.floor_of(bucket);
        if from < floor && !state.untouched_since(bucket, &scope, from) {
            return Err(StorageError::Compacted {
                requested: from,
                oldest: floor + 1,
            });
        }
        let replay = state
            .bucket_events_after(bucket, from)
            .filter(|event| scope.holds(&event.key))
            .cloned()
            .collect();
        let receiver = self.register(&state, bucket, scope);
        Ok(WatchSubscription {
            replay,
            revision: state.revision,
            receiver,
        })
    }

    /// The changes of `bucket` after revision `from`, oldest first, from the history window,
    /// without subscribing to later ones. Fails with [`StorageError::Compacted`] when `from`
    /// is older than the window.
    pub fn changes_since(
        &self,
        bucket: &Bucket,
        from: Revision,
    ) -> Result<Vec<Arc<Event>>, StorageError> {
        let state = read_state(&self.shared);
        let floor = state.floor_of(bucket);
        if from < floor {
            return Err(StorageError::Compacted {
                requested: from,
                oldest: floor + 1,
            });
        }
        Ok(state.bucket_events_after(bucket, from).cloned().collect())
    }

    /// Every change of every object, for the server's own controllers. Unbounded: the receiver
    /// must keep up. Also returns the revision it starts after.
    pub fn subscribe_all(&self) -> (Revision, mpsc::UnboundedReceiver<Arc<Event>>) {
        let state = read_state(&self.shared);
        let (tx, rx) = mpsc::unbounded_channel();
        lock_watchers(&state).all.push(tx);
        (state.revision, rx)
    }

    /// The buckets that hold at least one object.
    pub fn buckets(&self) -> Vec<Bucket> {
        let state = read_state(&self.shared);
        state
            .buckets
            .iter()
            .filter(|(_, objects)| !objects.is_empty())
            .map(|(b, _)| b.clone())
            .collect()
    }

    fn register(
        &self,
        state: &State,
        bucket: &Bucket,
        scope: WatchScope,
    ) -> mpsc::Receiver<Arc<Event>> {
        let (tx, rx) = mpsc::channel(self.shared.config.watcher_queue.max(1));
        let mut watchers = lock_watchers(state);
        watchers.registered += 1;
        if watchers.registered.is_multiple_of(SWEEP_EVERY) {
            // A watcher that ended is otherwise noticed only when an event in its scope
            // fails to reach it, and a narrow scope may see none for a long time.
            for bucket in watchers.by_bucket.values_mut() {
                bucket.sweep();
            }
            watchers.by_bucket.retain(|_, b| !b.is_empty());
        }
        let slots = watchers
            .by_bucket
            .entry(bucket.clone())
            .or_default()
            .slots(scope);
        slots.retain(|tx| !tx.is_closed());
        slots.push(tx);
        rx
    }

    /// Creates an object; `metadata.resourceVersion` is set to the new revision.
    pub async fn create(&self, key: ObjectKey, value: Value) -> Result<Arc<Event>, StorageError> {
        let value = Unrevisioned::new(value)?;
        self.submit(WriteOp::Create { key, value }).await
    }

    /// Replaces an object, if it is at revision `expected` (when given).
    pub async fn update(
        &self,
        key: ObjectKey,
        value: Value,
        expected: Option<Revision>,
    ) -> Result<Arc<Event>, StorageError> {
        let value = Unrevisioned::new(value)?;
        self.submit(WriteOp::Update {
            key,
            value,
            expected,
        })
        .await
    }

    /// Removes an object, if it is at revision `expected` (when given). The event's object is
    /// its last state carrying the deletion revision.
    pub async fn delete(
        &self,
        key: ObjectKey,
        expected: Option<Revision>,
    ) -> Result<Arc<Event>, StorageError> {
        self.submit(WriteOp::Delete { key, expected }).await
    }

    async fn submit(&self, op: WriteOp) -> Result<Arc<Event>, StorageError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Request { op, reply })
            .map_err(|_| StorageError::Closed)?;
        rx.await.map_err(|_| StorageError::Closed)?
    }
}

fn range_map(objects: &Objects, namespace: Option<&str>) -> Objects {
    match namespace {
        None => objects.clone(),
        Some(ns) => objects
            .range((ns.to_owned(), String::new())..)
            .take_while(|((n, _), _)| n == ns)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

fn collect_range(
    objects: &Objects,
    namespace: Option<&str>,
    after: Option<(&str, &str)>,
) -> Vec<(String, String, StoredObject)> {
    use std::ops::Bound;
    let lower = match (after, namespace) {
        (Some((ns, name)), _) => Bound::Excluded((ns.to_owned(), name.to_owned())),
        (None, Some(ns)) => Bound::Included((ns.to_owned(), String::new())),
        (None, None) => Bound::Unbounded,
    };
    objects
        .range((lower, Bound::Unbounded))
        .take_while(|((ns, _), _)| namespace.is_none_or(|want| ns == want))
        .map(|((ns, name), object)| (ns.clone(), name.clone(), object.clone()))
        .collect()
}

/// The `metadata.resourceVersion` of serialized object JSON.
pub(crate) fn revision_of(value: &[u8]) -> Option<Revision> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "resourceVersion")]
        resource_version: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Obj {
        metadata: Option<Meta>,
    }
    let obj: Obj = serde_json::from_slice(value).ok()?;
    obj.metadata?.resource_version?.parse().ok()
}

/// An object serialized before the committer gives it a revision: its JSON with an empty
/// `metadata.resourceVersion` and where the revision's digits go. Writers serialize in their
/// own tasks, so the committer's queue holds bytes rather than `Value` trees (under a burst of
/// writes, hundreds wait there) and serializing is spread over the runtime's threads instead
/// of the one committer. The JSON is byte for byte what serializing the object with its
/// revision set gives. A delete's event (the last state with the deletion revision) is made
/// the same way, by the committer, as only it knows the current object.
struct Unrevisioned {
    json: Vec<u8>,
    /// Where the revision's digits go; `None` when `metadata` is not an object (nothing to set).
    split: Option<usize>,
}

impl std::fmt::Debug for Unrevisioned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unrevisioned")
            .field("bytes", &self.json.len())
            .field("split", &self.split)
            .finish()
    }
}

impl Unrevisioned {
    fn new(mut value: Value) -> Result<Unrevisioned, StorageError> {
        let serializing =
            |err: serde_json::Error| StorageError::Backend(format!("serializing object: {err}"));
        let Some(object) = value.as_object_mut() else {
            return Err(StorageError::Backend("object is not a JSON object".into()));
        };
        let metadata = object
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        let Some(metadata) = metadata.as_object_mut() else {
            let json = ocm_apiserver_json::to_vec(&value).map_err(serializing)?;
            return Ok(Unrevisioned { json, split: None });
        };
        metadata.insert("resourceVersion".into(), Value::String(String::new()));
        // The compact form kube writes (see `json_out`), written out so as to note where the
        // revision goes.
        let mut json = Vec::new();
        let mut split = None;
        json.push(b'{');
        for (i, (key, field)) in object.iter().enumerate() {
            if i > 0 {
                json.push(b',');
            }
            ocm_apiserver_json::to_writer(&mut json, key).map_err(serializing)?;
            json.push(b':');
            match field.as_object().filter(|_| key == "metadata") {
                Some(metadata) => {
                    json.push(b'{');
                    for (j, (name, item)) in metadata.iter().enumerate() {
                        if j > 0 {
                            json.push(b',');
                        }
                        ocm_apiserver_json::to_writer(&mut json, name).map_err(serializing)?;
                        json.push(b':');
                        if name == "resourceVersion" {
                            json.push(b'"');
                            split = Some(json.len());
                            json.push(b'"');
                        } else {
                            ocm_apiserver_json::to_writer(&mut json, item).map_err(serializing)?;
                        }
                    }
                    json.push(b'}');
                }
                None => ocm_apiserver_json::to_writer(&mut json, field).map_err(serializing)?,
            }
        }
        json.push(b'}');
        Ok(Unrevisioned { json, split })
    }

    /// The object's JSON with `rev` as its resourceVersion, in a buffer of exactly its size.
    fn with_revision(&self, rev: Revision) -> Bytes {
        let Some(split) = self.split else {
            return Bytes::copy_from_slice(&self.json);
        };
        let digits = rev.to_string();
        let mut bytes = Vec::with_capacity(self.json.len() + digits.len());
        bytes.extend_from_slice(&self.json[..split]);
        bytes.extend_from_slice(digits.as_bytes());
        bytes.extend_from_slice(&self.json[split..]);
        Bytes::from(bytes)
    }
}

/// The outcome of one request inside a batch, before the batch is durable.
struct Pending {
    reply: oneshot::Sender<Result<Arc<Event>, StorageError>>,
    result: Result<Arc<Event>, StorageError>,
}

/// Commits batches of writes; a batch carries the bucket floors that moved since the backend
/// last stored them.
fn committer<B: Backend>(mut backend: B, shared: Arc<Shared>, rx: std_mpsc::Receiver<Request>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < shared.config.max_batch {
            match rx.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let mut pending = Vec::with_capacity(batch.len());
        let mut events = Vec::new();
        let mut revision;
        let history_floor;
        let floor_base;
        let moved_floors: Vec<(Bucket, Revision)>;
        {
            let state = read_state(&shared);
            revision = state.revision;
            history_floor = state.compacted;
            floor_base = state.floor_base;
            moved_floors = state
                .unpersisted_floors
                .iter()
                .map(|(bucket, rev)| (bucket.clone(), *rev))
                .collect();
            let mut overlay: HashMap<ObjectKey, Option<StoredObject>> = HashMap::new();
            for Request { op, reply } in batch {
                let result = prepare(&state, &mut overlay, &mut revision, op);
                let result = result.map(|event| {
                    let event = Arc::new(event);
                    events.push(event.clone());
                    event
                });
                pending.push(Pending { reply, result });
            }
        }
        let committed = if events.is_empty() {
            Ok(())
        } else {
            backend.commit(Batch {
                events: &events,
                revision,
                history_floor,
                bucket_floors: &moved_floors,
                floor_base,
            })
        };
        if !events.is_empty() {
            *shared
                .commit_error
                .lock()
                .unwrap_or_else(|poison| poison.into_inner()) =
                committed.as_ref().err().map(ToString::to_string);
        }
        if let Err(err) = committed {
            tracing::error!(%err, "storage commit failed");
            for p in pending {
                let result = match p.result {
                    Ok(_) => Err(StorageError::Backend(err.to_string())),
                    Err(other) => Err(other),
                };
                let _ = p.reply.send(result);
            }
            continue;
        }
        if !events.is_empty() {
            publish(&shared, events, revision, &moved_floors);
        }
        for p in pending {
            let _ = p.reply.send(p.result);
        }
    }
}

fn prepare(
    state: &State,
    overlay: &mut HashMap<ObjectKey, Option<StoredObject>>,
    revision: &mut Revision,
    op: WriteOp,
) -> Result<Event, StorageError> {
    let key = match &op {
        WriteOp::Create { key, .. } | WriteOp::Update { key, .. } | WriteOp::Delete { key, .. } => {
            key.clone()
        }
    };
    let current = match overlay.get(&key) {
        Some(entry) => entry.clone(),
        None => state.get(&key).cloned(),
    };
    let rev = *revision + 1;
    let (kind, object, stored) = match op {
        WriteOp::Create { value, .. } => {
            if current.is_some() {
                return Err(StorageError::AlreadyExists);
            }
            let bytes = value.with_revision(rev);
            (EventKind::Added, bytes.clone(), Some(bytes))
        }
        WriteOp::Update {
            value, expected, ..
        } => {
            let Some(current) = &current else {
                return Err(StorageError::NotFound);
            };
            if let Some(expected) = expected
                && expected != current.rev
            {
                return Err(StorageError::Conflict {
                    current: current.rev,
                });
            }
            let bytes = value.with_revision(rev);
            (EventKind::Modified, bytes.clone(), Some(bytes))
        }
        WriteOp::Delete { expected, .. } => {
            let Some(current) = &current else {
                return Err(StorageError::NotFound);
            };
            if let Some(expected) = expected
                && expected != current.rev
            {
                return Err(StorageError::Conflict {
                    current: current.rev,
                });
            }
            let last: Value = serde_json::from_slice(&current.value)
                .map_err(|err| StorageError::Backend(format!("stored object is corrupt: {err}")))?;
            (
                EventKind::Deleted,
                Unrevisioned::new(last)?.with_revision(rev),
                None,
            )
        }
    };
    *revision = rev;
    overlay.insert(
        key.clone(),
        stored.as_ref().map(|value| StoredObject {
            rev,
            value: value.clone(),
        }),
    );
    let event = Event {
        rev,
        key,
        kind,
        object,
        prev: current.map(|c| c.value),
    };
    Ok(event)
}

/// Bookkeeping of one event in the history besides its object: the event, its key's strings
/// and the window's slot.
const EVENT_OVERHEAD: usize = 160;

/// What an event in the history keeps alive besides its previous object: its object, its key
/// and bookkeeping. Its previous object is the object of the key's event before it: counted
/// with this event when that event is not in the window, else once that event leaves it (until
/// then the two share one copy).
fn event_bytes(event: &Event) -> usize {
    event.object.len() + event.key.namespace.len() + event.key.name.len() + EVENT_OVERHEAD
}

/// Size of an event's previous object.
fn prev_bytes(event: &Event) -> usize {
    event.prev.as_ref().map_or(0, Bytes::len)
}

/// Adds `event`, whose key's previous write was at `prev_rev` (if any), to the window's count.
fn count_new_event(state: &mut State, event: &Event, prev_rev: Option<Revision>) {
    state.history_bytes += event_bytes(event);
    match prev_rev {
        Some(rev) if rev > state.compacted && event.prev.is_some() => {
            state.shared_prevs.insert(rev, prev_bytes(event));
        }
        _ => state.history_bytes += prev_bytes(event),
    }
}

/// The newest revision published at least `max_age` before `now` (0 when none was).
fn expired_revision(
    marks: &VecDeque<(Revision, Instant)>,
    now: Instant,
    max_age: Duration,
) -> Revision {
    marks
        .iter()
        .take_while(|(_, at)| now.saturating_duration_since(*at) >= max_age)
        .last()
        .map_or(0, |(rev, _)| *rev)
}

/// Drops the oldest events while the history window is over its event count, or above its
/// minimum of events and over its byte budget or older than its age limit.
fn trim_history(state: &mut State, config: &StoreConfig, now: Instant) {
    let window = config.history_window.max(1);
    let budget = config.history_bytes;
    let keep = config.history_min_events;
    let expired = expired_revision(&state.history_marks, now, config.history_max_age);
    while state.history.len() > window
        || (state.history.len() > keep
            && (state.history_bytes > budget
                || state.history.front().is_some_and(|e| e.rev <= expired)))
    {
        let Some(old) = state.history.pop_front() else {
            break;
        };
        // Its own previous object was counted by now: its key's earlier event left first.
        state.history_bytes = state
            .history_bytes
            .saturating_sub(event_bytes(&old) + prev_bytes(&old));
        // A later event of its key that holds its object as previous now holds it alone.
        if let Some(bytes) = state.shared_prevs.remove(&old.rev) {
            state.history_bytes += bytes;
        }
        // The oldest event of the window is the oldest of its bucket.
        if let Some(events) = state.bucket_history.get_mut(&old.key.bucket) {
            events.pop_front();
            if events.is_empty() {
                state.bucket_history.remove(&old.key.bucket);
            }
        }
        state.compacted = old.rev;
        state.bucket_floors.insert(old.key.bucket.clone(), old.rev);
        state
            .unpersisted_floors
            .insert(old.key.bucket.clone(), old.rev);
    }
    while state
        .history_marks
        .front()
        .is_some_and(|(rev, _)| *rev <= state.compacted)
    {
        state.history_marks.pop_front();
    }
}

/// Makes a durable batch visible: its events, and `persisted_floors` (the floors it carried)
/// no longer waiting to be stored unless they moved again since.
fn publish(
    shared: &Shared,
    events: Vec<Arc<Event>>,
    revision: Revision,
    persisted_floors: &[(Bucket, Revision)],
) {
    let mut state = write_state(shared);
    for (bucket, rev) in persisted_floors {
        if state.unpersisted_floors.get(bucket) == Some(rev) {
            state.unpersisted_floors.remove(bucket);
        }
    }
    for event in &events {
        state
            .bucket_writes
            .insert(event.key.bucket.clone(), event.rev);
        let objects = state.buckets.entry(event.key.bucket.clone()).or_default();
        let k = (event.key.namespace.clone(), event.key.name.clone());
        let replaced = match event.kind {
            EventKind::Deleted => objects.remove(&k),
            _ => objects.insert(
                k,
                StoredObject {
                    rev: event.rev,
                    value: event.object.clone(),
                },
            ),
        };
        count_new_event(&mut state, event, replaced.map(|o| o.rev));
        state.history.push_back(event.clone());
        state
            .bucket_history
            .entry(event.key.bucket.clone())
            .or_default()
            .push_back(event.clone());
    }
    let now = Instant::now();
    if let Some(last) = events.last() {
        state.history_marks.push_back((last.rev, now));
    }
    trim_history(&mut state, &shared.config, now);
    state.revision = revision;
    let mut watchers = lock_watchers(&state);
    for event in &events {
        if let Some(bucket) = watchers.by_bucket.get_mut(&event.key.bucket) {
            bucket.send(event);
            if bucket.is_empty() {
                watchers.by_bucket.remove(&event.key.bucket);
            }
        }
        watchers.all.retain(|tx| tx.send(event.clone()).is_ok());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::SqliteBackend;

    fn key(ns: &str, name: &str) -> ObjectKey {
        ObjectKey::new(Bucket::new("", "/configmaps"), ns, name)
    }

    fn cm(name: &str, v: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": v}})
    }

    /// The server's JSON (`json_out`) of `object` after setting `metadata.resourceVersion` to
    /// `rev` (when `metadata` is an object or absent), as the Value tree would give it.
    fn with_revision_set(mut object: Value, rev: Revision) -> Vec<u8> {
        let metadata = object
            .as_object_mut()
            .unwrap()
            .entry("metadata")
            .or_insert_with(|| json!({}));
        if let Some(metadata) = metadata.as_object_mut() {
            metadata.insert("resourceVersion".into(), json!(rev.to_string()));
        }
        ocm_apiserver_json::to_vec(&object).unwrap()
    }

    #[test]
    fn objects_serialized_before_their_revision_read_as_serialized_with_it() {
        let objects = [
            cm("a", "b"),
            json!({"kind": "X", "metadata": {"name": "n", "resourceVersion": "17", "labels": {"a\"b": "\u{1}é"}},
                   "spec": {"template": {"metadata": {"resourceVersion": "9"}}}}),
            json!({"spec": {"x": [1, 2.5, 1.0, 1e21, null, true, "s"]}}),
            json!({"metadata": {}, "z": {}, "a": []}),
            json!({"metadata": "not an object", "data": 1}),
            json!({"metadata": {"name": "m"}, "resourceVersion": "top-level, not metadata's"}),
        ];
        for object in objects {
            for rev in [1, 42, u64::MAX] {
                let early = Unrevisioned::new(object.clone())
                    .unwrap()
                    .with_revision(rev);
                assert_eq!(early, with_revision_set(object.clone(), rev), "{object}");
            }
        }
        assert!(Unrevisioned::new(json!(["not", "an", "object"])).is_err());
    }

    #[tokio::test]
    async fn revisions_are_global_and_monotonic() {
        let store = Store::memory().unwrap();
        let a = store.create(key("ns", "a"), cm("a", "1")).await.unwrap();
        let other = ObjectKey::new(Bucket::new("c1", "apps/deployments"), "ns", "a");
        let b = store.create(other, json!({"metadata": {}})).await.unwrap();
        assert_eq!(a.rev + 1, b.rev);
        assert_eq!(store.revision(), b.rev);
        assert_eq!(revision_of(&a.object), Some(a.rev));
        let err = store
            .create(key("ns", "a"), cm("a", "2"))
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::AlreadyExists));
        let err = store
            .update(key("ns", "a"), cm("a", "2"), Some(a.rev + 5))
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Conflict { current } if current == a.rev));
        let u = store
            .update(key("ns", "a"), cm("a", "2"), Some(a.rev))
            .await
            .unwrap();
        assert_eq!(u.kind, EventKind::Modified);
        assert_eq!(u.prev.as_ref().map(|p| revision_of(p)), Some(Some(a.rev)));
        let d = store.delete(key("ns", "a"), None).await.unwrap();
        assert_eq!(revision_of(&d.object), Some(d.rev));
        assert!(store.get(&key("ns", "a")).is_none());
        assert!(matches!(
            store.delete(key("ns", "a"), None).await,
            Err(StorageError::NotFound)
        ));
    }

    #[tokio::test]
    async fn list_ranges_and_history_snapshots() {
        let store = Store::memory().unwrap();
        for (ns, name) in [("a", "x"), ("a", "y"), ("b", "x"), ("c", "z")] {
            store.create(key(ns, name), cm(name, "1")).await.unwrap();
        }
        let bucket = Bucket::new("", "/configmaps");
        let (rev, all) = store.list(&bucket, None, None);
        assert_eq!(all.len(), 4);
        let (_, in_a) = store.list(&bucket, Some("a"), None);
        assert_eq!(in_a.len(), 2);
        let (_, after) = store.list(&bucket, None, Some(("a", "y")));
        assert_eq!(
            after.iter().map(|i| i.1.as_str()).collect::<Vec<_>>(),
            ["x", "z"]
        );
        store.delete(key("a", "x"), None).await.unwrap();
        store
            .update(key("b", "x"), cm("x", "2"), None)
            .await
            .unwrap();
        store.create(key("a", "w"), cm("w", "1")).await.unwrap();
        let old = store.list_at(&bucket, None, None, rev).unwrap();
        let names: Vec<_> = old
            .iter()
            .map(|i| format!("{}/{}@{}", i.0, i.1, i.2.rev))
            .collect();
        let now: Vec<_> = all
            .iter()
            .map(|i| format!("{}/{}@{}", i.0, i.1, i.2.rev))
            .collect();
        assert_eq!(names, now);
    }

    #[tokio::test]
    async fn watch_replays_and_compacts() {
        let config = StoreConfig {
            history_window: 3,
            ..StoreConfig::default()
        };
        let store = Store::open(crate::MemoryBackend, config).unwrap();
        let bucket = Bucket::new("", "/configmaps");
        let first = store.create(key("ns", "a"), cm("a", "1")).await.unwrap();
        let mut sub = store
            .watch_from(&bucket, first.rev, WatchScope::default())
            .unwrap();
        assert!(sub.replay.is_empty());
        for i in 0..4 {
            store
                .update(key("ns", "a"), cm("a", &i.to_string()), None)
                .await
                .unwrap();
        }
        for i in 0..4 {
            let event = sub.receiver.recv().await.unwrap();
            assert_eq!(event.rev, first.rev + 1 + i);
        }
        assert!(matches!(
            store.watch_from(&bucket, first.rev, WatchScope::default()),
            Err(StorageError::Compacted { .. })
        ));
        let recent = store
            .watch_from(&bucket, store.revision() - 2, WatchScope::default())
            .unwrap();
        assert_eq!(recent.replay.len(), 2);
    }

    fn scope(namespace: Option<&str>, name: Option<&str>) -> WatchScope {
        WatchScope {
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
        }
    }

    /// The (namespace, name) of every event queued for `sub` so far.
    fn received(sub: &mut WatchSubscription) -> Vec<(String, String)> {
        let mut seen = Vec::new();
        while let Ok(event) = sub.receiver.try_recv() {
            seen.push((event.key.namespace.clone(), event.key.name.clone()));
        }
        seen
    }

    #[tokio::test]
    async fn watchers_get_only_the_events_of_their_scope() {
        let store = Store::memory().unwrap();
        let bucket = Bucket::new("", "/configmaps");
        let start = store.revision();
        let mut whole = store
            .watch_from(&bucket, start, WatchScope::default())
            .unwrap();
        let mut in_ns1 = store
            .watch_from(&bucket, start, scope(Some("ns1"), None))
            .unwrap();
        let mut a_in_ns1 = store
            .watch_from(&bucket, start, scope(Some("ns1"), Some("a")))
            .unwrap();
        let mut any_a = store
            .watch_from(&bucket, start, scope(None, Some("a")))
            .unwrap();
        for (ns, name) in [("ns1", "a"), ("ns1", "b"), ("ns2", "a"), ("ns2", "b")] {
            store.create(key(ns, name), cm(name, "1")).await.unwrap();
        }
        store.delete(key("ns1", "a"), None).await.unwrap();
        let pair = |ns: &str, name: &str| (ns.to_owned(), name.to_owned());
        assert_eq!(received(&mut whole).len(), 5);
        assert_eq!(
            received(&mut in_ns1),
            [pair("ns1", "a"), pair("ns1", "b"), pair("ns1", "a")]
        );
        assert_eq!(
            received(&mut a_in_ns1),
            [pair("ns1", "a"), pair("ns1", "a")]
        );
        assert_eq!(
            received(&mut any_a),
            [pair("ns1", "a"), pair("ns2", "a"), pair("ns1", "a")]
        );
        // Replay keeps to the scope as well.
        let replayed = store
            .watch_from(&bucket, start, scope(Some("ns2"), Some("b")))
            .unwrap();
        let replayed: Vec<_> = replayed
            .replay
            .iter()
            .map(|e| pair(&e.key.namespace, &e.key.name))
            .collect();
        assert_eq!(replayed, [pair("ns2", "b")]);
    }

    #[tokio::test]
    async fn watchers_that_ended_are_dropped_without_an_event() {
        let store = Store::memory().unwrap();
        let bucket = Bucket::new("", "/configmaps");
        // Watches of objects that never change, each ended by its client.
        for i in 0..SWEEP_EVERY {
            let name = format!("o{i}");
            drop(store.watch_from(&bucket, store.revision(), scope(Some("ns"), Some(&name))));
        }
        let watchers = |store: &Store| {
            let state = read_state(&store.shared);
            let watchers = lock_watchers(&state);
            watchers.by_bucket.get(&bucket).map_or(0, |b| {
                b.any.len()
                    + b.by_namespace.values().map(Vec::len).sum::<usize>()
                    + b.by_name.values().map(Vec::len).sum::<usize>()
            })
        };
        // The last registration swept the ones before it.
        assert!(watchers(&store) <= 1, "{}", watchers(&store));
        // Re-watching the same object replaces the ended watcher instead of piling up.
        let live = store
            .watch_from(&bucket, store.revision(), scope(Some("ns"), Some("x")))
            .unwrap();
        drop(store.watch_from(&bucket, store.revision(), scope(Some("ns"), Some("x"))));
        let again = store
            .watch_from(&bucket, store.revision(), scope(Some("ns"), Some("x")))
            .unwrap();
        let state = read_state(&store.shared);
        let slots = lock_watchers(&state)
            .by_bucket
            .get(&bucket)
            .and_then(|b| b.by_name.get(&(Some("ns".to_owned()), "x".to_owned())))
            .map_or(0, Vec::len);
        assert_eq!(slots, 2);
        drop((live, again));
    }

    #[tokio::test]
    async fn the_history_window_keeps_to_its_byte_budget() {
        let config = StoreConfig {
            history_bytes: 2_000,
            history_min_events: 2,
            ..StoreConfig::default()
        };
        let store = Store::open(crate::MemoryBackend, config).unwrap();
        let bucket = Bucket::new("", "/configmaps");
        let first = store.create(key("ns", "a"), cm("a", "1")).await.unwrap();
        let big = "x".repeat(800);
        let mut last = first.rev;
        for _ in 0..5 {
            last = store
                .update(key("ns", "a"), cm("a", &big), None)
                .await
                .unwrap()
                .rev;
        }
        // Five 800-byte versions do not fit in 2,000 bytes: the oldest went.
        assert!(matches!(
            store.watch_from(&bucket, first.rev, WatchScope::default()),
            Err(StorageError::Compacted { .. })
        ));
        // The newest ones are still there to resume from.
        let before_last = store.changes_since(&bucket, last - 1).unwrap();
        assert_eq!(before_last.len(), 1);
    }

    #[tokio::test]
    async fn events_older_than_the_age_limit_leave_the_window_down_to_its_minimum() {
        // An age limit of zero: every published event is already too old.
        let config = StoreConfig {
            history_min_events: 2,
            history_max_age: Duration::ZERO,
            ..StoreConfig::default()
        };
        let store = Store::open(crate::MemoryBackend, config).unwrap();
        let bucket = Bucket::new("", "/configmaps");
        let first = store.create(key("ns", "a"), cm("a", "0")).await.unwrap();
        let mut last = first.rev;
        for i in 1..6 {
            last = store
                .update(key("ns", "a"), cm("a", &i.to_string()), None)
                .await
                .unwrap()
                .rev;
        }
        assert_eq!(store.stats().history_events, 2);
        assert!(matches!(
            store.watch_from(&bucket, first.rev, WatchScope::default()),
            Err(StorageError::Compacted { .. })
        ));
        assert_eq!(store.changes_since(&bucket, last - 2).unwrap().len(), 2);
        // Marks of batches that left the window are not kept either.
        let marks = read_state(&store.shared).history_marks.len();
        assert!(marks <= 2, "{marks} marks kept for 2 events");
    }

    #[tokio::test]
    async fn events_younger_than_the_age_limit_stay() {
        let config = StoreConfig {
            history_min_events: 1,
            history_max_age: Duration::from_secs(3600),
            ..StoreConfig::default()
        };
        let store = Store::open(crate::MemoryBackend, config).unwrap();
        store.create(key("ns", "a"), cm("a", "0")).await.unwrap();
        for i in 1..6 {
            store
                .update(key("ns", "a"), cm("a", &i.to_string()), None)
                .await
                .unwrap();
        }
        assert_eq!(store.stats().history_events, 6);
    }

    #[tokio::test]
    async fn previous_versions_count_against_the_history_budget() {
        let config = StoreConfig {
            history_bytes: 4_600,
            history_min_events: 1,
            ..StoreConfig::default()
        };
        let store = Store::open(crate::MemoryBackend, config).unwrap();
        let big = "x".repeat(900);
        let created = store.create(key("ns", "a"), cm("a", &big)).await.unwrap();
        store
            .update(key("ns", "a"), cm("a", &big), None)
            .await
            .unwrap();
        // While the create is in the window its object is the update's previous version too:
        // one copy, counted once.
        let both = store.stats();
        assert_eq!(both.history_events, 2);
        assert!(both.history_bytes < 2_600, "{both:?}");
        for n in 0..2 {
            store
                .update(key("ns", "a"), cm("a", &format!("{big}{n}")), None)
                .await
                .unwrap();
        }
        // Four versions of ~1,160 bytes each (object and bookkeeping) do not fit in 4,600: the
        // create left, and its object, still the first update's previous version, is counted.
        let stats = store.stats();
        assert_eq!(stats.history_events, 3, "{stats:?}");
        assert!(stats.history_bytes > 3_000 + 900, "{stats:?}");
        assert!(matches!(
            store.changes_since(&Bucket::new("", "/configmaps"), created.rev - 1),
            Err(StorageError::Compacted { .. })
        ));
    }

    #[tokio::test]
    async fn changes_since_reads_history_without_watching() {
        let config = StoreConfig {
            history_window: 4,
            ..StoreConfig::default()
        };
        let store = Store::open(crate::MemoryBackend, config).unwrap();
        let bucket = Bucket::new("", "/configmaps");
        let other = ObjectKey::new(Bucket::new("", "/secrets"), "ns", "s");
        let first = store.create(key("ns", "a"), cm("a", "1")).await.unwrap();
        store.create(other, cm("s", "1")).await.unwrap();
        let second = store.create(key("ns", "b"), cm("b", "1")).await.unwrap();
        let deleted = store.delete(key("ns", "a"), None).await.unwrap();
        let changes = store.changes_since(&bucket, first.rev).unwrap();
        let seen: Vec<_> = changes.iter().map(|e| (e.rev, e.kind)).collect();
        assert_eq!(
            seen,
            [
                (second.rev, EventKind::Added),
                (deleted.rev, EventKind::Deleted)
            ]
        );
        assert!(
            store
                .changes_since(&bucket, deleted.rev)
                .unwrap()
                .is_empty()
        );
        assert!(
            lock_watchers(&read_state(&store.shared))
                .by_bucket
                .is_empty()
        );
        for i in 0..4 {
            store
                .update(key("ns", "b"), cm("b", &i.to_string()), None)
                .await
                .unwrap();
        }
        assert!(matches!(
            store.changes_since(&bucket, first.rev),
            Err(StorageError::Compacted { .. })
        ));
        assert_eq!(
            store
                .changes_since(&bucket, store.revision() - 1)
                .unwrap()
                .len(),
            1
        );
    }

    #[tokio::test]
    async fn sqlite_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let last = {
            let store =
                Store::open(SqliteBackend::open(&path).unwrap(), StoreConfig::default()).unwrap();
            let mut handles = Vec::new();
            for i in 0..50 {
                let store = store.clone();
                handles.push(tokio::spawn(async move {
                    store
                        .create(key("ns", &format!("o{i}")), cm("x", "1"))
                        .await
                        .unwrap()
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
            store.delete(key("ns", "o0"), None).await.unwrap().rev
        };
        let store =
            Store::open(SqliteBackend::open(&path).unwrap(), StoreConfig::default()).unwrap();
        assert_eq!(store.revision(), last);
        let (_, items) = store.list(&Bucket::new("", "/configmaps"), None, None);
        assert_eq!(items.len(), 49);
        for (_, _, object) in &items {
            assert_eq!(revision_of(&object.value), Some(object.rev));
        }
        let next = store
            .create(key("ns", "new"), cm("new", "1"))
            .await
            .unwrap();
        assert_eq!(next.rev, last + 1);
    }

    #[tokio::test]
    async fn sqlite_keeps_the_history_window_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let bucket = Bucket::new("", "/configmaps");
        let (seen, last, before) = {
            let store =
                Store::open(SqliteBackend::open(&path).unwrap(), StoreConfig::default()).unwrap();
            store.create(key("ns", "a"), cm("a", "1")).await.unwrap();
            let seen = store
                .create(key("ns", "b"), cm("b", "1"))
                .await
                .unwrap()
                .rev;
            store
                .update(key("ns", "a"), cm("a", "2"), None)
                .await
                .unwrap();
            store.create(key("ns", "c"), cm("c", "1")).await.unwrap();
            let last = store.delete(key("ns", "b"), None).await.unwrap().rev;
            (seen, last, store.stats())
        };
        let store =
            Store::open(SqliteBackend::open(&path).unwrap(), StoreConfig::default()).unwrap();
        // The reopened window counts what it holds as the running one did.
        assert_eq!(store.stats().history_bytes, before.history_bytes);
        assert_eq!(store.revision(), last);
        // A watcher that had seen `b` created resumes: it gets exactly what came after.
        let resumed = store
            .watch_from(&bucket, seen, WatchScope::default())
            .unwrap();
        let got: Vec<_> = resumed
            .replay
            .iter()
            .map(|e| (e.kind, e.key.name.clone(), revision_of(&e.object)))
            .collect();
        assert_eq!(
            got,
            vec![
                (EventKind::Modified, "a".to_owned(), Some(seen + 1)),
                (EventKind::Added, "c".to_owned(), Some(seen + 2)),
                (EventKind::Deleted, "b".to_owned(), Some(last)),
            ]
        );
        // The previous versions came back too: `a` was at "1" before its update.
        let prev: Value = serde_json::from_slice(resumed.replay[0].prev.as_ref().unwrap()).unwrap();
        assert_eq!(prev["data"]["v"], "1");
        // A paged list begun before the restart continues at its revision.
        let then: Vec<_> = store
            .list_at(&bucket, None, None, seen)
            .unwrap()
            .into_iter()
            .map(|(_, name, _)| name)
            .collect();
        assert_eq!(then, vec!["a", "b"]);
        // Writes after the reopen extend the same window.
        let next = store.create(key("ns", "d"), cm("d", "1")).await.unwrap();
        assert_eq!(next.rev, last + 1);
        assert_eq!(store.changes_since(&bucket, seen).unwrap().len(), 4);
    }

    #[tokio::test]
    async fn the_reopened_window_keeps_to_its_limits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let bucket = Bucket::new("", "/configmaps");
        let small = || StoreConfig {
            history_window: 3,
            ..StoreConfig::default()
        };
        let first = {
            let store = Store::open(SqliteBackend::open(&path).unwrap(), small()).unwrap();
            let first = store
                .create(key("ns", "o"), cm("o", "0"))
                .await
                .unwrap()
                .rev;
            for i in 1..6 {
                store
                    .update(key("ns", "o"), cm("o", &i.to_string()), None)
                    .await
                    .unwrap();
            }
            first
        };
        // Reopened with the default (larger) window, only what the small one kept is there.
        let store =
            Store::open(SqliteBackend::open(&path).unwrap(), StoreConfig::default()).unwrap();
        assert!(matches!(
            store.watch_from(&bucket, first, WatchScope::default()),
            Err(StorageError::Compacted { .. })
        ));
        let kept = store
            .changes_since(&bucket, store.compacted_revision())
            .unwrap();
        assert!((3..=4).contains(&kept.len()), "kept {} events", kept.len());
        assert_eq!(kept.last().map(|e| e.rev), Some(store.revision()));
    }

    #[tokio::test]
    async fn a_database_without_a_kept_window_resumes_from_its_revision_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let bucket = Bucket::new("", "/configmaps");
        let last = {
            let store =
                Store::open(SqliteBackend::open(&path).unwrap(), StoreConfig::default()).unwrap();
            store.create(key("ns", "a"), cm("a", "1")).await.unwrap();
            store
                .create(key("ns", "b"), cm("b", "1"))
                .await
                .unwrap()
                .rev
        };
        // As written before the history table existed: no rows, no floors.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DELETE FROM history; DELETE FROM history_floors;
             DELETE FROM meta WHERE key IN ('history_floor', 'floor_base');",
        )
        .unwrap();
        drop(conn);
        let store =
            Store::open(SqliteBackend::open(&path).unwrap(), StoreConfig::default()).unwrap();
        assert_eq!(store.compacted_revision(), last);
        assert!(matches!(
            store.watch_from(&bucket, last - 1, WatchScope::default()),
            Err(StorageError::Compacted { .. })
        ));
        assert!(
            store
                .watch_from(&bucket, last, WatchScope::default())
                .unwrap()
                .replay
                .is_empty()
        );
    }
    /// Writes one ConfigMap (the quiet bucket) and then `n` Leases (the busy one) to a store
    /// whose window holds 3 events; returns the ConfigMap's revision.
    async fn quiet_then_busy(store: &Store, n: usize) -> Revision {
        let quiet = store
            .create(key("ns", "cm"), cm("cm", "1"))
            .await
            .unwrap()
            .rev;
        let lease = ObjectKey::new(Bucket::new("", "coordination.k8s.io/leases"), "ns", "l");
        store.create(lease.clone(), cm("l", "0")).await.unwrap();
        for i in 1..n {
            store
                .update(lease.clone(), cm("l", &i.to_string()), None)
                .await
                .unwrap();
        }
        quiet
    }

    fn small_window() -> StoreConfig {
        StoreConfig {
            history_window: 3,
            history_min_events: 1,
            ..StoreConfig::default()
        }
    }

    #[tokio::test]
    async fn a_busy_bucket_does_not_push_out_a_quiet_buckets_history() {
        let store = Store::open(crate::MemoryBackend, small_window()).unwrap();
        let quiet = quiet_then_busy(&store, 6).await;
        let configmaps = Bucket::new("", "/configmaps");
        let leases = Bucket::new("", "coordination.k8s.io/leases");
        // Every ConfigMap event left the window, but none after `quiet`: a ConfigMap watcher
        // that saw it resumes with nothing to replay.
        assert!(store.compacted_revision() > quiet);
        assert_eq!(store.bucket_floor(&configmaps), quiet);
        let resumed = store
            .watch_from(&configmaps, quiet, WatchScope::default())
            .unwrap();
        assert!(resumed.replay.is_empty());
        assert!(matches!(
            store.watch_from(&configmaps, quiet - 1, WatchScope::default()),
            Err(StorageError::Compacted { .. })
        ));
        // The busy bucket's own floor is where its events left.
        let floor = store.bucket_floor(&leases);
        assert_eq!(floor, store.compacted_revision());
        assert!(matches!(
            store.watch_from(&leases, floor - 1, WatchScope::default()),
            Err(StorageError::Compacted { .. })
        ));
        assert_eq!(
            store
                .watch_from(&leases, floor, WatchScope::default())
                .unwrap()
                .replay
                .len(),
            3
        );
        // A paged list of ConfigMaps begun at `quiet` continues too.
        assert_eq!(
            store.list_at(&configmaps, None, None, quiet).unwrap().len(),
            1
        );
    }

    #[tokio::test]
    async fn a_watch_of_one_unchanged_object_resumes_below_its_buckets_floor() {
        let store = Store::open(crate::MemoryBackend, small_window()).unwrap();
        let configmaps = Bucket::new("", "/configmaps");
        let one = |name: &str| WatchScope {
            namespace: Some("ns".into()),
            name: Some(name.into()),
        };
        let seen = store
            .create(key("ns", "still"), cm("still", "1"))
            .await
            .unwrap()
            .rev;
        store
            .create(key("ns", "moved"), cm("moved", "1"))
            .await
            .unwrap();
        store
            .update(key("ns", "moved"), cm("moved", "2"), None)
            .await
            .unwrap();
        store
            .create(key("ns", "gone"), cm("gone", "1"))
            .await
            .unwrap();
        store.delete(key("ns", "gone"), None).await.unwrap();
        // Lease churn pushes every ConfigMap event out of the window.
        quiet_then_busy(&store, 12).await;
        assert!(store.bucket_floor(&configmaps) > seen);
        // "still" was last written before `seen`: nothing to replay.
        let resumed = store.watch_from(&configmaps, seen, one("still")).unwrap();
        assert!(resumed.replay.is_empty());
        // "moved" changed after `seen` and that change left the window: expired.
        assert!(matches!(
            store.watch_from(&configmaps, seen, one("moved")),
            Err(StorageError::Compacted { .. })
        ));
        // A deleted object cannot tell what it missed; a whole-bucket watch never could.
        for scope in [one("gone"), WatchScope::default()] {
            assert!(matches!(
                store.watch_from(&configmaps, seen, scope),
                Err(StorageError::Compacted { .. })
            ));
        }
        // Its changes arrive live after the resumption.
        let mut resumed = store.watch_from(&configmaps, seen, one("still")).unwrap();
        store
            .update(key("ns", "still"), cm("still", "2"), None)
            .await
            .unwrap();
        let event = resumed.receiver.recv().await.unwrap();
        assert_eq!(event.key.name, "still");
    }

    #[tokio::test]
    async fn each_buckets_history_is_the_windows_events_of_that_bucket() {
        let store = Store::open(crate::MemoryBackend, small_window()).unwrap();
        let quiet = quiet_then_busy(&store, 6).await;
        let leases = Bucket::new("", "coordination.k8s.io/leases");
        let from = store.bucket_floor(&leases);
        let state = read_state(&store.shared);
        let indexed: usize = state.bucket_history.values().map(VecDeque::len).sum();
        assert_eq!(indexed, state.history.len());
        let scanned: Vec<Revision> = state
            .history
            .iter()
            .filter(|e| e.key.bucket == leases && e.rev > from)
            .map(|e| e.rev)
            .collect();
        let by_bucket: Vec<Revision> = state
            .bucket_events_after(&leases, from)
            .map(|e| e.rev)
            .collect();
        assert_eq!(by_bucket, scanned);
        assert!(!by_bucket.is_empty());
        // The quiet bucket's events all left: nothing indexed for it.
        let configmaps = Bucket::new("", "/configmaps");
        assert_eq!(state.bucket_events_after(&configmaps, quiet).count(), 0);
        assert!(!state.bucket_history.contains_key(&configmaps));
    }

    #[tokio::test]
    async fn bucket_floors_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let configmaps = Bucket::new("", "/configmaps");
        let leases = Bucket::new("", "coordination.k8s.io/leases");
        let (quiet, lease_floor) = {
            let store = Store::open(SqliteBackend::open(&path).unwrap(), small_window()).unwrap();
            let quiet = quiet_then_busy(&store, 6).await;
            // One more write so the last batch's floors are on disk too.
            store
                .create(key("ns", "later"), cm("later", "1"))
                .await
                .unwrap();
            (quiet, store.bucket_floor(&leases))
        };
        let store = Store::open(SqliteBackend::open(&path).unwrap(), small_window()).unwrap();
        assert_eq!(store.bucket_floor(&configmaps), quiet);
        assert!(store.bucket_floor(&leases) >= lease_floor);
        let resumed = store
            .watch_from(&configmaps, quiet, WatchScope::default())
            .unwrap();
        let names: Vec<_> = resumed.replay.iter().map(|e| e.key.name.clone()).collect();
        assert_eq!(names, vec!["later"]);
    }

    /// The floors each batch carried, one list per batch.
    type Floors = Vec<Vec<(Bucket, Revision)>>;

    /// A backend that keeps nothing and records the floors each batch carried.
    struct FloorRecorder(Arc<Mutex<Floors>>);

    impl Backend for FloorRecorder {
        fn load(&mut self) -> Result<crate::Loaded, StorageError> {
            Ok(crate::Loaded::default())
        }
        fn commit(&mut self, batch: Batch<'_>) -> Result<(), StorageError> {
            self.0.lock().unwrap().push(batch.bucket_floors.to_vec());
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_batch_carries_only_the_floors_that_moved_since_the_last_one() {
        let batches = Arc::new(Mutex::new(Vec::new()));
        let store = Store::open(FloorRecorder(batches.clone()), small_window()).unwrap();
        // One object in each of 20 clusters: every bucket but the last three leaves the window
        // and gets a floor.
        for i in 0..20 {
            let key = ObjectKey::new(Bucket::new(&format!("c{i}"), "/configmaps"), "ns", "cm");
            store.create(key, cm("cm", "1")).await.unwrap();
        }
        let floored = (0..20)
            .filter(|i| store.bucket_floor(&Bucket::new(&format!("c{i}"), "/configmaps")) > 0)
            .count();
        assert_eq!(floored, 17);
        // Each write pushed one bucket out, whose floor the next batch carried once.
        let batches = batches.lock().unwrap().clone();
        assert_eq!(batches.len(), 20);
        for (i, floors) in batches.iter().enumerate() {
            let expected = if (4..20).contains(&i) {
                vec![(
                    Bucket::new(&format!("c{}", i - 4), "/configmaps"),
                    i as Revision - 3,
                )]
            } else {
                vec![]
            };
            assert_eq!(floors, &expected, "batch {i}");
        }
    }
}

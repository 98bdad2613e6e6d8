//! Revisioned object storage: one global, monotonically increasing revision over every
//! object of every logical cluster (it is the `resourceVersion`), an in-memory index that
//! serves reads, lists and watches, and a durable [`Backend`] behind it (SQLite or memory).

mod memory;
mod sqlite;
mod store;

use std::sync::Arc;

use bytes::Bytes;

pub use memory::MemoryBackend;
pub use sqlite::SqliteBackend;
pub use store::{Store, StoreConfig, StoreStats, WatchScope, WatchSubscription};

/// A store revision; every write gets the next one. It is the `resourceVersion`.
pub type Revision = u64;

/// Which collection an object belongs to: a logical cluster plus a `group/resource`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bucket {
    /// Logical cluster name; the empty string is the default cluster.
    pub cluster: Arc<str>,
    /// `group/resource` of the storage, e.g. `apps/deployments` or `/configmaps` for core.
    pub resource: Arc<str>,
}

impl Bucket {
    /// A bucket from its parts.
    pub fn new(cluster: &str, resource: &str) -> Self {
        Bucket {
            cluster: Arc::from(cluster),
            resource: Arc::from(resource),
        }
    }
}

/// The place of one object: its bucket, namespace (empty for cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// Cluster and resource.
    pub bucket: Bucket,
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl ObjectKey {
    /// A key from its parts.
    pub fn new(bucket: Bucket, namespace: &str, name: &str) -> Self {
        ObjectKey {
            bucket,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// One stored object: its serialized JSON (with `metadata.resourceVersion` set to `rev`).
#[derive(Clone, Debug)]
pub struct StoredObject {
    /// The revision of the last write of this object.
    pub rev: Revision,
    /// The object as JSON bytes.
    pub value: Bytes,
}

/// The kind of change a watch event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

/// One committed change, as kept in the history window and sent to watchers.
#[derive(Clone, Debug)]
pub struct Event {
    /// Revision of the change.
    pub rev: Revision,
    /// Which object changed.
    pub key: ObjectKey,
    /// What happened.
    pub kind: EventKind,
    /// The object after the change; for a deletion its last state with `rev` as resourceVersion.
    pub object: Bytes,
    /// The object before the change, if it existed.
    pub prev: Option<Bytes>,
}

/// One batch of committed changes handed to a [`Backend`], to be made durable atomically.
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    /// The changes, oldest first. A created or modified object is stored as `object`; a deleted
    /// one is removed (its event still carries its last state, for the history).
    pub events: &'a [Arc<Event>],
    /// The batch's last revision.
    pub revision: Revision,
    /// Events at or below this revision have left the history window; a backend that keeps the
    /// window may drop them.
    pub history_floor: Revision,
    /// Buckets whose floor moved since the last batch: the revision of the newest event of the
    /// bucket that left the window.
    pub bucket_floors: &'a [(Bucket, Revision)],
    /// Below this revision nothing is known of any bucket's events.
    pub floor_base: Revision,
}

/// Everything a backend holds, read at start.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The last revision ever committed (deletions included).
    pub revision: Revision,
    /// Every live object.
    pub objects: Vec<(ObjectKey, StoredObject)>,
    /// The kept history window, oldest first: every event after `history_floor`, so that
    /// watches and paged lists from before a restart resume instead of failing as too old.
    pub history: Vec<Event>,
    /// Events at or below this revision are not in `history` (`revision` when none are kept).
    pub history_floor: Revision,
    /// Per bucket, the revision of the newest event of that bucket that left the window: a
    /// watch of the bucket may resume from there even when other buckets' events left later.
    pub bucket_floors: Vec<(Bucket, Revision)>,
    /// Below this revision nothing is known of any bucket (`history_floor` for a database
    /// written before bucket floors were kept).
    pub floor_base: Revision,
}

/// Errors of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Create of an object that exists.
    #[error("object already exists")]
    AlreadyExists,
    /// The object does not exist.
    #[error("object not found")]
    NotFound,
    /// A revision precondition failed.
    #[error("revision precondition failed: object is at revision {current}")]
    Conflict {
        /// The object's current revision.
        current: Revision,
    },
    /// The requested revision is no longer in the history window.
    #[error("too old resource version: {requested} ({oldest})")]
    Compacted {
        /// Requested revision.
        requested: Revision,
        /// Oldest revision still available.
        oldest: Revision,
    },
    /// The durable backend failed.
    #[error("storage backend: {0}")]
    Backend(String),
    /// The store has been shut down.
    #[error("storage is shut down")]
    Closed,
}

impl From<rusqlite::Error> for StorageError {
    fn from(err: rusqlite::Error) -> Self {
        StorageError::Backend(err.to_string())
    }
}

/// A durable home for objects. The [`Store`] serializes all calls to it on one thread and
/// acknowledges a write only after `commit` has returned.
pub trait Backend: Send + 'static {
    /// Reads every object, the last committed revision and the kept history window.
    fn load(&mut self) -> Result<Loaded, StorageError>;
    /// Makes a batch of changes durable atomically.
    fn commit(&mut self, batch: Batch<'_>) -> Result<(), StorageError>;
}

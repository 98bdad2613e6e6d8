//! The SQLite backend: one table of objects keyed by (cluster, resource, namespace, name), one
//! of the history window's events keyed by revision, one of each bucket's history floor, and
//! the last revision and the window's floor, in WAL mode with `synchronous=FULL`, so a commit
//! is durable when it returns. Keeping the window lets watches and paged lists from before a
//! restart resume after it.

use std::path::Path;

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{
    Backend, Batch, Bucket, Event, EventKind, Loaded, ObjectKey, Revision, StorageError,
    StoredObject,
};

/// Objects in a SQLite database file.
#[derive(Debug)]
pub struct SqliteBackend {
    conn: Connection,
}

impl SqliteBackend {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        // SQLite takes an empty file for a new database; only truncation makes one.
        if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            return Err(StorageError::Backend(
                "the file is empty (truncated?), not a database".into(),
            ));
        }
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        // The store serves every read from memory; this connection only loads at start and
        // then writes, touching a few B-tree paths per commit. SQLite's default page cache
        // (2 MiB) held 1.25 MiB of an idle hub's 6.3 MiB live heap; 256 KiB keeps the interior
        // pages of a large database and leaves the rest to the OS page cache.
        conn.pragma_update(None, "cache_size", -256)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS objects (
                cluster TEXT NOT NULL,
                resource TEXT NOT NULL,
                namespace TEXT NOT NULL,
                name TEXT NOT NULL,
                rev INTEGER NOT NULL,
                value BLOB NOT NULL,
                PRIMARY KEY (cluster, resource, namespace, name)
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS meta (
                key TEXT PRIMARY KEY,
                value INTEGER NOT NULL
            );
            CREATE TABLE IF NOT EXISTS history (
                rev INTEGER PRIMARY KEY,
                cluster TEXT NOT NULL,
                resource TEXT NOT NULL,
                namespace TEXT NOT NULL,
                name TEXT NOT NULL,
                kind INTEGER NOT NULL,
                object BLOB NOT NULL,
                prev BLOB
            );
            CREATE TABLE IF NOT EXISTS history_floors (
                cluster TEXT NOT NULL,
                resource TEXT NOT NULL,
                rev INTEGER NOT NULL,
                PRIMARY KEY (cluster, resource)
            ) WITHOUT ROWID;",
        )?;
        Ok(SqliteBackend { conn })
    }

    /// Caps the database at about `bytes` (never below its current size): a commit that needs
    /// more fails as on a full disk, and succeeds again once deletions have freed pages.
    pub fn limit_size(&mut self, bytes: u64) -> Result<(), StorageError> {
        let page_size: i64 = self
            .conn
            .query_row("PRAGMA page_size", [], |row| row.get(0))?;
        let pages = bytes / u64::try_from(page_size.max(1)).unwrap_or(4096);
        let pages = i64::try_from(pages.max(1)).unwrap_or(i64::MAX);
        self.conn.pragma_update(None, "max_page_count", pages)?;
        Ok(())
    }
}

/// Bucket values shared by every row of the same cluster and resource.
#[derive(Default)]
struct Buckets(std::collections::HashMap<(String, String), Bucket>);

impl Buckets {
    fn get(&mut self, cluster: String, resource: String) -> Bucket {
        self.0
            .entry((cluster, resource))
            .or_insert_with_key(|(cluster, resource)| Bucket::new(cluster, resource))
            .clone()
    }
}

fn kind_code(kind: EventKind) -> i64 {
    match kind {
        EventKind::Added => 0,
        EventKind::Modified => 1,
        EventKind::Deleted => 2,
    }
}

fn kind_of(code: i64) -> Result<EventKind, StorageError> {
    match code {
        0 => Ok(EventKind::Added),
        1 => Ok(EventKind::Modified),
        2 => Ok(EventKind::Deleted),
        other => Err(StorageError::Backend(format!(
            "history row has unknown event kind {other}"
        ))),
    }
}

fn to_sql(rev: Revision) -> Result<i64, StorageError> {
    i64::try_from(rev).map_err(|_| StorageError::Backend("revision overflow".into()))
}

fn from_sql(rev: i64) -> Result<Revision, StorageError> {
    Revision::try_from(rev)
        .map_err(|_| StorageError::Backend(format!("negative revision {rev} in the database")))
}

impl SqliteBackend {
    fn meta(&self, key: &str) -> Result<Option<Revision>, StorageError> {
        let value: Option<i64> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| {
                row.get(0)
            })
            .optional()?;
        value.map(from_sql).transpose()
    }

    fn load_objects(
        &self,
        buckets: &mut Buckets,
    ) -> Result<Vec<(ObjectKey, StoredObject)>, StorageError> {
        let mut stmt = self
            .conn
            .prepare("SELECT cluster, resource, namespace, name, rev, value FROM objects")?;
        let mut rows = stmt.query([])?;
        let mut objects = Vec::new();
        while let Some(row) = rows.next()? {
            let value: Vec<u8> = row.get(5)?;
            objects.push((
                ObjectKey {
                    bucket: buckets.get(row.get(0)?, row.get(1)?),
                    namespace: row.get(2)?,
                    name: row.get(3)?,
                },
                StoredObject {
                    rev: from_sql(row.get(4)?)?,
                    value: Bytes::from(value),
                },
            ));
        }
        Ok(objects)
    }

    fn load_history(
        &self,
        buckets: &mut Buckets,
        floor: Revision,
        revision: Revision,
    ) -> Result<Vec<Event>, StorageError> {
        let mut stmt = self.conn.prepare(
            "SELECT rev, cluster, resource, namespace, name, kind, object, prev FROM history
             WHERE rev > ?1 AND rev <= ?2 ORDER BY rev",
        )?;
        let mut rows = stmt.query(params![to_sql(floor)?, to_sql(revision)?])?;
        let mut events = Vec::new();
        while let Some(row) = rows.next()? {
            let object: Vec<u8> = row.get(6)?;
            let prev: Option<Vec<u8>> = row.get(7)?;
            events.push(Event {
                rev: from_sql(row.get(0)?)?,
                key: ObjectKey {
                    bucket: buckets.get(row.get(1)?, row.get(2)?),
                    namespace: row.get(3)?,
                    name: row.get(4)?,
                },
                kind: kind_of(row.get(5)?)?,
                object: Bytes::from(object),
                prev: prev.map(Bytes::from),
            });
        }
        Ok(events)
    }
}

impl SqliteBackend {
    fn load_floors(&self, buckets: &mut Buckets) -> Result<Vec<(Bucket, Revision)>, StorageError> {
        let mut stmt = self
            .conn
            .prepare("SELECT cluster, resource, rev FROM history_floors")?;
        let mut rows = stmt.query([])?;
        let mut floors = Vec::new();
        while let Some(row) = rows.next()? {
            floors.push((
                buckets.get(row.get(0)?, row.get(1)?),
                from_sql(row.get(2)?)?,
            ));
        }
        Ok(floors)
    }
}

impl Backend for SqliteBackend {
    fn load(&mut self) -> Result<Loaded, StorageError> {
        let mut buckets = Buckets::default();
        let objects = self.load_objects(&mut buckets)?;
        let newest_object = objects.iter().map(|(_, o)| o.rev).max().unwrap_or(0);
        let revision = self.meta("revision")?.unwrap_or(0).max(newest_object);
        // A database written before the history table existed has no floor: nothing is kept.
        let history_floor = self
            .meta("history_floor")?
            .unwrap_or(revision)
            .min(revision);
        let history = self.load_history(&mut buckets, history_floor, revision)?;
        // A database written before bucket floors were kept knows nothing below its floor.
        let floor_base = self
            .meta("floor_base")?
            .unwrap_or(history_floor)
            .min(revision);
        let bucket_floors = self.load_floors(&mut buckets)?;
        Ok(Loaded {
            revision,
            objects,
            history,
            history_floor,
            bucket_floors,
            floor_base,
        })
    }

    fn commit(&mut self, batch: Batch<'_>) -> Result<(), StorageError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut upsert = tx.prepare_cached(
                "INSERT OR REPLACE INTO objects (cluster, resource, namespace, name, rev, value)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            let mut delete = tx.prepare_cached(
                "DELETE FROM objects WHERE cluster = ?1 AND resource = ?2 AND namespace = ?3 AND name = ?4",
            )?;
            let mut record = tx.prepare_cached(
                "INSERT OR REPLACE INTO history
                 (rev, cluster, resource, namespace, name, kind, object, prev)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for event in batch.events {
                let key = &event.key;
                let rev = to_sql(event.rev)?;
                match event.kind {
                    EventKind::Added | EventKind::Modified => {
                        upsert.execute(params![
                            &*key.bucket.cluster,
                            &*key.bucket.resource,
                            key.namespace,
                            key.name,
                            rev,
                            &event.object[..]
                        ])?;
                    }
                    EventKind::Deleted => {
                        delete.execute(params![
                            &*key.bucket.cluster,
                            &*key.bucket.resource,
                            key.namespace,
                            key.name
                        ])?;
                    }
                }
                record.execute(params![
                    rev,
                    &*key.bucket.cluster,
                    &*key.bucket.resource,
                    key.namespace,
                    key.name,
                    kind_code(event.kind),
                    &event.object[..],
                    event.prev.as_deref()
                ])?;
            }
            let floor = to_sql(batch.history_floor)?;
            tx.prepare_cached("DELETE FROM history WHERE rev <= ?1")?
                .execute(params![floor])?;
            let mut set_meta = tx.prepare_cached(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            )?;
            set_meta.execute(params!["revision", to_sql(batch.revision)?])?;
            set_meta.execute(params!["history_floor", floor])?;
            set_meta.execute(params!["floor_base", to_sql(batch.floor_base)?])?;
            let mut set_floor = tx.prepare_cached(
                "INSERT INTO history_floors (cluster, resource, rev) VALUES (?1, ?2, ?3)
                 ON CONFLICT(cluster, resource) DO UPDATE SET rev = excluded.rev",
            )?;
            for (bucket, rev) in batch.bucket_floors {
                set_floor.execute(params![&*bucket.cluster, &*bucket.resource, to_sql(*rev)?])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

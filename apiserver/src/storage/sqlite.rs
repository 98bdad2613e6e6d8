//! The SQLite backend: one table of objects keyed by (cluster, resource, namespace, name) plus
//! the last revision, in WAL mode with `synchronous=FULL`, so a commit is durable when it returns.

use std::path::Path;

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{Backend, Bucket, Change, Loaded, ObjectKey, Revision, StorageError, StoredObject};

/// Objects in a SQLite database file.
#[derive(Debug)]
pub struct SqliteBackend {
    conn: Connection,
}

impl SqliteBackend {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "OFF")?;
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
            );",
        )?;
        Ok(SqliteBackend { conn })
    }
}

impl Backend for SqliteBackend {
    fn load(&mut self) -> Result<Loaded, StorageError> {
        let revision: Option<i64> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'revision'", [], |row| {
                row.get(0)
            })
            .optional()?;
        let mut stmt = self
            .conn
            .prepare("SELECT cluster, resource, namespace, name, rev, value FROM objects")?;
        let rows = stmt.query_map([], |row| {
            let cluster: String = row.get(0)?;
            let resource: String = row.get(1)?;
            let namespace: String = row.get(2)?;
            let name: String = row.get(3)?;
            let rev: i64 = row.get(4)?;
            let value: Vec<u8> = row.get(5)?;
            Ok((cluster, resource, namespace, name, rev, value))
        })?;
        let mut objects = Vec::new();
        let mut max_rev: Revision = 0;
        let mut interned: std::collections::HashMap<(String, String), Bucket> =
            std::collections::HashMap::new();
        for row in rows {
            let (cluster, resource, namespace, name, rev, value) = row?;
            let rev = Revision::try_from(rev).unwrap_or(0);
            max_rev = max_rev.max(rev);
            let bucket = interned
                .entry((cluster.clone(), resource.clone()))
                .or_insert_with(|| Bucket::new(&cluster, &resource))
                .clone();
            objects.push((
                ObjectKey {
                    bucket,
                    namespace,
                    name,
                },
                StoredObject {
                    rev,
                    value: Bytes::from(value),
                },
            ));
        }
        let revision = revision
            .and_then(|r| Revision::try_from(r).ok())
            .unwrap_or(0)
            .max(max_rev);
        Ok(Loaded { revision, objects })
    }

    fn commit(&mut self, changes: &[Change], revision: Revision) -> Result<(), StorageError> {
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
            for change in changes {
                let key = &change.key;
                match &change.value {
                    Some(value) => {
                        let rev = i64::try_from(change.rev)
                            .map_err(|_| StorageError::Backend("revision overflow".into()))?;
                        upsert.execute(params![
                            &*key.bucket.cluster,
                            &*key.bucket.resource,
                            key.namespace,
                            key.name,
                            rev,
                            &value[..]
                        ])?;
                    }
                    None => {
                        delete.execute(params![
                            &*key.bucket.cluster,
                            &*key.bucket.resource,
                            key.namespace,
                            key.name
                        ])?;
                    }
                }
            }
            let rev = i64::try_from(revision)
                .map_err(|_| StorageError::Backend("revision overflow".into()))?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('revision', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![rev],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

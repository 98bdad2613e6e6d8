//! Which works need writing: a server-side apply of an unchanged work is not free.
//!
//! The API server may write a new resourceVersion even for an apply that changes nothing (a
//! field the server defaults inside an atomic list, such as a manifest config's
//! `feedbackScrapeType`, makes every apply look like a change to kube-apiserver too). Each
//! such write wakes the work agent on the cluster and the manager's own watch on its works,
//! which would re-apply again. So the manager remembers what it last wrote per work and
//! applies only when the desired work changed, or when the work on the hub is not the one it
//! wrote (deleted, re-created, or its spec edited by someone else, which moves the
//! generation).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

/// What the manager last wrote for one work.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    desired: u64,
    uid: String,
    generation: i64,
}

/// The identity of a work on the hub as the manager sees it (from its cache of works).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveWork<'a> {
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `metadata.generation`.
    pub generation: i64,
}

/// Remembers the works this process wrote, keyed by namespace and name.
#[derive(Debug, Default)]
pub struct WorkApplier {
    written: Mutex<HashMap<(String, String), Written>>,
}

impl WorkApplier {
    /// True when `desired` is what was last written for this work and the live work is that
    /// write (same uid, generation not moved past it — a cache that lags shows an older one).
    pub fn is_current(&self, namespace: &str, desired: &Value, live: Option<LiveWork<'_>>) -> bool {
        let Some(live) = live else { return false };
        let Some(name) = desired.pointer("/metadata/name").and_then(Value::as_str) else {
            return false;
        };
        let written = match self.written.lock() {
            Ok(written) => written,
            Err(poisoned) => poisoned.into_inner(),
        };
        written
            .get(&(namespace.to_owned(), name.to_owned()))
            .is_some_and(|w| {
                w.desired == fingerprint(desired)
                    && w.uid == live.uid
                    && live.generation <= w.generation
            })
    }

    /// Records that `desired` was applied and the server answered with `written`.
    pub fn record(&self, namespace: &str, desired: &Value, written: LiveWork<'_>) {
        let Some(name) = desired.pointer("/metadata/name").and_then(Value::as_str) else {
            return;
        };
        let mut map = match self.written.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.insert(
            (namespace.to_owned(), name.to_owned()),
            Written {
                desired: fingerprint(desired),
                uid: written.uid.to_owned(),
                generation: written.generation,
            },
        );
    }

    /// Forgets a work (it was deleted).
    pub fn forget(&self, namespace: &str, name: &str) {
        let mut map = match self.written.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.remove(&(namespace.to_owned(), name.to_owned()));
    }
}

/// A digest of an object's JSON text (stable within one build, which is all a cache of what
/// was written needs).
pub(crate) fn fingerprint(object: &impl serde::Serialize) -> u64 {
    ocm_apiserver_json::digest(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn work(replicas: i64) -> Value {
        json!({"metadata": {"name": "addon-a-deploy-0"}, "spec": {"replicas": replicas}})
    }

    fn live(uid: &str, generation: i64) -> Option<LiveWork<'_>> {
        Some(LiveWork { uid, generation })
    }

    #[test]
    fn a_work_never_written_needs_writing() {
        let applier = WorkApplier::default();
        assert!(!applier.is_current("c1", &work(1), live("u1", 1)));
    }

    #[test]
    fn the_same_desired_work_on_the_written_object_is_current() {
        let applier = WorkApplier::default();
        applier.record(
            "c1",
            &work(1),
            LiveWork {
                uid: "u1",
                generation: 3,
            },
        );
        assert!(applier.is_current("c1", &work(1), live("u1", 3)));
        // A cache of works that lags behind the write still counts.
        assert!(applier.is_current("c1", &work(1), live("u1", 2)));
        // Another namespace is another work.
        assert!(!applier.is_current("c2", &work(1), live("u1", 3)));
    }

    #[test]
    fn a_changed_desired_work_or_a_changed_live_work_needs_writing() {
        let applier = WorkApplier::default();
        applier.record(
            "c1",
            &work(1),
            LiveWork {
                uid: "u1",
                generation: 3,
            },
        );
        assert!(!applier.is_current("c1", &work(2), live("u1", 3)));
        // Someone edited the spec: the generation moved on.
        assert!(!applier.is_current("c1", &work(1), live("u1", 4)));
        // Deleted and re-created, or gone.
        assert!(!applier.is_current("c1", &work(1), live("u2", 1)));
        assert!(!applier.is_current("c1", &work(1), None));
        applier.forget("c1", "addon-a-deploy-0");
        assert!(!applier.is_current("c1", &work(1), live("u1", 3)));
    }
}

//! The ownerReference garbage collector: deletes dependents whose owners are gone (background),
//! deletes dependents before their owner (foreground, `foregroundDeletion` finalizer), and
//! strips owner references (orphan, `orphan` finalizer).

use std::collections::{HashMap, HashSet, VecDeque};

use serde::Deserialize;
use serde_json::Value;

use crate::control::ServerAccess;
use crate::meta;
use crate::ops::{
    Ctx, DeleteOptions, FOREGROUND_FINALIZER, Managed, ORPHAN_FINALIZER, Propagation, Target,
};
use ocm_apiserver_storage::{Event, EventKind, ObjectKey};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Work {
    /// Check a dependent's owners.
    Dependent(ObjectKey),
    /// An owner deleted in the foreground.
    Foreground(ObjectKey),
    /// An owner whose dependents are orphaned.
    Orphan(ObjectKey),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    #[serde(rename = "blockOwnerDeletion", deserialize_with = "null_is_false")]
    block: bool,
}

fn null_is_false<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// The part of an object the collector reads: parsed from the stored bytes without building
/// the whole object (the collector sees every write of the server).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Head {
    metadata: Option<HeadMeta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct HeadMeta {
    uid: Option<String>,
    owner_references: Option<Vec<OwnerRef>>,
    finalizers: Option<Vec<Option<String>>>,
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

impl Head {
    fn parse(bytes: &[u8]) -> Option<Head> {
        serde_json::from_slice(bytes).ok()
    }

    fn meta(&self) -> Option<&HeadMeta> {
        self.metadata.as_ref()
    }

    fn uid(&self) -> &str {
        self.meta().and_then(|m| m.uid.as_deref()).unwrap_or("")
    }

    fn refs(&self) -> &[OwnerRef] {
        self.meta()
            .and_then(|m| m.owner_references.as_deref())
            .unwrap_or(&[])
    }

    fn is_deleting(&self) -> bool {
        self.meta().is_some_and(|m| m.deletion_timestamp.is_some())
    }

    fn has_finalizer(&self, finalizer: &str) -> bool {
        self.meta()
            .and_then(|m| m.finalizers.as_ref())
            .is_some_and(|f| f.iter().flatten().any(|f| f == finalizer))
    }
}

#[derive(Default)]
struct Graph {
    /// (cluster, owner uid) → dependents.
    dependents: HashMap<(String, String), HashSet<ObjectKey>>,
    /// dependent → owner uids.
    owners: HashMap<ObjectKey, Vec<String>>,
}

impl Graph {
    fn set(&mut self, key: &ObjectKey, refs: &[OwnerRef]) {
        let cluster = key.bucket.cluster.to_string();
        if let Some(old) = self.owners.remove(key) {
            for uid in old {
                if let Some(set) = self.dependents.get_mut(&(cluster.clone(), uid.clone())) {
                    set.remove(key);
                    if set.is_empty() {
                        self.dependents.remove(&(cluster.clone(), uid));
                    }
                }
            }
        }
        if refs.is_empty() {
            return;
        }
        let uids: Vec<String> = refs.iter().map(|r| r.uid.clone()).collect();
        for uid in &uids {
            self.dependents
                .entry((cluster.clone(), uid.clone()))
                .or_default()
                .insert(key.clone());
        }
        self.owners.insert(key.clone(), uids);
    }

    fn dependents_of(&self, cluster: &str, uid: &str) -> Vec<ObjectKey> {
        self.dependents
            .get(&(cluster.to_owned(), uid.to_owned()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

struct Gc {
    server: ServerAccess,
    graph: Graph,
    /// Owners waiting for foreground deletion or orphaning, revisited on resync.
    pending: HashSet<Work>,
    queue: VecDeque<Work>,
    queued: HashSet<Work>,
}

impl Gc {
    fn push(&mut self, work: Work) {
        if self.queued.insert(work.clone()) {
            self.queue.push_back(work);
        }
    }

    fn observe(&mut self, key: &ObjectKey, obj: Option<&Head>, prev: Option<&Head>) {
        let cluster = key.bucket.cluster.to_string();
        match obj {
            None => {
                self.graph.set(key, &[]);
                if let Some(prev) = prev {
                    for dep in self.graph.dependents_of(&cluster, prev.uid()) {
                        self.push(Work::Dependent(dep));
                    }
                }
            }
            Some(obj) => {
                let refs = obj.refs();
                // As kube's collector: a dependent is checked when it appears or its
                // references change, not on every write (its owners did not change).
                let changed = prev.is_none_or(|p| p.refs() != refs);
                if changed {
                    self.graph.set(key, refs);
                    if !refs.is_empty() {
                        self.push(Work::Dependent(key.clone()));
                    }
                }
                if obj.is_deleting() {
                    if obj.has_finalizer(FOREGROUND_FINALIZER) {
                        self.pending.insert(Work::Foreground(key.clone()));
                        self.push(Work::Foreground(key.clone()));
                    }
                    if obj.has_finalizer(ORPHAN_FINALIZER) {
                        self.pending.insert(Work::Orphan(key.clone()));
                        self.push(Work::Orphan(key.clone()));
                    }
                }
            }
        }
        // A change of a dependent may unblock owners waiting in the foreground.
        for r in prev.map(Head::refs).unwrap_or_default() {
            if let Some((owner, _)) = self.owner_key(key, r) {
                let waiting = Work::Foreground(owner);
                if self.pending.contains(&waiting) {
                    self.push(waiting);
                }
            }
        }
    }

    fn get(&self, key: &ObjectKey) -> Option<Head> {
        let stored = self.server.get(key)?;
        Head::parse(&stored.value)
    }

    /// The storage key of an owner reference, and whether its kind is known.
    fn owner_key(&self, dependent: &ObjectKey, r: &OwnerRef) -> Option<(ObjectKey, bool)> {
        let group = r.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let res = self
            .server
            .lookup_kind(&dependent.bucket.cluster, group, &r.kind)?;
        let ns = if res.namespaced {
            dependent.namespace.as_str()
        } else {
            ""
        };
        Some((
            ObjectKey::new(res.bucket(&dependent.bucket.cluster), ns, &r.name),
            res.namespaced,
        ))
    }

    fn ctx(&self, key: &ObjectKey) -> Option<Ctx> {
        self.server.writer(&key.bucket, "kube-controller-manager")
    }

    async fn process(&mut self, work: Work) {
        match work {
            Work::Dependent(key) => self.dependent(&key).await,
            Work::Foreground(key) => self.foreground(&key).await,
            Work::Orphan(key) => self.orphan(&key).await,
        }
    }

    async fn dependent(&mut self, key: &ObjectKey) {
        let Some(obj) = self.get(key) else { return };
        let refs = obj.refs();
        if refs.is_empty() {
            return;
        }
        let mut solid = 0;
        let mut waiting = 0;
        let mut dangling: Vec<String> = Vec::new();
        for r in refs {
            let Some((owner_key, _)) = self.owner_key(key, r) else {
                // Unknown kind: cannot verify, treat as present.
                solid += 1;
                continue;
            };
            match self.get(&owner_key) {
                Some(owner) if owner.uid() == r.uid => {
                    if owner.is_deleting() && owner.has_finalizer(FOREGROUND_FINALIZER) {
                        waiting += 1;
                    } else {
                        solid += 1;
                    }
                }
                _ => dangling.push(r.uid.clone()),
            }
        }
        if solid > 0 {
            if dangling.is_empty() && waiting == 0 {
                return;
            }
            // Keep the object; drop references to owners that are gone or going.
            let waiting_uids: Vec<String> = Vec::new();
            let _ = waiting_uids;
            if dangling.is_empty() {
                return;
            }
            self.remove_refs(key, &dangling).await;
            return;
        }
        if obj.is_deleting() {
            return;
        }
        let propagation = if waiting > 0 {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        let Some(mut ctx) = self.ctx(key) else { return };
        let opts = DeleteOptions {
            propagation: Some(propagation),
            uid: Some(obj.uid().to_owned()),
            ..DeleteOptions::default()
        };
        if let Err(err) = ctx.delete(&key.namespace, &key.name, &opts).await {
            tracing::debug!(%err, name = key.name, "garbage collector delete");
        }
    }

    async fn remove_refs(&mut self, key: &ObjectKey, uids: &[String]) {
        let Some(mut ctx) = self.ctx(key) else { return };
        let uids = uids.to_vec();
        let mut mutate = |_: &mut Ctx, old: &Value| {
            let mut new = old.clone();
            if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut)
                && let Some(Value::Array(refs)) = m.get_mut("ownerReferences")
            {
                refs.retain(|r| {
                    !uids
                        .iter()
                        .any(|u| r.get("uid").and_then(Value::as_str) == Some(u))
                });
                if refs.is_empty() {
                    m.remove("ownerReferences");
                }
            }
            Ok(new)
        };
        if let Err(err) = ctx
            .update(
                &key.namespace,
                &key.name,
                &Target::Main,
                Managed::RecordUpdate,
                false,
                &mut mutate,
            )
            .await
        {
            tracing::debug!(%err, "garbage collector removing owner references");
        }
    }

    async fn remove_finalizer(&mut self, key: &ObjectKey, finalizer: &str) {
        let Some(mut ctx) = self.ctx(key) else { return };
        let mut mutate = |_: &mut Ctx, old: &Value| {
            let mut new = old.clone();
            let fins: Vec<String> = meta::finalizers(old)
                .into_iter()
                .filter(|f| f != finalizer)
                .collect();
            meta::set_finalizers(&mut new, &fins);
            Ok(new)
        };
        if let Err(err) = ctx
            .update(
                &key.namespace,
                &key.name,
                &Target::Main,
                Managed::RecordUpdate,
                false,
                &mut mutate,
            )
            .await
        {
            tracing::debug!(%err, "garbage collector removing finalizer");
        }
    }

    /// Dependents still referencing `uid`, with whether they block the owner.
    fn live_dependents(&self, cluster: &str, uid: &str) -> Vec<(ObjectKey, Head, bool)> {
        self.graph
            .dependents_of(cluster, uid)
            .into_iter()
            .filter_map(|k| {
                let obj = self.get(&k)?;
                let block = obj.refs().iter().find(|r| r.uid == uid)?.block;
                Some((k, obj, block))
            })
            .collect()
    }

    async fn foreground(&mut self, key: &ObjectKey) {
        let Some(owner) = self.get(key) else { return };
        if !owner.is_deleting() || !owner.has_finalizer(FOREGROUND_FINALIZER) {
            return;
        }
        let uid = owner.uid().to_owned();
        let cluster = key.bucket.cluster.to_string();
        let deps = self.live_dependents(&cluster, &uid);
        for (dep, obj, _) in &deps {
            if !obj.is_deleting() {
                self.dependent(dep).await;
            }
        }
        let blocking = self
            .live_dependents(&cluster, &uid)
            .into_iter()
            .any(|(_, _, block)| block);
        if !blocking {
            self.remove_finalizer(key, FOREGROUND_FINALIZER).await;
        }
    }

    async fn orphan(&mut self, key: &ObjectKey) {
        let Some(owner) = self.get(key) else { return };
        if !owner.is_deleting() || !owner.has_finalizer(ORPHAN_FINALIZER) {
            return;
        }
        let uid = owner.uid().to_owned();
        let cluster = key.bucket.cluster.to_string();
        for (dep, _, _) in self.live_dependents(&cluster, &uid) {
            self.remove_refs(&dep, std::slice::from_ref(&uid)).await;
        }
        if self.live_dependents(&cluster, &uid).is_empty() {
            self.remove_finalizer(key, ORPHAN_FINALIZER).await;
        }
    }

    /// Revisits every dependent and every owner waiting on the collector.
    fn resync(&mut self) {
        let dependents: Vec<ObjectKey> = self.graph.owners.keys().cloned().collect();
        for key in dependents {
            self.push(Work::Dependent(key));
        }
        let pending: Vec<Work> = self.pending.iter().cloned().collect();
        self.pending.clear();
        for work in pending {
            if let Work::Foreground(k) | Work::Orphan(k) = &work
                && self.get(k).is_some_and(|o| o.is_deleting())
            {
                self.pending.insert(work.clone());
                self.push(work);
            }
        }
    }

    fn scan(&mut self) {
        for bucket in self.server.buckets() {
            let (_, items) = self.server.list(&bucket, None, None);
            for (ns, name, object) in items {
                let Some(obj) = Head::parse(&object.value) else {
                    continue;
                };
                let key = ObjectKey::new(bucket.clone(), &ns, &name);
                self.observe(&key, Some(&obj), None);
            }
        }
    }
}

fn handle_event(gc: &mut Gc, event: &Event) {
    let prev = event.prev.as_deref().and_then(Head::parse);
    match event.kind {
        EventKind::Deleted => gc.observe(&event.key, None, prev.as_ref()),
        _ => {
            let obj = Head::parse(&event.object);
            gc.observe(&event.key, obj.as_ref(), prev.as_ref());
        }
    }
}

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let mut resync = tokio::time::interval(server.config().resync_interval);
    let mut gc = Gc {
        server,
        graph: Graph::default(),
        pending: HashSet::new(),
        queue: VecDeque::new(),
        queued: HashSet::new(),
    };
    gc.scan();
    loop {
        // Take in everything already committed before working, so the graph is current.
        while let Ok(event) = events.try_recv() {
            handle_event(&mut gc, &event);
        }
        if let Some(work) = gc.queue.pop_front() {
            gc.queued.remove(&work);
            gc.process(work).await;
            continue;
        }
        tokio::select! {
            e = events.recv() => match e {
                Some(event) => handle_event(&mut gc, &event),
                None => return,
            },
            _ = resync.tick() => gc.resync(),
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_reads_what_the_collector_needs() {
        let head = Head::parse(
            br#"{"kind":"ConfigMap","data":{"a":"b"},"metadata":{"name":"c","uid":"u1",
            "deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["foregroundDeletion"],
            "ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u0",
            "blockOwnerDeletion":true},{"apiVersion":"v1","kind":"Secret","name":"s",
            "uid":"u2","blockOwnerDeletion":null}]}}"#,
        )
        .unwrap();
        assert_eq!(head.uid(), "u1");
        assert!(head.is_deleting());
        assert!(head.has_finalizer(FOREGROUND_FINALIZER));
        assert!(!head.has_finalizer(ORPHAN_FINALIZER));
        let refs: Vec<_> = head.refs().iter().map(|r| (&*r.uid, r.block)).collect();
        assert_eq!(refs, [("u0", true), ("u2", false)]);
        let bare = Head::parse(br#"{"metadata":{"deletionTimestamp":null}}"#).unwrap();
        assert!(!bare.is_deleting());
        assert!(bare.refs().is_empty());
        assert_eq!(bare.uid(), "");
    }
}

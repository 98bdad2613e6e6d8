//! The ownerReference garbage collector: deletes dependents whose owners are gone (background),
//! deletes dependents before their owner (foreground, `foregroundDeletion` finalizer), and
//! strips owner references (orphan, `orphan` finalizer).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::system_ctx;
use crate::meta;
use crate::ops::{
    Ctx, DeleteOptions, FOREGROUND_FINALIZER, Managed, ORPHAN_FINALIZER, Propagation, Target,
};
use crate::server::Inner;
use crate::storage::{Event, EventKind, ObjectKey};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Work {
    /// Check a dependent's owners.
    Dependent(ObjectKey),
    /// An owner deleted in the foreground.
    Foreground(ObjectKey),
    /// An owner whose dependents are orphaned.
    Orphan(ObjectKey),
}

#[derive(Clone, Debug)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

fn owner_refs(obj: &Value) -> Vec<OwnerRef> {
    meta::metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| OwnerRef {
                    api_version: r
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    kind: r
                        .get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    name: r
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    uid: r
                        .get("uid")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    block: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
                })
                .collect()
        })
        .unwrap_or_default()
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
    inner: Arc<Inner>,
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

    fn observe(&mut self, key: &ObjectKey, obj: Option<&Value>, prev: Option<&Value>) {
        let cluster = key.bucket.cluster.to_string();
        match obj {
            None => {
                self.graph.set(key, &[]);
                if let Some(prev) = prev {
                    let uid = meta::meta_str(prev, "uid").to_owned();
                    for dep in self.graph.dependents_of(&cluster, &uid) {
                        self.push(Work::Dependent(dep));
                    }
                }
            }
            Some(obj) => {
                let refs = owner_refs(obj);
                self.graph.set(key, &refs);
                if !refs.is_empty() {
                    self.push(Work::Dependent(key.clone()));
                }
                if meta::is_deleting(obj) {
                    let fins = meta::finalizers(obj);
                    if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
                        self.pending.insert(Work::Foreground(key.clone()));
                        self.push(Work::Foreground(key.clone()));
                    }
                    if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
                        self.pending.insert(Work::Orphan(key.clone()));
                        self.push(Work::Orphan(key.clone()));
                    }
                }
            }
        }
        // A change of a dependent may unblock owners waiting in the foreground.
        for r in prev.map(owner_refs).unwrap_or_default() {
            if let Some((owner, _)) = self.owner_key(key, &r) {
                self.push(Work::Foreground(owner));
            }
        }
    }

    fn get(&self, key: &ObjectKey) -> Option<Value> {
        let stored = self.inner.store.get(key)?;
        serde_json::from_slice(&stored.value).ok()
    }

    /// The storage key of an owner reference, and whether its kind is known.
    fn owner_key(&self, dependent: &ObjectKey, r: &OwnerRef) -> Option<(ObjectKey, bool)> {
        let group = r.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let res = self
            .inner
            .registry
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
        system_ctx(&self.inner, &key.bucket, "kube-controller-manager")
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
        let refs = owner_refs(&obj);
        if refs.is_empty() {
            return;
        }
        let mut solid = 0;
        let mut waiting = 0;
        let mut dangling: Vec<String> = Vec::new();
        for r in &refs {
            let Some((owner_key, _)) = self.owner_key(key, r) else {
                // Unknown kind: cannot verify, treat as present.
                solid += 1;
                continue;
            };
            match self.get(&owner_key) {
                Some(owner) if meta::meta_str(&owner, "uid") == r.uid => {
                    if meta::is_deleting(&owner)
                        && meta::finalizers(&owner)
                            .iter()
                            .any(|f| f == FOREGROUND_FINALIZER)
                    {
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
        if meta::is_deleting(&obj) {
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
            uid: Some(meta::meta_str(&obj, "uid").to_owned()),
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
    fn live_dependents(&self, cluster: &str, uid: &str) -> Vec<(ObjectKey, Value, bool)> {
        self.graph
            .dependents_of(cluster, uid)
            .into_iter()
            .filter_map(|k| {
                let obj = self.get(&k)?;
                let r = owner_refs(&obj).into_iter().find(|r| r.uid == uid)?;
                Some((k, obj, r.block))
            })
            .collect()
    }

    async fn foreground(&mut self, key: &ObjectKey) {
        let Some(owner) = self.get(key) else { return };
        if !meta::is_deleting(&owner)
            || !meta::finalizers(&owner)
                .iter()
                .any(|f| f == FOREGROUND_FINALIZER)
        {
            return;
        }
        let uid = meta::meta_str(&owner, "uid").to_owned();
        let cluster = key.bucket.cluster.to_string();
        let deps = self.live_dependents(&cluster, &uid);
        for (dep, obj, _) in &deps {
            if !meta::is_deleting(obj) {
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
        if !meta::is_deleting(&owner)
            || !meta::finalizers(&owner)
                .iter()
                .any(|f| f == ORPHAN_FINALIZER)
        {
            return;
        }
        let uid = meta::meta_str(&owner, "uid").to_owned();
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
                && self.get(k).is_some_and(|o| meta::is_deleting(&o))
            {
                self.pending.insert(work.clone());
                self.push(work);
            }
        }
    }

    fn scan(&mut self) {
        for bucket in self.inner.store.buckets() {
            let (_, items) = self.inner.store.list(&bucket, None, None);
            for (ns, name, object) in items {
                let Ok(obj) = serde_json::from_slice::<Value>(&object.value) else {
                    continue;
                };
                let key = ObjectKey::new(bucket.clone(), &ns, &name);
                self.observe(&key, Some(&obj), None);
            }
        }
    }
}

fn parse(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes).ok()
}

fn handle_event(gc: &mut Gc, event: &Event) {
    let prev = event.prev.as_deref().and_then(parse);
    match event.kind {
        EventKind::Deleted => gc.observe(&event.key, None, prev.as_ref()),
        _ => {
            let obj = parse(&event.object);
            gc.observe(&event.key, obj.as_ref(), prev.as_ref());
        }
    }
}

pub(crate) async fn run(inner: Arc<Inner>) {
    let (_, mut events) = inner.store.subscribe_all();
    let mut shutdown = inner.shutdown.subscribe();
    let mut resync = tokio::time::interval(inner.config.resync_interval);
    let mut gc = Gc {
        inner,
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

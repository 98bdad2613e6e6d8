//! Namespace controller: empties a terminating namespace (respecting finalizers of its
//! contents), reports progress in conditions, then removes the `kubernetes` finalizer so the
//! namespace disappears.
//!
//! As kube-controller-manager's, it starts on a namespace only a grace period
//! ([`crate::ApiServerConfig::namespace_deletion_grace_period`], 5 s by default) after it saw
//! the namespace marked for deletion: until then the content stays, so a client that deletes a
//! namespace and then the objects in it gets answers kube would give (200, not 404). From then
//! on it works at once on every change of the namespace or its content.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Instant;

use serde_json::{Value, json};

use crate::control::ServerAccess;
use crate::meta;
use crate::ops::{DeleteOptions, Managed, Propagation, Target};
use ocm_apiserver_storage::{Bucket, ObjectKey};

const NS_RESOURCE: &str = "/namespaces";

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let grace = server.config().namespace_deletion_grace_period;
    let mut waiting = Waiting::default();
    let mut terminating: HashSet<NsKey> = HashSet::new();
    let mut queue: VecDeque<NsKey> = VecDeque::new();
    let start = Instant::now();
    for bucket in server.buckets() {
        if &*bucket.resource == NS_RESOURCE {
            let (_, items) = server.list(&bucket, None, None);
            for (_, name, object) in items {
                if serde_json::from_slice::<Value>(&object.value)
                    .is_ok_and(|v| meta::is_deleting(&v))
                {
                    waiting.observe((bucket.cluster.to_string(), name), start + grace);
                }
            }
        }
    }
    let mut resync = tokio::time::interval(server.config().resync_interval);
    loop {
        for key in waiting.take_ready(Instant::now()) {
            terminating.insert(key.clone());
            queue.push_back(key);
        }
        while let Some(key) = queue.pop_front() {
            queue.retain(|q| q != &key);
            if !reconcile(&server, &key.0, &key.1).await {
                terminating.remove(&key);
            }
        }
        let next = waiting.next();
        tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                let cluster = event.key.bucket.cluster.to_string();
                if &*event.key.bucket.resource == NS_RESOURCE {
                    let deleting = serde_json::from_slice::<Value>(&event.object).is_ok_and(|v| meta::is_deleting(&v));
                    let gone = event.kind == ocm_apiserver_storage::EventKind::Deleted;
                    let key = (cluster, event.key.name.clone());
                    if deleting && !gone {
                        if terminating.contains(&key) {
                            queue.push_back(key);
                        } else {
                            waiting.observe(key, Instant::now() + grace);
                        }
                    } else {
                        waiting.forget(&key);
                        terminating.remove(&key);
                    }
                } else if !event.key.namespace.is_empty() {
                    let key = (cluster, event.key.namespace.clone());
                    if terminating.contains(&key) && !queue.contains(&key) {
                        queue.push_back(key);
                    }
                }
            }
            () = sleep_until(next), if next.is_some() => {}
            _ = resync.tick() => {
                queue.extend(terminating.iter().cloned());
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// A namespace of a logical cluster: (cluster, name).
type NsKey = (String, String);

/// Sleeps until `at` (forever without one).
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Namespaces seen terminating whose deletion grace period has not passed yet, with the
/// moment it passes.
#[derive(Debug, Default)]
struct Waiting {
    until: HashMap<NsKey, Instant>,
}

impl Waiting {
    /// Records a namespace seen terminating; one already waiting keeps its earlier moment.
    fn observe(&mut self, key: NsKey, at: Instant) {
        self.until
            .entry(key)
            .and_modify(|t| *t = (*t).min(at))
            .or_insert(at);
    }

    /// Forgets a namespace that is gone (or no longer terminating).
    fn forget(&mut self, key: &NsKey) {
        self.until.remove(key);
    }

    /// The namespaces whose grace period has passed at `now`, no longer waiting.
    fn take_ready(&mut self, now: Instant) -> Vec<NsKey> {
        let ready: Vec<NsKey> = self
            .until
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &ready {
            self.until.remove(key);
        }
        ready
    }

    /// The earliest moment a waiting namespace becomes ready.
    fn next(&self) -> Option<Instant> {
        self.until.values().min().copied()
    }
}

fn condition(ty: &str, status: bool, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": ty,
        "status": if status { "True" } else { "False" },
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

/// One pass over a terminating namespace. Returns whether it still terminates.
async fn reconcile(server: &ServerAccess, cluster: &str, ns: &str) -> bool {
    let ns_bucket = Bucket::new(cluster, NS_RESOURCE);
    let Some(stored) = server.get(&ObjectKey::new(ns_bucket.clone(), "", ns)) else {
        return false;
    };
    let Ok(namespace) = serde_json::from_slice::<Value>(&stored.value) else {
        return false;
    };
    if !meta::is_deleting(&namespace) {
        return false;
    }
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        ..DeleteOptions::default()
    };
    let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
    let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for res in server.served_resources(cluster) {
        if !res.namespaced || res.builtin().is_some_and(|k| k.is_virtual()) {
            continue;
        }
        let bucket = res.bucket(cluster);
        if !seen.insert(bucket.clone()) {
            continue;
        }
        let (_, items) = server.list(&bucket, Some(ns), None);
        if items.is_empty() {
            continue;
        }
        let Some(mut ctx) = server.writer(&bucket, "kube-controller-manager") else {
            continue;
        };
        for (_, name, object) in &items {
            let value: Value = serde_json::from_slice(&object.value).unwrap_or(Value::Null);
            if !meta::is_deleting(&value)
                && let Err(err) = ctx.delete(ns, name, &opts).await
                && err.code != 404
            {
                tracing::debug!(%err, "namespace controller delete");
            }
        }
        let (_, left) = server.list(&bucket, Some(ns), None);
        if !left.is_empty() {
            let label = if res.group.is_empty() {
                res.plural.clone()
            } else {
                format!("{}.{}", res.plural, res.group)
            };
            remaining.insert(label, left.len());
            for (_, _, object) in &left {
                if let Ok(v) = serde_json::from_slice::<Value>(&object.value) {
                    for f in meta::finalizers(&v) {
                        *finalizers.entry(f).or_default() += 1;
                    }
                }
            }
        }
    }
    let Some(mut ns_ctx) = server.writer(&ns_bucket, "kube-controller-manager") else {
        return true;
    };
    let now = meta::now();
    let content_msg = if remaining.is_empty() {
        "All content successfully removed".to_owned()
    } else {
        let parts: Vec<String> = remaining
            .iter()
            .map(|(r, n)| format!("{r} has {n} resource instances"))
            .collect();
        format!("Some resources are remaining: {}", parts.join(", "))
    };
    let fin_msg = if finalizers.is_empty() {
        "All content-preserving finalizers finished".to_owned()
    } else {
        let parts: Vec<String> = finalizers
            .iter()
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        format!(
            "Some content in the namespace has finalizers remaining: {}",
            parts.join(", ")
        )
    };
    let conditions = [
        condition(
            "NamespaceDeletionDiscoveryFailure",
            false,
            "ResourcesDiscovered",
            "All resources successfully discovered",
            &now,
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            false,
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
            &now,
        ),
        condition(
            "NamespaceDeletionContentFailure",
            false,
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
            &now,
        ),
        condition(
            "NamespaceContentRemaining",
            !remaining.is_empty(),
            if remaining.is_empty() {
                "ContentRemoved"
            } else {
                "SomeResourcesRemain"
            },
            &content_msg,
            &now,
        ),
        condition(
            "NamespaceFinalizersRemaining",
            !finalizers.is_empty(),
            if finalizers.is_empty() {
                "ContentHasNoFinalizers"
            } else {
                "SomeFinalizersRemain"
            },
            &fin_msg,
            &now,
        ),
    ];
    let mut set_status = |_: &mut crate::ops::Ctx, old: &Value| {
        let mut new = old.clone();
        let old_conditions = old
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let merged: Vec<Value> = conditions
            .iter()
            .map(|c| {
                match old_conditions
                    .iter()
                    .find(|o| o.get("type") == c.get("type"))
                {
                    Some(o)
                        if o.get("status") == c.get("status")
                            && o.get("message") == c.get("message") =>
                    {
                        o.clone()
                    }
                    _ => c.clone(),
                }
            })
            .collect();
        new["status"] = json!({"phase": "Terminating", "conditions": merged});
        Ok(new)
    };
    if let Err(err) = ns_ctx
        .update(
            "",
            ns,
            &Target::Sub("status".into()),
            Managed::RecordUpdate,
            false,
            &mut set_status,
        )
        .await
    {
        tracing::debug!(%err, "namespace status");
    }
    if !remaining.is_empty() {
        return true;
    }
    let mut finalize = |_: &mut crate::ops::Ctx, old: &Value| {
        let mut new = old.clone();
        let fins: Vec<Value> = old
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|f| f.as_str() != Some("kubernetes"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        new["spec"] = json!({"finalizers": fins});
        Ok(new)
    };
    match ns_ctx
        .update(
            "",
            ns,
            &Target::Sub("finalize".into()),
            Managed::RecordUpdate,
            false,
            &mut finalize,
        )
        .await
    {
        Ok(updated) => !updated.deleted,
        Err(err) => {
            tracing::debug!(%err, "namespace finalize");
            err.code != 404
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(name: &str) -> NsKey {
        (String::new(), name.to_owned())
    }

    #[test]
    fn a_namespace_waits_out_its_grace_period_from_the_first_sighting() {
        let t0 = Instant::now();
        let grace = Duration::from_secs(5);
        let mut waiting = Waiting::default();
        waiting.observe(key("a"), t0 + grace);
        // A later sighting (the namespace's status changed) does not push it back.
        waiting.observe(key("a"), t0 + grace + Duration::from_secs(3));
        waiting.observe(key("b"), t0 + Duration::from_secs(1) + grace);
        assert_eq!(waiting.next(), Some(t0 + grace));
        assert!(waiting.take_ready(t0).is_empty());
        assert_eq!(waiting.take_ready(t0 + grace), vec![key("a")]);
        assert_eq!(waiting.next(), Some(t0 + Duration::from_secs(6)));
        waiting.forget(&key("b"));
        assert_eq!(waiting.next(), None);
        assert!(waiting.take_ready(t0 + Duration::from_secs(60)).is_empty());
    }
}

//! Watch events of converted resources, encoded once for all their watchers.
//!
//! A custom resource is stored in one version and presented (converted, defaulted) for each
//! reader. Without sharing, every watcher of the resource parses, presents and serializes
//! every event itself: with a dozen controllers watching ManifestWorks across all namespaces,
//! each change was encoded a dozen times. kube-apiserver's watch cache likewise encodes an
//! event once per encoding for all the watchers that receive it. Only watchers that send
//! each event as it is (no selector, JSON output) share: the encoded event is all they need.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;
use ocm_apiserver_storage::Revision;

/// How many encoded events are kept. Watchers receive an event within moments of each other,
/// so a short memory serves them; it bounds what the cache holds when watchers are idle.
const CAPACITY: usize = 256;

/// Recently encoded events, by revision, served resource and API version.
#[derive(Default)]
pub(crate) struct SharedEncodings {
    recent: Mutex<VecDeque<Entry>>,
}

struct Entry {
    rev: Revision,
    /// The served resource that presented it (compared by identity: a CRD whose spec changed
    /// is served by a new one, with its own conversion and defaults).
    res: Arc<ResourceInfo>,
    version: String,
    json: Bytes,
}

impl SharedEncodings {
    /// The JSON of the object event `rev` carries, as clients of `version` of `res` see it:
    /// encoded by `encode` unless another watcher already did. `encode` returning `None` (an
    /// object that cannot be presented) is not remembered.
    pub(crate) fn json<E>(
        &self,
        rev: Revision,
        res: &Arc<ResourceInfo>,
        version: &str,
        encode: impl FnOnce() -> Result<Option<Bytes>, E>,
    ) -> Result<Option<Bytes>, E> {
        if let Some(json) = self.find(rev, res, version) {
            return Ok(Some(json));
        }
        let json = encode()?;
        if let Some(json) = &json {
            self.remember(rev, res, version, json.clone());
        }
        Ok(json)
    }

    fn find(&self, rev: Revision, res: &Arc<ResourceInfo>, version: &str) -> Option<Bytes> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        // Newest first: a watcher almost always asks for one of the last few events.
        recent
            .iter()
            .rev()
            .find(|e| e.is(rev, res, version))
            .map(|e| e.json.clone())
    }

    fn remember(&self, rev: Revision, res: &Arc<ResourceInfo>, version: &str, json: Bytes) {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.iter().any(|e| e.is(rev, res, version)) {
            return;
        }
        if recent.len() == CAPACITY {
            recent.pop_front();
        }
        recent.push_back(Entry {
            rev,
            res: res.clone(),
            version: version.to_owned(),
            json,
        });
    }
}

impl Entry {
    fn is(&self, rev: Revision, res: &Arc<ResourceInfo>, version: &str) -> bool {
        self.rev == rev && Arc::ptr_eq(&self.res, res) && self.version == version
    }
}

/// What label, name and namespace selectors read of an object.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    metadata: HeadMeta,
}

#[derive(Default, Deserialize)]
struct HeadMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<Map<String, Value>>,
}

/// An object's name, namespace and labels (`{"metadata": {...}}`) read from its stored JSON
/// without building the rest of it; `None` when it does not parse.
pub(crate) fn selection_head(raw: &[u8]) -> Option<Value> {
    let Head { metadata } = serde_json::from_slice(raw).ok()?;
    let mut meta = Map::new();
    if let Some(name) = metadata.name {
        meta.insert("name".into(), Value::String(name));
    }
    if let Some(namespace) = metadata.namespace {
        meta.insert("namespace".into(), Value::String(namespace));
    }
    if let Some(labels) = metadata.labels {
        meta.insert("labels".into(), Value::Object(labels));
    }
    Some(json!({ "metadata": meta }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(text: &'static str) -> Result<Option<Bytes>, ()> {
        Ok(Some(Bytes::from_static(text.as_bytes())))
    }

    /// A served resource (the first built-in kind; `other` another one).
    fn res() -> Arc<ResourceInfo> {
        crate::registry::Registry::new().builtins()[0].clone()
    }

    #[test]
    fn a_second_watcher_gets_the_first_ones_encoding() {
        let shared = SharedEncodings::default();
        let r = res();
        assert_eq!(
            shared.json(7, &r, "v1", || encode("a")),
            Ok(Some("a".into()))
        );
        let again = shared.json(7, &r, "v1", || -> Result<Option<Bytes>, ()> {
            panic!("encoded twice")
        });
        assert_eq!(again, Ok(Some("a".into())));
    }

    #[test]
    fn versions_and_revisions_are_told_apart() {
        let shared = SharedEncodings::default();
        let r = res();
        shared.json(7, &r, "v1", || encode("a")).ok();
        assert_eq!(
            shared.json(7, &r, "v2", || encode("b")),
            Ok(Some("b".into()))
        );
        assert_eq!(
            shared.json(8, &r, "v1", || encode("c")),
            Ok(Some("c".into()))
        );
        assert_eq!(
            shared.json(7, &r, "v1", || encode("x")),
            Ok(Some("a".into()))
        );
        // The same name, version and revision served by another resource object (a CRD whose
        // spec changed): encoded anew.
        let replaced = Arc::new(ResourceInfo::clone(&r));
        assert_eq!(
            shared.json(7, &replaced, "v1", || encode("d")),
            Ok(Some("d".into()))
        );
    }

    #[test]
    fn failures_and_unpresentable_objects_are_not_remembered() {
        let shared = SharedEncodings::default();
        let r = res();
        assert_eq!(
            shared.json(1, &r, "v1", || Err::<Option<Bytes>, _>("down")),
            Err("down")
        );
        assert_eq!(shared.json(1, &r, "v1", || Ok::<_, ()>(None)), Ok(None));
        assert_eq!(
            shared.json(1, &r, "v1", || encode("a")),
            Ok(Some("a".into()))
        );
    }

    #[test]
    fn the_selection_head_keeps_name_namespace_and_labels_only() {
        let raw = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n",
            "labels":{"app":"web"},"managedFields":[{"manager":"m"}]},"data":{"k":"v"}}"#;
        assert_eq!(
            selection_head(raw),
            Some(json!({"metadata": {"name": "a", "namespace": "n", "labels": {"app": "web"}}}))
        );
        assert_eq!(
            selection_head(br#"{"metadata":{"name":"b"}}"#),
            Some(json!({"metadata": {"name": "b"}}))
        );
        assert_eq!(selection_head(b"not json"), None);
    }

    #[test]
    fn the_oldest_encodings_are_forgotten_first() {
        let shared = SharedEncodings::default();
        let r = res();
        for rev in 0..=CAPACITY as u64 {
            shared.json(rev, &r, "v1", || encode("old")).ok();
        }
        assert_eq!(
            shared.json(0, &r, "v1", || encode("new")),
            Ok(Some("new".into()))
        );
        assert_eq!(
            shared.json(CAPACITY as u64, &r, "v1", || encode("new")),
            Ok(Some("old".into()))
        );
    }
}

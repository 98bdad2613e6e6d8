//! watch: newline-delimited JSON events, resumable inside the history window, with bookmarks,
//! initial events, selector transitions and too-old revisions reported as an ERROR event.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http::StatusCode;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::read::Filter;
use super::{Output, Reply, ReplyBody, ResourceRequest};
use crate::meta::partial_metadata;
use crate::ops::Ctx;
use crate::registry::ResourceInfo;
use crate::watch_encodings::selection_head;
use ocm_apiserver_status::ApiError;
use ocm_apiserver_storage::{
    Event, EventKind, Revision, StorageError, WatchScope, WatchSubscription,
};

/// Encodes one watch event line.
fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(object.len() + kind.len() + 24);
    buf.put_slice(b"{\"type\":\"");
    buf.put_slice(kind.as_bytes());
    buf.put_slice(b"\",\"object\":");
    buf.put_slice(object);
    buf.put_slice(b"}\n");
    buf.freeze()
}

fn value_line(kind: &str, object: &Value) -> Bytes {
    event_line(
        kind,
        &ocm_apiserver_json::to_vec(object).unwrap_or_default(),
    )
}

/// What a watcher sends for a change, given whether the object matched its selectors before
/// and after: an object entering the selection is ADDED, one leaving it DELETED.
fn transition(kind: EventKind, old_matches: bool, new_matches: bool) -> Option<&'static str> {
    match (kind, old_matches, new_matches) {
        (EventKind::Added, _, true) => Some("ADDED"),
        (EventKind::Modified, true, true) => Some("MODIFIED"),
        (EventKind::Modified, false, true) => Some("ADDED"),
        (EventKind::Modified, true, false) => Some("DELETED"),
        (EventKind::Deleted, true, _) => Some("DELETED"),
        _ => None,
    }
}

/// The ERROR event for a watch that cannot start.
fn error_line(err: &ApiError) -> Bytes {
    value_line("ERROR", &err.to_status())
}

struct Watcher {
    ctx: Ctx,
    res: Arc<ResourceInfo>,
    version: String,
    filter: Filter,
    name: Option<String>,
    output: Output,
    tx: mpsc::Sender<Bytes>,
    last_rev: Revision,
    sent_columns: bool,
}

impl Watcher {
    fn matches(&self, obj: &Value) -> bool {
        if let Some(name) = &self.name
            && crate::meta::meta_str(obj, "name") != name
        {
            return false;
        }
        self.filter.matches(obj)
    }

    /// Whether the watch's name (from the path or a `metadata.name=` field selector) rules out
    /// every object named `name`: such events are skipped without parsing the object.
    fn excludes_name(&self, name: &str) -> bool {
        self.name.as_deref().is_some_and(|n| n != name)
            || self
                .filter
                .fields
                .exact_match("metadata.name")
                .is_some_and(|n| n != name)
    }

    /// Whether every event of the watch's namespace goes out as it is: no selector, no name,
    /// JSON output.
    fn unfiltered(&self) -> bool {
        self.filter.labels.is_everything()
            && self.filter.fields.is_everything()
            && self.name.is_none()
            && self.output == Output::Json
    }

    /// Whether stored bytes go out untouched.
    fn simple(&self) -> bool {
        self.unfiltered() && self.ctx.passthrough()
    }

    /// Parses stored bytes into the object the client sees.
    fn present(&self, raw: &[u8]) -> Result<Option<Value>, ApiError> {
        let Ok(value) = serde_json::from_slice::<Value>(raw) else {
            return Ok(None);
        };
        if self.ctx.passthrough() {
            return Ok(Some(value));
        }
        self.ctx.present(value).map(Some)
    }

    /// Sends one object event; false when the client is gone.
    async fn send_object(&mut self, kind: &str, raw: &Bytes, parsed: Option<Value>) -> bool {
        let line = if self.output == Output::Json && self.ctx.passthrough() {
            event_line(kind, raw)
        } else {
            // `parsed` is already presented; raw bytes still need it.
            let value = match parsed {
                Some(v) => v,
                None => match self.present(raw) {
                    Ok(Some(v)) => v,
                    Ok(None) => return true,
                    Err(err) => return self.tx.send(error_line(&err)).await.is_ok(),
                },
            };
            match self.output {
                Output::Json => value_line(kind, &value),
                Output::PartialMeta => value_line(kind, &partial_metadata(&value)),
                Output::Table => {
                    let rv = crate::meta::meta_str(&value, "resourceVersion").to_owned();
                    let table = crate::table::table(
                        &self.res,
                        &self.version,
                        std::slice::from_ref(&value),
                        &rv,
                        "",
                        !self.sent_columns,
                    );
                    self.sent_columns = true;
                    value_line(kind, &table)
                }
            }
        };
        self.tx.send(line).await.is_ok()
    }

    async fn handle_event(&mut self, event: &Event) -> bool {
        if event.rev <= self.last_rev {
            return true;
        }
        if !self
            .ctx
            .inner
            .registry
            .is_current(&self.ctx.cluster, &self.res)
        {
            // The CRD's spec changed (conversion, schema, columns) or it went: end the watch,
            // as kube-apiserver does when it replaces a CRD's storage; the client watches
            // again from its last revision and gets the resource as now served.
            return false;
        }
        self.last_rev = event.rev;
        if let Some(ns) = &self.filter.namespace
            && event.key.namespace != *ns
        {
            return true;
        }
        if self.excludes_name(&event.key.name) {
            return true;
        }
        if self.unfiltered() {
            let kind = match event.kind {
                EventKind::Added => "ADDED",
                EventKind::Modified => "MODIFIED",
                EventKind::Deleted => "DELETED",
            };
            return self.send_shared(kind, event).await;
        }
        if self.output == Output::Json && self.filter.selects_by_metadata_only() {
            // Labels, name and namespace read the same in every version: match on the
            // stored object's metadata and send the encoding other watchers share.
            let selected = |raw: &[u8]| {
                self.filter.could_match(raw)
                    && selection_head(raw).is_some_and(|head| self.matches(&head))
            };
            let old_matches = event.prev.as_deref().is_some_and(selected);
            let new_matches = selected(&event.object);
            return match transition(event.kind, old_matches, new_matches) {
                Some(kind) => self.send_shared(kind, event).await,
                None => true,
            };
        }
        // Neither side can match: nothing to send, nothing to parse.
        if !self.filter.could_match(&event.object)
            && event
                .prev
                .as_ref()
                .is_none_or(|p| !self.filter.could_match(p))
        {
            return true;
        }
        let new = match self.present(&event.object) {
            Ok(Some(v)) => v,
            Ok(None) => return true,
            Err(err) => return self.tx.send(error_line(&err)).await.is_ok(),
        };
        let old_matches = event
            .prev
            .as_ref()
            .and_then(|p| self.present(p).ok().flatten())
            .is_some_and(|p| self.matches(&p));
        let new_matches = self.matches(&new);
        let Some(kind) = transition(event.kind, old_matches, new_matches) else {
            return true;
        };
        self.send_object(kind, &event.object, Some(new)).await
    }

    /// Sends an event's object as the watch's version reads it, encoded once for all the
    /// watchers of that version; false when the client is gone.
    async fn send_shared(&mut self, kind: &str, event: &Event) -> bool {
        if self.ctx.passthrough() {
            return self.send_object(kind, &event.object, None).await;
        }
        let encoded =
            self.ctx
                .inner
                .watch_encodings
                .json(event.rev, &self.res, &self.version, || {
                    self.present(&event.object).map(|v| {
                        v.map(|v| Bytes::from(ocm_apiserver_json::to_vec(&v).unwrap_or_default()))
                    })
                });
        match encoded {
            Ok(Some(json)) => self.tx.send(event_line(kind, &json)).await.is_ok(),
            Ok(None) => true,
            Err(err) => self.tx.send(error_line(&err)).await.is_ok(),
        }
    }

    async fn bookmark(&mut self, rev: Revision, initial_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": rev.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({
            "kind": self.res.kind,
            "apiVersion": self.res.api_version(&self.version),
            "metadata": metadata,
        });
        self.tx.send(value_line("BOOKMARK", &object)).await.is_ok()
    }
}

/// GET with `watch=true`.
pub(crate) fn watch(req: &ResourceRequest) -> Result<Reply, ApiError> {
    let output = req.output()?;
    let filter = Filter::from_request(req)?;
    let ctx = req.ctx()?;
    let bookmarks = req.query.flag("allowWatchBookmarks");
    let send_initial = match req.query.non_empty("sendInitialEvents") {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "invalid sendInitialEvents: {other}"
            )));
        }
    };
    let rv_match = req.query.non_empty("resourceVersionMatch");
    if send_initial.is_some() {
        if rv_match != Some("NotOlderThan") {
            return Err(ApiError::invalid(
                "ListOptions.meta.k8s.io",
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![ocm_apiserver_status::Cause::new(
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
                    "sendInitialEvents",
                )],
            ));
        }
        if !bookmarks {
            return Err(ApiError::invalid(
                "ListOptions.meta.k8s.io",
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![ocm_apiserver_status::Cause::new(
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
                    "allowWatchBookmarks",
                )],
            ));
        }
    } else if rv_match.is_some() {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    let max = req.inner.config.max_watch_timeout;
    let timeout = match req.query.non_empty("timeoutSeconds") {
        Some(t) => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t}")))?,
        )
        .min(max),
        None => max,
    };
    let rv: Option<Revision> = match req.query.non_empty("resourceVersion") {
        None => None,
        Some(s) => Some(
            s.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s}")))?,
        ),
    };
    // kube refuses a YAML watch once the watch itself was set up.
    req.watch_encoding_error()?;
    let store = &req.inner.store;
    let bucket = req.res.bucket(&req.cluster);
    let ns = req.path.namespace.as_deref();
    // Only events of objects this watch can match are queued for it: with thousands of
    // agents each watching its own objects, an event reaches its object's watchers rather
    // than every watcher of the resource.
    let exact = |field: &str| filter.fields.exact_match(field).map(str::to_owned);
    let scope = WatchScope {
        namespace: ns
            .map(str::to_owned)
            .or_else(|| exact("metadata.namespace")),
        name: req.path.name.clone().or_else(|| exact("metadata.name")),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let list_first =
        send_initial == Some(true) || (send_initial.is_none() && matches!(rv, None | Some(0)));
    let (initial, subscription): (Vec<_>, WatchSubscription) = if list_first {
        let (items, sub) = store.list_and_watch(&bucket, ns, scope);
        (items, sub)
    } else {
        // Without a revision (or "0") and without initial events: start from now.
        let from = match rv {
            None | Some(0) => store.revision(),
            Some(r) => r,
        };
        match store.watch_from(&bucket, from, scope) {
            Ok(sub) => (Vec::new(), sub),
            Err(StorageError::Compacted { requested, oldest }) => {
                let err =
                    ApiError::expired(format!("too old resource version: {requested} ({oldest})"));
                let body = error_line(&err);
                return Ok(Reply {
                    status: StatusCode::OK,
                    content_type: "application/json".into(),
                    body: ReplyBody::Full(body),
                    warnings: Vec::new(),
                    headers: http::HeaderMap::new(),
                });
            }
            Err(err) => return Err(ApiError::internal(err)),
        }
    };
    let start_rev = if list_first {
        subscription.revision
    } else {
        rv.unwrap_or(0)
    };
    let mut watcher = Watcher {
        ctx,
        res: req.res.clone(),
        version: req.path.version.clone(),
        filter,
        name: req.path.name.clone(),
        output,
        tx,
        last_rev: start_rev,
        sent_columns: false,
    };
    let interval = req.inner.config.bookmark_interval;
    let mut shutdown = req.inner.shutdown.subscribe();
    let store = store.clone();
    tokio::spawn(async move {
        let WatchSubscription {
            replay,
            mut receiver,
            revision,
        } = subscription;
        for (_, _, object) in initial {
            let parsed = if watcher.simple() {
                None
            } else if !watcher.filter.could_match(&object.value) {
                continue;
            } else {
                match watcher.present(&object.value) {
                    Ok(Some(v)) if watcher.matches(&v) => Some(v),
                    _ => continue,
                }
            };
            if !watcher.send_object("ADDED", &object.value, parsed).await {
                return;
            }
        }
        if send_initial == Some(true) && !watcher.bookmark(revision, true).await {
            return;
        }
        for event in replay {
            if !watcher.handle_event(&event).await {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                event = receiver.recv() => {
                    match event {
                        Some(event) => {
                            if !watcher.handle_event(&event).await {
                                return;
                            }
                        }
                        None => return,
                    }
                }
                _ = ticker.tick(), if bookmarks => {
                    let now = store.revision();
                    while let Ok(event) = receiver.try_recv() {
                        if !watcher.handle_event(&event).await {
                            return;
                        }
                    }
                    let rev = now.max(watcher.last_rev);
                    watcher.last_rev = rev;
                    if !watcher.bookmark(rev, false).await {
                        return;
                    }
                }
                _ = &mut deadline => {
                    if bookmarks {
                        let now = store.revision();
                        while let Ok(event) = receiver.try_recv() {
                            if !watcher.handle_event(&event).await {
                                return;
                            }
                        }
                        let rev = now.max(watcher.last_rev);
                        let _ = watcher.bookmark(rev, false).await;
                    }
                    return;
                }
                _ = watcher.tx.closed() => return,
                _ = shutdown.changed() => return,
            }
        }
    });
    Ok(Reply {
        status: StatusCode::OK,
        content_type: "application/json".into(),
        body: ReplyBody::Stream(rx),
        warnings: Vec::new(),
        headers: http::HeaderMap::new(),
    })
}

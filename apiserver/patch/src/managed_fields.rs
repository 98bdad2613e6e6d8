//! `metadata.managedFields`: who owns which fields, and the bookkeeping kube-apiserver does
//! on every non-apply write (create, update, patch): the writer's `Update` entry takes the
//! fields the write changed, and every other manager loses them.
//!
//! Entries are identified like kube does: manager name, operation, subresource, and (for
//! `Update` entries only) apiVersion. Entries are written sorted (operation, time, manager,
//! apiVersion, subresource), with `fieldsType: FieldsV1`; at most 10 `Update` entries are kept,
//! older ones folding into `ancient-changes`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, PathElement};
use super::typed;
use super::typeinfo::{ObjectType, TypeRef};

/// The most `Update` entries kept per object (kube's `DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;

const ANCIENT_CHANGES: &str = "ancient-changes";
pub(crate) const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The operation of a managedFields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// The identity of a manager: entries with the same identity are one entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ManagerId {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    /// Only for `Update` (appliers keep one identity across versions).
    pub(crate) api_version: Option<String>,
    pub(crate) subresource: Option<String>,
}

impl ManagerId {
    pub(crate) fn new(
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: Option<&str>,
    ) -> ManagerId {
        ManagerId {
            manager: if manager.is_empty() {
                "unknown".to_string()
            } else {
                manager.to_string()
            },
            operation,
            api_version: (operation == Operation::Update).then(|| api_version.to_string()),
            subresource: subresource.filter(|s| !s.is_empty()).map(str::to_string),
        }
    }

    /// How kube names the manager in conflict messages (`printManager`).
    pub(crate) fn printed(&self) -> String {
        let mut s = Value::String(self.manager.clone()).to_string();
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {}", Value::String(sub.clone())));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(
                " using {}",
                self.api_version.as_deref().unwrap_or("")
            ));
        }
        s
    }
}

/// One manager's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManagerEntry {
    pub(crate) set: FieldSet,
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
}

/// All managers of an object.
pub(crate) type Managers = BTreeMap<ManagerId, ManagerEntry>;

/// Decodes `metadata.managedFields` (absent or null means none).
pub(crate) fn decode(object: &Value) -> Result<Managers, String> {
    let mut managers = Managers::new();
    let entries = match object.get("metadata").and_then(|m| m.get("managedFields")) {
        None | Some(Value::Null) => return Ok(managers),
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err("metadata.managedFields must be a list".to_string()),
    };
    for (i, entry) in entries.iter().enumerate() {
        let Value::Object(e) = entry else {
            return Err(format!("managed fields entry {i} is not an object"));
        };
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        let operation = match s("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".to_string()),
        };
        if s("apiVersion").is_empty() {
            return Err("apiVersion must not be empty".to_string());
        }
        match s("fieldsType") {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!(
                    "invalid fieldsType {other:?} in managed fields entry {i}"
                ));
            }
        }
        let set = match e.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(v) => {
                FieldSet::from_fields_v1(v).map_err(|err| format!("error decoding set: {err}"))?
            }
        };
        let subresource = e.get("subresource").and_then(Value::as_str);
        let id = ManagerId::new(s("manager"), operation, s("apiVersion"), subresource);
        // An empty manager name stays empty in stored entries.
        let id = ManagerId {
            manager: s("manager").to_string(),
            ..id
        };
        managers.insert(
            id,
            ManagerEntry {
                set,
                api_version: s("apiVersion").to_string(),
                time: e.get("time").and_then(Value::as_str).map(str::to_string),
            },
        );
    }
    Ok(managers)
}

fn unix_seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_second())
        .unwrap_or(0)
}

/// Encodes managers as `metadata.managedFields` entries, sorted as kube sorts them.
pub(crate) fn encode(managers: &Managers) -> Vec<Value> {
    let mut entries: Vec<(&ManagerId, &ManagerEntry)> = managers.iter().collect();
    entries.sort_by(|(a, ae), (b, be)| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| unix_seconds(ae.time.as_deref()).cmp(&unix_seconds(be.time.as_deref())))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| ae.api_version.cmp(&be.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    entries
        .into_iter()
        .map(|(id, e)| {
            let mut m = Map::new();
            if !id.manager.is_empty() {
                m.insert("manager".into(), Value::String(id.manager.clone()));
            }
            m.insert(
                "operation".into(),
                Value::String(id.operation.as_str().into()),
            );
            m.insert("apiVersion".into(), Value::String(e.api_version.clone()));
            if let Some(t) = &e.time {
                m.insert("time".into(), Value::String(t.clone()));
            }
            m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
            m.insert("fieldsV1".into(), e.set.to_fields_v1());
            if let Some(sub) = &id.subresource {
                m.insert("subresource".into(), Value::String(sub.clone()));
            }
            Value::Object(m)
        })
        .collect()
}

/// Writes `managers` into `object.metadata.managedFields` (removing it when there are none).
pub(crate) fn store(object: &mut Value, managers: &Managers) {
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    let entries = encode(managers);
    if entries.is_empty() {
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.shift_remove("managedFields");
        }
        return;
    }
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}

/// `object` without `metadata.managedFields`.
pub(crate) fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(Value::Object(meta)) = copy.get_mut("metadata") {
        meta.shift_remove("managedFields");
    }
    copy
}

/// What kube's `IgnoreManagedFieldsTimestampsTransformer` does: when a write changes nothing
/// but the times of managedFields entries (an apply whose values differed from the stored ones
/// only in form, `0.5` for a stored `500m`), the old entries are kept, so the write is a no-op.
pub fn keep_times_of_a_no_op(old: &Value, new: &mut Value) {
    let entries = |o: &Value| o.pointer("/metadata/managedFields").cloned();
    let (Some(before), Some(after)) = (entries(old), entries(new)) else {
        return;
    };
    if before == after {
        return;
    }
    let untimed = |mf: &Value| -> Value {
        let mut mf = mf.clone();
        if let Value::Array(items) = &mut mf {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                item.shift_remove("time");
            }
        }
        mf
    };
    if untimed(&before) != untimed(&after)
        || without_managed_fields(old) != without_managed_fields(new)
    {
        return;
    }
    if let Some(Value::Object(meta)) = new.get_mut("metadata") {
        meta.insert("managedFields".into(), before);
    }
}

/// Fields no manager ever owns (kube's strip set).
pub(crate) fn strip_set() -> FieldSet {
    let mut set = FieldSet::default();
    let f = |s: &str| PathElement::Field(s.to_string());
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    set.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[f("metadata"), f(name)]);
    }
    set
}

/// Paths (lists of field names) to a field set; used for reset fields.
pub(crate) fn field_paths_set(paths: &[&[&str]]) -> FieldSet {
    let mut set = FieldSet::default();
    for p in paths {
        let path: Vec<PathElement> = p
            .iter()
            .map(|s| PathElement::Field((*s).to_string()))
            .collect();
        set.insert(&path);
    }
    set
}

/// The fields the strategy of a kind resets for a write (kube's `GetResetFields`): writes to
/// the main resource of a kind with a status subresource do not own `status`; writes to
/// `/status` do not own `spec`.
pub fn default_reset_fields(
    subresource: Option<&str>,
    has_status_subresource: bool,
) -> &'static [&'static [&'static str]] {
    match subresource {
        Some("status") => &[&["spec"]],
        None if has_status_subresource => &[&["status"]],
        _ => &[],
    }
}

/// The manager of a non-apply write: the `fieldManager` parameter, or else the User-Agent up
/// to its first `/` (kube's `managerOrUserAgent`).
pub fn manager_or_user_agent(field_manager: Option<&str>, user_agent: &str) -> String {
    match field_manager.filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None => user_agent.split('/').next().unwrap_or("").to_string(),
    }
}

/// Who writes, for [`update_managers`].
pub(crate) struct Writer<'a> {
    pub(crate) id: &'a ManagerId,
    pub(crate) api_version: &'a str,
    /// Reset fields: never owned.
    pub(crate) ignored: &'a FieldSet,
    pub(crate) now: &'a str,
}

/// The ownership change of a non-apply write from `live` to `new` (both without
/// managedFields): the writer takes what it added or changed, everyone loses what changed or
/// went away. The writer's time is set only when it took fields.
pub(crate) fn update_managers(
    live: &Value,
    new: &Value,
    mut managers: Managers,
    writer: &Writer<'_>,
    ty: TypeRef<'_>,
) -> Result<Managers, String> {
    let Writer {
        id,
        api_version,
        ignored,
        now,
    } = *writer;
    let cmp = typed::compare(live, new, ty)?.excluding(ignored);
    let changed = cmp.modified.union(&cmp.added);
    for entry in managers.values_mut() {
        entry.set = entry.set.difference(&changed).difference(&cmp.removed);
    }
    managers.retain(|_, e| !e.set.is_empty());
    let taken = changed.difference(&strip_set());
    if !taken.is_empty() {
        let previous = managers.remove(id).map(|e| e.set).unwrap_or_default();
        managers.insert(
            id.clone(),
            ManagerEntry {
                set: taken.union(&previous),
                api_version: api_version.to_string(),
                time: Some(now.to_string()),
            },
        );
    }
    Ok(cap_update_managers(managers))
}

/// Folds the oldest `Update` entries into `ancient-changes` entries (one per apiVersion) until
/// at most [`MAX_UPDATE_MANAGERS`] remain.
fn cap_update_managers(mut managers: Managers) -> Managers {
    let mut updaters: Vec<ManagerId> = managers
        .keys()
        .filter(|id| id.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return managers;
    }
    updaters.sort_by(|a, b| {
        let ta = unix_seconds(managers.get(a).and_then(|e| e.time.as_deref()));
        let tb = unix_seconds(managers.get(b).and_then(|e| e.time.as_deref()));
        ta.cmp(&tb).then_with(|| a.cmp(b))
    });
    let mut remaining = updaters.len();
    let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
    for id in updaters {
        if remaining <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managers.get(&id).cloned() else {
            continue;
        };
        let bucket = ManagerId::new(ANCIENT_CHANGES, Operation::Update, &entry.api_version, None);
        if bucket == id {
            continue;
        }
        match first_of_version.get(&entry.api_version) {
            Some(first) => {
                if !managers.contains_key(&bucket)
                    && let Some(first_entry) = managers.remove(first)
                {
                    managers.insert(bucket.clone(), first_entry);
                }
                if let Some(b) = managers.get_mut(&bucket) {
                    b.set.union_in_place(&entry.set);
                    b.time = entry.time.clone();
                }
                managers.remove(&id);
                remaining -= 1;
            }
            None => {
                first_of_version.insert(entry.api_version.clone(), id);
            }
        }
    }
    managers
}

/// What [`record_update`] needs to know about the write.
#[derive(Debug, Clone, Copy)]
pub struct UpdateOptions<'a> {
    /// The writer: see [`manager_or_user_agent`].
    pub manager: &'a str,
    /// The `group/version` (or `v1`) the request used.
    pub api_version: &'a str,
    /// `Some("status")` for writes to the status subresource.
    pub subresource: Option<&'a str>,
    /// Fields the write does not own (see [`default_reset_fields`]).
    pub reset_fields: &'a [&'a [&'a str]],
    /// The current time, RFC 3339 in UTC with seconds (`2026-01-02T03:04:05Z`).
    pub now: &'a str,
}

/// Records a non-apply write (create when `old` is `None`, update, or non-apply patch) in
/// `new.metadata.managedFields`, as kube-apiserver's field manager does:
///
/// - the managers start from `new`'s managedFields when the client sent some (main resource
///   only), else from `old`'s; sending `[]` or `[{}]` resets them;
/// - an object whose managers are empty is only tracked from its creation (an update of an
///   untracked object stays untracked until the next apply);
/// - the writer's `Update` entry takes the fields the write added or changed, every other
///   manager loses those and the removed ones; timestamps move only when fields are taken.
///
/// Never fails: if the objects cannot be compared, `old`'s managedFields are kept.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    types: &ObjectType,
    opts: &UpdateOptions<'_>,
) {
    let empty = Value::Object(Map::new());
    let live = old.unwrap_or(&empty);
    let is_create = old.is_none_or(|o| {
        o.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
    });
    let managers = starting_managers(live, new, opts.subresource.is_some());
    let live_plain = without_managed_fields(live);
    let new_plain = without_managed_fields(new);
    let result = if managers.is_empty() && !is_create {
        Ok(Managers::new())
    } else {
        let id = ManagerId::new(
            opts.manager,
            Operation::Update,
            opts.api_version,
            opts.subresource,
        );
        let ignored = field_paths_set(opts.reset_fields);
        let writer = Writer {
            id: &id,
            api_version: opts.api_version,
            ignored: &ignored,
            now: opts.now,
        };
        update_managers(&live_plain, &new_plain, managers, &writer, types.root())
    };
    match result {
        Ok(managers) => {
            *new = new_plain;
            store(new, &managers);
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not update managedFields; keeping the previous ones");
            let previous = live.pointer("/metadata/managedFields").cloned();
            *new = new_plain;
            if let (Some(prev), Some(Value::Object(meta))) = (previous, new.get_mut("metadata")) {
                meta.insert("managedFields".into(), prev);
            }
        }
    }
}

/// kube's `decodeLiveOrNew`.
fn starting_managers(live: &Value, new: &Value, is_subresource: bool) -> Managers {
    let from_live = || decode(live).unwrap_or_default();
    if is_subresource {
        return from_live();
    }
    match new.pointer("/metadata/managedFields") {
        Some(Value::Array(entries)) if entries.is_empty() => Managers::new(),
        Some(Value::Array(entries))
            if entries.len() == 1
                && entries
                    .first()
                    .is_some_and(|e| e.as_object().is_some_and(Map::is_empty)) =>
        {
            Managers::new()
        }
        _ => match decode(new) {
            Ok(m) if !m.is_empty() => m,
            _ => from_live(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldpath::path_string;
    use serde_json::json;

    const NOW: &str = "2026-01-02T03:04:05Z";
    const LATER: &str = "2026-01-02T03:05:00Z";

    fn cm_type() -> ObjectType {
        match ObjectType::builtin("", "ConfigMap") {
            Some(t) => t,
            None => panic!("ConfigMap is built in"),
        }
    }

    fn opts<'a>(manager: &'a str, now: &'a str) -> UpdateOptions<'a> {
        UpdateOptions {
            manager,
            api_version: "v1",
            subresource: None,
            reset_fields: &[],
            now,
        }
    }

    fn created(manager: &str, obj: Value) -> Value {
        let mut new = obj;
        record_update(None, &mut new, &cm_type(), &opts(manager, NOW));
        new
    }

    fn with_uid(mut v: Value) -> Value {
        if let Some(Value::Object(meta)) = v.get_mut("metadata") {
            meta.insert("uid".into(), json!("u1"));
        }
        v
    }

    #[test]
    fn create_records_an_update_entry_with_dot_members() {
        let obj = created(
            "kubectl-create",
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "ns", "labels": {"a": "1"}},
                "data": {"k": "v"}
            }),
        );
        assert_eq!(
            obj["metadata"]["managedFields"],
            json!([{
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": NOW,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": {".": {}, "f:k": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:a": {}}}
                }
            }])
        );
    }

    #[test]
    fn update_moves_changed_fields_to_the_writer() {
        let live = with_uid(created(
            "creator",
            json!({
                "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}
            }),
        ));
        let mut new = live.clone();
        new["data"]["a"] = json!("9");
        if let Some(Value::Object(d)) = new.get_mut("data") {
            d.shift_remove("b");
        }
        new["data"]["c"] = json!("3");
        record_update(Some(&live), &mut new, &cm_type(), &opts("editor", LATER));
        let managers = decode(&new).unwrap_or_default();
        let by_name = |n: &str| {
            managers
                .iter()
                .find(|(id, _)| id.manager == n)
                .map(|(_, e)| {
                    e.set
                        .paths()
                        .iter()
                        .map(|p| path_string(p))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        assert_eq!(by_name("creator"), [".data"]);
        assert_eq!(by_name("editor"), [".data.a", ".data.c"]);
        let entries = new["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["manager"], json!("creator"));
        assert_eq!(entries[1]["time"], json!(LATER));
    }

    #[test]
    fn a_no_op_update_keeps_times() {
        let live = with_uid(created(
            "creator",
            json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
        ));
        let mut new = live.clone();
        record_update(Some(&live), &mut new, &cm_type(), &opts("other", LATER));
        assert_eq!(new, live);
    }

    #[test]
    fn a_write_changing_only_times_keeps_the_old_entries() {
        let live = with_uid(created(
            "creator",
            json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
        ));
        let mut new = live.clone();
        new["metadata"]["managedFields"][0]["time"] = json!(LATER);
        keep_times_of_a_no_op(&live, &mut new);
        assert_eq!(new, live);
        // A changed value keeps the new time.
        let mut changed = live.clone();
        changed["metadata"]["managedFields"][0]["time"] = json!(LATER);
        changed["data"]["a"] = json!("2");
        let before = changed.clone();
        keep_times_of_a_no_op(&live, &mut changed);
        assert_eq!(changed, before);
    }

    #[test]
    fn untracked_objects_stay_untracked_on_update() {
        let live = json!({"metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}});
        let mut new = json!({"metadata": {"name": "c", "uid": "u"}, "data": {"a": "2"}});
        record_update(Some(&live), &mut new, &cm_type(), &opts("x", NOW));
        assert!(new["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn sending_empty_managed_fields_resets_them() {
        let live = with_uid(created(
            "creator",
            json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
        ));
        let mut new = live.clone();
        new["metadata"]["managedFields"] = json!([]);
        new["data"]["a"] = json!("2");
        record_update(Some(&live), &mut new, &cm_type(), &opts("x", NOW));
        assert!(new["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn status_writes_are_separate_entries_and_reset_fields_are_not_owned() {
        let t = match ObjectType::builtin("apps", "Deployment") {
            Some(t) => t,
            None => panic!("built in"),
        };
        let live = json!({"metadata": {"name": "d", "uid": "u", "managedFields": [{
            "manager": "m", "operation": "Update", "apiVersion": "apps/v1", "time": NOW,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {"replicas": 1}});
        let mut new = live.clone();
        new["status"] = json!({"replicas": 1});
        new["spec"]["replicas"] = json!(5);
        let o = UpdateOptions {
            manager: "ctrl",
            api_version: "apps/v1",
            subresource: Some("status"),
            reset_fields: default_reset_fields(Some("status"), true),
            now: LATER,
        };
        record_update(Some(&live), &mut new, &t, &o);
        let entries = new["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert_eq!(entries[1]["subresource"], json!("status"));
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status": {".": {}, "f:replicas": {}}})
        );
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
    }

    #[test]
    fn update_managers_are_capped_at_ten() {
        let mut obj = with_uid(created(
            "m0",
            json!({"metadata": {"name": "c"}, "data": {"k0": "v"}}),
        ));
        for i in 1..=12 {
            let mut new = obj.clone();
            new["data"][format!("k{i}")] = json!("v");
            let now = format!("2026-01-02T03:{:02}:00Z", i + 10);
            record_update(
                Some(&obj),
                &mut new,
                &cm_type(),
                &opts(&format!("m{i}"), &now),
            );
            obj = new;
        }
        let entries = obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(entries.len(), MAX_UPDATE_MANAGERS);
        assert!(
            entries
                .iter()
                .any(|e| e["manager"] == json!("ancient-changes"))
        );
        let managers = decode(&obj).unwrap_or_default();
        let all: FieldSet = managers
            .values()
            .fold(FieldSet::default(), |acc, e| acc.union(&e.set));
        assert_eq!(
            all.paths().len(),
            14,
            "every data key is still owned (plus .data)"
        );
    }

    #[test]
    fn manager_names() {
        assert_eq!(manager_or_user_agent(Some("mine"), "kubectl/v1.32"), "mine");
        assert_eq!(
            manager_or_user_agent(None, "kubectl/v1.32.4 (linux/amd64)"),
            "kubectl"
        );
        assert_eq!(manager_or_user_agent(Some(""), "kube-rs"), "kube-rs");
        let id = ManagerId::new("m", Operation::Update, "apps/v1", Some("status"));
        assert_eq!(
            id.printed(),
            "\"m\" with subresource \"status\" using apps/v1"
        );
        assert_eq!(
            ManagerId::new("m", Operation::Apply, "apps/v1", None).printed(),
            "\"m\""
        );
    }

    #[test]
    fn decoding_rejects_malformed_entries() {
        for entry in [
            json!({"manager": "m", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}),
            json!({"manager": "m", "operation": "Update", "fieldsType": "FieldsV1"}),
            json!({"manager": "m", "operation": "Update", "apiVersion": "v1"}),
            json!({"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}),
        ] {
            let obj = json!({"metadata": {"managedFields": [entry]}});
            assert!(decode(&obj).is_err(), "{obj}");
        }
    }
}

//! Server-side apply (`application/apply-patch+yaml`), as kube-apiserver's field manager
//! runs it on structured-merge-diff:
//!
//! 1. the applied configuration is merged into the live object following the field types
//!    (structs and granular maps per key, associative lists per item, sets per value, atomic
//!    values replaced);
//! 2. the applier's `Apply` entry becomes the field set of its configuration;
//! 3. fields the applier owned before, no longer sends, and nobody else owns are removed;
//! 4. fields owned by other managers whose value the apply changes are conflicts: 409 unless
//!    `force`, which moves them to the applier; fields the apply removes leave every owner;
//! 5. an object without managedFields first gets a `before-first-apply` `Update` entry
//!    owning everything it has;
//! 6. for the manager `kubectl`, conflicts on fields whose live value still equals the
//!    `kubectl.kubernetes.io/last-applied-configuration` annotation are forced (the upgrade
//!    path from client-side apply), and that annotation, if present, is rewritten.
//!
//! Subresources get their own entries (`subresource: status`), and the strategy's reset
//! fields are never owned.

use serde_json::{Map, Value};

use super::error::{Conflict, PatchError};
use super::fieldpath::{FieldSet, path_string};
use super::managed_fields::{
    self, BEFORE_FIRST_APPLY, ManagerEntry, ManagerId, Managers, Operation, Writer,
    field_paths_set, strip_set, update_managers, without_managed_fields,
};
use super::typed;
use super::typeinfo::{ObjectType, TypeRef};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// kube's limit on the total size of an object's annotations.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// What [`apply`] needs to know about the request.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions<'a> {
    /// The `fieldManager` query parameter (required for apply; the REST layer checks it).
    pub manager: &'a str,
    /// The `group/version` (or `v1`) of the URL; the applied object must use it.
    pub api_version: &'a str,
    /// The `force` query parameter.
    pub force: bool,
    /// `Some("status")` for applies to the status subresource.
    pub subresource: Option<&'a str>,
    /// Fields the write does not own (see
    /// [`default_reset_fields`](super::managed_fields::default_reset_fields)).
    pub reset_fields: &'a [&'a [&'a str]],
    /// The current time, RFC 3339 in UTC with seconds (`2026-01-02T03:04:05Z`).
    pub now: &'a str,
}

/// Applies `applied` (the parsed body) to `live` (`None` creates the object) and returns the
/// new object with its `metadata.managedFields`. When nothing changes, the result equals
/// `live` (managedFields may still change, e.g. a new co-owner without a timestamp).
///
/// The caller still checks kind, name and namespace against the URL, runs defaulting,
/// validation and the status/spec split of the strategy, and stores the result.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    types: &ObjectType,
    opts: &ApplyOptions<'_>,
) -> Result<Value, PatchError> {
    let Value::Object(applied_map) = applied else {
        return Err(PatchError::BadRequest(
            "the applied configuration must be a JSON object".to_string(),
        ));
    };
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(Value::is_array)
    {
        return Err(PatchError::BadRequest(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    let patch_version = applied_map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if patch_version != opts.api_version {
        return Err(PatchError::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {patch_version}, expected: {}",
            opts.api_version
        )));
    }
    let empty = Value::Object(Map::new());
    let live = live.unwrap_or(&empty);
    let mut managers = managed_fields::decode(live)
        .map_err(|e| PatchError::BadRequest(format!("failed to decode managed fields: {e}")))?;
    let live_plain = without_managed_fields(live);
    let ty = types.root();
    let ignored = field_paths_set(opts.reset_fields);

    if managers.is_empty() {
        // Attribute what the object already has before anyone applied.
        let id = ManagerId::new(
            BEFORE_FIRST_APPLY,
            Operation::Update,
            opts.api_version,
            opts.subresource,
        );
        let writer = Writer {
            id: &id,
            api_version: opts.api_version,
            ignored: &ignored,
            now: opts.now,
        };
        managers = update_managers(&empty, &live_plain, managers, &writer, ty).map_err(|e| {
            PatchError::BadRequest(format!("failed to create manager for existing fields: {e}"))
        })?;
    }

    let applier = ManagerId::new(
        opts.manager,
        Operation::Apply,
        opts.api_version,
        opts.subresource,
    );
    let run = |force: bool| {
        apply_once(
            &live_plain,
            applied,
            managers.clone(),
            &applier,
            opts,
            &ignored,
            ty,
            force,
        )
    };
    let (mut object, managers) = match run(opts.force) {
        Err(ApplyFailure::Conflicts(conflicts)) if opts.manager == "kubectl" => {
            let allowed = allowed_conflicts_from_last_applied(&live_plain, opts.api_version, ty);
            let remaining: Vec<Conflict> = conflicts
                .iter()
                .filter(|(path, _)| !allowed.as_ref().is_some_and(|a| a.has(path)))
                .map(|(_, c)| c.clone())
                .collect();
            if allowed.is_none() || !remaining.is_empty() {
                let all: Vec<Conflict> = if allowed.is_none() {
                    conflicts.into_iter().map(|(_, c)| c).collect()
                } else {
                    remaining
                };
                return Err(PatchError::Conflicts(all));
            }
            run(true).map_err(ApplyFailure::into_error)?
        }
        other => other.map_err(ApplyFailure::into_error)?,
    };
    if opts.manager == "kubectl" {
        update_last_applied(&mut object, applied);
    }
    managed_fields::store(&mut object, &managers);
    Ok(object)
}

/// Why one apply attempt failed: conflicts (with their paths, for the last-applied check) or
/// anything else.
enum ApplyFailure {
    Conflicts(Vec<(crate::fieldpath::Path, Conflict)>),
    Other(PatchError),
}

impl ApplyFailure {
    fn into_error(self) -> PatchError {
        match self {
            ApplyFailure::Conflicts(c) => {
                PatchError::Conflicts(c.into_iter().map(|(_, c)| c).collect())
            }
            ApplyFailure::Other(e) => e,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn apply_once(
    live: &Value,
    applied: &Value,
    mut managers: Managers,
    applier: &ManagerId,
    opts: &ApplyOptions<'_>,
    ignored: &FieldSet,
    ty: TypeRef<'_>,
    force: bool,
) -> Result<(Value, Managers), ApplyFailure> {
    let bad = |e: String| ApplyFailure::Other(PatchError::BadRequest(e));
    let config_set = typed::to_field_set(applied, ty, false)
        .map_err(|e| bad(format!("failed to create typed patch object: {e}")))?
        .recursive_difference(ignored);
    let merged =
        typed::merge(live, applied, ty).map_err(|e| bad(format!("failed to merge config: {e}")))?;
    let previous = managers.remove(applier);
    managers.insert(
        applier.clone(),
        ManagerEntry {
            set: config_set,
            api_version: opts.api_version.to_string(),
            time: previous.as_ref().and_then(|p| p.time.clone()),
        },
    );
    let merged = match previous.as_ref().map(|p| &p.set).filter(|s| !s.is_empty()) {
        Some(last) => prune(&merged, &managers, last, ty),
        None => merged,
    };

    let cmp = typed::compare(live, &merged, ty)
        .map_err(|e| bad(format!("failed to compare objects: {e}")))?
        .excluding(ignored);
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts = Vec::new();
    for (id, entry) in managers.iter().filter(|(id, _)| *id != applier) {
        for path in entry.set.intersection(&changed).paths() {
            let field = path_string(&path);
            conflicts.push((
                path,
                Conflict {
                    manager: id.printed(),
                    field,
                },
            ));
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(ApplyFailure::Conflicts(conflicts));
    }
    for (id, entry) in managers.iter_mut() {
        if id != applier {
            entry.set = entry.set.difference(&changed).difference(&cmp.removed);
        }
    }
    managers.retain(|_, e| !e.set.is_empty());

    let object_changed = !cmp.is_same() || merged != *live;
    let object = if object_changed { merged } else { live.clone() };
    if let Some(entry) = managers.get_mut(applier) {
        entry.set = entry.set.difference(&strip_set());
        if object_changed {
            entry.time = Some(opts.now.to_string());
        }
    }
    managers.retain(|_, e| !e.set.is_empty());
    Ok((object, managers))
}

/// Removes what the applier owned last time (`last`) and nobody owns now.
fn prune(merged: &Value, managers: &Managers, last: &FieldSet, ty: TypeRef<'_>) -> Value {
    let owned = managers.values().fold(FieldSet::default(), |mut acc, e| {
        acc.union_in_place(&e.set);
        acc
    });
    let to_remove = typed::ensure_named_fields_are_members(last, ty)
        .difference(&typed::ensure_named_fields_are_members(&owned, ty));
    if to_remove.is_empty() {
        return merged.clone();
    }
    typed::remove_items(merged, &to_remove, ty)
}

/// The fields of the last-applied annotation whose live value still equals it: kubectl may
/// take them over from its client-side apply without a conflict. `None` when there is no
/// usable annotation.
fn allowed_conflicts_from_last_applied(
    live: &Value,
    api_version: &str,
    ty: TypeRef<'_>,
) -> Option<FieldSet> {
    let text = live
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()?;
    if text.is_empty() {
        return None;
    }
    let last: Value = serde_json::from_str(text).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let set = typed::to_field_set(&last, ty, false).ok()?;
    let cmp = typed::compare(&last, live, ty).ok()?;
    Some(
        set.difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// kubectl's last-applied annotation, rewritten to the applied configuration when present.
fn update_last_applied(object: &mut Value, applied: &Value) {
    let has = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !has {
        return;
    }
    let mut config = applied.clone();
    if let Some(Value::Object(ann)) = config.pointer_mut("/metadata/annotations") {
        ann.shift_remove(LAST_APPLIED);
    }
    let mut text = String::new();
    crate::fieldpath::go_json(&mut text, &config);
    let Some(Value::Object(ann)) = object.pointer_mut("/metadata/annotations") else {
        return;
    };
    ann.insert(LAST_APPLIED.to_string(), Value::String(text));
    let size: usize = ann
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        ann.shift_remove(LAST_APPLIED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2026-01-02T03:04:05Z";
    const T1: &str = "2026-01-02T03:05:00Z";
    const T2: &str = "2026-01-02T03:06:00Z";

    fn deploy_type() -> ObjectType {
        match ObjectType::builtin("apps", "Deployment") {
            Some(t) => t,
            None => panic!("Deployment is built in"),
        }
    }

    fn opts<'a>(manager: &'a str, force: bool, now: &'a str) -> ApplyOptions<'a> {
        ApplyOptions {
            manager,
            api_version: "apps/v1",
            force,
            subresource: None,
            reset_fields: &[&["status"]],
            now,
        }
    }

    fn deployment(spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": spec})
    }

    fn ok(r: Result<Value, PatchError>) -> Value {
        match r {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn entry<'v>(obj: &'v Value, manager: &str) -> Option<&'v Value> {
        obj["metadata"]["managedFields"]
            .as_array()?
            .iter()
            .find(|e| e["manager"] == json!(manager))
    }

    #[test]
    fn apply_creates_the_object_with_an_apply_entry() {
        let t = deploy_type();
        let config = deployment(json!({"replicas": 2}));
        let obj = ok(apply(None, &config, &t, &opts("mgr", false, T0)));
        assert_eq!(obj["spec"]["replicas"], json!(2));
        assert_eq!(
            obj["metadata"]["managedFields"],
            json!([{
                "manager": "mgr", "operation": "Apply", "apiVersion": "apps/v1", "time": T0,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}
            }])
        );
    }

    #[test]
    fn the_same_apply_twice_is_a_no_op() {
        let t = deploy_type();
        let config = deployment(
            json!({"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}),
        );
        let once = ok(apply(None, &config, &t, &opts("mgr", false, T0)));
        let twice = ok(apply(Some(&once), &config, &t, &opts("mgr", false, T1)));
        assert_eq!(once, twice);
    }

    #[test]
    fn conflict_on_spec_replicas_between_two_managers() {
        let t = deploy_type();
        let first = ok(apply(
            None,
            &deployment(json!({"replicas": 2})),
            &t,
            &opts("alice", false, T0),
        ));
        let err = apply(
            Some(&first),
            &deployment(json!({"replicas": 3})),
            &t,
            &opts("bob", false, T1),
        );
        match err {
            Err(e @ PatchError::Conflicts(_)) => {
                assert_eq!(e.status_code(), 409);
                assert_eq!(
                    e.message(),
                    "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
                );
                assert_eq!(e.causes()[0].field, ".spec.replicas");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn same_value_is_shared_ownership_not_a_conflict() {
        let t = deploy_type();
        let first = ok(apply(
            None,
            &deployment(json!({"replicas": 2})),
            &t,
            &opts("alice", false, T0),
        ));
        let second = ok(apply(
            Some(&first),
            &deployment(json!({"replicas": 2})),
            &t,
            &opts("bob", false, T1),
        ));
        assert_eq!(
            entry(&second, "alice").map(|e| &e["fieldsV1"]),
            Some(&json!({"f:spec": {"f:replicas": {}}}))
        );
        let bob = entry(&second, "bob").cloned().unwrap_or_default();
        assert_eq!(bob["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        assert!(
            bob.get("time").is_none(),
            "no change, so no timestamp: {bob}"
        );
    }

    #[test]
    fn force_transfers_ownership() {
        let t = deploy_type();
        let first = ok(apply(
            None,
            &deployment(json!({"replicas": 2, "paused": true})),
            &t,
            &opts("alice", false, T0),
        ));
        let forced = ok(apply(
            Some(&first),
            &deployment(json!({"replicas": 3})),
            &t,
            &opts("bob", true, T1),
        ));
        assert_eq!(forced["spec"]["replicas"], json!(3));
        assert_eq!(
            entry(&forced, "alice").map(|e| &e["fieldsV1"]),
            Some(&json!({"f:spec": {"f:paused": {}}}))
        );
        assert_eq!(
            entry(&forced, "bob").map(|e| &e["fieldsV1"]),
            Some(&json!({"f:spec": {"f:replicas": {}}}))
        );
    }

    #[test]
    fn removal_of_a_field_the_applier_stopped_sending() {
        let t = deploy_type();
        let first = ok(apply(
            None,
            &deployment(json!({"replicas": 2, "paused": true})),
            &t,
            &opts("alice", false, T0),
        ));
        let second = ok(apply(
            Some(&first),
            &deployment(json!({"replicas": 2})),
            &t,
            &opts("alice", false, T1),
        ));
        assert_eq!(second["spec"], json!({"replicas": 2}));
        assert_eq!(
            entry(&second, "alice").map(|e| &e["fieldsV1"]),
            Some(&json!({"f:spec": {"f:replicas": {}}}))
        );
        assert_eq!(
            entry(&second, "alice").map(|e| &e["time"]),
            Some(&json!(T1))
        );
    }

    #[test]
    fn a_field_another_manager_owns_is_kept_when_the_applier_drops_it() {
        let t = deploy_type();
        let a = ok(apply(
            None,
            &deployment(json!({"replicas": 2, "paused": true})),
            &t,
            &opts("alice", false, T0),
        ));
        let b = ok(apply(
            Some(&a),
            &deployment(json!({"paused": true})),
            &t,
            &opts("bob", false, T1),
        ));
        let c = ok(apply(
            Some(&b),
            &deployment(json!({"replicas": 2})),
            &t,
            &opts("alice", false, T2),
        ));
        assert_eq!(c["spec"], json!({"replicas": 2, "paused": true}));
    }

    #[test]
    fn containers_merge_by_name_and_dropped_containers_go() {
        let t = deploy_type();
        let two = deployment(json!({"template": {"spec": {"containers": [
            {"name": "a", "image": "a"}, {"name": "b", "image": "b"}]}}}));
        let one = deployment(
            json!({"template": {"spec": {"containers": [{"name": "a", "image": "a2"}]}}}),
        );
        let first = ok(apply(None, &two, &t, &opts("m", false, T0)));
        let second = ok(apply(Some(&first), &one, &t, &opts("m", false, T1)));
        assert_eq!(
            second["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "a2"}])
        );
    }

    #[test]
    fn an_update_manager_owning_a_field_conflicts_with_its_version() {
        let t = deploy_type();
        let live = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "managedFields": [{
                "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {"replicas": 1}
        });
        let err = apply(
            Some(&live),
            &deployment(json!({"replicas": 3})),
            &t,
            &opts("other", false, T1),
        );
        assert_eq!(
            err.err().map(|e| e.message()),
            Some("Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas".to_string())
        );
    }

    #[test]
    fn objects_without_managed_fields_get_before_first_apply() {
        let t = deploy_type();
        let live = deployment(json!({"replicas": 1, "paused": false}));
        let err = apply(
            Some(&live),
            &deployment(json!({"replicas": 3})),
            &t,
            &opts("m", false, T1),
        );
        assert_eq!(
            err.err().map(|e| e.message()),
            Some("Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas".to_string())
        );
        let same = ok(apply(
            Some(&live),
            &deployment(json!({"replicas": 1})),
            &t,
            &opts("m", false, T1),
        ));
        assert!(entry(&same, "before-first-apply").is_some());
    }

    #[test]
    fn kubectl_takes_over_fields_matching_last_applied() {
        let t = deploy_type();
        let last = deployment(json!({"replicas": 1}));
        let live = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns",
                "annotations": {LAST_APPLIED: last.to_string()},
                "managedFields": [{
                "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {"replicas": 1}
        });
        let config = deployment(json!({"replicas": 4}));
        let got = ok(apply(Some(&live), &config, &t, &opts("kubectl", false, T1)));
        assert_eq!(got["spec"]["replicas"], json!(4));
        assert!(entry(&got, "kubectl-client-side-apply").is_none());
        let ann = got["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap_or("");
        let parsed: Value = serde_json::from_str(ann).unwrap_or_default();
        assert_eq!(parsed["spec"]["replicas"], json!(4));
        // Another manager gets the conflict.
        let err = apply(Some(&live), &config, &t, &opts("someone", false, T1));
        assert!(matches!(err, Err(PatchError::Conflicts(_))));
    }

    #[test]
    fn status_is_not_owned_by_main_resource_applies() {
        let t = deploy_type();
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 1}, "status": {"replicas": 7}});
        let obj = ok(apply(None, &config, &t, &opts("m", false, T0)));
        assert_eq!(
            entry(&obj, "m").map(|e| &e["fieldsV1"]),
            Some(&json!({"f:spec": {"f:replicas": {}}}))
        );
        let status_opts = ApplyOptions {
            subresource: Some("status"),
            reset_fields: &[&["spec"]],
            ..opts("ctrl", false, T1)
        };
        let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "status": {"replicas": 1}});
        let obj = ok(apply(Some(&obj), &status, &t, &status_opts));
        let ctrl = obj["metadata"]["managedFields"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["manager"] == json!("ctrl")))
            .cloned()
            .unwrap_or_default();
        assert_eq!(ctrl["subresource"], json!("status"));
        assert_eq!(ctrl["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
    }

    #[test]
    fn bad_apply_bodies() {
        let t = deploy_type();
        let cases: Vec<(&str, Value, &str)> = vec![
            (
                "managedFields in the body",
                json!({"apiVersion": "apps/v1", "metadata": {"managedFields": []}}),
                "metadata.managedFields must be nil",
            ),
            (
                "another version",
                json!({"apiVersion": "apps/v1beta1"}),
                "Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, expected: apps/v1",
            ),
            (
                "duplicate list keys",
                deployment(
                    json!({"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}),
                ),
                "duplicate entries for key [name=\"a\"]",
            ),
            (
                "a keyed item without its key",
                deployment(json!({"template": {"spec": {"containers": [{"image": "a"}]}}})),
                "omits all key fields",
            ),
        ];
        for (name, body, want) in cases {
            match apply(None, &body, &t, &opts("m", false, T0)) {
                Err(e) => {
                    assert_eq!(e.status_code(), 400, "{name}");
                    assert!(e.message().contains(want), "{name}: {}", e.message());
                }
                Ok(v) => panic!("{name}: {v}"),
            }
        }
    }

    #[test]
    fn crd_lists_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}}
        }}}});
        let t = ObjectType::from_crd_schema(&schema);
        let o = |m| ApplyOptions {
            manager: m,
            api_version: "example.com/v1",
            force: false,
            subresource: None,
            reset_fields: &[],
            now: T0,
        };
        let cr = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "w"}, "spec": spec});
        let a = ok(apply(
            None,
            &cr(json!({"items": [{"name": "x", "v": 1}], "tags": ["a"], "args": ["1"]})),
            &t,
            &o("a"),
        ));
        let b = ok(apply(
            Some(&a),
            &cr(json!({"items": [{"name": "y", "v": 2}], "tags": ["b"]})),
            &t,
            &o("b"),
        ));
        assert_eq!(
            b["spec"]["items"],
            json!([{"name": "x", "v": 1}, {"name": "y", "v": 2}])
        );
        assert_eq!(b["spec"]["tags"], json!(["a", "b"]));
        let err = apply(Some(&b), &cr(json!({"args": ["2"]})), &t, &o("b"));
        assert_eq!(
            err.err().map(|e| e.message()),
            Some("Apply failed with 1 conflict: conflict with \"a\": .spec.args".to_string())
        );
        assert_eq!(
            entry(&b, "b").map(|e| &e["fieldsV1"]),
            Some(
                &json!({"f:spec": {"f:items": {"k:{\"name\":\"y\"}": {".": {}, "f:name": {}, "f:v": {}}}, "f:tags": {"v:\"b\"": {}}}})
            )
        );
    }

    fn keyed_list_type() -> ObjectType {
        ObjectType::from_crd_schema(&json!({"type": "object", "properties": {"list": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "integer"}}}
        }}}))
    }

    fn list_apply(live: Option<&Value>, manager: &str, list: Value) -> Result<Value, PatchError> {
        let o = ApplyOptions {
            manager,
            api_version: "v1",
            force: false,
            subresource: None,
            reset_fields: &[],
            now: T0,
        };
        apply(
            live,
            &json!({"apiVersion": "v1", "kind": "L", "list": list}),
            &keyed_list_type(),
            &o,
        )
    }

    fn owned(obj: &Value, manager: &str) -> Value {
        entry(obj, manager)
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    }

    #[test]
    fn multiple_appliers_on_a_keyed_list() {
        // One applier drops items another applier never owned; the other's items stay.
        let one = ok(list_apply(
            None,
            "apply-one",
            json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]),
        ));
        let two = ok(list_apply(
            Some(&one),
            "apply-two",
            json!([{"name": "c"}, {"name": "d"}]),
        ));
        let three = ok(list_apply(Some(&two), "apply-one", json!([{"name": "a"}])));
        assert_eq!(
            three["list"],
            json!([{"name": "a"}, {"name": "c"}, {"name": "d"}])
        );
        assert_eq!(
            owned(&three, "apply-one"),
            json!({"f:list": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}})
        );
        assert_eq!(
            owned(&three, "apply-two"),
            json!({"f:list": {
                "k:{\"name\":\"c\"}": {".": {}, "f:name": {}},
                "k:{\"name\":\"d\"}": {".": {}, "f:name": {}}
            }})
        );
    }

    #[test]
    fn same_item_value_is_shared_and_a_different_one_conflicts() {
        let one = ok(list_apply(
            None,
            "apply-one",
            json!([{"name": "a", "value": 0}]),
        ));
        let same = ok(list_apply(
            Some(&one),
            "apply-two",
            json!([{"name": "a", "value": 0}]),
        ));
        assert_eq!(owned(&same, "apply-one"), owned(&same, "apply-two"));
        let err = list_apply(Some(&one), "apply-two", json!([{"name": "a", "value": 1}]));
        assert_eq!(
            err.err().map(|e| e.message()),
            Some("Apply failed with 1 conflict: conflict with \"apply-one\": .list[name=\"a\"].value".to_string())
        );
    }
}

//! The checks and defaults upstream OCM runs in its registration admission webhooks, as pure
//! functions over JSON objects, so any API server can call them from an admission hook.
//!
//! ManagedCluster (create and update):
//! - `metadata.name` must be a DNS-1123 label (it names the cluster namespace);
//! - every `spec.managedClusterClientConfigs[].url` must be an https URL;
//! - taints: on create every taint's `timeAdded` is stamped with the current time (values sent
//!   by the client are ignored); on update a new or changed taint must come without
//!   `timeAdded` and gets it stamped, an unchanged taint must keep its `timeAdded`;
//! - with the default cluster sets enabled, a cluster without a (non-empty)
//!   `cluster.open-cluster-management.io/clusterset` label is put into `default`;
//! - setting `hubAcceptsClient` to true on create, or changing it on update, needs `update`
//!   on `register.open-cluster-management.io` `managedclusters/accept` for the cluster;
//!   accepting is refused while the cluster namespace is terminating;
//! - changing the cluster set label needs `create` on `managedclustersets/join` for the old
//!   and the new set;
//! - adding, changing or removing a hub-managed taint (`cluster.open-cluster-management.io/
//!   unavailable` / `unreachable`) on update needs the same `managedclusters/accept` right as
//!   accepting (an ocm-rs rule: only the hub sets those taints, so an agent cannot make its
//!   unhealthy cluster selectable again).
//!
//! The policy comes in the two halves a webhook server serves: [`mutate_managed_cluster`]
//! (taint times, default set) and [`validate_managed_cluster`] (everything else, over the
//! mutated object); [`admit_managed_cluster`] runs both, as an in-process hook does.
//!
//! ManagedClusterSetBinding: the name must equal `spec.clusterSet`; creating one needs
//! `create` on `managedclustersets/bind` for that set.
//!
//! Refusals carry the HTTP code and wording of upstream's webhooks: malformed objects are 400
//! Bad Request, missing permissions 403 Forbidden.

use jiff::Timestamp;
use ocm_api::cluster::GROUP as CLUSTER_GROUP;
use ocm_api::cluster::names::labels::CLUSTER_SET;
use ocm_api::cluster::names::taints::{
    UNAVAILABLE as HUB_TAINT_UNAVAILABLE, UNREACHABLE as HUB_TAINT_UNREACHABLE,
};
use ocm_api::cluster::names::{
    DEFAULT_CLUSTER_SET, REGISTER_GROUP, SUBRESOURCE_ACCEPT, SUBRESOURCE_CLUSTER_SET_BIND,
    SUBRESOURCE_CLUSTER_SET_JOIN,
};
use serde_json::{Value, json};

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Create.
    Create,
    /// Update (any write of an existing object, including patches and apply).
    Update,
    /// Delete.
    Delete,
}

/// An access check the policy needs answered for the requester (a SubjectAccessReview).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessCheck<'a> {
    /// Verb, e.g. `update` or `create`.
    pub verb: &'a str,
    /// API group.
    pub group: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, e.g. `accept`, `join`, `bind`.
    pub subresource: &'a str,
    /// Object name.
    pub name: &'a str,
}

/// What the policies look at.
pub struct AdmissionInput<'a> {
    /// The operation.
    pub operation: Operation,
    /// The object as it would be stored (absent on delete).
    pub object: Option<&'a Value>,
    /// The object before the request (absent on create).
    pub old_object: Option<&'a Value>,
    /// The requester's user name (for messages).
    pub user: &'a str,
    /// The time stamped into new taints.
    pub now: Timestamp,
    /// Whether clusters without a cluster set label are put into `default` (upstream's
    /// DefaultClusterSet feature gate).
    pub default_cluster_set: bool,
    /// Whether the namespace named like the cluster is terminating (accepting is refused).
    pub cluster_namespace_terminating: bool,
    /// Answers access checks for the requester.
    pub authorize: &'a (dyn Fn(&AccessCheck<'_>) -> bool + Sync),
}

impl std::fmt::Debug for AdmissionInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionInput")
            .field("operation", &self.operation)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AdmissionDenial {
    /// HTTP status: 400 (malformed object) or 403 (missing permission).
    pub code: u16,
    /// For 403: the resource the refusal names (`plural/subresource` in group
    /// `cluster.open-cluster-management.io`), e.g. `managedclusters/accept`.
    pub resource: Option<String>,
    /// For 403: the object name the refusal names.
    pub name: Option<String>,
    /// The reason in words.
    pub message: String,
}

impl AdmissionDenial {
    fn bad_request(message: impl Into<String>) -> AdmissionDenial {
        AdmissionDenial {
            code: 400,
            resource: None,
            name: None,
            message: message.into(),
        }
    }

    fn forbidden(resource: &str, name: &str, message: String) -> AdmissionDenial {
        AdmissionDenial {
            code: 403,
            resource: Some(resource.to_owned()),
            name: Some(name.to_owned()),
            message,
        }
    }
}

/// Admits a ManagedCluster write as the mutating and then the validating webhook would:
/// [`mutate_managed_cluster`], then [`validate_managed_cluster`] on the result.
/// `Ok(Some(object))` is the object to store instead (taint times stamped, default cluster set
/// label added); `Ok(None)` lets it through unchanged.
pub fn admit_managed_cluster(input: &AdmissionInput<'_>) -> Result<Option<Value>, AdmissionDenial> {
    let mutated = mutate_managed_cluster(input)?;
    let validated = AdmissionInput {
        object: mutated.as_ref().or(input.object),
        ..*input
    };
    validate_managed_cluster(&validated)?;
    Ok(mutated)
}

/// The mutating half of the ManagedCluster policy: stamps taint times (refusing times a client
/// sets on new or changed taints of an update) and puts a cluster without a cluster set label
/// into `default`. `Ok(Some(object))` when something changed.
pub fn mutate_managed_cluster(
    input: &AdmissionInput<'_>,
) -> Result<Option<Value>, AdmissionDenial> {
    let Some(object) = input.object else {
        return Ok(None);
    };
    if input.operation == Operation::Delete {
        return Ok(None);
    }
    let old = match input.operation {
        Operation::Update => input.old_object,
        _ => None,
    };
    let mut mutated = object.clone();
    stamp_taints(&mut mutated, old, input.now)?;
    if input.default_cluster_set {
        add_default_cluster_set_label(&mut mutated);
    }
    Ok((mutated != *object).then_some(mutated))
}

/// The validating half of the ManagedCluster policy, over the object as the mutating half left
/// it: name and client URLs, who may accept, who may move the cluster between sets, and who may
/// change the hub-managed taints.
pub fn validate_managed_cluster(input: &AdmissionInput<'_>) -> Result<(), AdmissionDenial> {
    let Some(object) = input.object else {
        return Ok(());
    };
    if input.operation == Operation::Delete {
        return Ok(());
    }
    let old = match input.operation {
        Operation::Update => input.old_object,
        _ => None,
    };
    validate_cluster(object)?;
    let name = meta_name(object);
    let accepts = |v: &Value| {
        v.pointer("/spec/hubAcceptsClient")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let accept_resource = format!("managedclusters/{}", subresource(SUBRESOURCE_ACCEPT));
    let may_accept = || {
        (input.authorize)(&AccessCheck {
            verb: "update",
            group: REGISTER_GROUP,
            resource: "managedclusters",
            subresource: subresource(SUBRESOURCE_ACCEPT),
            name,
        })
    };
    let newly_accepted = accepts(object) && !old.is_some_and(accepts);
    let acceptance_changed = match old {
        Some(old) => accepts(old) != accepts(object),
        None => accepts(object),
    };
    if newly_accepted && input.cluster_namespace_terminating {
        return Err(AdmissionDenial::forbidden(
            &accept_resource,
            name,
            format!("cluster namespace \"{name}\" is terminating"),
        ));
    }
    if acceptance_changed && !may_accept() {
        return Err(AdmissionDenial::forbidden(
            &accept_resource,
            name,
            format!(
                "user \"{}\" cannot update the HubAcceptsClient field",
                input.user
            ),
        ));
    }
    if let Some(old) = old
        && let Some(key) = changed_hub_taint(old, object)
        && !may_accept()
    {
        return Err(AdmissionDenial::forbidden(
            &accept_resource,
            name,
            format!(
                "user \"{}\" cannot add, change or remove the hub-managed taint \"{key}\"",
                input.user
            ),
        ));
    }
    let old_set = old.map(cluster_set_label).unwrap_or_default();
    let new_set = cluster_set_label(object);
    if old_set != new_set {
        for set in [old_set.as_str(), new_set.as_str()] {
            if set.is_empty() {
                continue;
            }
            let allowed = (input.authorize)(&AccessCheck {
                verb: "create",
                group: CLUSTER_GROUP,
                resource: "managedclustersets",
                subresource: subresource(SUBRESOURCE_CLUSTER_SET_JOIN),
                name: set,
            });
            if !allowed {
                return Err(AdmissionDenial::forbidden(
                    SUBRESOURCE_CLUSTER_SET_JOIN,
                    set,
                    format!(
                        "user \"{}\" cannot add/remove a ManagedCluster to/from ManagedClusterSet \"{set}\"",
                        input.user
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The first hub-managed taint (`unavailable`, `unreachable`) that an update adds, removes or
/// changes (key, value or effect; times are the mutating half's business).
fn changed_hub_taint(old: &Value, new: &Value) -> Option<&'static str> {
    let find = |obj: &Value, key: &str| -> Option<(Value, Value)> {
        obj.pointer("/spec/taints")
            .and_then(Value::as_array)?
            .iter()
            .find(|t| t.get("key").and_then(Value::as_str) == Some(key))
            .map(|t| {
                (
                    t.get("value").cloned().unwrap_or(Value::Null),
                    t.get("effect").cloned().unwrap_or(Value::Null),
                )
            })
    };
    [HUB_TAINT_UNAVAILABLE, HUB_TAINT_UNREACHABLE]
        .into_iter()
        .find(|key| find(old, key) != find(new, key))
}

/// Admits a ManagedClusterSetBinding write. Never mutates.
pub fn admit_managed_cluster_set_binding(
    input: &AdmissionInput<'_>,
) -> Result<Option<Value>, AdmissionDenial> {
    let Some(object) = input.object else {
        return Ok(None);
    };
    if input.operation == Operation::Delete {
        return Ok(None);
    }
    let name = meta_name(object);
    let set = object
        .pointer("/spec/clusterSet")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != set {
        return Err(AdmissionDenial::bad_request(
            "The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet",
        ));
    }
    if input.operation == Operation::Create {
        let allowed = (input.authorize)(&AccessCheck {
            verb: "create",
            group: CLUSTER_GROUP,
            resource: "managedclustersets",
            subresource: subresource(SUBRESOURCE_CLUSTER_SET_BIND),
            name: set,
        });
        if !allowed {
            return Err(AdmissionDenial::forbidden(
                SUBRESOURCE_CLUSTER_SET_BIND,
                set,
                format!(
                    "user \"{}\" is not allowed to bind cluster set \"{set}\"",
                    input.user
                ),
            ));
        }
    }
    Ok(None)
}

/// `managedclusters/accept` → `accept`.
fn subresource(combined: &str) -> &str {
    combined.split_once('/').map_or(combined, |(_, sub)| sub)
}

fn meta_name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn cluster_set_label(obj: &Value) -> String {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(CLUSTER_SET))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// Puts a cluster without a (non-empty) cluster set label into `default`.
pub(crate) fn add_default_cluster_set_label(obj: &mut Value) {
    if !cluster_set_label(obj).is_empty() {
        return;
    }
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(CLUSTER_SET.to_owned(), json!(DEFAULT_CLUSTER_SET));
    }
}

/// kube's wording for an invalid DNS-1123 label, or `None` when `name` is one.
pub fn dns1123_label_error(name: &str) -> Option<String> {
    let mut problems = Vec::new();
    if name.len() > 63 {
        problems.push("must be no more than 63 characters".to_owned());
    }
    let bytes = name.as_bytes();
    let valid_chars = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    let ends_ok = bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
    if name.is_empty() || !valid_chars || !ends_ok {
        problems.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
             and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .to_owned(),
        );
    }
    (!problems.is_empty()).then(|| problems.join(","))
}

/// Whether `url` is an absolute https URL with a host.
fn is_https_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let host_port = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host_port.rsplit_once('@').map_or(host_port, |(_, h)| h);
    !host.is_empty() && !host.starts_with(':') && !host.contains(char::is_whitespace)
}

fn validate_cluster(obj: &Value) -> Result<(), AdmissionDenial> {
    let mut errors = Vec::new();
    if let Some(problem) = dns1123_label_error(meta_name(obj)) {
        errors.push(format!("metadata.name format is not correct: {problem}"));
    }
    let configs = obj
        .pointer("/spec/managedClusterClientConfigs")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for config in configs {
        let url = config.get("url").and_then(Value::as_str).unwrap_or("");
        if !is_https_url(url) {
            errors.push(format!("url \"{url}\" is invalid in client configs"));
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(AdmissionDenial::bad_request(errors.remove(0))),
        _ => Err(AdmissionDenial::bad_request(format!(
            "[{}]",
            errors.join(", ")
        ))),
    }
}

/// A taint's `timeAdded` as an instant (absent, null or unparsable → `None`).
fn time_added(taint: &Value) -> Option<Timestamp> {
    taint
        .get("timeAdded")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Timestamp>().ok())
}

fn has_time_added(taint: &Value) -> bool {
    taint.get("timeAdded").is_some_and(|v| !v.is_null())
}

/// The RFC 3339 form (whole seconds, UTC) kube uses for `metav1.Time`.
pub(crate) fn format_time(t: Timestamp) -> String {
    let secs = t.as_second();
    Timestamp::from_second(secs)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Stamps `timeAdded` on taints as upstream's mutating webhook does, refusing client-supplied
/// times on new, changed or unchanged-but-retimed taints of an update.
fn stamp_taints(
    obj: &mut Value,
    old: Option<&Value>,
    now: Timestamp,
) -> Result<(), AdmissionDenial> {
    let now = json!(format_time(now));
    let old_taints: Vec<Value> = old
        .and_then(|o| o.pointer("/spec/taints"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(taints) = obj
        .pointer_mut("/spec/taints")
        .and_then(Value::as_array_mut)
    else {
        return Ok(());
    };
    let mut invalid = Vec::new();
    for taint in taints.iter_mut() {
        let key = taint
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let Some(map) = taint.as_object_mut() else {
            continue;
        };
        if old.is_none() {
            map.insert("timeAdded".into(), now.clone());
            continue;
        }
        let original = old_taints
            .iter()
            .find(|t| t.get("key").and_then(Value::as_str) == Some(key.as_str()));
        let current = Value::Object(map.clone());
        match original {
            Some(orig)
                if orig.get("value").and_then(Value::as_str).unwrap_or("")
                    == current.get("value").and_then(Value::as_str).unwrap_or("")
                    && orig.get("effect") == current.get("effect") =>
            {
                let same = match (time_added(orig), time_added(&current)) {
                    (Some(a), Some(b)) => a == b,
                    _ => {
                        has_time_added(orig) == has_time_added(&current)
                            && orig.get("timeAdded") == current.get("timeAdded")
                    }
                };
                if !same {
                    invalid.push(key);
                }
            }
            _ => {
                if has_time_added(&current) {
                    invalid.push(key);
                    continue;
                }
                map.insert("timeAdded".into(), now.clone());
            }
        }
    }
    if invalid.is_empty() {
        Ok(())
    } else {
        Err(AdmissionDenial::bad_request(format!(
            "It is not allowed to set TimeAdded of Taint \"{}\".",
            invalid.join(",")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: &str = "2026-01-01T00:00:00Z";

    fn now() -> Timestamp {
        "2026-02-02T10:11:12.345Z".parse().unwrap()
    }

    fn input<'a>(
        op: Operation,
        obj: &'a Value,
        old: Option<&'a Value>,
        authorize: &'a (dyn Fn(&AccessCheck<'_>) -> bool + Sync),
    ) -> AdmissionInput<'a> {
        AdmissionInput {
            operation: op,
            object: Some(obj),
            old_object: old,
            user: "bob",
            now: now(),
            default_cluster_set: true,
            cluster_namespace_terminating: false,
            authorize,
        }
    }

    fn allow_all(_: &AccessCheck<'_>) -> bool {
        true
    }

    fn deny_all(_: &AccessCheck<'_>) -> bool {
        false
    }

    fn cluster(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": {CLUSTER_SET: "default"}}, "spec": spec})
    }

    #[test]
    fn names_must_be_dns_labels_and_urls_https() {
        let bad = cluster("Bad_Name", json!({}));
        let err =
            admit_managed_cluster(&input(Operation::Create, &bad, None, &allow_all)).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(
            err.message
                .starts_with("metadata.name format is not correct: a lowercase RFC 1123 label"),
            "{}",
            err.message
        );
        assert!(dns1123_label_error(&"a".repeat(64)).is_some());
        assert!(dns1123_label_error("-a").is_some());
        assert!(dns1123_label_error("cluster-1").is_none());

        let http = cluster(
            "c1",
            json!({"managedClusterClientConfigs": [{"url": "http://x:6443"}]}),
        );
        let err =
            admit_managed_cluster(&input(Operation::Create, &http, None, &allow_all)).unwrap_err();
        assert_eq!(
            err.message,
            "url \"http://x:6443\" is invalid in client configs"
        );
        let https = cluster(
            "c1",
            json!({"managedClusterClientConfigs": [{"url": "https://x:6443"}]}),
        );
        assert_eq!(
            admit_managed_cluster(&input(Operation::Create, &https, None, &allow_all)),
            Ok(None)
        );
        assert!(!is_https_url("https://"));
        assert!(!is_https_url("https://:443/x"));
    }

    #[test]
    fn taints_are_stamped_on_create_ignoring_client_times() {
        let c = cluster(
            "c1",
            json!({"taints": [
            {"key": "a", "effect": "NoSelect"},
            {"key": "b", "effect": "NoSelect", "timeAdded": T0}]}),
        );
        let out = admit_managed_cluster(&input(Operation::Create, &c, None, &allow_all))
            .unwrap()
            .unwrap();
        assert_eq!(
            out["spec"]["taints"][0]["timeAdded"],
            "2026-02-02T10:11:12Z"
        );
        assert_eq!(
            out["spec"]["taints"][1]["timeAdded"],
            "2026-02-02T10:11:12Z"
        );
    }

    #[test]
    fn taint_times_on_update_are_the_hubs() {
        let old = cluster(
            "c1",
            json!({"taints": [
            {"key": "a", "value": "1", "effect": "NoSelect", "timeAdded": T0}]}),
        );
        // Unchanged taint keeps its time; a new one without time is stamped.
        let new = cluster(
            "c1",
            json!({"taints": [
            {"key": "a", "value": "1", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00+00:00"},
            {"key": "b", "effect": "NoSelect"}]}),
        );
        let out = admit_managed_cluster(&input(Operation::Update, &new, Some(&old), &allow_all))
            .unwrap()
            .unwrap();
        assert_eq!(
            out["spec"]["taints"][1]["timeAdded"],
            "2026-02-02T10:11:12Z"
        );
        assert_eq!(
            out["spec"]["taints"][0]["timeAdded"],
            "2026-01-01T00:00:00+00:00"
        );
        // Changed value: restamped.
        let changed = cluster(
            "c1",
            json!({"taints": [{"key": "a", "value": "2", "effect": "NoSelect"}]}),
        );
        let out =
            admit_managed_cluster(&input(Operation::Update, &changed, Some(&old), &allow_all))
                .unwrap()
                .unwrap();
        assert_eq!(
            out["spec"]["taints"][0]["timeAdded"],
            "2026-02-02T10:11:12Z"
        );
        // Client-supplied times are refused: new taint, changed time, changed taint.
        for bad in [
            json!([{"key": "a", "value": "1", "effect": "NoSelect", "timeAdded": T0},
                   {"key": "b", "effect": "NoSelect", "timeAdded": T0}]),
            json!([{"key": "a", "value": "1", "effect": "NoSelect", "timeAdded": "2026-01-05T00:00:00Z"}]),
            json!([{"key": "a", "value": "1", "effect": "NoSelect"}]),
            json!([{"key": "a", "value": "2", "effect": "NoSelect", "timeAdded": T0}]),
        ] {
            let new = cluster("c1", json!({"taints": bad}));
            let err =
                admit_managed_cluster(&input(Operation::Update, &new, Some(&old), &allow_all))
                    .unwrap_err();
            assert_eq!(err.code, 400);
            assert!(
                err.message
                    .starts_with("It is not allowed to set TimeAdded of Taint"),
                "{}",
                err.message
            );
        }
        // Removing a taint is fine.
        let removed = cluster("c1", json!({"taints": []}));
        assert_eq!(
            admit_managed_cluster(&input(Operation::Update, &removed, Some(&old), &allow_all)),
            Ok(None)
        );
    }

    #[test]
    fn clusters_without_a_set_go_to_default_when_enabled() {
        let mut c = cluster("c1", json!({}));
        c["metadata"]["labels"] = json!({"x": "y"});
        let out = admit_managed_cluster(&input(Operation::Create, &c, None, &allow_all))
            .unwrap()
            .unwrap();
        assert_eq!(out["metadata"]["labels"][CLUSTER_SET], "default");
        assert_eq!(out["metadata"]["labels"]["x"], "y");
        let mut empty = cluster("c1", json!({}));
        empty["metadata"]["labels"][CLUSTER_SET] = json!("");
        let out = admit_managed_cluster(&input(Operation::Create, &empty, None, &allow_all))
            .unwrap()
            .unwrap();
        assert_eq!(out["metadata"]["labels"][CLUSTER_SET], "default");
        let mut disabled = input(Operation::Create, &c, None, &allow_all);
        disabled.default_cluster_set = false;
        assert_eq!(admit_managed_cluster(&disabled), Ok(None));
    }

    #[test]
    fn accepting_needs_the_accept_permission() {
        let seen = std::sync::Mutex::new(Vec::new());
        let only_join = |c: &AccessCheck<'_>| {
            seen.lock().unwrap().push(format!(
                "{} {}/{}/{} {}",
                c.verb, c.group, c.resource, c.subresource, c.name
            ));
            c.subresource == "join"
        };
        let accepted = cluster("c1", json!({"hubAcceptsClient": true}));
        let err = admit_managed_cluster(&input(Operation::Create, &accepted, None, &only_join))
            .unwrap_err();
        assert_eq!(err.code, 403);
        assert_eq!(err.resource.as_deref(), Some("managedclusters/accept"));
        assert_eq!(err.name.as_deref(), Some("c1"));
        assert_eq!(
            err.message,
            "user \"bob\" cannot update the HubAcceptsClient field"
        );
        assert_eq!(
            seen.lock().unwrap()[0],
            "update register.open-cluster-management.io/managedclusters/accept c1"
        );
        // Unchanged true on update needs nothing; false → true does.
        assert_eq!(
            admit_managed_cluster(&input(
                Operation::Update,
                &accepted,
                Some(&accepted),
                &deny_all
            )),
            Ok(None)
        );
        let pending = cluster("c1", json!({"hubAcceptsClient": false}));
        assert!(
            admit_managed_cluster(&input(
                Operation::Update,
                &accepted,
                Some(&pending),
                &only_join
            ))
            .is_err()
        );
        assert_eq!(
            admit_managed_cluster(&input(
                Operation::Update,
                &accepted,
                Some(&pending),
                &allow_all
            )),
            Ok(None)
        );
        // Denying (true → false) is a change of the field too: only an accepter may.
        assert_eq!(
            admit_managed_cluster(&input(
                Operation::Update,
                &pending,
                Some(&accepted),
                &deny_all
            ))
            .unwrap_err()
            .code,
            403
        );
        let mut terminating = input(Operation::Create, &accepted, None, &allow_all);
        terminating.cluster_namespace_terminating = true;
        assert_eq!(admit_managed_cluster(&terminating).unwrap_err().code, 403);
    }

    #[test]
    fn moving_between_sets_needs_join_on_both() {
        let asked = std::sync::Mutex::new(Vec::new());
        let only_dev = |c: &AccessCheck<'_>| {
            asked.lock().unwrap().push(c.name.to_owned());
            c.verb == "create"
                && c.resource == "managedclustersets"
                && c.subresource == "join"
                && c.name == "dev"
        };
        let in_default = cluster("c1", json!({}));
        let mut in_dev = cluster("c1", json!({}));
        in_dev["metadata"]["labels"][CLUSTER_SET] = json!("dev");
        // default → dev: needs join on default too.
        let err = admit_managed_cluster(&input(
            Operation::Update,
            &in_dev,
            Some(&in_default),
            &only_dev,
        ))
        .unwrap_err();
        assert_eq!(err.code, 403);
        assert_eq!(err.resource.as_deref(), Some("managedclustersets/join"));
        assert_eq!(err.name.as_deref(), Some("default"));
        assert_eq!(
            err.message,
            "user \"bob\" cannot add/remove a ManagedCluster to/from ManagedClusterSet \"default\""
        );
        // Creating in dev: join on dev only.
        assert_eq!(
            admit_managed_cluster(&input(Operation::Create, &in_dev, None, &only_dev)),
            Ok(None)
        );
        // Same set: no check at all.
        asked.lock().unwrap().clear();
        assert_eq!(
            admit_managed_cluster(&input(Operation::Update, &in_dev, Some(&in_dev), &only_dev)),
            Ok(None)
        );
        assert!(asked.lock().unwrap().is_empty());
        // Creating without a label defaults to `default`, which needs join on default.
        let mut bare = cluster("c2", json!({}));
        bare["metadata"]["labels"] = json!({});
        assert_eq!(
            admit_managed_cluster(&input(Operation::Create, &bare, None, &only_dev))
                .unwrap_err()
                .name
                .as_deref(),
            Some("default")
        );
    }

    #[test]
    fn bindings_need_matching_names_and_bind_permission() {
        let binding = |name: &str, set: &str| json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"clusterSet": set}});
        let wrong = binding("a", "b");
        let err =
            admit_managed_cluster_set_binding(&input(Operation::Create, &wrong, None, &allow_all))
                .unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet"
        );
        assert!(
            admit_managed_cluster_set_binding(&input(
                Operation::Update,
                &wrong,
                Some(&wrong),
                &allow_all
            ))
            .is_err()
        );
        let good = binding("dev", "dev");
        let err =
            admit_managed_cluster_set_binding(&input(Operation::Create, &good, None, &deny_all))
                .unwrap_err();
        assert_eq!(err.code, 403);
        assert_eq!(err.resource.as_deref(), Some("managedclustersets/bind"));
        assert_eq!(
            err.message,
            "user \"bob\" is not allowed to bind cluster set \"dev\""
        );
        assert_eq!(
            admit_managed_cluster_set_binding(&input(Operation::Create, &good, None, &allow_all)),
            Ok(None)
        );
        // Updates of a well-named binding need no bind permission (as upstream).
        assert_eq!(
            admit_managed_cluster_set_binding(&input(
                Operation::Update,
                &good,
                Some(&good),
                &deny_all
            )),
            Ok(None)
        );
    }
}

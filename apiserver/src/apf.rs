//! API Priority and Fairness classification, as kube-apiserver's APF filter does it: which
//! FlowSchema a request matches (the first by `matchingPrecedence`, then name, whose priority
//! level exists) and so which priority level it belongs to; the nominal concurrency limit of
//! every level (`ceil(600 × shares / Σ shares)`, kube's default 400 + 200 in-flight limits);
//! and a cache of the default cluster's configuration, rebuilt when a FlowSchema or
//! PriorityLevelConfiguration changes. Requests are classified (response headers, metrics),
//! not queued or rejected.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use ocm_apiserver_rbac::{Attributes, Identity, Target};
use ocm_apiserver_storage::{Bucket, Revision, Store};

/// kube-apiserver's server concurrency limit: `--max-requests-inflight` (400) plus
/// `--max-mutating-requests-inflight` (200).
const SERVER_CONCURRENCY: i64 = 600;
const FLOW_SCHEMAS: &str = "flowcontrol.apiserver.k8s.io/flowschemas";
const PRIORITY_LEVELS: &str = "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations";

/// A FlowSchema as the classifier uses it.
#[derive(Debug, Clone)]
struct Schema {
    name: String,
    uid: String,
    precedence: i64,
    level: String,
    rules: Vec<Value>,
}

/// A priority level: its name, uid and nominal concurrency shares.
#[derive(Debug, Clone)]
pub(crate) struct Level {
    /// The PriorityLevelConfiguration's name.
    pub name: String,
    uid: String,
    shares: i64,
}

/// Where a request was classified: the FlowSchema and priority level, by name and uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Flow {
    /// The FlowSchema's name.
    pub schema: String,
    /// The FlowSchema's uid (`X-Kubernetes-PF-FlowSchema-UID`).
    pub schema_uid: String,
    /// The priority level's name.
    pub level: String,
    /// The priority level's uid (`X-Kubernetes-PF-PriorityLevel-UID`).
    pub level_uid: String,
}

/// One cluster's APF configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Config {
    schemas: Vec<Schema>,
    levels: Vec<Level>,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// kube's list match: the list is exactly `["*"]`, or holds `value`.
fn listed(list: Option<&Value>, value: &str) -> bool {
    let items: Vec<&str> = list
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    items == ["*"] || items.contains(&value)
}

fn subject_matches(subject: &Value, user: &Identity) -> bool {
    match str_at(subject, "/kind") {
        "User" => {
            let name = str_at(subject, "/user/name");
            name == "*" || name == user.user
        }
        "Group" => {
            let name = str_at(subject, "/group/name");
            name == "*" || user.groups.iter().any(|g| g == name)
        }
        "ServiceAccount" => {
            let ns = str_at(subject, "/serviceAccount/namespace");
            let name = str_at(subject, "/serviceAccount/name");
            if name == "*" {
                user.user
                    .starts_with(&format!("system:serviceaccount:{ns}:"))
            } else {
                user.user == format!("system:serviceaccount:{ns}:{name}")
            }
        }
        _ => false,
    }
}

/// Whether a non-resource URL pattern matches `path`: `*`, the path itself, or a prefix
/// (`/healthz/*` and `/apis` both match below themselves).
fn url_matches(pattern: &str, path: &str) -> bool {
    if pattern == "*" || pattern == path {
        return true;
    }
    let mut prefix = pattern.strip_suffix('*').unwrap_or(pattern).to_owned();
    if !prefix.ends_with('/') {
        prefix.push('/');
    }
    path.starts_with(&prefix)
}

fn rule_matches(rule: &Value, user: &Identity, attrs: &Attributes) -> bool {
    let subjects = rule.get("subjects").and_then(Value::as_array);
    if !subjects.is_some_and(|s| s.iter().any(|s| subject_matches(s, user))) {
        return false;
    }
    let verb = attrs.verb.as_str();
    match &attrs.target {
        Target::Resource(r) => {
            let resource = if r.subresource.is_empty() {
                r.resource.clone()
            } else {
                format!("{}/{}", r.resource, r.subresource)
            };
            let rules = rule.get("resourceRules").and_then(Value::as_array);
            rules.is_some_and(|rules| {
                rules.iter().any(|rr| {
                    listed(rr.get("verbs"), verb)
                        && listed(rr.get("apiGroups"), &r.group)
                        && listed(rr.get("resources"), &resource)
                        && if r.namespace.is_empty() {
                            rr.get("clusterScope").and_then(Value::as_bool) == Some(true)
                        } else {
                            listed(rr.get("namespaces"), &r.namespace)
                        }
                })
            })
        }
        Target::NonResource { path } => {
            let rules = rule.get("nonResourceRules").and_then(Value::as_array);
            rules.is_some_and(|rules| {
                rules.iter().any(|nr| {
                    let urls = nr.get("nonResourceURLs").and_then(Value::as_array);
                    listed(nr.get("verbs"), verb)
                        && urls.is_some_and(|u| {
                            u.iter()
                                .filter_map(Value::as_str)
                                .any(|p| url_matches(p, path))
                        })
                })
            })
        }
    }
}

impl Config {
    /// The configuration of the stored FlowSchemas and PriorityLevelConfigurations.
    pub(crate) fn from_objects(schemas: &[Value], levels: &[Value]) -> Config {
        let levels: Vec<Level> = levels
            .iter()
            .map(|l| {
                let shares = match str_at(l, "/spec/type") {
                    "Exempt" => l
                        .pointer("/spec/exempt/nominalConcurrencyShares")
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                    _ => l
                        .pointer("/spec/limited/nominalConcurrencyShares")
                        .and_then(Value::as_i64)
                        .unwrap_or(30),
                };
                Level {
                    name: str_at(l, "/metadata/name").to_owned(),
                    uid: str_at(l, "/metadata/uid").to_owned(),
                    shares,
                }
            })
            .collect();
        let mut schemas: Vec<Schema> = schemas
            .iter()
            .map(|s| Schema {
                name: str_at(s, "/metadata/name").to_owned(),
                uid: str_at(s, "/metadata/uid").to_owned(),
                precedence: s
                    .pointer("/spec/matchingPrecedence")
                    .and_then(Value::as_i64)
                    .unwrap_or(1000),
                level: str_at(s, "/spec/priorityLevelConfiguration/name").to_owned(),
                rules: s
                    .pointer("/spec/rules")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            })
            // A FlowSchema whose priority level does not exist is passed over.
            .filter(|s| levels.iter().any(|l| l.name == s.level))
            .collect();
        schemas.sort_by(|a, b| (a.precedence, &a.name).cmp(&(b.precedence, &b.name)));
        Config { schemas, levels }
    }

    /// The FlowSchema and priority level of a request by `user` (after impersonation) with
    /// `attrs`; `None` when no FlowSchema matches (kube's mandatory `catch-all` always does).
    pub(crate) fn classify(&self, user: &Identity, attrs: &Attributes) -> Option<Flow> {
        let schema = self
            .schemas
            .iter()
            .find(|s| s.rules.iter().any(|r| rule_matches(r, user, attrs)))?;
        let level = self.levels.iter().find(|l| l.name == schema.level)?;
        Some(Flow {
            schema: schema.name.clone(),
            schema_uid: schema.uid.clone(),
            level: level.name.clone(),
            level_uid: level.uid.clone(),
        })
    }

    /// Every priority level with its nominal concurrency limit in seats.
    pub(crate) fn nominal_limits(&self) -> Vec<(String, i64)> {
        let sum: i64 = self.levels.iter().map(|l| l.shares).sum();
        self.levels
            .iter()
            .map(|l| {
                let seats = if sum == 0 {
                    0
                } else {
                    (SERVER_CONCURRENCY * l.shares + sum - 1) / sum
                };
                (l.name.clone(), seats)
            })
            .collect()
    }
}

/// One cluster's APF configuration (the server classifies the default cluster's requests),
/// rebuilt when its FlowSchemas or priority levels change.
#[derive(Default)]
pub(crate) struct ApfCache {
    current: Mutex<Option<Cached>>,
}

/// A cluster's configuration and the revisions of its two buckets it was read at.
struct Cached {
    cluster: String,
    revisions: [Revision; 2],
    config: Arc<Config>,
}

impl std::fmt::Debug for ApfCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApfCache").finish_non_exhaustive()
    }
}

fn read(store: &Store, bucket: &Bucket) -> Vec<Value> {
    let (_, items) = store.list(bucket, None, None);
    items
        .into_iter()
        .filter_map(|(_, _, o)| serde_json::from_slice(&o.value).ok())
        .collect()
}

impl ApfCache {
    /// The configuration of `cluster` as stored now (kept for the last cluster asked about).
    pub(crate) fn get(&self, store: &Store, cluster: &str) -> Arc<Config> {
        let buckets = [
            Bucket::new(cluster, FLOW_SCHEMAS),
            Bucket::new(cluster, PRIORITY_LEVELS),
        ];
        let revisions = [
            store.bucket_revision(&buckets[0]),
            store.bucket_revision(&buckets[1]),
        ];
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = current.as_ref()
            && cached.cluster == cluster
            && cached.revisions == revisions
        {
            return cached.config.clone();
        }
        let config = Arc::new(Config::from_objects(
            &read(store, &buckets[0]),
            &read(store, &buckets[1]),
        ));
        *current = Some(Cached {
            cluster: cluster.to_owned(),
            revisions,
            config: config.clone(),
        });
        config
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user(name: &str, groups: &[&str]) -> Identity {
        Identity {
            user: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Identity::default()
        }
    }

    fn config() -> Config {
        let fs = |name: &str, precedence: i64, level: &str, rules: Value| {
            json!({"metadata": {"name": name, "uid": format!("{name}-uid")},
                   "spec": {"matchingPrecedence": precedence,
                            "priorityLevelConfiguration": {"name": level}, "rules": rules}})
        };
        let pl = |name: &str, shares: i64| {
            json!({"metadata": {"name": name, "uid": format!("{name}-uid")},
                   "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares}}})
        };
        Config::from_objects(
            &[
                fs(
                    "catch-all",
                    10000,
                    "catch-all",
                    json!([{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]),
                ),
                fs(
                    "noxu",
                    1000,
                    "test",
                    json!([{"subjects": [{"kind": "User", "user": {"name": "noxu"}}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]),
                ),
                fs(
                    "dangling",
                    1,
                    "missing",
                    json!([{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]),
                ),
                fs(
                    "sa",
                    500,
                    "test",
                    json!([{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}],
                    "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"], "namespaces": ["kube-system"]}]}]),
                ),
            ],
            &[pl("catch-all", 5), pl("test", 1)],
        )
    }

    #[test]
    fn first_matching_schema_by_precedence_with_an_existing_level() {
        let c = config();
        let version = Attributes::non_resource(user("noxu", &[]), "get", "/version");
        let flow = c.classify(&user("noxu", &[]), &version).unwrap();
        assert_eq!(
            (flow.schema.as_str(), flow.level.as_str()),
            ("noxu", "test")
        );
        assert_eq!(flow.level_uid, "test-uid");
        let other = c.classify(&user("foo", &[]), &version).unwrap();
        assert_eq!(other.schema, "catch-all");
        let mut logs = Attributes::resource(
            user("system:serviceaccount:kube-system:x", &[]),
            "get",
            "",
            "pods",
            "kube-system",
        );
        if let Target::Resource(r) = &mut logs.target {
            r.subresource = "log".into();
        }
        let sa = c
            .classify(&user("system:serviceaccount:kube-system:x", &[]), &logs)
            .unwrap();
        assert_eq!(sa.schema, "sa");
        assert_eq!(
            c.nominal_limits(),
            [("catch-all".to_owned(), 500), ("test".to_owned(), 100)]
        );
    }

    #[test]
    fn url_patterns() {
        assert!(url_matches("/healthz/*", "/healthz/etcd"));
        assert!(!url_matches("/healthz/*", "/healthz"));
        assert!(url_matches("/apis", "/apis/apps"));
        assert!(url_matches("/version", "/version"));
        assert!(!url_matches("/version", "/versions"));
    }
}

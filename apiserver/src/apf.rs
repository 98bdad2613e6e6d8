//! API Priority and Fairness classification, as kube-apiserver's APF filter does it: which
//! FlowSchema a request matches (the first by `matchingPrecedence`, then name, whose priority
//! level exists) and so which priority level it belongs to; the nominal concurrency limit of
//! every level (`ceil(600 × shares / Σ shares)`, kube's default 400 + 200 in-flight limits);
//! and a cache of the default cluster's configuration, rebuilt when a FlowSchema or
//! PriorityLevelConfiguration changes. Requests are classified (response headers, metrics),
//! not queued or rejected.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::meta::str_at;
use ocm_apiserver_rbac::{Attributes, Identity, Target};
use ocm_apiserver_storage::{Bucket, Revision, Store};

/// kube-apiserver's server concurrency limit: `--max-requests-inflight` (400) plus
/// `--max-mutating-requests-inflight` (200).
const SERVER_CONCURRENCY: i64 = 600;
const FLOW_SCHEMAS: &str = "flowcontrol.apiserver.k8s.io/flowschemas";
const PRIORITY_LEVELS: &str = "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations";

/// A FlowSchema as the classifier uses it: its rules read once, when the configuration is
/// built, so classifying a request allocates nothing.
#[derive(Debug, Clone)]
struct Schema {
    name: String,
    uid: String,
    precedence: i64,
    level: String,
    rules: Vec<Rule>,
}

/// A string list of a rule: kube's wildcard when it is exactly `["*"]`.
#[derive(Debug, Clone, Default)]
struct List {
    any: bool,
    items: Vec<String>,
}

impl List {
    fn of(list: Option<&Value>) -> List {
        let items = crate::meta::strings(list);
        List {
            any: items.len() == 1 && items[0] == "*",
            items,
        }
    }

    fn has(&self, value: &str) -> bool {
        self.any || self.items.iter().any(|i| i == value)
    }

    /// Whether the list names `resource` (with `subresource`, as `resource/subresource`).
    fn has_resource(&self, resource: &str, subresource: &str) -> bool {
        self.any
            || self.items.iter().any(|i| {
                if subresource.is_empty() {
                    i == resource
                } else {
                    i.split_once('/') == Some((resource, subresource))
                }
            })
    }
}

#[derive(Debug, Clone)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
    Other,
}

#[derive(Debug, Clone)]
struct ResourceRule {
    verbs: List,
    groups: List,
    resources: List,
    cluster_scope: bool,
    namespaces: List,
}

#[derive(Debug, Clone)]
struct NonResourceRule {
    verbs: List,
    urls: Vec<String>,
}

/// One `rules[]` entry of a FlowSchema.
#[derive(Debug, Clone)]
struct Rule {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
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
pub(crate) struct Flow<'a> {
    /// The FlowSchema's name.
    pub schema: &'a str,
    /// The FlowSchema's uid (`X-Kubernetes-PF-FlowSchema-UID`).
    pub schema_uid: &'a str,
    /// The priority level's name.
    pub level: &'a str,
    /// The priority level's uid (`X-Kubernetes-PF-PriorityLevel-UID`).
    pub level_uid: &'a str,
}

/// One cluster's APF configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Config {
    schemas: Vec<Schema>,
    levels: Vec<Level>,
}

impl Subject {
    fn of(subject: &Value) -> Subject {
        match str_at(subject, "/kind") {
            "User" => Subject::User(str_at(subject, "/user/name").to_owned()),
            "Group" => Subject::Group(str_at(subject, "/group/name").to_owned()),
            "ServiceAccount" => Subject::ServiceAccount {
                namespace: str_at(subject, "/serviceAccount/namespace").to_owned(),
                name: str_at(subject, "/serviceAccount/name").to_owned(),
            },
            _ => Subject::Other,
        }
    }

    fn matches(&self, user: &Identity) -> bool {
        match self {
            Subject::User(name) => name == "*" || *name == user.user,
            Subject::Group(name) => name == "*" || user.groups.iter().any(|g| g == name),
            Subject::ServiceAccount { namespace, name } => {
                let Some(rest) = user.user.strip_prefix("system:serviceaccount:") else {
                    return false;
                };
                match rest.split_once(':') {
                    Some((ns, sa)) => ns == namespace && (name == "*" || sa == name),
                    None => false,
                }
            }
            Subject::Other => false,
        }
    }
}

impl Rule {
    fn of(rule: &Value) -> Rule {
        let entries = |key: &str| {
            rule.get(key)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        Rule {
            subjects: entries("subjects").iter().map(Subject::of).collect(),
            resource_rules: entries("resourceRules")
                .iter()
                .map(|rr| ResourceRule {
                    verbs: List::of(rr.get("verbs")),
                    groups: List::of(rr.get("apiGroups")),
                    resources: List::of(rr.get("resources")),
                    cluster_scope: rr.get("clusterScope").and_then(Value::as_bool) == Some(true),
                    namespaces: List::of(rr.get("namespaces")),
                })
                .collect(),
            non_resource_rules: entries("nonResourceRules")
                .iter()
                .map(|nr| NonResourceRule {
                    verbs: List::of(nr.get("verbs")),
                    urls: List::of(nr.get("nonResourceURLs")).items,
                })
                .collect(),
        }
    }

    fn matches(&self, user: &Identity, attrs: &Attributes) -> bool {
        if !self.subjects.iter().any(|s| s.matches(user)) {
            return false;
        }
        let verb = attrs.verb.as_str();
        match &attrs.target {
            Target::Resource(r) => self.resource_rules.iter().any(|rr| {
                rr.verbs.has(verb)
                    && rr.groups.has(&r.group)
                    && rr.resources.has_resource(&r.resource, &r.subresource)
                    && if r.namespace.is_empty() {
                        rr.cluster_scope
                    } else {
                        rr.namespaces.has(&r.namespace)
                    }
            }),
            Target::NonResource { path } => self
                .non_resource_rules
                .iter()
                .any(|nr| nr.verbs.has(verb) && nr.urls.iter().any(|p| url_matches(p, path))),
        }
    }
}

/// Whether a non-resource URL pattern matches `path`: `*`, the path itself, or a prefix
/// (`/healthz/*` and `/apis` both match below themselves).
fn url_matches(pattern: &str, path: &str) -> bool {
    if pattern == "*" || pattern == path {
        return true;
    }
    let prefix = pattern.strip_suffix('*').unwrap_or(pattern);
    match prefix.strip_suffix('/') {
        Some(_) => path.starts_with(prefix),
        None => path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/')),
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
                    .map(|rules| rules.iter().map(Rule::of).collect())
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
    pub(crate) fn classify(&self, user: &Identity, attrs: &Attributes) -> Option<Flow<'_>> {
        let schema = self
            .schemas
            .iter()
            .find(|s| s.rules.iter().any(|r| r.matches(user, attrs)))?;
        let level = self.levels.iter().find(|l| l.name == schema.level)?;
        Some(Flow {
            schema: &schema.name,
            schema_uid: &schema.uid,
            level: &level.name,
            level_uid: &level.uid,
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

/// A cluster's configuration, the revisions of its two buckets it was read at, and when
/// those were last compared with the store's.
struct Cached {
    cluster: String,
    revisions: [Revision; 2],
    checked: Instant,
    config: Arc<Config>,
}

/// How long a configuration is used before the store's revisions are compared again (a
/// request then costs no store read; kube's own APF controller also applies a change a
/// moment after it is stored).
const RECHECK: Duration = Duration::from_millis(500);

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
    /// The configuration of `cluster` as stored at most [`RECHECK`] ago (kept for the last
    /// cluster asked about).
    pub(crate) fn get(&self, store: &Store, cluster: &str) -> Arc<Config> {
        {
            let current = self.current.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(cached) = current.as_ref()
                && cached.cluster == cluster
                && cached.checked.elapsed() < RECHECK
            {
                return cached.config.clone();
            }
        }
        self.get_current(store, cluster)
    }

    /// The configuration of `cluster` as stored now.
    pub(crate) fn get_current(&self, store: &Store, cluster: &str) -> Arc<Config> {
        let buckets = [
            Bucket::new(cluster, FLOW_SCHEMAS),
            Bucket::new(cluster, PRIORITY_LEVELS),
        ];
        let revisions = [
            store.bucket_revision(&buckets[0]),
            store.bucket_revision(&buckets[1]),
        ];
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = current.as_mut()
            && cached.cluster == cluster
            && cached.revisions == revisions
        {
            cached.checked = Instant::now();
            return cached.config.clone();
        }
        let config = Arc::new(Config::from_objects(
            &read(store, &buckets[0]),
            &read(store, &buckets[1]),
        ));
        *current = Some(Cached {
            cluster: cluster.to_owned(),
            revisions,
            checked: Instant::now(),
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
        assert_eq!((flow.schema, flow.level), ("noxu", "test"));
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

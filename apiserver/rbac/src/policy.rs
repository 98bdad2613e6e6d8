//! The RBAC objects the authorizer evaluates, and kube's rule resolution over them: which rules
//! apply to a user in a namespace, through which binding.

use std::fmt;

use imbl::{OrdMap, OrdSet};

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use serde_json::Value;

use crate::Identity;
use ocm_apiserver_validation::go_quote;

/// The API group of the RBAC kinds.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// An RBAC object that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The object is not one of the four RBAC kinds.
    #[error("not an RBAC object: apiVersion {api_version:?}, kind {kind:?}")]
    NotRbac {
        /// `apiVersion` of the object.
        api_version: String,
        /// `kind` of the object.
        kind: String,
    },
    /// The object does not decode as its kind.
    #[error("malformed {kind}: {message}")]
    Malformed {
        /// The kind.
        kind: String,
        /// The decoder's message.
        message: String,
    },
}

/// All Roles, ClusterRoles, RoleBindings and ClusterRoleBindings the authorizer sees.
///
/// The core keeps one up to date from storage (every write and delete of the four kinds) and
/// evaluates requests against it. Iteration is by name, so decisions and reasons are
/// deterministic.
///
/// The maps are persistent (structure-sharing) ordered maps: a clone is O(1) and a change to
/// a clone copies only the path to the changed entry, so a change made while requests still
/// hold the previous policy costs O(log n), not a copy of every role of a fleet hub.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    pub(crate) cluster_roles: OrdMap<String, ClusterRole>,
    pub(crate) roles: OrdMap<(String, String), Role>,
    pub(crate) cluster_role_bindings: OrdMap<String, ClusterRoleBinding>,
    pub(crate) role_bindings: OrdMap<(String, String), RoleBinding>,
    /// ClusterRoleBinding names by the subjects they name, so a request visits only the
    /// bindings that can apply to its user (a fleet hub has one or more per cluster).
    bindings_by_subject: OrdMap<SubjectKey, OrdSet<String>>,
}

/// A binding subject as a user can match it: `User` or `Group` and its name, or
/// `ServiceAccount` and the account's user name.
type SubjectKey = (&'static str, String);

/// The keys under which a ClusterRoleBinding subject is indexed (none for a kind that never
/// applies, or a service account without a namespace, which a ClusterRoleBinding never
/// matches).
fn subject_key(subject: &Subject) -> Option<SubjectKey> {
    match subject.kind.as_str() {
        "User" => Some(("User", subject.name.clone())),
        "Group" => Some(("Group", subject.name.clone())),
        "ServiceAccount" => {
            let ns = subject.namespace.as_deref().filter(|n| !n.is_empty())?;
            Some((
                "ServiceAccount",
                service_account_username(ns, &subject.name),
            ))
        }
        _ => None,
    }
}

/// The keys a user matches bindings under.
fn user_keys(user: &Identity) -> impl Iterator<Item = SubjectKey> + '_ {
    [
        ("User", user.user.clone()),
        ("ServiceAccount", user.user.clone()),
    ]
    .into_iter()
    .chain(user.groups.iter().map(|g| ("Group", g.clone())))
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

fn namespace_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.namespace.clone().unwrap_or_default()
}

fn decode<T: serde::de::DeserializeOwned>(obj: &Value, kind: &str) -> Result<T, PolicyError> {
    serde_json::from_value(obj.clone()).map_err(|e| PolicyError::Malformed {
        kind: kind.to_owned(),
        message: e.to_string(),
    })
}

/// What authorization reads of a stored RBAC object, in the v1 shape whatever version it was
/// stored at: everything but metadata beyond name, namespace and labels (managed fields and
/// annotations are most of a stored object, and a fleet hub holds thousands of these).
fn authorization_view(obj: &Value) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut view = serde_json::Map::new();
    for (key, value) in map {
        match key.as_str() {
            "apiVersion" => {
                view.insert(key.clone(), Value::from(format!("{RBAC_GROUP}/v1")));
            }
            "metadata" if value.is_object() => {
                let kept = ["name", "namespace", "labels"]
                    .into_iter()
                    .filter_map(|field| Some((field.to_owned(), value.get(field)?.clone())));
                view.insert(key.clone(), Value::Object(kept.collect()));
            }
            _ => {
                view.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(view)
}

impl Policy {
    /// An empty policy (nothing is allowed except to `system:masters`).
    pub fn new() -> Self {
        Policy::default()
    }

    /// A policy from JSON objects of the four kinds (others are an error).
    pub fn from_values<'a>(
        objects: impl IntoIterator<Item = &'a Value>,
    ) -> Result<Self, PolicyError> {
        let mut policy = Policy::new();
        for obj in objects {
            policy.upsert(obj)?;
        }
        Ok(policy)
    }

    /// Adds or replaces an object given as JSON (by its `apiVersion` and `kind`).
    pub fn upsert(&mut self, obj: &Value) -> Result<(), PolicyError> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        if group != RBAC_GROUP {
            return Err(PolicyError::NotRbac {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            });
        }
        let v1 = authorization_view(obj);
        match kind {
            "ClusterRole" => self.upsert_cluster_role(decode(&v1, kind)?),
            "Role" => self.upsert_role(decode(&v1, kind)?),
            "ClusterRoleBinding" => self.upsert_cluster_role_binding(decode(&v1, kind)?),
            "RoleBinding" => self.upsert_role_binding(decode(&v1, kind)?),
            _ => {
                return Err(PolicyError::NotRbac {
                    api_version: api_version.to_owned(),
                    kind: kind.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Removes an object by kind (`Role`, `ClusterRole`, `RoleBinding`, `ClusterRoleBinding`),
    /// namespace (empty for cluster-scoped kinds) and name. Unknown kinds are ignored.
    pub fn remove(&mut self, kind: &str, namespace: &str, name: &str) {
        let key = (namespace.to_owned(), name.to_owned());
        match kind {
            "ClusterRole" => {
                self.cluster_roles.remove(name);
            }
            "Role" => {
                self.roles.remove(&key);
            }
            "ClusterRoleBinding" => {
                if let Some(old) = self.cluster_role_bindings.remove(name) {
                    self.unindex_binding(&old);
                }
            }
            "RoleBinding" => {
                self.role_bindings.remove(&key);
            }
            _ => {}
        }
    }

    /// Adds or replaces a ClusterRole.
    pub fn upsert_cluster_role(&mut self, role: ClusterRole) {
        self.cluster_roles.insert(name_of(&role.metadata), role);
    }

    /// Adds or replaces a Role.
    pub fn upsert_role(&mut self, role: Role) {
        let key = (namespace_of(&role.metadata), name_of(&role.metadata));
        self.roles.insert(key, role);
    }

    /// Adds or replaces a ClusterRoleBinding.
    pub fn upsert_cluster_role_binding(&mut self, binding: ClusterRoleBinding) {
        let name = name_of(&binding.metadata);
        if let Some(old) = self.cluster_role_bindings.get(&name).cloned() {
            self.unindex_binding(&old);
        }
        for subject in binding.subjects.as_deref().unwrap_or(&[]) {
            if let Some(key) = subject_key(subject) {
                self.bindings_by_subject
                    .entry(key)
                    .or_default()
                    .insert(name.clone());
            }
        }
        self.cluster_role_bindings.insert(name, binding);
    }

    /// Removes `binding`'s name from the index entries of its subjects.
    fn unindex_binding(&mut self, binding: &ClusterRoleBinding) {
        let name = name_of(&binding.metadata);
        for subject in binding.subjects.as_deref().unwrap_or(&[]) {
            let Some(key) = subject_key(subject) else {
                continue;
            };
            if let Some(names) = self.bindings_by_subject.get_mut(&key) {
                names.remove(&name);
                if names.is_empty() {
                    self.bindings_by_subject.remove(&key);
                }
            }
        }
    }

    /// Adds or replaces a RoleBinding.
    pub fn upsert_role_binding(&mut self, binding: RoleBinding) {
        let key = (namespace_of(&binding.metadata), name_of(&binding.metadata));
        self.role_bindings.insert(key, binding);
    }

    /// A ClusterRole by name.
    pub fn cluster_role(&self, name: &str) -> Option<&ClusterRole> {
        self.cluster_roles.get(name)
    }

    /// A Role by namespace and name.
    pub fn role(&self, namespace: &str, name: &str) -> Option<&Role> {
        self.roles.get(&(namespace.to_owned(), name.to_owned()))
    }

    /// Every ClusterRole, by name.
    pub fn cluster_roles(&self) -> impl Iterator<Item = &ClusterRole> {
        self.cluster_roles.values()
    }

    /// The rules a role reference grants when bound in `namespace` (empty for a
    /// ClusterRoleBinding), or kube's resolution error, e.g.
    /// `clusterrole.rbac.authorization.k8s.io "x" not found`.
    pub fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<&[PolicyRule], String> {
        match role_ref.kind.as_str() {
            "Role" => self
                .role(namespace, &role_ref.name)
                .map(|r| r.rules.as_deref().unwrap_or(&[]))
                .ok_or_else(|| format!("role.{RBAC_GROUP} {} not found", go_quote(&role_ref.name))),
            "ClusterRole" => self
                .cluster_role(&role_ref.name)
                .map(|r| r.rules.as_deref().unwrap_or(&[]))
                .ok_or_else(|| {
                    format!(
                        "clusterrole.{RBAC_GROUP} {} not found",
                        go_quote(&role_ref.name)
                    )
                }),
            other => Err(format!(
                "unsupported role reference kind: {}",
                go_quote(other)
            )),
        }
    }

    /// Visits every rule that applies to `user` in `namespace`: first through ClusterRoleBindings,
    /// then (when `namespace` is not empty) through the RoleBindings of that namespace, as kube's
    /// `VisitRulesFor` does. The visitor gets the source, a rule or a resolution error, and
    /// returns `false` to stop.
    pub fn visit_rules_for(
        &self,
        user: &Identity,
        namespace: &str,
        visitor: &mut dyn FnMut(&RuleSource<'_>, Visit<'_>) -> bool,
    ) {
        let candidates: std::collections::BTreeSet<&String> = user_keys(user)
            .filter_map(|key| self.bindings_by_subject.get(&key))
            .flatten()
            .collect();
        let bindings = candidates
            .into_iter()
            .filter_map(|name| self.cluster_role_bindings.get(name));
        for binding in bindings {
            let subjects = binding.subjects.as_deref().unwrap_or(&[]);
            let Some(subject) = subjects.iter().find(|s| applies_to(user, s, "")) else {
                continue;
            };
            let source = RuleSource::ClusterRoleBinding { binding, subject };
            if !visit_role_ref(self, &source, &binding.role_ref, "", visitor) {
                return;
            }
        }
        if namespace.is_empty() {
            return;
        }
        let start = (namespace.to_owned(), String::new());
        for ((ns, _), binding) in self.role_bindings.range(start..) {
            if ns != namespace {
                break;
            }
            let subjects = binding.subjects.as_deref().unwrap_or(&[]);
            let Some(subject) = subjects.iter().find(|s| applies_to(user, s, namespace)) else {
                continue;
            };
            let source = RuleSource::RoleBinding { binding, subject };
            if !visit_role_ref(self, &source, &binding.role_ref, namespace, visitor) {
                return;
            }
        }
    }

    /// Every rule that applies to `user` in `namespace`, and the resolution errors met
    /// (kube's `RulesFor`).
    pub fn rules_for(&self, user: &Identity, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit_rules_for(user, namespace, &mut |_, visit| {
            match visit {
                Visit::Rule(r) => rules.push(r.clone()),
                Visit::Error(e) => errors.push(e),
            }
            true
        });
        (rules, errors)
    }
}

fn visit_role_ref(
    policy: &Policy,
    source: &RuleSource<'_>,
    role_ref: &RoleRef,
    namespace: &str,
    visitor: &mut dyn FnMut(&RuleSource<'_>, Visit<'_>) -> bool,
) -> bool {
    match policy.role_ref_rules(role_ref, namespace) {
        Ok(rules) => rules.iter().all(|r| visitor(source, Visit::Rule(r))),
        Err(e) => visitor(source, Visit::Error(e)),
    }
}

/// One step of rule resolution.
#[derive(Debug)]
pub enum Visit<'a> {
    /// A rule granted to the user.
    Rule(&'a PolicyRule),
    /// A binding whose role could not be resolved.
    Error(String),
}

/// Where a rule comes from; its `Display` is kube's wording, e.g.
/// `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`.
#[derive(Debug, Clone, Copy)]
pub enum RuleSource<'a> {
    /// Through a ClusterRoleBinding.
    ClusterRoleBinding {
        /// The binding.
        binding: &'a ClusterRoleBinding,
        /// The subject that matched.
        subject: &'a Subject,
    },
    /// Through a RoleBinding.
    RoleBinding {
        /// The binding.
        binding: &'a RoleBinding,
        /// The subject that matched.
        subject: &'a Subject,
    },
}

fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    if s.kind == "ServiceAccount" {
        let ns = s
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(binding_namespace);
        format!("{} {}", s.kind, go_quote(&format!("{}/{}", s.name, ns)))
    } else {
        format!("{} {}", s.kind, go_quote(&s.name))
    }
}

impl fmt::Display for RuleSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleSource::ClusterRoleBinding { binding, subject } => write!(
                f,
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(&name_of(&binding.metadata)),
                binding.role_ref.kind,
                go_quote(&binding.role_ref.name),
                describe_subject(subject, "")
            ),
            RuleSource::RoleBinding { binding, subject } => {
                let ns = namespace_of(&binding.metadata);
                write!(
                    f,
                    "RoleBinding {} of {} {} to {}",
                    go_quote(&format!("{}/{}", name_of(&binding.metadata), ns)),
                    binding.role_ref.kind,
                    go_quote(&binding.role_ref.name),
                    describe_subject(subject, &ns)
                )
            }
        }
    }
}

/// The user name of a service account: `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// Whether a binding subject names `user`. A ServiceAccount subject without a namespace takes
/// the binding's namespace (never matches from a ClusterRoleBinding).
pub fn applies_to(user: &Identity, subject: &Subject, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.user == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = subject
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_namespace);
            !ns.is_empty() && user.user == service_account_username(ns, &subject.name)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn binding(name: &str, subjects: Value) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "reader"},
            "subjects": subjects,
        })
    }

    fn user(name: &str, groups: &[&str]) -> Identity {
        Identity {
            user: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            uid: String::new(),
            extra: Default::default(),
        }
    }

    /// Names of the bindings visited for `user`, in order.
    fn visited(policy: &Policy, user: &Identity) -> Vec<String> {
        let mut names = Vec::new();
        policy.visit_rules_for(user, "", &mut |source, _| {
            if let RuleSource::ClusterRoleBinding { binding, .. } = source {
                names.push(name_of(&binding.metadata));
            }
            true
        });
        names
    }

    #[test]
    fn the_subject_index_follows_updates_and_deletions_and_keeps_name_order() {
        let reader = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "reader"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        });
        let mut policy = Policy::new();
        policy.upsert(&reader).unwrap();
        policy
            .upsert(&binding("b", json!([{"kind": "Group", "name": "team"}])))
            .unwrap();
        policy
            .upsert(&binding("a", json!([{"kind": "User", "name": "jane"}])))
            .unwrap();
        let sa = json!([{"kind": "ServiceAccount", "name": "bot", "namespace": "ns"}]);
        policy.upsert(&binding("c", sa)).unwrap();
        let no_ns = json!([{"kind": "ServiceAccount", "name": "bot"}]);
        policy.upsert(&binding("d", no_ns)).unwrap();
        let jane = user("jane", &["team"]);
        assert_eq!(visited(&policy, &jane), ["a", "b"]);
        let bot = user("system:serviceaccount:ns:bot", &[]);
        assert_eq!(visited(&policy, &bot), ["c"]);
        // `a` now names someone else, `b` is gone.
        policy
            .upsert(&binding("a", json!([{"kind": "User", "name": "joe"}])))
            .unwrap();
        policy.remove("ClusterRoleBinding", "", "b");
        assert!(visited(&policy, &jane).is_empty());
        assert_eq!(visited(&policy, &user("joe", &[])), ["a"]);
    }
}

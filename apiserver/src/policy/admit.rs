//! Enforcing the policies of a logical cluster on a write: the compiled policies and their
//! bindings (cached per bucket revision, so a write to either kind takes effect on the next
//! request and a request in a cluster without bindings costs two revision reads), matching,
//! params, evaluation and the validation actions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::evaluate::{Inputs, Outcome, evaluate};
use super::spec::{Binding, MatchResources, ParamRef, Policy};
use crate::registry::Registry;
use crate::webhook::matching::{Equivalent, RuleMatch};
use crate::webhook::{Converter, FailurePolicy, RequestAttributes, matching};
use ocm_apiserver_status::{ApiError, Cause, Gr};
use ocm_apiserver_storage::{Bucket, ObjectKey, Revision, Store};

/// Storage resource of ValidatingAdmissionPolicies.
pub const POLICIES: &str = "admissionregistration.k8s.io/validatingadmissionpolicies";
/// Storage resource of ValidatingAdmissionPolicyBindings.
pub const BINDINGS: &str = "admissionregistration.k8s.io/validatingadmissionpolicybindings";

/// The policies of one logical cluster that have bindings, each with its bindings.
#[derive(Debug, Default)]
pub struct ClusterPolicies {
    /// Policies in name order, their bindings in name order.
    pub entries: Vec<(Policy, Vec<Binding>)>,
}

/// The policies of a cluster with the (policies, bindings) bucket revisions they were read at.
type Cached = ([Revision; 2], Arc<ClusterPolicies>);

/// Each logical cluster's policies, with the bucket revisions they were read at.
#[derive(Default)]
pub struct PolicyCache {
    by_cluster: Mutex<HashMap<String, Cached>>,
}

impl std::fmt::Debug for PolicyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyCache").finish_non_exhaustive()
    }
}

fn read(store: &Store, bucket: &Bucket) -> Vec<Value> {
    let (_, items) = store.list(bucket, None, None);
    items
        .into_iter()
        .filter_map(|(_, _, obj)| serde_json::from_slice::<Value>(&obj.value).ok())
        .collect()
}

impl PolicyCache {
    /// The bound policies of `cluster` as stored now; `None` when no binding was ever written
    /// there.
    pub fn get(&self, store: &Store, cluster: &str) -> Option<Arc<ClusterPolicies>> {
        let bindings = Bucket::new(cluster, BINDINGS);
        let binding_rev = store.bucket_revision(&bindings);
        if binding_rev == 0 {
            return None;
        }
        let policies = Bucket::new(cluster, POLICIES);
        let revisions = [store.bucket_revision(&policies), binding_rev];
        let mut map = self.by_cluster.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, cached)) = map.get(cluster)
            && *seen == revisions
        {
            return Some(cached.clone());
        }
        let mut by_policy: HashMap<String, Vec<Binding>> = HashMap::new();
        for binding in read(store, &bindings).iter().map(Binding::parse) {
            by_policy
                .entry(binding.policy_name.clone())
                .or_default()
                .push(binding);
        }
        let mut entries: Vec<(Policy, Vec<Binding>)> = Vec::new();
        if !by_policy.is_empty() {
            for policy in read(store, &policies).iter().map(Policy::parse) {
                if let Some(mut bound) = by_policy.remove(&policy.name) {
                    bound.sort_by(|a, b| a.name.cmp(&b.name));
                    entries.push((policy, bound));
                }
            }
        }
        entries.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let cached = Arc::new(ClusterPolicies { entries });
        map.insert(cluster.to_owned(), (revisions, cached.clone()));
        Some(cached)
    }
}

/// A write as the policies see it.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// Operation, group, version, resource, subresource and namespace (for a Namespace object,
    /// its own name).
    pub attrs: RequestAttributes<'a>,
    /// Logical cluster.
    pub cluster: &'a str,
    /// Object name.
    pub name: &'a str,
    /// Whether the object is a Namespace (then `namespaceObject` is null).
    pub is_namespace: bool,
    /// The object (absent on delete).
    pub object: Option<&'a Value>,
    /// The old object (absent on create).
    pub old_object: Option<&'a Value>,
    /// The CEL `request` variable.
    pub request: &'a Value,
    /// The other groups and versions serving the request's objects (`matchPolicy: Equivalent`).
    pub equivalents: &'a [Equivalent],
    /// Converts objects to one of the `equivalents`.
    pub convert: Converter<'a>,
    /// The CEL `authorizer` variable (the requester's access checks).
    pub authorizer: &'a kube_cel::cel::Value,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("attrs", &self.attrs)
            .field("cluster", &self.cluster)
            .field("name", &self.name)
            .field("equivalents", &self.equivalents)
            .finish_non_exhaustive()
    }
}

/// Whether a `matchResources` covers the request: selectors, then excluded rules, then rules
/// (none: everything), with the rules' `resourceNames`; with `matchPolicy: Equivalent` also
/// through the request's equivalents (then the policy sees the request there).
fn resources_match<'e>(
    m: &MatchResources,
    req: &Request<'e>,
    namespace_labels: &mut dyn FnMut() -> serde_json::Map<String, Value>,
) -> RuleMatch<'e> {
    let labels = matching::needs_namespace_labels(&m.namespace_selector, &req.attrs)
        .then(&mut *namespace_labels);
    if !matching::namespace_selector_matches(
        &m.namespace_selector,
        &req.attrs,
        req.object,
        req.old_object,
        labels.as_ref(),
    ) || !matching::object_selector_matches(&m.object_selector, req.object, req.old_object)
    {
        return RuleMatch::No;
    }
    let covers = |r: &super::spec::NamedRule, attrs: &RequestAttributes<'_>| {
        matching::rule_matches(&r.rule, attrs)
            && (r.resource_names.is_empty() || r.resource_names.iter().any(|n| n == req.name))
    };
    let by = |rules: &[super::spec::NamedRule]| {
        matching::match_rules_by(
            rules,
            covers,
            &req.attrs,
            m.match_equivalent,
            req.equivalents,
        )
    };
    if by(&m.exclude) != RuleMatch::No {
        return RuleMatch::No;
    }
    if m.rules.is_empty() {
        return RuleMatch::Exact;
    }
    by(&m.rules)
}

/// The objects and the `request` variable as a policy matched through `equivalent` sees them.
struct Versioned {
    object: Option<Value>,
    old_object: Option<Value>,
    request: Value,
}

impl Versioned {
    fn new(req: &Request<'_>, e: &Equivalent) -> Result<Versioned, ApiError> {
        let target = e.api_version();
        let convert = |o: Option<&Value>| o.map(|o| (req.convert)(o.clone(), &target)).transpose();
        let mut request = req.request.clone();
        if let Some(map) = request.as_object_mut() {
            map.insert(
                "kind".into(),
                serde_json::json!({"group": e.group, "version": e.version, "kind": e.kind}),
            );
            map.insert(
                "resource".into(),
                serde_json::json!({"group": e.group, "version": e.version, "resource": e.resource}),
            );
        }
        Ok(Versioned {
            object: convert(req.object)?,
            old_object: convert(req.old_object)?,
            request,
        })
    }
}

/// Why a policy or a binding cannot be used for a request (subject to the failure policy).
#[derive(Debug, thiserror::Error)]
enum ConfigError {
    /// The policy's `paramKind` is not served.
    #[error("failed to configure policy: {0}")]
    Policy(String),
    /// The binding's params cannot be found.
    #[error("failed to configure binding: {0}")]
    Binding(String),
}

/// Where the params of a binding come from.
struct ParamSource<'a> {
    store: &'a Store,
    registry: &'a Registry,
    cluster: &'a str,
    namespace: &'a str,
}

impl ParamSource<'_> {
    /// The params to evaluate with (`[Null]` without paramKind or paramRef), or why the policy
    /// or the binding cannot be used.
    fn collect(
        &self,
        policy: &Policy,
        param_ref: Option<&ParamRef>,
    ) -> Result<Vec<Value>, ConfigError> {
        let (Some(kind), Some(param_ref)) = (&policy.param_kind, param_ref) else {
            return Ok(vec![Value::Null]);
        };
        let Some(res) = self
            .registry
            .lookup_kind(self.cluster, kind.group(), &kind.kind)
            .filter(|r| r.version(kind.version()).is_some())
        else {
            return Err(ConfigError::Policy(format!(
                "failed to find resource referenced by paramKind: '{}/{}, Kind={}'",
                kind.group(),
                kind.version(),
                kind.kind
            )));
        };
        let namespace = if !res.namespaced {
            if !param_ref.namespace.is_empty() {
                return Err(ConfigError::Binding(
                    "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                        .to_owned(),
                ));
            }
            String::new()
        } else if !param_ref.namespace.is_empty() {
            param_ref.namespace.clone()
        } else if !self.namespace.is_empty() {
            self.namespace.to_owned()
        } else {
            return Err(ConfigError::Binding(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .to_owned(),
            ));
        };
        let bucket = res.bucket(self.cluster);
        let params: Vec<Value> = if !param_ref.name.is_empty() {
            self.store
                .get(&ObjectKey::new(bucket, &namespace, &param_ref.name))
                .and_then(|o| serde_json::from_slice(&o.value).ok())
                .into_iter()
                .collect()
        } else {
            let selector = param_ref.selector.clone().unwrap_or_default();
            let ns = res.namespaced.then_some(namespace.as_str());
            let (_, items) = self.store.list(&bucket, ns, None);
            items
                .into_iter()
                .filter_map(|(_, _, o)| serde_json::from_slice::<Value>(&o.value).ok())
                .filter(|v| selector.matches_value(v))
                .collect()
        };
        if params.is_empty() && param_ref.deny_when_missing {
            return Err(ConfigError::Binding(
                "no params found for policy binding with `Deny` parameterNotFoundAction".to_owned(),
            ));
        }
        Ok(params)
    }
}

/// The Status code of a validation's reason.
fn reason_code(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

/// The error of a denial, as kube-apiserver builds it: a Forbidden for the object whose
/// reason and code become the validation's.
fn denial(
    gr: Gr<'_>,
    name: &str,
    policy: &str,
    binding: &str,
    message: &str,
    reason: &str,
) -> ApiError {
    let text = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {message}"
    );
    let mut err = ApiError::forbidden(gr, name, &text).with_causes(vec![Cause::new("", text, "")]);
    err.reason = reason.to_owned();
    err.code = reason_code(reason);
    err
}

/// What a request needs besides itself: the store, the served resources and the error's
/// group and resource.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    /// Objects (params, namespaces).
    pub store: &'a Store,
    /// Served resources (to find `paramKind`).
    pub registry: &'a Registry,
    /// Group and resource named by a denial.
    pub gr: Gr<'a>,
}

/// Runs the bound policies of the request's cluster. The first denial (policies in name
/// order, bindings in name order) is the error; `Warn` actions add to `warnings`.
pub fn admit(
    env: Env<'_>,
    policies: &ClusterPolicies,
    req: &Request<'_>,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let namespace = if req.is_namespace {
        ""
    } else {
        req.attrs.namespace
    };
    // The request's Namespace, read once when a selector or an evaluation needs it.
    let ns_object: std::cell::OnceCell<Value> = std::cell::OnceCell::new();
    let load_namespace = || -> Value {
        if namespace.is_empty() {
            return Value::Null;
        }
        let key = ObjectKey::new(Bucket::new(req.cluster, "/namespaces"), "", namespace);
        let mut ns: Value = env
            .store
            .get(&key)
            .and_then(|o| serde_json::from_slice(&o.value).ok())
            .unwrap_or(Value::Null);
        if let Some(meta) = ns.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        ns
    };
    let labels_of = |ns: &Value| {
        ns.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let params = ParamSource {
        store: env.store,
        registry: env.registry,
        cluster: req.cluster,
        namespace,
    };
    let null = Value::Null;
    let mut first: Option<ApiError> = None;
    for (policy, bindings) in &policies.entries {
        let Some(constraints) = &policy.match_constraints else {
            continue;
        };
        let mut labels = || labels_of(ns_object.get_or_init(load_namespace));
        let versioned = match resources_match(constraints, req, &mut labels) {
            RuleMatch::No => continue,
            RuleMatch::Exact => None,
            RuleMatch::Equivalent(e) => Some(Versioned::new(req, e)?),
        };
        let (object, old_object, request) = match &versioned {
            Some(v) => (v.object.as_ref(), v.old_object.as_ref(), &v.request),
            None => (req.object, req.old_object, req.request),
        };
        for binding in bindings {
            if let Some(m) = &binding.match_resources
                && resources_match(m, req, &mut labels) == RuleMatch::No
            {
                continue;
            }
            let deny = |message: &str, reason: &str| {
                denial(
                    env.gr,
                    req.name,
                    &policy.name,
                    &binding.name,
                    message,
                    reason,
                )
            };
            let values = match params.collect(policy, binding.param_ref.as_ref()) {
                Ok(v) => v,
                Err(err) => {
                    if policy.failure_policy == FailurePolicy::Fail {
                        first.get_or_insert_with(|| deny(&err.to_string(), "Invalid"));
                    }
                    continue;
                }
            };
            let ns = ns_object.get_or_init(load_namespace);
            for param in &values {
                let inputs = Inputs {
                    object: object.unwrap_or(&null),
                    old_object: old_object.unwrap_or(&null),
                    request,
                    params: param,
                    namespace_object: ns,
                    authorizer: req.authorizer,
                };
                let Outcome::Evaluated(failures) = evaluate(policy, &inputs) else {
                    continue;
                };
                for failure in failures {
                    if binding.actions.deny || failure.denies_always {
                        first.get_or_insert_with(|| deny(&failure.message, &failure.reason));
                    }
                    if binding.actions.warn && !failure.denies_always {
                        warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                            policy.name, binding.name, failure.message
                        ));
                    }
                    if binding.actions.audit && !failure.denies_always {
                        tracing::info!(
                            policy = policy.name,
                            binding = binding.name,
                            message = failure.message,
                            "validating admission policy audit"
                        );
                    }
                }
            }
        }
    }
    match first {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn denials_carry_the_validation_reason() {
        let gr = Gr {
            group: "",
            resource: "configmaps",
        };
        let err = denial(gr, "a", "p", "b", "no", "Forbidden");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "configmaps \"a\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"
        );
        let status = err.to_status();
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(
            status["details"]["causes"][0]["message"],
            "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"
        );
        let err = denial(gr, "a", "p", "b", "no", "Invalid");
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
        assert_eq!(reason_code("Unauthorized"), 401);
        assert_eq!(reason_code("RequestEntityTooLarge"), 413);
    }

    #[test]
    fn resource_rules_exclusions_and_names() {
        let m = MatchResources::from_value(&json!({
            "resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["configmaps"], "resourceNames": ["a", "b"]}],
            "excludeResourceRules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["configmaps"], "resourceNames": ["b"]}],
            "namespaceSelector": {}, "objectSelector": {},
        }));
        let request = json!({});
        let req = |name: &'static str| Request {
            attrs: RequestAttributes {
                operation: "CREATE",
                group: "",
                version: "v1",
                resource: "configmaps",
                subresource: "",
                namespace: "ns",
            },
            cluster: "",
            name,
            is_namespace: false,
            object: None,
            old_object: None,
            request: &request,
            equivalents: &[],
            convert: &|o, _| Ok(o),
            authorizer: &kube_cel::cel::Value::Null,
        };
        let mut labels = serde_json::Map::new;
        assert_eq!(
            resources_match(&m, &req("a"), &mut labels),
            RuleMatch::Exact
        );
        assert_eq!(resources_match(&m, &req("b"), &mut labels), RuleMatch::No);
        assert_eq!(resources_match(&m, &req("c"), &mut labels), RuleMatch::No);
        let all =
            MatchResources::from_value(&json!({"namespaceSelector": {"matchLabels": {"x": "1"}}}));
        assert_eq!(resources_match(&all, &req("c"), &mut labels), RuleMatch::No);
        let mut labelled = || json!({"x": "1"}).as_object().cloned().unwrap_or_default();
        assert_eq!(
            resources_match(&all, &req("c"), &mut labelled),
            RuleMatch::Exact
        );
    }
}

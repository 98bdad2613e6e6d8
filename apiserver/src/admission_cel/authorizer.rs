//! The `authorizer` CEL variable of admission policies and webhook match conditions: access
//! checks answered by this server's authorizer, with the calls of kube's CEL authz library —
//! `authorizer.group(g).resource(r)[.subresource(s)][.namespace(ns)][.name(n)]`
//! `[.fieldSelector(f)][.labelSelector(l)].check(verb)`,
//! `authorizer.path(p).check(verb)`, `authorizer.serviceAccount(ns, name)` (checks as that
//! service account), `authorizer.requestResource` (the request's own resource) and, on the
//! decision, `allowed()`, `reason()`, `errored()` and `error()`.
//!
//! `fieldSelector` and `labelSelector` (kube's `AuthorizeWithSelectors` library) keep the
//! selector text; `check` parses it as kube does and hands the requirements, or the parse
//! error, to the authorizer with the other attributes. A selector that does not parse is not
//! an error of the check: kube gives the error to the authorizers, and RBAC ignores selectors.
//!
//! `authorizer` is a map holding `requestResource` and the checker itself (under a key no
//! expression names); the calls are functions registered on the evaluation context that
//! accept only the values this module makes.

use std::sync::Arc;

use kube_cel::cel::{self, ExecutionError, FunctionContext, extractors::This, objects::Opaque};

use crate::auth::Identity;
use ocm_apiserver_rbac::{Attributes, Decision, SelectorAttributes};

/// Decides one access check (the server's authorizer for the request's logical cluster).
pub type Authorize = Arc<dyn Fn(&Attributes) -> Decision + Send + Sync>;

/// The key of the checker in the `authorizer` map.
const CHECKER_KEY: &str = "@authorizer";

/// Access checks for one user.
#[derive(Clone)]
pub struct Checker {
    user: Identity,
    authorize: Authorize,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker")
            .field("user", &self.user.user)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Checker {
    fn eq(&self, other: &Self) -> bool {
        self.user == other.user && Arc::ptr_eq(&self.authorize, &other.authorize)
    }
}

impl Eq for Checker {}

impl Opaque for Checker {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

/// `authorizer.group(g)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct GroupCheck {
    checker: Checker,
    group: String,
}

impl Opaque for GroupCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.GroupCheck"
    }
}

/// A resource check being built.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ResourceCheck {
    checker: Checker,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    /// `fieldSelector(f)`, unparsed (empty: none).
    field_selector: String,
    /// `labelSelector(l)`, unparsed (empty: none).
    label_selector: String,
}

impl Opaque for ResourceCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.ResourceCheck"
    }
}

/// `authorizer.path(p)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PathCheck {
    checker: Checker,
    path: String,
}

impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.PathCheck"
    }
}

/// The answer of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CheckDecision {
    allowed: bool,
    reason: String,
}

impl Opaque for CheckDecision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

/// The request's own resource, for `authorizer.requestResource`.
#[derive(Clone, Debug, Default)]
pub struct RequestResource<'a> {
    /// API group.
    pub group: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, empty for none.
    pub subresource: &'a str,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: &'a str,
    /// Object name.
    pub name: &'a str,
}

/// The value of `authorizer` for `user`.
pub fn value(user: &Identity, authorize: &Authorize, request: &RequestResource<'_>) -> cel::Value {
    authorizer_value(
        Checker {
            user: user.clone(),
            authorize: authorize.clone(),
        },
        request,
    )
}

fn authorizer_value(checker: Checker, request: &RequestResource<'_>) -> cel::Value {
    let request_resource = ResourceCheck {
        checker: checker.clone(),
        group: request.group.to_owned(),
        resource: request.resource.to_owned(),
        subresource: request.subresource.to_owned(),
        namespace: request.namespace.to_owned(),
        name: request.name.to_owned(),
        field_selector: String::new(),
        label_selector: String::new(),
    };
    let entries = [
        (
            "requestResource",
            cel::Value::Opaque(Arc::new(request_resource)),
        ),
        (CHECKER_KEY, cel::Value::Opaque(Arc::new(checker))),
    ];
    let map: std::collections::HashMap<cel::objects::Key, cel::Value> = entries
        .into_iter()
        .map(|(k, v)| (cel::objects::Key::String(Arc::new(k.to_owned())), v))
        .collect();
    cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
}

/// Registers the calls on an evaluation context.
pub fn register(context: &mut cel::Context<'static>) {
    context.add_function("group", group);
    context.add_function("resource", resource);
    context.add_function("subresource", subresource);
    context.add_function("namespace", namespace);
    context.add_function("name", name);
    context.add_function("fieldSelector", field_selector);
    context.add_function("labelSelector", label_selector);
    context.add_function("path", path);
    context.add_function("serviceAccount", service_account);
    context.add_function("check", check);
    context.add_function("allowed", allowed);
    context.add_function("reason", reason);
    context.add_function("errored", errored);
    context.add_function("error", error);
}

type Result<T> = std::result::Result<T, ExecutionError>;

fn opaque<T: Clone + 'static>(ftx: &FunctionContext, value: &cel::Value, what: &str) -> Result<T> {
    match value {
        cel::Value::Opaque(o) => o
            .downcast_ref::<T>()
            .cloned()
            .ok_or_else(|| ftx.error(format!("no such overload: {what}"))),
        _ => Err(ftx.error(format!("no such overload: {what}"))),
    }
}

fn checker_of(ftx: &FunctionContext, value: &cel::Value) -> Result<Checker> {
    let cel::Value::Map(map) = value else {
        return Err(ftx.error("no such overload: Authorizer"));
    };
    let key = cel::objects::Key::String(Arc::new(CHECKER_KEY.to_owned()));
    match map.map.get(&key) {
        Some(inner) => opaque(ftx, inner, "Authorizer"),
        None => Err(ftx.error("no such overload: Authorizer")),
    }
}

fn group(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    group: Arc<String>,
) -> Result<cel::Value> {
    let checker = checker_of(ftx, &this)?;
    Ok(cel::Value::Opaque(Arc::new(GroupCheck {
        checker,
        group: group.to_string(),
    })))
}

fn resource(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    resource: Arc<String>,
) -> Result<cel::Value> {
    let g: GroupCheck = opaque(ftx, &this, "GroupCheck")?;
    Ok(cel::Value::Opaque(Arc::new(ResourceCheck {
        checker: g.checker,
        group: g.group,
        resource: resource.to_string(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        field_selector: String::new(),
        label_selector: String::new(),
    })))
}

fn with_resource(
    ftx: &FunctionContext,
    this: &cel::Value,
    set: impl FnOnce(&mut ResourceCheck),
) -> Result<cel::Value> {
    let mut r: ResourceCheck = opaque(ftx, this, "ResourceCheck")?;
    set(&mut r);
    Ok(cel::Value::Opaque(Arc::new(r)))
}

fn subresource(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    s: Arc<String>,
) -> Result<cel::Value> {
    with_resource(ftx, &this, |r| r.subresource = s.to_string())
}

fn namespace(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    s: Arc<String>,
) -> Result<cel::Value> {
    with_resource(ftx, &this, |r| r.namespace = s.to_string())
}

fn name(ftx: &FunctionContext, This(this): This<cel::Value>, s: Arc<String>) -> Result<cel::Value> {
    with_resource(ftx, &this, |r| r.name = s.to_string())
}

fn field_selector(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    s: Arc<String>,
) -> Result<cel::Value> {
    with_resource(ftx, &this, |r| r.field_selector = s.to_string())
}

fn label_selector(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    s: Arc<String>,
) -> Result<cel::Value> {
    with_resource(ftx, &this, |r| r.label_selector = s.to_string())
}

fn path(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    path: Arc<String>,
) -> Result<cel::Value> {
    let checker = checker_of(ftx, &this)?;
    Ok(cel::Value::Opaque(Arc::new(PathCheck {
        checker,
        path: path.to_string(),
    })))
}

/// The identity kube's service-account authenticator gives `namespace`/`name`.
fn service_account_identity(namespace: &str, name: &str) -> Identity {
    Identity {
        user: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{namespace}"),
            "system:authenticated".to_owned(),
        ],
        uid: String::new(),
        extra: Default::default(),
    }
}

fn service_account(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> Result<cel::Value> {
    let checker = checker_of(ftx, &this)?;
    let checker = Checker {
        user: service_account_identity(&namespace, &name),
        authorize: checker.authorize,
    };
    Ok(authorizer_value(checker, &RequestResource::default()))
}

fn check(
    ftx: &FunctionContext,
    This(this): This<cel::Value>,
    verb: Arc<String>,
) -> Result<cel::Value> {
    let (checker, attrs) = match &this {
        cel::Value::Opaque(o) if o.downcast_ref::<ResourceCheck>().is_some() => {
            let r: ResourceCheck = opaque(ftx, &this, "ResourceCheck")?;
            let attrs = Attributes::resource(
                r.checker.user.clone(),
                &verb,
                &r.group,
                &r.resource,
                &r.namespace,
            )
            .with_subresource(&r.subresource)
            .with_name(&r.name)
            .with_selectors(SelectorAttributes::parse(
                &r.field_selector,
                &r.label_selector,
            ));
            (r.checker, attrs)
        }
        _ => {
            let p: PathCheck = opaque(ftx, &this, "PathCheck")?;
            let attrs = Attributes::non_resource(p.checker.user.clone(), &verb, &p.path);
            (p.checker, attrs)
        }
    };
    let decision = (checker.authorize)(&attrs);
    Ok(cel::Value::Opaque(Arc::new(CheckDecision {
        allowed: decision.allowed,
        reason: decision.reason,
    })))
}

fn decision(ftx: &FunctionContext, this: &cel::Value) -> Result<CheckDecision> {
    opaque(ftx, this, "Decision")
}

fn allowed(ftx: &FunctionContext, This(this): This<cel::Value>) -> Result<bool> {
    Ok(decision(ftx, &this)?.allowed)
}

fn reason(ftx: &FunctionContext, This(this): This<cel::Value>) -> Result<Arc<String>> {
    Ok(Arc::new(decision(ftx, &this)?.reason))
}

/// This server's authorizer answers without errors (RBAC's resolution problems are part of
/// the reason, as kube's RBAC authorizer reports them; a selector that does not parse is an
/// attribute RBAC ignores, not an error).
fn errored(ftx: &FunctionContext, This(this): This<cel::Value>) -> Result<bool> {
    decision(ftx, &this).map(|_| false)
}

fn error(ftx: &FunctionContext, This(this): This<cel::Value>) -> Result<Arc<String>> {
    decision(ftx, &this).map(|_| Arc::new(String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allows `get` of configmaps in `ns` to `alice`, `get /healthz` to everyone, and
    /// everything to `system:serviceaccount:kube-system:admin`.
    fn authorize() -> Authorize {
        Arc::new(|attrs: &Attributes| {
            let allowed = match &attrs.target {
                ocm_apiserver_rbac::Target::Resource(r) => {
                    attrs.user.user == "system:serviceaccount:kube-system:admin"
                        || (attrs.user.user == "alice"
                            && attrs.verb == "get"
                            && r.resource == "configmaps"
                            && r.namespace == "ns"
                            && r.subresource.is_empty())
                }
                ocm_apiserver_rbac::Target::NonResource { path } => path == "/healthz",
            };
            Decision {
                allowed,
                reason: if allowed { "yes".into() } else { String::new() },
            }
        })
    }

    fn eval(expression: &str) -> std::result::Result<cel::Value, String> {
        eval_with(&authorize(), expression)
    }

    fn eval_with(
        authorize: &Authorize,
        expression: &str,
    ) -> std::result::Result<cel::Value, String> {
        let mut context = cel::Context::default();
        register(&mut context);
        let alice = Identity {
            user: "alice".into(),
            groups: vec![],
            uid: String::new(),
            extra: Default::default(),
        };
        let request = RequestResource {
            group: "",
            resource: "configmaps",
            subresource: "",
            namespace: "ns",
            name: "a",
        };
        context.add_variable_from_value("authorizer", value(&alice, authorize, &request));
        let program = cel::Program::compile(expression).map_err(|e| e.to_string())?;
        program.execute(&context).map_err(|e| e.to_string())
    }

    #[test]
    fn resource_and_path_checks_ask_the_authorizer() {
        let yes = cel::Value::Bool(true);
        let no = cel::Value::Bool(false);
        assert_eq!(
            eval(
                "authorizer.group('').resource('configmaps').namespace('ns').check('get').allowed()"
            ),
            Ok(yes.clone())
        );
        assert_eq!(
            eval(
                "authorizer.group('').resource('configmaps').namespace('other').check('get').allowed()"
            ),
            Ok(no.clone())
        );
        assert_eq!(
            eval(
                "authorizer.group('').resource('configmaps').subresource('status').namespace('ns').name('a').check('get').allowed()"
            ),
            Ok(no.clone())
        );
        assert_eq!(
            eval("authorizer.requestResource.check('get').allowed()"),
            Ok(yes.clone())
        );
        assert_eq!(
            eval("authorizer.requestResource.check('delete').allowed()"),
            Ok(no.clone())
        );
        assert_eq!(
            eval("authorizer.path('/healthz').check('get').allowed()"),
            Ok(yes.clone())
        );
        assert_eq!(
            eval("authorizer.path('/metrics').check('get').allowed()"),
            Ok(no)
        );
        assert_eq!(
            eval(
                "authorizer.serviceAccount('kube-system', 'admin').group('apps').resource('deployments').check('delete').allowed()"
            ),
            Ok(yes)
        );
        assert_eq!(
            eval("authorizer.requestResource.check('get').reason()"),
            Ok(cel::Value::String(Arc::new("yes".into())))
        );
        assert_eq!(
            eval("authorizer.requestResource.check('get').errored()"),
            Ok(cel::Value::Bool(false))
        );
    }

    #[test]
    fn the_calls_need_the_values_they_are_made_for() {
        assert!(eval("'x'.group('apps')").is_err());
        assert!(eval("authorizer.group('apps').check('get')").is_err());
        assert!(eval("'x'.fieldSelector('a=b')").is_err());
        assert!(eval("authorizer.group('').labelSelector('a=b')").is_err());
        assert!(eval("authorizer.path('/healthz').fieldSelector('a=b')").is_err());
    }

    /// An authorizer allowing everything that records the attributes it is asked about.
    fn recording() -> (Authorize, Arc<std::sync::Mutex<Vec<Attributes>>>) {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let authorize: Authorize = Arc::new(move |attrs: &Attributes| {
            log.lock().unwrap().push(attrs.clone());
            Decision {
                allowed: true,
                reason: String::new(),
            }
        });
        (authorize, seen)
    }

    /// The selectors of the only check `expression` makes.
    fn selectors_checked(expression: &str) -> SelectorAttributes {
        let (authorize, seen) = recording();
        assert_eq!(
            eval_with(&authorize, expression),
            Ok(cel::Value::Bool(true)),
            "{expression}"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{expression}");
        match &seen[0].target {
            ocm_apiserver_rbac::Target::Resource(r) => r.selectors.clone(),
            other => panic!("not a resource check: {other:?}"),
        }
    }

    #[test]
    fn selectors_reach_the_authorizer_parsed() {
        use ocm_apiserver_selector::{FieldSelector, LabelSelector};
        let checked = selectors_checked(
            "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=x').labelSelector('app in (a,b),!tier').check('list').allowed()",
        );
        let field = FieldSelector::parse("spec.nodeName=x").unwrap();
        assert_eq!(field.exact_match("spec.nodeName"), Some("x"));
        let label = LabelSelector::parse("app in (a,b),!tier").unwrap();
        assert_eq!(label.requirements().len(), 2);
        assert_eq!(
            checked,
            SelectorAttributes {
                field: Some(Ok(field)),
                label: Some(Ok(label)),
            }
        );
        // The request's own resource takes selectors too; the last call of each wins.
        let checked = selectors_checked(
            "authorizer.requestResource.labelSelector('a=b').labelSelector('c=d').check('list').allowed()",
        );
        assert_eq!(checked.field, None);
        assert_eq!(checked.label, Some(LabelSelector::parse("c=d")));
        // No selector, or an empty one, is none.
        for expression in [
            "authorizer.group('').resource('pods').check('list').allowed()",
            "authorizer.group('').resource('pods').fieldSelector('').labelSelector('').check('list').allowed()",
        ] {
            assert_eq!(
                selectors_checked(expression),
                SelectorAttributes::default(),
                "{expression}"
            );
        }
    }

    #[test]
    fn selectors_that_do_not_parse_reach_the_authorizer_as_errors() {
        let checked = selectors_checked(
            "authorizer.group('').resource('pods').fieldSelector('spec.nodeName').labelSelector('a in (').check('list').allowed()",
        );
        let field = checked.field.unwrap().unwrap_err();
        assert_eq!(
            field.message,
            "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"
        );
        let label = checked.label.unwrap().unwrap_err();
        assert!(
            label.message.starts_with("unable to parse requirement"),
            "{}",
            label.message
        );
        // Kube's check is no error either: the authorizers get the parse errors and decide
        // (RBAC ignoring selectors), so the decision is the one without the selectors.
        for (expression, expected) in [
            (
                "authorizer.group('').resource('configmaps').namespace('ns').fieldSelector('bad').labelSelector('x in (').check('get').allowed()",
                cel::Value::Bool(true),
            ),
            (
                "authorizer.group('').resource('configmaps').namespace('ns').fieldSelector('bad').check('get').errored()",
                cel::Value::Bool(false),
            ),
            (
                "authorizer.group('').resource('configmaps').namespace('ns').labelSelector('x in (').check('get').error()",
                cel::Value::String(Arc::new(String::new())),
            ),
            (
                "authorizer.group('').resource('configmaps').namespace('other').fieldSelector('a=b').check('get').allowed()",
                cel::Value::Bool(false),
            ),
        ] {
            assert_eq!(eval(expression), Ok(expected), "{expression}");
        }
    }
}

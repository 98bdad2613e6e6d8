//! CEL predicates: `celSelector.celExpressions` evaluated against each candidate cluster.
//!
//! The environment follows upstream OCM: the variable `managedCluster` is the ManagedCluster as
//! a map (its JSON form); the Kubernetes CEL libraries come from `kube-cel` (strings, lists,
//! sets, regex, URLs, IP/CIDR, semver, format, quantity, math, encoders) on top of the
//! standard functions of the `cel` crate, with optional syntax (`?.`, `[?]`) enabled; two OCM
//! functions are added:
//!
//! - `managedCluster.scores("<AddOnPlacementScore name>")` — the scores of that
//!   AddOnPlacementScore in the cluster's namespace, as a list of `{name, value}` maps (upstream
//!   returns exactly these two keys; its doc comment also mentions `quantity`, which neither
//!   upstream nor the `AddOnPlacementScoreItem` API has). A missing score object is an
//!   evaluation error, so the expression does not match. `validUntil` is not consulted, as
//!   upstream.
//! - `"<json>".parseJSON()` — the JSON document as a CEL value (numbers become doubles, as Go's
//!   `encoding/json` makes them).
//!
//! "Compiling" parses the expression and then checks it statically as far as the dynamic `cel`
//! crate allows: every identifier must be `managedCluster` or a comprehension variable in
//! scope, and every called function must be known. Both are compile errors upstream (cel-go's
//! type checker: `undeclared reference to '<name>'`), so they make the placement
//! Misconfigured here too. Type errors that cel-go's checker would find (`1 + "a"`) surface only
//! at evaluation, where they make the expression not match. There is no cost limit.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::common::value::Val;
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::parser::Parser;
use kube_cel::cel::{Context, ExecutionError, ResolveResult, Value};
use ocm_api::cluster::v1::ManagedCluster;

use super::snapshot::ScoreIndex;

/// Name of the variable holding the cluster.
const CLUSTER_VAR: &str = "managedCluster";

/// The root CEL context: every function, no variables.
pub(crate) struct CelEnv {
    root: Context<'static>,
}

/// A parsed and checked CEL expression.
#[derive(Clone, Debug)]
pub(crate) struct CompiledCel {
    expr: IdedExpr,
}

impl CelEnv {
    /// Builds the environment; `scores` backs `managedCluster.scores(..)`.
    pub(crate) fn new(scores: Arc<ScoreIndex>) -> Self {
        let mut root = Context::default();
        root.register_all();
        root.add_function(
            "scores",
            move |This(this): This<Value>, name: Arc<String>| -> ResolveResult {
                cluster_scores(&scores, &this, &name)
            },
        );
        root.add_function(
            "parseJSON",
            |This(this): This<Arc<String>>| -> ResolveResult {
                let parsed: serde_json::Value = serde_json::from_str(&this).map_err(|e| {
                    ExecutionError::function_error(
                        "parseJSON",
                        format!("failed to parse json: {e}"),
                    )
                })?;
                Ok(json_to_cel(&parsed, true))
            },
        );
        CelEnv { root }
    }

    /// Parses and checks `source`; the error reads like upstream's
    /// (`compilation failed: ERROR: <input>:1:5: ...`).
    pub(crate) fn compile(&self, source: &str) -> Result<CompiledCel, String> {
        let expr = Parser::new()
            .enable_optional_syntax(true)
            .parse(source)
            .map_err(|e| format!("compilation failed: {e}"))?;
        let mut problems = Vec::new();
        let mut scope = Vec::new();
        check(&expr, &mut scope, &mut problems);
        if !problems.is_empty() {
            let lines: Vec<String> = problems
                .iter()
                .map(|p| format!("ERROR: <input>: {p}"))
                .collect();
            return Err(format!("compilation failed: {}", lines.join("\n")));
        }
        Ok(CompiledCel { expr })
    }

    /// A context with `managedCluster` bound to `cluster`.
    pub(crate) fn bind(&self, cluster: Box<dyn Val>) -> Context<'_> {
        let mut variables = BTreeMap::new();
        variables.insert(CLUSTER_VAR.to_string(), cluster);
        Context::Child {
            parent: &self.root,
            variables,
            resolver: None,
        }
    }

    /// Takes the cluster back out of a context made by [`CelEnv::bind`].
    pub(crate) fn unbind(ctx: Context<'_>) -> Option<Box<dyn Val>> {
        match ctx {
            Context::Child { mut variables, .. } => variables.remove(CLUSTER_VAR),
            Context::Root { .. } => None,
        }
    }
}

impl CompiledCel {
    /// Evaluates the expression in `ctx`: `Ok(true)` only for the boolean `true`.
    pub(crate) fn evaluate(&self, ctx: &Context<'_>) -> Result<bool, String> {
        match ctx.resolve(&self.expr) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("expression returned {other:?}, not a bool")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The cluster as a CEL value: its JSON form (integers stay integers as in Go's unstructured
/// objects), without `metadata.managedFields` (bookkeeping of the API server that is large,
/// costly to convert, and of no use to a selector).
pub(crate) fn cluster_value(cluster: &ManagedCluster) -> Result<Box<dyn Val>, String> {
    let mut json =
        serde_json::to_value(cluster).map_err(|e| format!("failed to convert cluster: {e}"))?;
    if let Some(metadata) = json
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        metadata.remove("managedFields");
    }
    Box::<dyn Val>::try_from(json_to_cel(&json, false))
        .map_err(|e| format!("failed to convert cluster: {e}"))
}

fn json_to_cel(value: &serde_json::Value, numbers_as_double: bool) -> Value {
    match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (numbers_as_double, n.as_i64()) {
            (false, Some(i)) => Value::Int(i),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => Value::List(Arc::new(
            items
                .iter()
                .map(|v| json_to_cel(v, numbers_as_double))
                .collect(),
        )),
        serde_json::Value::Object(fields) => Value::Map(Map {
            map: Arc::new(
                fields
                    .iter()
                    .map(|(k, v)| {
                        (
                            Key::String(Arc::new(k.clone())),
                            json_to_cel(v, numbers_as_double),
                        )
                    })
                    .collect(),
            ),
        }),
    }
}

fn map_get<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Map(map) => map.get(&Key::String(Arc::new(key.to_string()))),
        _ => None,
    }
}

fn cluster_scores(scores: &ScoreIndex, cluster: &Value, resource: &str) -> ResolveResult {
    let fail = |msg: String| ExecutionError::function_error("scores", msg);
    let metadata = map_get(cluster, "metadata")
        .ok_or_else(|| fail("failed to get cluster metadata".into()))?;
    let Some(Value::String(name)) = map_get(metadata, "name") else {
        return Err(fail("failed to get cluster name".into()));
    };
    let object = scores
        .cluster_index
        .get(name.as_str())
        .and_then(|&i| scores.get(resource, i))
        .ok_or_else(|| {
            fail(format!(
                "failed to get score: addonplacementscores.cluster.open-cluster-management.io {resource:?} not found"
            ))
        })?;
    let items = object
        .status
        .as_ref()
        .map(|s| s.scores.as_slice())
        .unwrap_or_default();
    let list = items
        .iter()
        .map(|item| {
            let mut map = HashMap::new();
            map.insert(
                Key::String(Arc::new("name".into())),
                Value::String(Arc::new(item.name.clone())),
            );
            map.insert(
                Key::String(Arc::new("value".into())),
                Value::Int(i64::from(item.value)),
            );
            Value::Map(Map { map: Arc::new(map) })
        })
        .collect();
    Ok(Value::List(Arc::new(list)))
}

/// Functions of the standard library of the `cel` crate, of `kube-cel`, and of OCM. Namespaced
/// ones (`sets.contains`) are listed with their namespace.
const KNOWN_FUNCTIONS: &[&str] = &[
    // cel crate
    "contains",
    "size",
    "max",
    "min",
    "startsWith",
    "endsWith",
    "string",
    "bytes",
    "double",
    "int",
    "uint",
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "value",
    "hasValue",
    "or",
    "orValue",
    "matches",
    "duration",
    "timestamp",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    // kube-cel
    "add",
    "asApproximateFloat",
    "asInteger",
    "base64.decode",
    "base64.encode",
    "charAt",
    "cidr",
    "compareTo",
    "containsCIDR",
    "containsIP",
    "distinct",
    "family",
    "find",
    "findAll",
    "first",
    "flatten",
    "format",
    "format.byte",
    "format.date",
    "format.datetime",
    "format.dns1035Label",
    "format.dns1035LabelPrefix",
    "format.dns1123Label",
    "format.dns1123LabelPrefix",
    "format.dns1123Subdomain",
    "format.dns1123SubdomainPrefix",
    "format.labelValue",
    "format.named",
    "format.qualifiedName",
    "format.uri",
    "format.uuid",
    "getEscapedPath",
    "getHost",
    "getHostname",
    "getPort",
    "getQuery",
    "getScheme",
    "indexOf",
    "ip",
    "ip.isCanonical",
    "isCIDR",
    "isCIDRv4",
    "isCIDRv6",
    "isGlobalUnicast",
    "isGreaterThan",
    "isIP",
    "isIPv4",
    "isIPv6",
    "isInteger",
    "isLessThan",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isLoopback",
    "isQuantity",
    "isSemver",
    "isSorted",
    "isURL",
    "isUnspecified",
    "join",
    "jsonpatch.escapeKey",
    "last",
    "lastIndexOf",
    "lists.range",
    "lowerAscii",
    "major",
    "masked",
    "math.abs",
    "math.bitAnd",
    "math.bitNot",
    "math.bitOr",
    "math.bitShiftLeft",
    "math.bitShiftRight",
    "math.bitXor",
    "math.ceil",
    "math.floor",
    "math.greatest",
    "math.isFinite",
    "math.isInf",
    "math.isNaN",
    "math.least",
    "math.round",
    "math.sign",
    "math.sqrt",
    "math.trunc",
    "minor",
    "patch",
    "prefixLength",
    "quantity",
    "replace",
    "reverse",
    "semver",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    "sign",
    "slice",
    "sort",
    "split",
    "strings.quote",
    "sub",
    "substring",
    "sum",
    "trim",
    "upperAscii",
    "url",
    "validate",
    // OCM
    "scores",
    "parseJSON",
];

fn is_known_function(name: &str) -> bool {
    KNOWN_FUNCTIONS.contains(&name)
}

/// Operators the interpreter handles itself (`_&&_`, `@in`, `!_`, `-_`, ...).
fn is_operator(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('@') || name == "!_" || name == "-_"
}

/// Walks `expr` and records undeclared identifiers and unknown functions.
fn check(expr: &IdedExpr, scope: &mut Vec<String>, problems: &mut Vec<String>) {
    match &expr.expr {
        Expr::Unspecified | Expr::Literal(_) => {}
        Expr::Ident(name) => {
            if name != CLUSTER_VAR && !name.starts_with('@') && !scope.iter().any(|s| s == name) {
                problems.push(format!(
                    "undeclared reference to '{name}' (in container '')"
                ));
            }
        }
        Expr::Select(select) => check(&select.operand, scope, problems),
        Expr::Call(call) => {
            if !is_operator(&call.func_name) {
                let namespaced = match call.target.as_deref().map(|t| &t.expr) {
                    Some(Expr::Ident(prefix)) if !scope.iter().any(|s| s == prefix) => {
                        is_known_function(&format!("{prefix}.{}", call.func_name))
                    }
                    _ => false,
                };
                if !namespaced {
                    if let Some(target) = call.target.as_deref() {
                        check(target, scope, problems);
                    }
                    if !is_known_function(&call.func_name) {
                        problems.push(format!(
                            "undeclared reference to '{}' (in container '')",
                            call.func_name
                        ));
                    }
                }
            } else if let Some(target) = call.target.as_deref() {
                check(target, scope, problems);
            }
            for arg in &call.args {
                check(arg, scope, problems);
            }
        }
        Expr::Comprehension(c) => {
            check(&c.iter_range, scope, problems);
            check(&c.accu_init, scope, problems);
            let depth = scope.len();
            scope.push(c.iter_var.clone());
            if let Some(v) = &c.iter_var2 {
                scope.push(v.clone());
            }
            scope.push(c.accu_var.clone());
            check(&c.loop_cond, scope, problems);
            check(&c.loop_step, scope, problems);
            check(&c.result, scope, problems);
            scope.truncate(depth);
        }
        Expr::List(list) => {
            for e in &list.elements {
                check(e, scope, problems);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                check_entry(&entry.expr, scope, problems);
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                check_entry(&entry.expr, scope, problems);
            }
        }
    }
}

fn check_entry(entry: &EntryExpr, scope: &mut Vec<String>, problems: &mut Vec<String>) {
    match entry {
        EntryExpr::StructField(field) => check(&field.value, scope, problems),
        EntryExpr::MapEntry(e) => {
            check(&e.key, scope, problems);
            check(&e.value, scope, problems);
        }
    }
}

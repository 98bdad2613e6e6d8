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
use kube_cel::cel::common::ast::IdedExpr;
use kube_cel::cel::common::value::Val;
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::parser::Parser;
use kube_cel::cel::{Context, ExecutionError, ResolveResult, Value};
use ocm_api::cluster::v1::ManagedCluster;

use super::scores::ScoreIndex;
use crate::cel_check::{json_to_cel, undeclared_references};

/// The functions OCM adds to placement's CEL environment.
const OCM_FUNCTIONS: &[&str] = &["scores", "parseJSON"];

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
        let problems = undeclared_references(&expr, &[CLUSTER_VAR], OCM_FUNCTIONS);
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

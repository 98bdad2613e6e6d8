//! Shared CEL support for the places OCM evaluates CEL (placement's `celSelector`, work's
//! condition rules): a static check of parsed expressions that reports what cel-go's type
//! checker reports as `undeclared reference`, and the conversion of JSON documents to CEL
//! values.

use std::sync::Arc;

use kube_cel::cel::Value;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::objects::{Key, Map};

/// What an expression may refer to besides the standard and Kubernetes functions.
struct Env<'a> {
    variables: &'a [&'a str],
    functions: &'a [&'a str],
}

impl Env<'_> {
    fn is_known_function(&self, name: &str) -> bool {
        KNOWN_FUNCTIONS.contains(&name) || self.functions.contains(&name)
    }
}

/// Problems of `expr` in the form cel-go's checker reports them
/// (`undeclared reference to '<name>' (in container '')`): identifiers other than
/// `variables` and comprehension variables, and functions that are neither standard,
/// Kubernetes' nor in `functions`. Empty when the expression is fine.
pub fn undeclared_references(
    expr: &IdedExpr,
    variables: &[&str],
    functions: &[&str],
) -> Vec<String> {
    let env = Env {
        variables,
        functions,
    };
    let mut problems = Vec::new();
    check(expr, &env, &mut Vec::new(), &mut problems);
    problems
}

/// Functions of the standard library of the `cel` crate and of `kube-cel`. Namespaced ones
/// (`sets.contains`) are listed with their namespace.
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
];

/// Operators the interpreter handles itself (`_&&_`, `@in`, `!_`, `-_`, ...).
fn is_operator(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('@') || name == "!_" || name == "-_"
}

/// Walks `expr` and records undeclared identifiers and unknown functions.
fn check(expr: &IdedExpr, env: &Env<'_>, scope: &mut Vec<String>, problems: &mut Vec<String>) {
    match &expr.expr {
        Expr::Unspecified | Expr::Literal(_) => {}
        Expr::Ident(name) => {
            if !env.variables.contains(&name.as_str())
                && !name.starts_with('@')
                && !scope.iter().any(|s| s == name)
            {
                problems.push(format!(
                    "undeclared reference to '{name}' (in container '')"
                ));
            }
        }
        Expr::Select(select) => check(&select.operand, env, scope, problems),
        Expr::Call(call) => {
            if !is_operator(&call.func_name) {
                let namespaced = match call.target.as_deref().map(|t| &t.expr) {
                    Some(Expr::Ident(prefix)) if !scope.iter().any(|s| s == prefix) => {
                        env.is_known_function(&format!("{prefix}.{}", call.func_name))
                    }
                    _ => false,
                };
                if !namespaced {
                    if let Some(target) = call.target.as_deref() {
                        check(target, env, scope, problems);
                    }
                    if !env.is_known_function(&call.func_name) {
                        problems.push(format!(
                            "undeclared reference to '{}' (in container '')",
                            call.func_name
                        ));
                    }
                }
            } else if let Some(target) = call.target.as_deref() {
                check(target, env, scope, problems);
            }
            for arg in &call.args {
                check(arg, env, scope, problems);
            }
        }
        Expr::Comprehension(c) => {
            check(&c.iter_range, env, scope, problems);
            check(&c.accu_init, env, scope, problems);
            let depth = scope.len();
            scope.push(c.iter_var.clone());
            if let Some(v) = &c.iter_var2 {
                scope.push(v.clone());
            }
            scope.push(c.accu_var.clone());
            check(&c.loop_cond, env, scope, problems);
            check(&c.loop_step, env, scope, problems);
            check(&c.result, env, scope, problems);
            scope.truncate(depth);
        }
        Expr::List(list) => {
            for e in &list.elements {
                check(e, env, scope, problems);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                check_entry(&entry.expr, env, scope, problems);
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                check_entry(&entry.expr, env, scope, problems);
            }
        }
    }
}

fn check_entry(
    entry: &EntryExpr,
    env: &Env<'_>,
    scope: &mut Vec<String>,
    problems: &mut Vec<String>,
) {
    match entry {
        EntryExpr::StructField(field) => check(&field.value, env, scope, problems),
        EntryExpr::MapEntry(e) => {
            check(&e.key, env, scope, problems);
            check(&e.value, env, scope, problems);
        }
    }
}

/// A JSON document as a CEL value; integers stay integers (as in Go's unstructured objects)
/// unless `numbers_as_double` (as Go's `encoding/json` decodes into `any`).
pub fn json_to_cel(value: &serde_json::Value, numbers_as_double: bool) -> Value {
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

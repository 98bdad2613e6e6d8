//! The CEL of admission expressions (ValidatingAdmissionPolicy and webhook `matchConditions`):
//! compiling expressions (with kube's check that every variable an expression names is
//! declared), turning JSON into CEL values, and evaluating with the policy's variables bound. Built on the `cel` crate `kube_cel` re-exports, with the
//! Kubernetes CEL libraries registered.

pub mod authorizer;

use std::sync::Arc;

use kube_cel::KubeCelExt as _;
use kube_cel::cel::{
    self, Program, common::ast::EntryExpr, common::ast::Expr, common::ast::IdedExpr,
};
use serde_json::Value;

/// A compiled expression, or why it does not compile.
pub type CompiledExpression = Result<Arc<Program>, String>;

/// Compiles an expression (syntax only; see [`check`] for the declared variables).
pub fn compile(expression: &str) -> CompiledExpression {
    Program::compile(expression)
        .map(Arc::new)
        .map_err(|err| err.to_string())
}

/// The variables of a validation, variable or audit-annotation expression (`params` only
/// when the policy has a `paramKind`).
pub fn declared(has_params: bool) -> Vec<&'static str> {
    let mut names = vec![
        "object",
        "oldObject",
        "request",
        "namespaceObject",
        "authorizer",
        "variables",
    ];
    if has_params {
        names.push("params");
    }
    names
}

/// Checks an expression as kube-apiserver does when a policy is written: it must parse, and
/// every variable it names must be declared. The error is kube's detail
/// (`compilation failed: ERROR: <input>:1:1: ...`).
pub fn check(expression: &str, declared: &[&str]) -> Result<(), String> {
    let program =
        Program::compile(expression).map_err(|err| format!("compilation failed: {err}"))?;
    let mut scope = Vec::new();
    if let Some(name) = undeclared(program.expression(), declared, &mut scope) {
        let at =
            ocm_apiserver_schema::cel_source::ident_position(expression, &name).unwrap_or((1, 0));
        let message = format!("undeclared reference to '{name}' (in container '')");
        return Err(format!(
            "compilation failed: {}",
            ocm_apiserver_schema::cel_source::error_at(expression, at, &message)
        ));
    }
    Ok(())
}

/// The first identifier of `expr` that is neither declared nor a comprehension variable in
/// scope.
fn undeclared(expr: &IdedExpr, declared: &[&str], scope: &mut Vec<String>) -> Option<String> {
    match &expr.expr {
        Expr::Ident(name) => {
            let known = name.starts_with('@')
                || declared.contains(&name.as_str())
                || scope.iter().any(|s| s == name);
            (!known).then(|| name.clone())
        }
        Expr::Call(call) => call
            .target
            .as_deref()
            .and_then(|t| undeclared(t, declared, scope))
            .or_else(|| {
                call.args
                    .iter()
                    .find_map(|a| undeclared(a, declared, scope))
            }),
        Expr::Comprehension(comp) => {
            if let Some(name) = undeclared(&comp.iter_range, declared, scope) {
                return Some(name);
            }
            if let Some(name) = undeclared(&comp.accu_init, declared, scope) {
                return Some(name);
            }
            let depth = scope.len();
            scope.push(comp.iter_var.clone());
            if let Some(v2) = &comp.iter_var2 {
                scope.push(v2.clone());
            }
            scope.push(comp.accu_var.clone());
            let found = [&comp.loop_cond, &comp.loop_step, &comp.result]
                .into_iter()
                .find_map(|e| undeclared(e, declared, scope));
            scope.truncate(depth);
            found
        }
        Expr::List(list) => list
            .elements
            .iter()
            .find_map(|e| undeclared(e, declared, scope)),
        Expr::Map(map) => map.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::StructField(field) => undeclared(&field.value, declared, scope),
            EntryExpr::MapEntry(e) => undeclared(&e.key, declared, scope)
                .or_else(|| undeclared(&e.value, declared, scope)),
        }),
        Expr::Struct(s) => s.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::StructField(field) => undeclared(&field.value, declared, scope),
            EntryExpr::MapEntry(e) => undeclared(&e.key, declared, scope)
                .or_else(|| undeclared(&e.value, declared, scope)),
        }),
        Expr::Select(select) => undeclared(&select.operand, declared, scope),
        Expr::Literal(_) | Expr::Unspecified => None,
    }
}

pub use ocm_apiserver_schema::to_cel;

/// An evaluation environment: the Kubernetes CEL libraries and the bound variables.
pub struct Activation {
    context: cel::Context<'static>,
    variables: Vec<(String, cel::Value)>,
    /// Every bound name and value (`variables` as one map), for costing expressions.
    bound: Vec<(String, cel::Value)>,
}

impl Activation {
    /// An environment with `bindings` (name, JSON value) bound and no `variables` yet.
    pub fn new(bindings: &[(&str, &Value)]) -> Activation {
        let mut context = cel::Context::default();
        context.register_all();
        authorizer::register(&mut context);
        let mut act = Activation {
            context,
            variables: Vec::new(),
            bound: Vec::new(),
        };
        for (name, value) in bindings {
            act.bind_value(name, to_cel(value));
        }
        act.bind_value("variables", ocm_apiserver_schema::cel_map(Vec::new()));
        act
    }

    /// Binds `name` to a CEL value (one that is not JSON, such as `authorizer`).
    pub fn bind_value(&mut self, name: &str, value: cel::Value) {
        self.bound.retain(|(n, _)| n != name);
        self.bound.push((name.to_owned(), value.clone()));
        bind(&mut self.context, name, value);
    }

    /// Adds `variables.<name>` for the expressions evaluated afterwards.
    pub fn add_variable(&mut self, name: &str, value: cel::Value) {
        self.variables.push((name.to_owned(), value));
        let map = ocm_apiserver_schema::cel_map(self.variables.clone());
        self.bind_value("variables", map);
    }

    /// The largest cost of evaluating `program` with the values bound now (see
    /// [`ocm_apiserver_schema::cel_cost`]).
    pub(crate) fn cost(&self, program: &Program) -> u64 {
        let vars = self.bound.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let sizes = ocm_apiserver_schema::cel_cost::ValueSizes::new(vars);
        ocm_apiserver_schema::cel_cost::estimate(program.expression(), &sizes)
    }

    /// Evaluates a program; the error is the CEL runtime error in cel-go's lower-case style.
    pub fn eval(&self, program: &Program) -> Result<cel::Value, String> {
        program
            .execute(&self.context)
            .map_err(|err| lower_first(&err.to_string()))
    }
}

fn bind(context: &mut cel::Context<'static>, name: &str, value: cel::Value) {
    if let Err(never) = context.add_variable(name, value) {
        match never {}
    }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn check_refuses_syntax_errors_and_undeclared_variables() {
        let vars = declared(false);
        assert!(check("object.metadata.name == 'a'", &vars).is_ok());
        assert!(check("object.data.all(k, k.startsWith('x'))", &vars).is_ok());
        assert!(check("[1, 2].map(x, x * 2).exists(y, y > object.n)", &vars).is_ok());
        let err = check("object.x ==", &vars).unwrap_err();
        assert!(
            err.starts_with("compilation failed: ERROR: <input>:1:"),
            "{err}"
        );
        let err = check("params.max > 1", &vars).unwrap_err();
        assert_eq!(
            err,
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.max > 1\n | ^"
        );
        assert!(check("params.max > 1", &declared(true)).is_ok());
        let err = check("object.n > 1 && params.max > 1", &vars).unwrap_err();
        assert_eq!(
            err,
            "compilation failed: ERROR: <input>:1:17: undeclared reference to 'params' (in container '')\n | object.n > 1 && params.max > 1\n | ................^"
        );
    }

    #[test]
    fn evaluates_with_variables() {
        let object = json!({"data": {"a": "1"}, "n": 3});
        let mut act = Activation::new(&[("object", &object)]);
        let v = compile("size(object.data)").unwrap();
        let size = act.eval(&v).unwrap();
        act.add_variable("size", size);
        let p = compile("variables.size == 1 && object.n > 2").unwrap();
        assert_eq!(act.eval(&p), Ok(cel::Value::Bool(true)));
        let missing = compile("object.data.b == '1'").unwrap();
        assert_eq!(act.eval(&missing), Err("no such key: b".to_owned()));
    }
}

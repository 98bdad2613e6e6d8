//! kube's CEL type check, for what a CRD write and a ValidatingAdmissionPolicy's
//! `status.typeChecking` need: an expression is walked against the structural schemas of its
//! variables and cel-go's errors are reported, at cel-go's positions —
//! `undefined field '<name>'`, `found no matching overload for '_>_' applied to '(string, int)'`,
//! `expected type 'bool' but found 'int'` (operands of `&&`, `||`, `all`, `exists`),
//! `type 'string' does not support field selection` and `expression of type 'int' cannot be
//! range of a comprehension (must be list, map, or dynamic)` — together with the expression's
//! result type when it is known.
//!
//! Types follow the structural schema as kube declares them to CEL: `integer` is `int`,
//! `number` `double`, `boolean` `bool`, `string` `string` (`bytes` for format `byte`,
//! `duration` for `duration`, `timestamp` for `date` and `date-time`), an array
//! `list(<items>)`, an object with `additionalProperties` `map(string, <values>)`, an object
//! with `properties` exactly those fields (named by its path: `selfType1.spec`,
//! `selfType1.spec.ports.@idx`); the root also has `apiVersion`, `kind` and `metadata` (for
//! CRD rules only `name` and `generateName`). Anything else — `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-int-or-string`, embedded resources, schemas without a plain `type`,
//! `variables`, functions not listed in [`super::cel_types`] — is `dyn` and never an error.
//! Property names are matched after kube's escaping (`x__dash__prop` is `x-prop`,
//! `__namespace__` is `namespace`).

use std::borrow::Cow;
use std::collections::HashMap;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::{Map, Value};

use super::cel_types::{Applied, Ty, agree, function, join, operator};
use crate::cel_locate::{Position, locate, macro_parts};

/// A variable of an expression whose type is a schema.
#[derive(Clone, Copy, Debug)]
pub struct Variable<'a> {
    /// Its name (`self`, `object`, `params`…).
    pub name: &'a str,
    /// Its schema.
    pub schema: &'a Value,
    /// The type name kube gives its object type (`selfType123`, `Deployment123`).
    pub type_name: &'a str,
    /// Whether it is an optional of that type (`oldSelf` with `optionalOldSelf`).
    pub optional: bool,
}

/// What the variables of an expression are, for [`check`].
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    /// The variables whose type is a schema; others are `dyn`.
    pub variables: &'a [Variable<'a>],
    /// Whether those schemas are whole objects: then `apiVersion` and `kind` are fields, and
    /// `metadata` is `metadata` below, unless the schema declares its own.
    pub objects: bool,
    /// `metadata` of those objects: `None` for CRD rules (only `name` and `generateName`), or
    /// the ObjectMeta schema.
    pub metadata: Option<&'a Value>,
    /// The definitions `$ref`s point into (`#/definitions/<name>`), for built-in kinds.
    pub definitions: Option<&'a Map<String, Value>>,
}

/// What checking an expression found.
#[derive(Debug, Default)]
pub struct Checked {
    /// cel-go's report of the errors, one `ERROR: <input>:line:col: ...` with source line and
    /// caret each, in source order; `None` when there are none.
    pub errors: Option<String>,
    /// The expression's result type (`bool`, `int`, `list(string)`…) when it is known.
    pub result: Option<String>,
}

/// A variable bound by a comprehension (`all`, `exists`, `map`, `filter`…).
struct Binding<'a> {
    name: &'a str,
    ty: Ty<'a>,
}

struct Checker<'a> {
    env: Env<'a>,
    positions: HashMap<u64, Position>,
    errors: Vec<(Position, String)>,
}

fn is_object_with_fields(schema: &Value) -> bool {
    let flag = |k: &str| schema.get(k).and_then(Value::as_bool).unwrap_or(false);
    schema.get("properties").is_some_and(Value::is_object)
        && !flag("x-kubernetes-preserve-unknown-fields")
        && !flag("x-kubernetes-embedded-resource")
        && !flag("x-kubernetes-int-or-string")
        && schema
            .get("additionalProperties")
            .is_none_or(|a| a == &Value::Bool(false))
}

impl<'a> Checker<'a> {
    /// The schema a node stands for: its `$ref` target (also through a lone `allOf` or an
    /// `anyOf` of one schema and null).
    fn resolve(&self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..8 {
            if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
                let name = target.strip_prefix("#/definitions/").unwrap_or(target);
                match self.env.definitions.and_then(|d| d.get(name)) {
                    Some(found) => schema = found,
                    None => return schema,
                }
                continue;
            }
            let single = |key: &str| {
                let items = schema.get(key)?.as_array()?;
                let mut real = items
                    .iter()
                    .filter(|i| i.get("type").and_then(Value::as_str) != Some("null"));
                let first = real.next()?;
                real.next().is_none().then_some(first)
            };
            match single("allOf").or_else(|| single("anyOf")) {
                Some(inner) if !schema.get("properties").is_some_and(Value::is_object) => {
                    schema = inner;
                }
                _ => return schema,
            }
        }
        schema
    }

    fn error(&mut self, id: u64, message: String) {
        let at = self.positions.get(&id).copied().unwrap_or((1, 0));
        self.errors.push((at, message));
    }

    /// The CEL type of a schema node named `name`.
    fn schema_type(&self, schema: &'a Value, name: String) -> Ty<'a> {
        let schema = self.resolve(schema);
        let flag = |k: &str| schema.get(k).and_then(Value::as_bool).unwrap_or(false);
        if flag("x-kubernetes-int-or-string") || flag("x-kubernetes-embedded-resource") {
            return Ty::Dyn;
        }
        let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
        match schema.get("type").and_then(Value::as_str) {
            Some("integer") => Ty::Int,
            Some("number") => Ty::Double,
            Some("boolean") => Ty::Bool,
            Some("string") => match format {
                "byte" => Ty::Bytes,
                "duration" => Ty::Duration,
                "date" | "date-time" => Ty::Timestamp,
                "int-or-string" => Ty::Dyn,
                _ => Ty::String,
            },
            Some("array") => match schema.get("items").filter(|i| i.is_object()) {
                Some(items) => Ty::List(Box::new(self.schema_type(items, format!("{name}.@idx")))),
                None => Ty::Dyn,
            },
            Some("object") | None => {
                if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                    if flag("x-kubernetes-preserve-unknown-fields")
                        || schema.get("properties").is_some()
                    {
                        return Ty::Dyn;
                    }
                    let values = self.schema_type(values, format!("{name}.@elem"));
                    return Ty::Map(Box::new(Ty::String), Box::new(values));
                }
                if is_object_with_fields(schema) {
                    Ty::Object(schema, name)
                } else {
                    Ty::Dyn
                }
            }
            Some(_) => Ty::Dyn,
        }
    }

    /// The type of `operand.field` (node `id`), noting errors.
    fn select(&mut self, id: u64, operand: Ty<'a>, field: &str, is_variable: bool) -> Ty<'a> {
        match operand {
            Ty::Dyn => Ty::Dyn,
            Ty::Map(_, values) => *values,
            Ty::RootMetadata(_) => {
                if field != "name" && field != "generateName" {
                    self.error(id, format!("undefined field '{field}'"));
                    return Ty::Dyn;
                }
                Ty::String
            }
            Ty::Object(schema, name) => {
                let properties = schema.get("properties");
                let declared = |n: &str| properties.and_then(|p| p.get(n));
                if is_variable && self.env.objects && declared(field).is_none() {
                    match field {
                        "metadata" => {
                            let name = format!("{name}.metadata");
                            return match self.env.metadata {
                                Some(meta) => self.schema_type(meta, name),
                                None => Ty::RootMetadata(name),
                            };
                        }
                        "apiVersion" | "kind" => return Ty::String,
                        _ => {}
                    }
                }
                match declared(unescape(field).as_ref()).or_else(|| declared(field)) {
                    Some(sub) => self.schema_type(sub, format!("{name}.{field}")),
                    None => {
                        self.error(id, format!("undefined field '{field}'"));
                        Ty::Dyn
                    }
                }
            }
            Ty::Optional(inner) => {
                Ty::Optional(Box::new(self.select(id, *inner, field, is_variable)))
            }
            other => {
                self.error(
                    id,
                    format!("type '{other}' does not support field selection"),
                );
                Ty::Dyn
            }
        }
    }

    fn variable(&self, name: &str) -> Ty<'a> {
        match self.env.variables.iter().find(|v| v.name == name) {
            Some(v) if v.optional => {
                Ty::Optional(Box::new(self.schema_type(v.schema, v.type_name.to_owned())))
            }
            Some(v) => self.schema_type(v.schema, v.type_name.to_owned()),
            None => Ty::Dyn,
        }
    }

    fn walk(&mut self, e: &'a IdedExpr, scope: &mut Vec<Binding<'a>>) -> Ty<'a> {
        match &e.expr {
            Expr::Ident(name) => {
                if let Some(b) = scope.iter().rev().find(|b| b.name == name) {
                    return b.ty.clone();
                }
                self.variable(name)
            }
            Expr::Select(sel) => {
                let is_variable = matches!(&sel.operand.expr, Expr::Ident(n)
                    if !scope.iter().any(|b| b.name == n)
                        && self.env.variables.iter().any(|v| v.name == n));
                let operand = self.walk(&sel.operand, scope);
                let ty = self.select(e.id, operand, &sel.field, is_variable);
                if sel.test { Ty::Bool } else { ty }
            }
            Expr::Call(call) => self.call(e.id, call, scope),
            Expr::Comprehension(c) => self.comprehension(e.id, c, scope),
            Expr::List(list) => {
                let types: Vec<Ty<'a>> =
                    list.elements.iter().map(|x| self.walk(x, scope)).collect();
                Ty::List(Box::new(common(&types)))
            }
            Expr::Map(map) => {
                let (mut keys, mut values) = (Vec::new(), Vec::new());
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        keys.push(self.walk(&m.key, scope));
                        values.push(self.walk(&m.value, scope));
                    }
                }
                Ty::Map(Box::new(common(&keys)), Box::new(common(&values)))
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.walk(&f.value, scope);
                    }
                }
                Ty::Dyn
            }
            Expr::Literal(value) => match value {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Unspecified => Ty::Dyn,
        }
    }

    /// `expected type 'bool' but found '<t>'` for an operand of `&&`/`||` (or a predicate).
    fn expect_bool(&mut self, id: u64, ty: &Ty<'a>) {
        if !matches!(ty, Ty::Bool) && !ty.is_dyn() {
            self.error(id, format!("expected type 'bool' but found '{ty}'"));
        }
    }

    fn no_overload(&mut self, id: u64, name: &str, target: Option<&Ty<'a>>, args: &[Ty<'a>]) {
        let list = args
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let signature = match target {
            Some(t) => format!("{t}.({list})"),
            None => format!("({list})"),
        };
        self.error(
            id,
            format!("found no matching overload for '{name}' applied to '{signature}'"),
        );
    }

    fn call(
        &mut self,
        id: u64,
        call: &'a kube_cel::cel::common::ast::CallExpr,
        scope: &mut Vec<Binding<'a>>,
    ) -> Ty<'a> {
        let name = call.func_name.as_str();
        // A namespaced function (`sets.contains(..)`, `math.greatest(..)`) is not a member call.
        let namespaced = matches!(call.target.as_deref(), Some(IdedExpr { expr: Expr::Ident(n), .. })
            if !scope.iter().any(|b| b.name == n) && !self.env.variables.iter().any(|v| v.name == n));
        let target = match &call.target {
            Some(t) if !namespaced => Some(self.walk(t, scope)),
            _ => None,
        };
        let args: Vec<Ty<'a>> = call.args.iter().map(|a| self.walk(a, scope)).collect();
        if namespaced {
            return Ty::Dyn;
        }
        match name {
            "_&&_" | "_||_" => {
                for (arg, ty) in call.args.iter().zip(&args) {
                    self.expect_bool(arg.id, ty);
                }
                return Ty::Bool;
            }
            "@not_strictly_false" => return Ty::Bool,
            "_[?_]" | "_?._" => return Ty::Dyn,
            _ => {}
        }
        let is_operator =
            name.starts_with('_') || name.starts_with('@') || name == "!_" || name == "-_";
        let applied = if is_operator {
            operator(name, &args)
        } else {
            function(name, target.as_ref(), &args)
        };
        match applied {
            Applied::Ok(ty) => ty,
            Applied::NoOverload => {
                self.no_overload(id, name, target.as_ref(), &args);
                Ty::Dyn
            }
        }
    }

    fn comprehension(
        &mut self,
        id: u64,
        c: &'a kube_cel::cel::common::ast::ComprehensionExpr,
        scope: &mut Vec<Binding<'a>>,
    ) -> Ty<'a> {
        let range = self.walk(&c.iter_range, scope);
        let Some((kind, parts)) = macro_parts(c) else {
            return Ty::Dyn;
        };
        let element = match &range {
            Ty::List(e) => (**e).clone(),
            Ty::Map(k, _) => (**k).clone(),
            Ty::Dyn | Ty::Optional(_) | Ty::Object(..) | Ty::RootMetadata(_) => Ty::Dyn,
            other => {
                self.error(
                    c.iter_range.id,
                    format!("expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"),
                );
                Ty::Dyn
            }
        };
        let depth = scope.len();
        scope.push(Binding {
            name: &c.accu_var,
            ty: Ty::Dyn,
        });
        scope.push(Binding {
            name: &c.iter_var,
            ty: element.clone(),
        });
        let types: Vec<Ty<'a>> = parts.iter().map(|p| self.walk(p, scope)).collect();
        scope.truncate(depth);
        let conditional = |this: &mut Self, cond: &Ty<'a>, branch: Ty<'a>| {
            if !matches!(cond, Ty::Bool) && !cond.is_dyn() {
                this.no_overload(id, "_?_:_", None, &[cond.clone(), branch.clone(), branch]);
            }
        };
        match (kind, types.as_slice()) {
            ("all" | "exists", [pred]) => {
                self.expect_bool(parts[0].id, pred);
                Ty::Bool
            }
            ("exists_one", [pred]) => {
                conditional(self, pred, Ty::Int);
                Ty::Bool
            }
            ("filter", [pred]) => {
                let list = Ty::List(Box::new(element));
                conditional(self, pred, list.clone());
                list
            }
            ("map", [value]) => Ty::List(Box::new(value.clone())),
            ("map", [pred, value]) => {
                let list = Ty::List(Box::new(value.clone()));
                conditional(self, pred, list.clone());
                list
            }
            _ => Ty::Dyn,
        }
    }
}

/// The element type of a literal list (or map keys, values) of these types: their common
/// type, or `dyn` when they differ or there are none.
fn common<'a>(types: &[Ty<'a>]) -> Ty<'a> {
    let Some(first) = types.first() else {
        return Ty::Dyn;
    };
    types
        .iter()
        .skip(1)
        .try_fold(first.clone(), |acc, t| {
            agree(&acc, t).then(|| join(&acc, t))
        })
        .unwrap_or(Ty::Dyn)
}

/// CEL's reserved words (not identifiers; a property of that name is written `__<word>__`).
pub const CEL_RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The property name a field name in a rule stands for, undoing kube's escaping.
fn unescape(field: &str) -> Cow<'_, str> {
    if let Some(word) = field
        .strip_prefix("__")
        .and_then(|f| f.strip_suffix("__"))
        .filter(|w| CEL_RESERVED.contains(w))
    {
        return Cow::Owned(word.to_owned());
    }
    if !field.contains("__") {
        return Cow::Borrowed(field);
    }
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find("__") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let escape = [
            ("underscores__", "__"),
            ("dot__", "."),
            ("dash__", "-"),
            ("slash__", "/"),
        ]
        .into_iter()
        .find(|(code, _)| after.starts_with(code));
        match escape {
            Some((code, text)) => {
                out.push_str(text);
                rest = &after[code.len()..];
            }
            None => {
                out.push_str("__");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A type name as kube makes one for a schema's object type: `prefix` and the current
/// time's nanoseconds (`selfType123456789`), so that rules cannot depend on it.
pub fn unique_type_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}{nanos}")
}

/// Type-check `expression` against `env`. An expression that does not parse has no errors
/// here (its parse error is reported instead) and no known result.
pub fn check(expression: &str, env: &Env<'_>) -> Checked {
    let Ok(program) = kube_cel::cel::Program::compile(expression) else {
        return Checked::default();
    };
    let root = program.expression();
    let mut checker = Checker {
        env: *env,
        positions: locate(expression, root),
        errors: Vec::new(),
    };
    let result = checker.walk(root, &mut Vec::new());
    let mut errors = checker.errors;
    errors.sort_by_key(|(at, _)| *at);
    let errors: Vec<String> = errors
        .iter()
        .map(|(at, message)| crate::cel_source::error_at(expression, *at, message))
        .collect();
    Checked {
        errors: (!errors.is_empty()).then(|| errors.join("\n")),
        result: (!result.is_dyn()).then(|| result.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> Value {
        json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string"},
            "ratio": {"type": "number"},
            "on": {"type": "boolean"},
            "since": {"type": "string", "format": "date-time"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "ios": {"x-kubernetes-int-or-string": true},
        }})
    }

    fn checked(rule: &str, schema: &Value, at_root: bool) -> Checked {
        let variables = [
            Variable {
                name: "self",
                schema,
                type_name: "T",
                optional: false,
            },
            Variable {
                name: "oldSelf",
                schema,
                type_name: "T",
                optional: false,
            },
        ];
        check(
            rule,
            &Env {
                variables: &variables,
                objects: at_root,
                metadata: None,
                definitions: None,
            },
        )
    }

    /// The messages of the errors, without positions and source lines.
    fn messages(rule: &str, schema: &Value) -> Vec<String> {
        let errors = checked(rule, schema, false).errors.unwrap_or_default();
        errors
            .lines()
            .filter_map(|l| l.strip_prefix("ERROR: <input>:"))
            .map(|l| l.splitn(3, ':').nth(2).unwrap_or("").trim().to_owned())
            .collect()
    }

    #[test]
    fn declared_properties_pass_and_others_are_undefined() {
        let s = spec();
        assert!(messages("self.replicas > 0", &s).is_empty());
        assert_eq!(
            messages("self.replica > 0", &s),
            ["undefined field 'replica'"]
        );
        assert_eq!(
            messages("has(self.replcas) || self.x == oldSelf.y", &s),
            [
                "undefined field 'replcas'",
                "undefined field 'x'",
                "undefined field 'y'"
            ]
        );
        // A map's keys are not fields; preserve-unknown objects are not checked.
        assert!(messages("self.labels.anything == 'a'", &s).is_empty());
        assert!(messages("self.free.anything == 1", &s).is_empty());
        assert_eq!(
            messages("[1].exists(v, v.x == 1)", &s),
            ["type 'int' does not support field selection"]
        );
    }

    #[test]
    fn escaped_property_names_are_found() {
        let s = json!({"type": "object", "properties": {
            "x-prop": {"type": "integer"}, "namespace": {"type": "string"},
            "a.b/c": {"type": "string"}, "redact__d": {"type": "string"}}});
        assert!(
            messages(
                "self.x__dash__prop > 0 && self.__namespace__ != '' && self.a__dot__b__slash__c != '' && self.redact__underscores__d != ''",
                &s,
            )
            .is_empty()
        );
        assert_eq!(
            messages("self.x__dash__prp > 0", &s),
            ["undefined field 'x__dash__prp'"]
        );
    }

    #[test]
    fn the_root_has_type_meta_and_a_narrow_metadata() {
        let root = json!({"type": "object", "properties": {"spec": spec()}});
        let root_errors = |rule| checked(rule, &root, true).errors;
        assert_eq!(
            root_errors(
                "self.metadata.name.startsWith('a') && self.kind == 'X' && self.spec.replicas > 0"
            ),
            None
        );
        assert!(
            root_errors("self.metadata.labels.size() > 0")
                .unwrap()
                .contains("undefined field 'labels'")
        );
        assert!(
            root_errors("self.kind == 1")
                .unwrap()
                .contains("'_==_' applied to '(string, int)'")
        );
        // Below the root, metadata is an ordinary property.
        assert_eq!(
            messages("self.metadata == 1", &spec()),
            ["undefined field 'metadata'"]
        );
    }

    #[test]
    fn operators_are_checked_against_schema_types() {
        let s = spec();
        assert_eq!(
            checked("self.name > 5", &s, false).errors.unwrap(),
            "ERROR: <input>:1:11: found no matching overload for '_>_' applied to '(string, int)'\n | self.name > 5\n | ..........^"
        );
        assert_eq!(
            messages("self.replicas == 'x'", &s),
            ["found no matching overload for '_==_' applied to '(int, string)'"]
        );
        assert_eq!(
            messages("self.ratio > 1 && self.replicas < 2.5", &s),
            Vec::<String>::new()
        );
        assert_eq!(
            messages("self.replicas + 'a' > 0", &s),
            ["found no matching overload for '_+_' applied to '(int, string)'"]
        );
        assert_eq!(
            messages("!self.name", &s),
            ["found no matching overload for '!_' applied to '(string)'"]
        );
        assert_eq!(
            messages("-self.name == 1", &s),
            ["found no matching overload for '-_' applied to '(string)'"]
        );
        assert_eq!(
            messages("self.replicas && true", &s),
            ["expected type 'bool' but found 'int'"]
        );
        assert_eq!(
            messages("self.on ? 1 : 'a'", &s),
            ["found no matching overload for '_?_:_' applied to '(bool, int, string)'"]
        );
        assert_eq!(
            messages("self.tags[0] == 1", &s),
            ["found no matching overload for '_==_' applied to '(string, int)'"]
        );
        assert_eq!(
            messages("self.labels['a'] > 1", &s),
            ["found no matching overload for '_>_' applied to '(string, int)'"]
        );
        assert_eq!(
            messages("1 in self.tags", &s),
            ["found no matching overload for '@in' applied to '(int, list(string))'"]
        );
        assert_eq!(
            messages("self.ports == 1", &s),
            ["found no matching overload for '_==_' applied to '(list(T.ports.@idx), int)'"]
        );
        assert_eq!(
            messages("self.since < 1", &s),
            ["found no matching overload for '_<_' applied to '(timestamp, int)'"]
        );
        assert_eq!(
            messages("self.name == null", &s),
            ["found no matching overload for '_==_' applied to '(string, null)'"]
        );
    }

    #[test]
    fn functions_and_macros_are_checked() {
        let s = spec();
        assert_eq!(
            messages("size(self.replicas) > 0", &s),
            ["found no matching overload for 'size' applied to '(int)'"]
        );
        assert_eq!(
            messages("self.replicas.size() > 0", &s),
            ["found no matching overload for 'size' applied to 'int.()'"]
        );
        assert_eq!(
            messages("self.name.startsWith(1)", &s),
            ["found no matching overload for 'startsWith' applied to 'string.(int)'"]
        );
        assert_eq!(
            messages("self.tags.all(t, t.size() > 0 && t > 1)", &s),
            ["found no matching overload for '_>_' applied to '(string, int)'"]
        );
        assert_eq!(
            messages("self.ports.all(p, p.port)", &s),
            ["expected type 'bool' but found 'int'"]
        );
        assert_eq!(
            messages("self.ports.map(p, p.port).all(x, x == 'a')", &s),
            ["found no matching overload for '_==_' applied to '(int, string)'"]
        );
        assert_eq!(
            messages("self.labels.exists(k, k == 1)", &s),
            ["found no matching overload for '_==_' applied to '(string, int)'"]
        );
        assert_eq!(
            messages("self.replicas.all(x, true)", &s),
            [
                "expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)"
            ]
        );
        assert_eq!(
            messages("has(self.name.x)", &s),
            ["type 'string' does not support field selection"]
        );
        assert_eq!(
            messages("self.name.split(',').size() == 'a'", &s),
            ["found no matching overload for '_==_' applied to '(int, string)'"]
        );
        assert_eq!(
            messages(
                "self.ports.filter(p, p.port > 1).size() > 0 && self.tags.join(',') == ''",
                &s
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_optional_old_self_is_not_judged_but_its_fields_are() {
        let s = spec();
        let variables = [
            Variable {
                name: "self",
                schema: &s,
                type_name: "T",
                optional: false,
            },
            Variable {
                name: "oldSelf",
                schema: &s,
                type_name: "T",
                optional: true,
            },
        ];
        let env = Env {
            variables: &variables,
            objects: false,
            metadata: None,
            definitions: None,
        };
        assert_eq!(
            check("oldSelf.replicas == 'a' || oldSelf.hasValue()", &env).errors,
            None
        );
        assert!(
            check("oldSelf.nope == 1", &env)
                .errors
                .unwrap()
                .contains("undefined field 'nope'")
        );
    }

    #[test]
    fn conversions_give_their_type() {
        assert_eq!(
            messages("string(self.replicas) > 1", &spec()),
            ["found no matching overload for '_>_' applied to '(string, int)'"]
        );
    }

    #[test]
    fn dyn_is_never_an_error() {
        let s = spec();
        for rule in [
            "self.free.x > 1 && self.free.y == 'a'",
            "self.ios > 1 || self.ios == 'a'",
            "dyn(self.name) > 1",
            "variables.x == 1",
            "int(self.name) > 1 && string(self.replicas) == 'a'",
            "self.name.lowerAscii() == self.name && quantity(self.name).isGreaterThan(quantity('1'))",
            "sets.contains(self.tags, ['a'])",
            "[].all(x, x > 1) && {}.size() == 0",
        ] {
            assert_eq!(checked(rule, &s, false).errors, None, "{rule}");
        }
    }

    #[test]
    fn results_and_positions() {
        let s = spec();
        assert_eq!(
            checked("self.replicas > 1", &s, false).result.as_deref(),
            Some("bool")
        );
        assert_eq!(
            checked("self.replicas + 1", &s, false).result.as_deref(),
            Some("int")
        );
        assert_eq!(checked("self.free.x", &s, false).result, None);
        assert_eq!(
            checked("self.foo == 1", &s, false).errors.unwrap(),
            "ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^"
        );
        assert_eq!(
            checked("self.replicas == 'a' ||\nhas(self.nme)", &s, false)
                .errors
                .unwrap(),
            "ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | self.replicas == 'a' ||\n | ..............^\nERROR: <input>:2:4: undefined field 'nme'\n | has(self.nme)\n | ...^"
        );
    }
}

//! The part of kube's CEL type check that a CRD write needs most: a rule that selects a
//! property its schema does not declare (`self.spce`) is refused when the CRD is written,
//! with cel-go's `undefined field '<name>'` error, instead of failing on every object later.
//!
//! Admission policies get the same check against the kinds they match ([`undefined_fields_in`]).
//!
//! Types follow the structural schema as kube declares them to CEL: an object with
//! `properties` has exactly those fields; the root also has `apiVersion`, `kind` and
//! `metadata` (for CRD rules only `name` and `generateName`); a list's elements have its `items`
//! schema; a map (`additionalProperties`) and anything else — `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-int-or-string`, embedded resources, variables and function results — is not
//! checked. Property names are matched after kube's escaping (`x__dash__prop` is `x-prop`,
//! `__namespace__` is `namespace`).

use std::borrow::Cow;

use kube_cel::cel::common::ast::{Expr, IdedExpr};
use serde_json::{Map, Value};

/// What the variables of an expression are, for [`undefined_fields_in`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Env<'a> {
    /// The variables whose type is a schema (for CRD rules `self` and `oldSelf`; for
    /// admission policies `object`, `oldObject`, `params`, …); others are not checked.
    pub variables: &'a [(&'a str, &'a Value)],
    /// Whether those schemas are whole objects: then `apiVersion` and `kind` are fields, and
    /// `metadata` is `metadata` below, unless the schema declares its own.
    pub objects: bool,
    /// `metadata` of those objects: `None` for CRD rules (only `name` and `generateName`), or
    /// the ObjectMeta schema.
    pub metadata: Option<&'a Value>,
    /// The definitions `$ref`s point into (`#/definitions/<name>`), for built-in kinds.
    pub definitions: Option<&'a Map<String, Value>>,
}

/// What an expression is known to be.
#[derive(Clone, Copy)]
enum Type<'a> {
    /// A schema node.
    Schema(&'a Value),
    /// A CRD root's `metadata`: only `name` and `generateName`.
    RootMetadata,
    /// Anything else: not checked.
    Unknown,
}

/// A variable bound by a comprehension (`all`, `exists`, `map`, `filter`…).
struct Binding<'a> {
    name: &'a str,
    ty: Type<'a>,
}

struct Checker<'a> {
    env: Env<'a>,
    undefined: Vec<String>,
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

    /// The type of `operand.field`, noting an undefined field.
    fn select(&mut self, operand: Type<'a>, field: &str, is_variable: bool) -> Type<'a> {
        match operand {
            Type::RootMetadata => {
                if field != "name" && field != "generateName" {
                    self.undefined.push(field.to_owned());
                }
                Type::Unknown
            }
            Type::Schema(schema) => {
                let schema = self.resolve(schema);
                let properties = schema.get("properties");
                let declared = |name: &str| properties.and_then(|p| p.get(name));
                if is_variable && self.env.objects && declared(field).is_none() {
                    match field {
                        "metadata" => {
                            return self.env.metadata.map_or(Type::RootMetadata, Type::Schema);
                        }
                        "apiVersion" | "kind" => return Type::Unknown,
                        _ => {}
                    }
                }
                if !is_object_with_fields(schema) {
                    return Type::Unknown;
                }
                match declared(unescape(field).as_ref()).or_else(|| declared(field)) {
                    Some(sub) => Type::Schema(sub),
                    None => {
                        self.undefined.push(field.to_owned());
                        Type::Unknown
                    }
                }
            }
            Type::Unknown => Type::Unknown,
        }
    }

    fn variable(&self, name: &str) -> Type<'a> {
        self.env
            .variables
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(Type::Unknown, |(_, schema)| Type::Schema(schema))
    }

    fn walk(&mut self, e: &'a IdedExpr, scope: &mut Vec<Binding<'a>>) -> Type<'a> {
        match &e.expr {
            Expr::Ident(name) => {
                if let Some(b) = scope.iter().rev().find(|b| b.name == name) {
                    return b.ty;
                }
                self.variable(name)
            }
            Expr::Select(sel) => {
                let is_variable = matches!(&sel.operand.expr, Expr::Ident(n)
                    if !scope.iter().any(|b| b.name == n)
                        && self.env.variables.iter().any(|(v, _)| v == n));
                let operand = self.walk(&sel.operand, scope);
                self.select(operand, &sel.field, is_variable)
            }
            Expr::Call(call) => {
                let target = call.target.as_deref().map(|t| self.walk(t, scope));
                let args: Vec<Type<'a>> = call.args.iter().map(|a| self.walk(a, scope)).collect();
                match (call.func_name.as_str(), target, args.as_slice()) {
                    ("_[_]" | "_[?_]", None, [Type::Schema(list), _]) => self.element_of(list),
                    _ => Type::Unknown,
                }
            }
            Expr::Comprehension(c) => {
                let range = self.walk(&c.iter_range, scope);
                self.walk(&c.accu_init, scope);
                let element = match range {
                    Type::Schema(s) => {
                        let s = self.resolve(s);
                        if s.get("type").and_then(Value::as_str) == Some("array") {
                            self.element_of(s)
                        } else {
                            Type::Unknown
                        }
                    }
                    _ => Type::Unknown,
                };
                let depth = scope.len();
                scope.push(Binding {
                    name: &c.iter_var,
                    ty: element,
                });
                scope.push(Binding {
                    name: &c.accu_var,
                    ty: Type::Unknown,
                });
                self.walk(&c.loop_cond, scope);
                self.walk(&c.loop_step, scope);
                self.walk(&c.result, scope);
                scope.truncate(depth);
                Type::Unknown
            }
            Expr::List(list) => {
                for item in &list.elements {
                    self.walk(item, scope);
                }
                Type::Unknown
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                        self.walk(&m.key, scope);
                        self.walk(&m.value, scope);
                    }
                }
                Type::Unknown
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::StructField(f) = &entry.expr {
                        self.walk(&f.value, scope);
                    }
                }
                Type::Unknown
            }
            Expr::Literal(_) | Expr::Unspecified => Type::Unknown,
        }
    }

    /// The element type of a list schema (or of a map schema's values).
    fn element_of(&self, schema: &'a Value) -> Type<'a> {
        let schema = self.resolve(schema);
        if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            return Type::Schema(items);
        }
        if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
            return Type::Schema(values);
        }
        Type::Unknown
    }
}

/// CEL's reserved words (not identifiers; a property of that name is written `__<word>__`).
pub(crate) const CEL_RESERVED: [&str; 21] = [
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

/// The properties `rule` selects that `schema` (the node holding the rule; `at_root` for the
/// top-level `openAPIV3Schema`) does not declare, in the order the rule names them. A rule
/// that does not parse has none (its parse error is reported instead).
#[cfg(test)]
pub(crate) fn undefined_fields(rule: &str, schema: &Value, at_root: bool) -> Vec<String> {
    let variables = [("self", schema), ("oldSelf", schema)];
    undefined_fields_in(
        rule,
        &Env {
            variables: &variables,
            objects: at_root,
            metadata: None,
            definitions: None,
        },
    )
}

/// The fields `expression` selects that the schemas of `env` do not declare, in order.
pub(crate) fn undefined_fields_in(expression: &str, env: &Env<'_>) -> Vec<String> {
    let Ok(program) = kube_cel::cel::Program::compile(expression) else {
        return Vec::new();
    };
    let mut checker = Checker {
        env: *env,
        undefined: Vec::new(),
    };
    checker.walk(program.expression(), &mut Vec::new());
    checker.undefined
}

/// cel-go's errors for the fields `expression` selects that `env` does not declare, one per
/// line; `None` when there are none.
pub(crate) fn undefined_field_errors(expression: &str, env: &Env<'_>) -> Option<String> {
    let fields = undefined_fields_in(expression, env);
    if fields.is_empty() {
        return None;
    }
    let errors: Vec<String> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let nth = fields[..i].iter().filter(|g| *g == f).count();
            undefined_field_error(expression, f, nth)
        })
        .collect();
    Some(errors.join("\n"))
}

/// cel-go's report of the `nth` (0-based) selection of the undefined field `field` in `rule`:
/// `ERROR: <input>:line:col: undefined field 'x'`, the source line and a caret under its `.`.
pub(crate) fn undefined_field_error(rule: &str, field: &str, nth: usize) -> String {
    let at = crate::cel_source::select_position(rule, field, nth).unwrap_or((1, 0));
    crate::cel_source::error_at(rule, at, &format!("undefined field '{field}'"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> Value {
        json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }})
    }

    #[test]
    fn declared_properties_pass_and_others_are_undefined() {
        let s = spec();
        assert!(undefined_fields("self.replicas > 0", &s, false).is_empty());
        assert_eq!(undefined_fields("self.replica > 0", &s, false), ["replica"]);
        assert_eq!(
            undefined_fields("has(self.replcas) || self.x == oldSelf.y", &s, false),
            ["replcas", "x", "y"]
        );
        // Maps, preserve-unknown objects and variables are not checked.
        assert!(undefined_fields("self.labels.anything == 'a'", &s, false).is_empty());
        assert!(undefined_fields("self.free.anything == 1", &s, false).is_empty());
        assert!(undefined_fields("[1].exists(v, v.x == 1)", &s, false).is_empty());
    }

    #[test]
    fn escaped_property_names_are_found() {
        let s = json!({"type": "object", "properties": {
            "x-prop": {"type": "integer"}, "namespace": {"type": "string"},
            "a.b/c": {"type": "string"}, "redact__d": {"type": "string"}}});
        assert!(
            undefined_fields(
                "self.x__dash__prop > 0 && self.__namespace__ != '' && self.a__dot__b__slash__c != '' && self.redact__underscores__d != ''",
                &s,
                false
            )
            .is_empty()
        );
        assert_eq!(
            undefined_fields("self.x__dash__prp > 0", &s, false),
            ["x__dash__prp"]
        );
    }

    #[test]
    fn list_elements_are_checked_through_indexing_and_macros() {
        let s = spec();
        assert!(undefined_fields("self.ports.all(p, p.port > 0)", &s, false).is_empty());
        assert_eq!(
            undefined_fields("self.ports.all(p, p.prot > 0)", &s, false),
            ["prot"]
        );
        assert_eq!(
            undefined_fields("self.ports[0].prot > 0", &s, false),
            ["prot"]
        );
        assert!(undefined_fields("self.ports.map(p, p.port).all(x, x > 0)", &s, false).is_empty());
    }

    #[test]
    fn the_root_has_type_meta_and_a_narrow_metadata() {
        let root = json!({"type": "object", "properties": {"spec": spec()}});
        assert!(
            undefined_fields(
                "self.metadata.name.startsWith('a') && self.kind == 'X' && self.spec.replicas > 0",
                &root,
                true
            )
            .is_empty()
        );
        assert_eq!(
            undefined_fields("self.metadata.labels.size() > 0", &root, true),
            ["labels"]
        );
        // Below the root, metadata is an ordinary property.
        assert_eq!(
            undefined_fields("self.metadata == 1", &spec(), false),
            ["metadata"]
        );
    }

    #[test]
    fn errors_read_as_cel_go_reports_them() {
        assert_eq!(
            undefined_field_error("self.foo == 1", "foo", 0),
            "ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^"
        );
        assert_eq!(
            undefined_field_error("self.a == '.foo' || self.foo", "foo", 0),
            "ERROR: <input>:1:25: undefined field 'foo'\n | self.a == '.foo' || self.foo\n | ........................^"
        );
        assert_eq!(
            undefined_field_error("self.a ||\nself.b.foo", "foo", 0),
            "ERROR: <input>:2:7: undefined field 'foo'\n | self.b.foo\n | ......^"
        );
    }
}

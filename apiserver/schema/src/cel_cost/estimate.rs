//! The cost walk over a parsed CEL expression (cel-go's `checker/cost.go` model, without
//! types).
//!
//! Differences from cel-go, all on the side of a higher estimate: without a type checker an
//! operand whose kind is unknown is costed as a string would be (`+`, comparisons), list
//! functions of the Kubernetes library whose receiver is not known to be a list are costed
//! as string functions, and map keys are as long as an unbounded string. Only the largest
//! cost is computed (kube compares only that).

use kube_cel::cel::common::ast::LiteralValue;
use kube_cel::cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr};

use super::{Kind, Seg, Size, Sizes, by_factor, mul};

/// CEL's type names (`type(self.x) == string`): constants of size 1.
const TYPE_NAMES: [&str; 11] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

/// cel-go's cost of creating a list literal.
const LIST_CREATE: u64 = 10;
/// cel-go's cost of creating a map literal.
const MAP_CREATE: u64 = 30;
/// cel-go's cost of creating a message literal.
const STRUCT_CREATE: u64 = 40;
/// Cost per character of walking a string.
const STRING_TRAVERSAL: f64 = 0.1;
/// Cost per character of a regular expression.
const REGEX_LENGTH: f64 = 0.25;
/// kube's fixed cost of an authorization check (`<check>.check(verb)`): two fit in the
/// per-call limit.
const AUTHZ_CHECK: u64 = 350_000;
/// kube's guess of selector requirements per character of a selector (`k,` is the
/// shortest requirement that allocates).
const SELECTOR_REQUIREMENTS_PER_CHAR: f64 = 0.5;

/// kube's cost of parsing a field or label selector of `length` characters in an authorizer
/// check: a list, a walk over the string, and a struct and a list per requirement it may hold.
fn selector_cost(length: u64) -> u64 {
    let requirements = by_factor(length, SELECTOR_REQUIREMENTS_PER_CHAR);
    LIST_CREATE
        .saturating_add(by_factor(length, STRING_TRAVERSAL))
        .saturating_add(mul(requirements, LIST_CREATE + STRUCT_CREATE))
}

/// The largest cost of evaluating `expr` once, with sizes from `sizes`.
pub fn estimate(expr: &IdedExpr, sizes: &dyn Sizes) -> u64 {
    let mut walker = Walker {
        sizes,
        locals: Vec::new(),
    };
    walker.walk(expr).cost
}

/// What the walk knows about a subexpression.
#[derive(Clone, Debug, Default)]
struct Est {
    cost: u64,
    /// Its size when the expression itself tells (literals, function results).
    size: Option<Size>,
    /// The size of its items when the expression itself tells (list literals, `map`).
    elem: Option<Size>,
    /// The path from a variable to it, when it is part of a variable.
    path: Option<Vec<Seg>>,
}

impl Est {
    fn value(cost: u64, size: Size) -> Est {
        Est {
            cost,
            size: Some(size),
            ..Est::default()
        }
    }
}

/// A variable bound by a comprehension.
struct Local {
    name: String,
    path: Option<Vec<Seg>>,
    size: Option<Size>,
    elem: Option<Size>,
}

struct Walker<'a> {
    sizes: &'a dyn Sizes,
    locals: Vec<Local>,
}

fn literal_size(l: &LiteralValue) -> Size {
    match l {
        LiteralValue::String(s) => Size::new(Kind::Text, s.inner().chars().count() as u64),
        LiteralValue::Bytes(b) => Size::new(Kind::Text, b.inner().len() as u64),
        _ => Size::SCALAR,
    }
}

fn child(path: &Option<Vec<Seg>>, seg: Seg) -> Option<Vec<Seg>> {
    path.as_ref().map(|p| {
        let mut p = p.clone();
        p.push(seg);
        p
    })
}

impl Walker<'_> {
    fn size(&self, e: &Est) -> Size {
        e.size
            .or_else(|| e.path.as_deref().and_then(|p| self.sizes.lookup(p)))
            .unwrap_or(Size::new(Kind::Unknown, self.sizes.unknown()))
    }

    fn elem_size(&self, e: &Est) -> Size {
        e.elem
            .or_else(|| {
                child(&e.path, Seg::Elem)
                    .as_deref()
                    .and_then(|p| self.sizes.lookup(p))
            })
            .unwrap_or(Size::new(Kind::Unknown, self.sizes.unknown()))
    }

    fn walk(&mut self, e: &IdedExpr) -> Est {
        match &e.expr {
            Expr::Literal(l) => Est::value(0, literal_size(l)),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(s) => {
                let operand = self.walk(&s.operand);
                // kube keeps presence tests (`has()`) free, as before cel-go charged them.
                if s.test {
                    return Est::value(operand.cost, Size::SCALAR);
                }
                let cost = operand.cost.saturating_add(1);
                Est {
                    cost,
                    path: child(&operand.path, Seg::Field(s.field.clone())),
                    ..Est::default()
                }
            }
            Expr::List(list) => {
                let mut cost = LIST_CREATE;
                let mut elem: Option<Size> = None;
                for item in &list.elements {
                    let est = self.walk(item);
                    cost = cost.saturating_add(est.cost);
                    let s = self.size(&est);
                    elem = Some(elem.map_or(s, |e| e.union(s)));
                }
                Est {
                    cost,
                    size: Some(Size::new(Kind::List, list.elements.len() as u64)),
                    elem: Some(elem.unwrap_or(Size::new(Kind::Unknown, 0))),
                    path: None,
                }
            }
            Expr::Map(map) => {
                let mut cost = MAP_CREATE;
                for entry in &map.entries {
                    cost = cost.saturating_add(self.entry(&entry.expr));
                }
                Est::value(cost, Size::new(Kind::Map, map.entries.len() as u64))
            }
            Expr::Struct(s) => {
                let mut cost = STRUCT_CREATE;
                for entry in &s.entries {
                    cost = cost.saturating_add(self.entry(&entry.expr));
                }
                Est::value(cost, Size::new(Kind::Map, s.entries.len() as u64))
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Call(call) => self.call(call),
            Expr::Unspecified => Est::default(),
        }
    }

    fn entry(&mut self, entry: &EntryExpr) -> u64 {
        match entry {
            EntryExpr::StructField(f) => self.walk(&f.value).cost,
            EntryExpr::MapEntry(e) => {
                let k = self.walk(&e.key).cost;
                k.saturating_add(self.walk(&e.value).cost)
            }
        }
    }

    fn ident(&self, name: &str) -> Est {
        if TYPE_NAMES.contains(&name) {
            return Est::value(1, Size::SCALAR);
        }
        if let Some(local) = self.locals.iter().rev().find(|l| l.name == name) {
            return Est {
                cost: 1,
                size: local.size,
                elem: local.elem,
                path: local.path.clone(),
            };
        }
        Est {
            cost: 1,
            path: Some(vec![Seg::Field(name.to_owned())]),
            ..Est::default()
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Est {
        let range = self.walk(&c.iter_range);
        let init = self.walk(&c.accu_init);
        let range_size = self.size(&range);
        let depth = self.locals.len();
        self.locals.push(Local {
            name: c.accu_var.clone(),
            path: None,
            size: init.size,
            elem: init.elem,
        });
        let elem = Local {
            name: String::new(),
            path: child(&range.path, Seg::Elem),
            size: Some(self.elem_size(&range)),
            elem: None,
        };
        let key = Local {
            name: String::new(),
            path: child(&range.path, Seg::Key),
            size: Some(if range_size.kind == Kind::List {
                Size::SCALAR
            } else {
                child(&range.path, Seg::Key)
                    .as_deref()
                    .and_then(|p| self.sizes.lookup(p))
                    .unwrap_or(Size::new(Kind::Text, self.sizes.unknown()))
            }),
            elem: None,
        };
        match &c.iter_var2 {
            Some(second) => {
                self.locals.push(Local {
                    name: c.iter_var.clone(),
                    ..key
                });
                self.locals.push(Local {
                    name: second.clone(),
                    ..elem
                });
            }
            // One variable ranges over a map's keys and a list's items.
            None if range_size.kind == Kind::Map => self.locals.push(Local {
                name: c.iter_var.clone(),
                ..key
            }),
            None => self.locals.push(Local {
                name: c.iter_var.clone(),
                ..elem
            }),
        }
        let cond = self.walk(&c.loop_cond);
        let step = self.walk(&c.loop_step);
        self.locals.truncate(depth + 1);
        let result = self.walk(&c.result);
        self.locals.truncate(depth);
        let per_item = step.cost.saturating_add(cond.cost);
        let cost = range
            .cost
            .saturating_add(init.cost)
            .saturating_add(result.cost)
            .saturating_add(mul(range_size.max, per_item));
        match &c.accu_init.expr {
            Expr::List(_) | Expr::Map(_) => Est {
                cost,
                size: Some(Size::new(Kind::List, range_size.max)),
                elem: step.elem,
                path: None,
            },
            Expr::Literal(l) => Est::value(cost, literal_size(l)),
            _ => Est {
                cost,
                ..Est::default()
            },
        }
    }

    fn call(&mut self, call: &CallExpr) -> Est {
        let target = call.target.as_deref().map(|t| self.walk(t));
        let args: Vec<Est> = call.args.iter().map(|a| self.walk(a)).collect();
        let sum = args
            .iter()
            .chain(target.iter())
            .fold(0u64, |acc, e| acc.saturating_add(e.cost));
        let name = call.func_name.as_str();
        // The size of the receiver (or of the only argument of a global call).
        let subject = target.as_ref().or(args.first());
        let subject_size = subject.map(|s| self.size(s)).unwrap_or(Size::SCALAR);
        let traverse = |s: Size| by_factor(s.max, STRING_TRAVERSAL);
        match (name, args.len()) {
            ("_&&_" | "_||_", 2) => Est::value(sum, Size::SCALAR),
            ("_?_:_", 3) => {
                let branch = args[1].cost.max(args[2].cost);
                let size = self.size(&args[1]).union(self.size(&args[2]));
                Est {
                    cost: args[0].cost.saturating_add(branch),
                    size: Some(size),
                    elem: args[1].elem.or(args[2].elem),
                    path: None,
                }
            }
            ("dyn", 1) => Est {
                cost: sum.saturating_add(1),
                ..args[0].clone()
            },
            ("_[_]" | "_[?_]", 2) => Est {
                cost: sum.saturating_add(1),
                size: args[0].elem,
                elem: None,
                path: child(&args[0].path, Seg::Elem),
            },
            ("_+_", 2) => {
                let (l, r) = (self.size(&args[0]), self.size(&args[1]));
                let total = l.max.saturating_add(r.max);
                if l.kind == Kind::List || r.kind == Kind::List {
                    let elem = match (args[0].elem, args[1].elem) {
                        (Some(a), Some(b)) => Some(a.union(b)),
                        (a, b) => a.or(b),
                    };
                    Est {
                        cost: sum.saturating_add(1),
                        size: Some(Size::new(Kind::List, total)),
                        elem,
                        path: None,
                    }
                } else if l.kind == Kind::Scalar || r.kind == Kind::Scalar {
                    Est::value(sum.saturating_add(1), Size::SCALAR)
                } else {
                    let size = Size::new(Kind::Text, total);
                    Est::value(sum.saturating_add(traverse(size)), size)
                }
            }
            ("_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_", 2) => {
                let (l, r) = (self.size(&args[0]), self.size(&args[1]));
                let ordering = !matches!(name, "_==_" | "_!=_");
                // Ordering numbers is constant; equality and ordering strings walk the
                // shorter operand.
                let call = if ordering && l.kind != Kind::Text && r.kind != Kind::Text {
                    1
                } else {
                    by_factor(l.max.min(r.max), STRING_TRAVERSAL)
                };
                Est::value(sum.saturating_add(call), Size::SCALAR)
            }
            // kube's authorizer library: a check is costed heavily, a selector by its length;
            // its builders and accessors (`group`, `path`, `allowed`…) cost 1, as below.
            ("check", 1) if target.is_some() => {
                Est::value(sum.saturating_add(AUTHZ_CHECK), Size::SCALAR)
            }
            ("fieldSelector" | "labelSelector", 1) if target.is_some() => Est::value(
                sum.saturating_add(selector_cost(self.size(&args[0]).max)),
                Size::SCALAR,
            ),
            ("@in", 2) => Est::value(sum.saturating_add(self.size(&args[1]).max), Size::SCALAR),
            ("matches" | "find" | "findAll", _) => {
                let (text, regex) = match (&target, args.as_slice()) {
                    (Some(t), [re, ..]) => (self.size(t), self.size(re)),
                    (None, [t, re, ..]) => (self.size(t), self.size(re)),
                    _ => (Size::SCALAR, Size::SCALAR),
                };
                let text_cost = by_factor(text.max.saturating_add(1), STRING_TRAVERSAL);
                let regex_cost = by_factor(regex.max, REGEX_LENGTH);
                let size = match name {
                    "find" => Some(text),
                    "findAll" => Some(Size::new(Kind::List, text.max)),
                    _ => Some(Size::SCALAR),
                };
                Est {
                    cost: sum.saturating_add(mul(text_cost, regex_cost)),
                    size,
                    elem: (name == "findAll").then_some(text),
                    path: None,
                }
            }
            ("contains", 1) if target.is_some() => {
                let needle = traverse(self.size(&args[0]));
                Est::value(
                    sum.saturating_add(mul(traverse(subject_size), needle)),
                    Size::SCALAR,
                )
            }
            ("startsWith" | "endsWith", 1) => Est::value(
                sum.saturating_add(traverse(self.size(&args[0]))),
                Size::SCALAR,
            ),
            // Kubernetes list library: each item is visited (and compared).
            ("isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf", _)
                if subject_size.kind == Kind::List =>
            {
                let elem = self.elem_size(subject.unwrap_or(&Est::default()));
                let per_item = traverse(elem).saturating_add(1);
                Est::value(
                    sum.saturating_add(mul(subject_size.max, per_item)),
                    Size::SCALAR,
                )
            }
            // The result can grow by `after / before`; it is walked once.
            ("replace", 2..) => {
                let (before, after) = (self.size(&args[0]).max, self.size(&args[1]).max);
                let grown = if after > before {
                    mul(subject_size.max, after) / before.max(1)
                } else {
                    subject_size.max
                };
                let size = Size::new(Kind::Text, grown);
                Est::value(sum.saturating_add(traverse(size)), size)
            }
            // Kubernetes string library and parsers: linear in the string.
            (
                "lowerAscii" | "upperAscii" | "trim" | "substring" | "charAt" | "reverse"
                | "replace" | "indexOf" | "lastIndexOf" | "format" | "quote",
                _,
            ) => {
                let size = if matches!(name, "charAt" | "indexOf" | "lastIndexOf") {
                    Size::SCALAR
                } else {
                    Size::new(Kind::Text, subject_size.max)
                };
                Est::value(sum.saturating_add(traverse(subject_size)), size)
            }
            ("split", _) => Est {
                cost: sum.saturating_add(mul(traverse(subject_size), 2)),
                size: Some(Size::new(Kind::List, subject_size.max)),
                elem: Some(Size::new(Kind::Text, subject_size.max)),
                path: None,
            },
            ("join", _) => {
                let elem = self.elem_size(subject.unwrap_or(&Est::default()));
                let separator = args.first().map_or(0, |a| self.size(a).max);
                let each = elem.max.saturating_add(separator);
                let size = Size::new(Kind::Text, mul(subject_size.max, each));
                Est::value(sum.saturating_add(traverse(size)), size)
            }
            (
                "url" | "isURL" | "quantity" | "isQuantity" | "ip" | "isIP" | "cidr" | "isCIDR"
                | "semver" | "isSemver" | "string" | "bytes",
                _,
            ) => Est::value(sum.saturating_add(traverse(subject_size)), Size::SCALAR),
            (
                "size" | "type" | "int" | "uint" | "double" | "bool" | "duration" | "timestamp",
                _,
            ) => Est::value(sum.saturating_add(1), Size::SCALAR),
            _ => Est {
                cost: sum.saturating_add(1),
                ..Est::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MAX_REQUEST_BYTES, SchemaSizes, ValueSizes};
    use super::*;
    use kube_cel::cel::Program;
    use serde_json::{Value, json};

    fn cost_in(schema: &Value, rule: &str) -> u64 {
        let program = Program::compile(rule).expect("rule parses");
        let sizes = SchemaSizes::for_rule(schema, false);
        estimate(program.expression(), &sizes)
    }

    fn cost_with(value: &Value, rule: &str) -> u64 {
        let program = Program::compile(rule).expect("rule parses");
        let sizes = ValueSizes::new(vec![("self", value)]);
        estimate(program.expression(), &sizes)
    }

    /// A list of strings (a `null` bound is no bound).
    fn strings(max_items: Option<u64>, max_length: Option<u64>) -> Value {
        json!({"type": "array", "maxItems": max_items,
            "items": {"type": "string", "maxLength": max_length}})
    }

    /// The size kube assumes for a string without `maxLength`.
    const UNBOUNDED_STRING: u64 = MAX_REQUEST_BYTES - 2;

    #[test]
    fn authorizer_library_costs_as_in_kube() {
        let schema = json!({"type": "object"});
        // kube's expected estimates (`TestAuthzLibrary` in k8s.io/apiserver/pkg/cel/library).
        for (rule, expected) in [
            ("authorizer.path('/healthz')", 2),
            (
                "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')",
                6,
            ),
            (
                "authorizer.path('/healthz').check('get').allowed()",
                350_003,
            ),
            (
                "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend').check('create').allowed()",
                350_007,
            ),
            (
                "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend').check('create').reason()",
                350_007,
            ),
            (
                "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend').check('create').errored()",
                350_007,
            ),
            (
                "authorizer.serviceAccount('ns', 'sa').resource('deployments').check('delete').allowed()",
                350_004,
            ),
        ] {
            assert_eq!(cost_in(&schema, rule), expected, "{rule}");
        }
    }

    #[test]
    fn authorizer_selectors_cost_by_length() {
        let schema = json!({"type": "object"});
        // kube's selector cost: 10 + ceil(n/10) + ceil(n/2) * 50, after the 3 of
        // `authorizer.group('').resource('pods')`.
        let chain = "authorizer.group('').resource('pods')";
        for (selector, cost) in [
            ("spec.nodeName=mynode", 10 + 2 + 10 * 50),
            ("app=web", 10 + 1 + 4 * 50),
            ("", 10),
        ] {
            for function in ["fieldSelector", "labelSelector"] {
                let rule = format!("{chain}.{function}('{selector}')");
                assert_eq!(cost_in(&schema, &rule), 3 + cost, "{rule}");
            }
        }
        let rule = format!("{chain}.fieldSelector('spec.nodeName=mynode').check('list').allowed()");
        assert_eq!(cost_in(&schema, &rule), 3 + 512 + 350_000 + 1);
        // A selector from a variable is costed by that value's length.
        let program = Program::compile("authorizer.group('').resource('pods').labelSelector(self)")
            .expect("rule parses");
        let value = json!("a=bcd");
        let sizes = ValueSizes::new(vec![("self", &value)]);
        assert_eq!(
            estimate(program.expression(), &sizes),
            3 + 1 + 10 + 1 + 3 * 50
        );
    }

    #[test]
    fn scalars_cost_as_in_cel_go() {
        let s = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
        // self.a: ident 1 + select 1; `<`: 1 + operands.
        assert_eq!(cost_in(&s, "self.a < self.b"), 5);
        assert_eq!(cost_in(&s, "has(self.a) && self.a > 0"), 4);
        assert_eq!(cost_in(&s, "true"), 0);
        assert_eq!(cost_in(&s, "[1, 2, 3].size() == 3"), 12);
        assert_eq!(cost_in(&s, "type(self.a) == int"), 5);
    }

    #[test]
    fn all_over_a_list_multiplies_by_max_items() {
        // self.all(x, x == 5) over a list of integers: 2 + n * (3 + 1) (a schema integer has
        // no size, so comparing it costs nothing but its operands).
        let ints = json!({"type": "array", "maxItems": 10, "items": {"type": "integer"}});
        assert_eq!(cost_in(&ints, "self.all(x, x == 5)"), 42);
        // Without maxItems, n is what fits in a request: (3 MiB - 2) / (1 + 1).
        let unbounded = json!({"type": "array", "items": {"type": "integer"}});
        let n = (MAX_REQUEST_BYTES - 2) / 2;
        assert_eq!(cost_in(&unbounded, "self.all(x, x == 5)"), 2 + n * 4);
        // The same rule over a list of such lists is refused by kube.
        let nested = json!({"type": "array", "items": unbounded});
        assert!(cost_in(&nested, "self.all(l, l.all(x, x == 5))") > 10_000_000);
    }

    #[test]
    fn nested_comprehensions_multiply() {
        // x != y over strings of maxLength 10 (40 bytes): ceil(4.0) + 2 = 6.
        let bounded = strings(Some(10), Some(10));
        assert_eq!(
            cost_in(&bounded, "self.all(x, self.all(y, x != y))"),
            2 + 10 * (3 + 2 + 10 * (3 + 6))
        );
        let unbounded = strings(None, None);
        assert!(cost_in(&unbounded, "self.all(x, self.all(y, x != y))") > 1_000_000_000_000);
        // exists: 2 + n * (4 + body); map: 12 + n * (12 + body); filter: 12 + n * (13 + body).
        assert_eq!(
            cost_in(&bounded, "self.exists(x, x == 'a')"),
            2 + 10 * (4 + 2)
        );
        assert_eq!(cost_in(&bounded, "self.map(x, x)"), 12 + 10 * (12 + 1));
        assert_eq!(
            cost_in(&bounded, "self.filter(x, x == 'a')"),
            12 + 10 * (13 + 2)
        );
        assert_eq!(
            cost_in(&bounded, "self.map(x, x).all(y, y == 'a')"),
            12 + 10 * (12 + 1) + 1 + 10 * (3 + 2)
        );
    }

    #[test]
    fn string_functions_scale_with_max_length() {
        let s = json!({"type": "object", "properties": {
            "short": {"type": "string", "maxLength": 25},
            "long": {"type": "string"}}});
        // matches: ceil((len + 1) * 0.1) * ceil(regex * 0.25) + operands (select 2, literal 0).
        assert_eq!(cost_in(&s, "self.short.matches('^[a-z]+$')"), 11 * 2 + 2);
        assert_eq!(
            cost_in(&s, "self.long.matches('^[a-z]+$')"),
            by_factor(UNBOUNDED_STRING + 1, 0.1) * 2 + 2
        );
        assert_eq!(cost_in(&s, "self.short.contains('ab')"), 10 + 2);
        assert_eq!(cost_in(&s, "self.short.startsWith('ab')"), 1 + 2);
        assert_eq!(cost_in(&s, "self.short.size() < 3"), 4);
        assert_eq!(cost_in(&s, "size(self.long) < 3"), 4);
        assert_eq!(cost_in(&s, "self.short < 'b'"), 3);
    }

    #[test]
    fn maps_and_string_enums() {
        let m = json!({"type": "object", "maxProperties": 4, "additionalProperties": {"type": "string", "enum": ["a", "bcd"]}});
        // Iterating a map binds its keys: 2 + 4 * (3 + ident 1 + startsWith 1 + ...).
        assert_eq!(
            cost_in(&m, "self.all(k, self[k] == 'a')"),
            2 + 4 * (3 + 3 + 1)
        );
    }

    /// Estimates kube-apiserver's own tests expect (`TestCostEstimation`): rule, schema
    /// without bounds, cost; the same schema with bounds, cost.
    #[test]
    fn kubes_estimates_for_common_rules() {
        let array = |items: Value| json!({"type": "array", "items": items});
        let map = |values: Value| json!({"type": "object", "additionalProperties": values});
        let bounded = |mut s: Value, key: &str, n: u64| {
            s[key] = json!(n);
            s
        };
        let string = json!({"type": "string"});
        let number = json!({"type": "number"});
        let cases = [
            (
                "self.all(x, true)",
                array(number.clone()),
                "maxItems",
                10,
                4_718_591,
                32,
            ),
            (
                "self.all(x, true)",
                array(string.clone()),
                "maxItems",
                20,
                3_145_727,
                62,
            ),
            (
                "self.all(x, true)",
                array(json!({"type": "boolean"})),
                "maxItems",
                5,
                1_887_437,
                17,
            ),
            (
                "self.all(x, true)",
                map(number.clone()),
                "maxProperties",
                10,
                1_348_169,
                32,
            ),
            (
                "self.all(x, true)",
                map(string.clone()),
                "maxProperties",
                3,
                1_179_647,
                11,
            ),
            (
                "self.all(x, true)",
                array(json!({"type": "string", "format": "date"})),
                "maxItems",
                15,
                725_936,
                47,
            ),
            (
                "self.all(x, true)",
                array(json!({"type": "string", "format": "date-time"})),
                "maxItems",
                25,
                428_963,
                77,
            ),
            (
                "self.all(x, true)",
                map(json!({"type": "string", "format": "duration"})),
                "maxProperties",
                5,
                1_048_577,
                17,
            ),
            (
                "self.contains('test')",
                string.clone(),
                "maxLength",
                10,
                314_574,
                5,
            ),
            (
                "self.startsWith('test')",
                string.clone(),
                "maxLength",
                15,
                2,
                2,
            ),
            (
                "size(self + \"hello\") > size(\"hello\")",
                string.clone(),
                "maxLength",
                4,
                314_578,
                7,
            ),
            (
                "self[1] == 0.0",
                array(number.clone()),
                "maxItems",
                5000,
                2,
                2,
            ),
            (
                "self[1] == self[1]",
                array(string.clone()),
                "maxItems",
                8,
                314_577,
                314_577,
            ),
            (
                "self.all(x, self.all(y, self.all(z, true)))",
                array(number.clone()),
                "maxItems",
                10,
                0,
                3552,
            ),
            (
                "self.matches(\"x\")",
                string.clone(),
                "maxLength",
                50,
                314_574,
                22,
            ),
            (
                "\"\".matches(\"(((((((((())))))))))[0-9]\")",
                string.clone(),
                "maxLength",
                10,
                7,
                7,
            ),
            ("self == \"x\"", string.clone(), "maxLength", 0, 2, 1),
            (
                "self.all(x, x == 0.0)",
                array(number.clone()),
                "maxItems",
                3 * 1024 * 2048,
                6_291_454,
                25_165_826,
            ),
            (
                "self.all(x, x.y == 25.2)",
                array(map(number.clone())),
                "maxItems",
                12,
                6_291_452,
                74,
            ),
            (
                "self[0].x > 2.0",
                array(map(number.clone())),
                "maxItems",
                3000,
                4,
                4,
            ),
            (
                "self.find('[0-9]+') == ''",
                string.clone(),
                "maxLength",
                10,
                629_147,
                11,
            ),
            (
                "self.lowerAscii() == 'lower!'",
                string.clone(),
                "maxLength",
                10,
                314_575,
                6,
            ),
            (
                "oldSelf.size() == self.size()",
                map(json!({"type": "integer"})),
                "maxProperties",
                10,
                5,
                5,
            ),
            (
                "isQuantity(self)",
                json!({"x-kubernetes-int-or-string": true}),
                "maxLength",
                20,
                314_574,
                9,
            ),
        ];
        for (rule, schema, key, n, unbounded, with_bound) in cases {
            if unbounded > 0 {
                assert_eq!(cost_in(&schema, rule), unbounded, "{rule} on {schema}");
            }
            let schema = bounded(schema, key, n);
            assert_eq!(cost_in(&schema, rule), with_bound, "{rule} on {schema}");
        }
        // The same for map values bounded with the map, and lists of bounded strings.
        let values = json!({"type": "object", "maxProperties": 10,
            "additionalProperties": {"type": "string", "maxLength": 10}});
        assert_eq!(cost_in(&values, "self.all(x, x.contains(self[x]))"), 72);
        let list = strings(Some(10), Some(10));
        assert_eq!(cost_in(&list, "self.join(' ') == 'aa bb'"), 43);
        assert_eq!(cost_in(&list, "self.isSorted() == true"), 52);
        let list = strings(None, None);
        assert_eq!(cost_in(&list, "self.join(' ') == 'aa bb'"), 329_853_068_905);
        assert_eq!(cost_in(&list, "self.isSorted() == true"), 329_854_432_052);
        let with = |n: Option<u64>| {
            json!({"type": "object", "properties": {
                "str": {"type": "string", "maxLength": n},
                "before": {"type": "string", "maxLength": 2},
                "after": {"type": "string", "maxLength": 4}}})
        };
        let replace = "self.str.replace(self.before, self.after) == 'does not matter'";
        assert_eq!(cost_in(&with(None), replace), 629_154);
        assert_eq!(cost_in(&with(Some(4)), replace), 12);
        let split = |n: Option<u64>| {
            json!({"type": "object", "properties": {
                "str": {"type": "string", "maxLength": n},
                "separator": {"type": "string", "maxLength": n}}})
        };
        let rule = "self.str.split(self.separator) == []";
        assert_eq!(cost_in(&split(None), rule), 629_160);
        assert_eq!(cost_in(&split(Some(10)), rule), 22);
    }

    #[test]
    fn value_sizes_bound_the_actual_work() {
        let list = json!(["a", "bb", "ccc"]);
        assert_eq!(
            cost_with(&list, "self.all(x, self.all(y, x != y))"),
            2 + 3 * (3 + 2 + 3 * (3 + 3))
        );
        let big: Vec<String> = (0..2000).map(|i| format!("v{i}")).collect();
        let big = json!(big);
        assert!(cost_with(&big, "self.all(x, self.exists_one(y, x == y))") > 1_000_000);
        assert!(cost_with(&big, "self.all(x, x.size() < 10)") < 1_000_000);
        // A variable the values do not have costs as large as the input.
        assert!(cost_with(&list, "other.all(x, x)") < 1_000);
    }
}

//! `x-kubernetes-validations` CEL rules, evaluated with `kube-cel` and reported the way
//! kube-apiserver 1.35 reports them (`spec.n: Invalid value: 21: <message>` for a scalar,
//! `spec: Invalid value: <message>` for an object or a list; evaluation errors name the
//! type, `spec: Invalid value: "object": … evaluating rule: …`).

use std::collections::HashSet;
use std::sync::Arc;

use kube_cel::{CompilationError, CompilationResult, CompiledSchema, ErrorKind, ValidationError};
use serde_json::Value;

use super::cel_budget::{Cardinality, RuleCost, Tally, child_cardinality, expression_field};
use super::cel_sites::RuleSites;
use super::node::Node;
use crate::validation::{BadValue, Cause, CauseType, child, index, key};

/// The compiled rules of one schema (`None` inside when the schema has no rules).
#[derive(Clone)]
pub(crate) struct CelRules {
    compiled: Option<Arc<CompiledSchema>>,
    /// Where in `compiled` the rules are.
    sites: Option<Arc<RuleSites>>,
    /// The rules with `optionalOldSelf: true` as compiled, each with the rule as written.
    optional: Arc<Vec<(String, String)>>,
}

impl std::fmt::Debug for CelRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelRules")
            .field("has_rules", &self.compiled.is_some())
            .finish()
    }
}

fn has_rules(n: &Node) -> bool {
    !n.x_validations.is_empty()
        || n.properties.iter().any(|(_, p)| has_rules(p))
        || n.items.as_deref().is_some_and(has_rules)
        || n.additional_schema().flatten().is_some_and(has_rules)
        || n.all_of
            .iter()
            .chain(&n.any_of)
            .chain(&n.one_of)
            .any(has_rules)
}

impl CelRules {
    /// Compile every rule of `schema` (parsed as `root`).
    pub(crate) fn compile(schema: &Value, root: &Node) -> CelRules {
        let mut optional = Vec::new();
        let compiled = has_rules(root).then(|| {
            let mut rewritten = schema.clone();
            super::cel_optional::rewrite_schema(&mut rewritten, &mut optional);
            Arc::new(kube_cel::compile_schema(&rewritten))
        });
        let sites = compiled.as_deref().and_then(RuleSites::of).map(Arc::new);
        CelRules {
            compiled,
            sites,
            optional: Arc::new(optional),
        }
    }

    /// Rules that do not compile, fail kube's type check against their schema (see
    /// [`super::cel_check`]), or are estimated to cost more than kube allows (see [`super::cel_budget`]), as CRD-create
    /// causes at `<path>.x-kubernetes-validations[i].rule` (`path` names the top-level
    /// `openAPIV3Schema`), then kube's causes when all rules together cost too much.
    /// Expressions in `preexisting` are not type-checked nor checked against
    /// the per-expression cost limit.
    pub(crate) fn compile_errors(
        &self,
        schema: &Value,
        path: &str,
        preexisting: &HashSet<String>,
    ) -> Vec<Cause> {
        let mut out = Vec::new();
        if let Some(c) = &self.compiled {
            let at = Place {
                schema,
                path,
                at_root: true,
                cardinality: Some(1),
            };
            let mut tally = Tally::default();
            compile_errors_at(c, at, preexisting, &mut tally, &mut out);
            out.extend(tally.causes(path));
        }
        out
    }

    /// Evaluate the rules against `obj` (and `old` on update, for transition rules and
    /// ratcheting): kube's causes, and the warnings kube returns for the failures ratcheting
    /// lets through. `blocking` tells whether earlier causes stop CEL evaluation, as in
    /// kube-apiserver. When a rule would go over kube's runtime cost limits, no rule is
    /// evaluated and kube's cost error is the only cause (see [`super::cel_runtime`]).
    pub(crate) fn validate_with_warnings(
        &self,
        root: &Node,
        obj: &Value,
        old: Option<&Value>,
        blocking: bool,
    ) -> (Vec<Cause>, Vec<String>) {
        let (Some(compiled), Some(sites)) = (&self.compiled, &self.sites) else {
            return (Vec::new(), Vec::new());
        };
        if blocking {
            let cause = Cause::invalid(
                "<nil>",
                BadValue::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            );
            return (vec![cause], Vec::new());
        }
        if let Some(over) = super::cel_runtime::over_limit(compiled, sites, obj, old) {
            let r = resolve(root, obj, old, &over.path);
            let type_name = r.node.map_or("", |n| n.type_name.as_str());
            return (
                vec![Cause::invalid(r.field, type_name, &over.detail)],
                Vec::new(),
            );
        }
        let mut errors = Vec::new();
        super::cel_sites::evaluate(compiled, sites, obj, old, "", &mut errors);
        // Errors of rewritten `optionalOldSelf` rules speak of the rule as written.
        for e in &mut errors {
            if let Some((compiled_rule, written)) = self.optional.iter().find(|(c, _)| *c == e.rule)
            {
                e.message = e.message.replace(compiled_rule.as_str(), written);
                e.rule = written.clone();
            }
        }
        let (mut causes, mut warnings) = (Vec::new(), Vec::new());
        for e in &errors {
            match to_cause(root, obj, old, e) {
                Outcome::Cause(c) => causes.push(c),
                Outcome::Warning(w) => warnings.push(w),
                Outcome::Nothing => {}
            }
        }
        (causes, warnings)
    }
}

/// Whether causes already found stop CEL evaluation (`hasBlockingErr`).
pub(crate) fn is_blocking(causes: &[Cause]) -> bool {
    causes.iter().any(|c| {
        matches!(
            c.reason,
            CauseType::FieldValueNotSupported
                | CauseType::FieldValueRequired
                | CauseType::FieldValueTooLong
                | CauseType::FieldValueTooMany
                | CauseType::FieldValueTypeInvalid
        )
    })
}

/// A rule as kube-apiserver prints the bad value of its errors: Go's `%#v` of
/// `apiextensions.ValidationRule` (a set pointer prints as an address there; any address).
fn rule_value(raw: &Value) -> BadValue {
    let text =
        |k: &str| crate::validation::go_quote(raw.get(k).and_then(Value::as_str).unwrap_or(""));
    let pointer = |k: &str, ty: &str| match raw.get(k).filter(|v| !v.is_null()) {
        Some(_) => format!("({ty})(0xc000010000)"),
        None => format!("({ty})(nil)"),
    };
    BadValue::Printed(format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        text("rule"),
        text("message"),
        text("messageExpression"),
        pointer("reason", "*apiextensions.FieldValueErrorReason"),
        text("fieldPath"),
        pointer("optionalOldSelf", "*bool"),
    ))
}

/// kube's compile error for `expression` (the rule, or its message expression when
/// `message`): cel-go's type errors against the schema at `at` (`compilation failed: ERROR:
/// ...`), else a result of the wrong type; `None` when there is none or the expression was
/// in the stored CRD.
fn type_error(
    expression: &str,
    message: bool,
    raw: &Value,
    at: Place<'_>,
    preexisting: &HashSet<String>,
) -> Option<String> {
    if preexisting.contains(expression) {
        return None;
    }
    let type_name = super::unique_type_name("selfType");
    let optional = raw.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    let variable = |name, optional| super::CelVariable {
        name,
        schema: at.schema,
        type_name: &type_name,
        optional,
    };
    let variables = [variable("self", false), variable("oldSelf", optional)];
    let env = super::CelEnv {
        variables: &variables,
        objects: at.at_root,
        metadata: None,
        definitions: None,
    };
    let checked = super::check_cel(expression, &env);
    let prefix = if message { "messageExpression " } else { "" };
    if let Some(errors) = checked.errors {
        return Some(format!("{prefix}compilation failed: {errors}"));
    }
    match checked.result.as_deref() {
        Some("bool") | None if !message => None,
        Some("string") | None if message => None,
        _ if message => Some("messageExpression must evaluate to a string".to_owned()),
        _ => Some("cel expression must evaluate to a bool".to_owned()),
    }
}

/// A schema node being checked: its JSON, its field path, whether it is the top level, how
/// many times its rules can run per object.
#[derive(Clone, Copy)]
struct Place<'a> {
    schema: &'a Value,
    path: &'a str,
    at_root: bool,
    cardinality: Cardinality,
}

/// The causes of a rule that parsed: type errors against its schema or a result of the wrong
/// type (then kube has no cost estimate for it), else an estimated cost over kube's limit;
/// the same for its message expression.
fn ok_rule_errors(
    cr: &CompilationResult,
    raw: &Value,
    rule_path: &str,
    at: Place<'_>,
    preexisting: &HashSet<String>,
    tally: &mut Tally,
    out: &mut Vec<Cause>,
) {
    let text = |k: &str| raw.get(k).and_then(Value::as_str).unwrap_or("");
    let cost_at = |expression: &str| RuleCost {
        schema: at.schema,
        at_root: at.at_root,
        cardinality: at.cardinality,
        preexisting: preexisting.contains(expression),
    };
    let programs = [
        (false, "rule", Some(&cr.program)),
        (true, "messageExpression", cr.message_program.as_ref()),
    ];
    for (message, key, program) in programs {
        let field = expression_field(rule_path, message);
        let checked = Some(text(key)).filter(|t| !t.is_empty());
        match checked.and_then(|t| type_error(t, message, raw, at, preexisting)) {
            Some(detail) => out.push(Cause::invalid(field, rule_value(raw), &detail)),
            None => {
                if let Some(program) = program {
                    out.extend(cost_at(text(key)).check(program, field, message, tally));
                }
            }
        }
    }
}

fn compile_errors_at(
    c: &CompiledSchema,
    at: Place<'_>,
    preexisting: &HashSet<String>,
    tally: &mut Tally,
    out: &mut Vec<Cause>,
) {
    let (schema, path) = (at.schema, at.path);
    let rules = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array);
    for (i, r) in c.validations.iter().enumerate() {
        let rule_path = index(&child(path, "x-kubernetes-validations"), i);
        let raw = rules.and_then(|r| r.get(i)).cloned().unwrap_or(Value::Null);
        let e = match r {
            Err(e) => e,
            Ok(cr) => {
                ok_rule_errors(cr, &raw, &rule_path, at, preexisting, tally, out);
                continue;
            }
        };
        match e {
            CompilationError::Parse { source, .. } => out.push(Cause::invalid(
                child(&rule_path, "rule"),
                rule_value(&raw),
                &format!("compilation failed: {source}"),
            )),
            CompilationError::MessageExpressionParse { source, .. } => out.push(Cause::invalid(
                child(&rule_path, "messageExpression"),
                rule_value(&raw),
                &format!("messageExpression compilation failed: {source}"),
            )),
            other => out.push(Cause::invalid(
                child(&rule_path, "rule"),
                rule_value(&raw),
                &other.to_string(),
            )),
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, sub) in props {
            if let Some(sc) = c.properties.get(k) {
                compile_errors_at(
                    sc,
                    Place {
                        schema: sub,
                        path: &key(&child(path, "properties"), k),
                        at_root: false,
                        cardinality: child_cardinality(at.cardinality, schema),
                    },
                    preexisting,
                    tally,
                    out,
                );
            }
        }
    }
    if let (Some(sc), Some(sub)) = (&c.items, schema.get("items")) {
        compile_errors_at(
            sc,
            Place {
                schema: sub,
                path: &child(path, "items"),
                at_root: false,
                cardinality: child_cardinality(at.cardinality, schema),
            },
            preexisting,
            tally,
            out,
        );
    }
    if let (Some(sc), Some(sub)) = (&c.additional_properties, schema.get("additionalProperties")) {
        compile_errors_at(
            sc,
            Place {
                schema: sub,
                path: &child(path, "additionalProperties"),
                at_root: false,
                cardinality: child_cardinality(at.cardinality, schema),
            },
            preexisting,
            tally,
            out,
        );
    }
}

/// Where a kube-cel error path points: kube's field path, the schema node, the value and
/// the old value correlated with it. Below an item of an atomic or set list nothing is
/// correlated (kube cannot tell which old item an item was): `anchor` is then the nearest
/// correlatable ancestor's value and old value.
struct Resolved<'a> {
    field: String,
    node: Option<&'a Node>,
    value: Option<&'a Value>,
    old: Option<&'a Value>,
    correlated: bool,
    anchor: (Option<&'a Value>, Option<&'a Value>),
}

impl Resolved<'_> {
    /// Whether the value is unchanged for ratcheting: equal to its correlated old value, or,
    /// where nothing correlates, its nearest correlatable ancestor is unchanged.
    fn unchanged(&self) -> bool {
        let (value, old) = if self.correlated {
            (self.value, self.old)
        } else {
            self.anchor
        };
        value.is_some() && value == old
    }
}

/// Split a kube-cel path (`spec.items[0].name`) into segments (`Err(i)` for indices).
fn segments(path: &str) -> Vec<Result<String, usize>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push(Ok(name.to_string()));
        }
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            match idx.trim_end_matches(']').parse::<usize>() {
                Ok(i) => out.push(Err(i)),
                Err(_) => out.push(Ok(idx.to_string())),
            }
        }
    }
    out
}

fn resolve<'a>(root: &'a Node, obj: &'a Value, old: Option<&'a Value>, path: &str) -> Resolved<'a> {
    let segs = segments(path);
    let mut r = Resolved {
        field: String::new(),
        node: Some(root),
        value: Some(obj),
        old,
        correlated: true,
        anchor: (Some(obj), old),
    };
    let mut i = 0;
    while i < segs.len() {
        match &segs[i] {
            Err(idx) => {
                let list = r.node;
                let item = r.value.and_then(|v| v.get(*idx));
                let correlated = match (list, item) {
                    (Some(n), Some(item)) => n.correlate_item(item, r.old),
                    _ => None,
                };
                let map_list = list.is_some_and(|n| n.list_type.as_deref() == Some("map"));
                if !map_list && r.correlated {
                    r.anchor = (r.value, r.old);
                    r.correlated = false;
                }
                r.field = index(&r.field, *idx);
                r.node = list.and_then(|n| n.items.as_deref());
                r.value = item;
                r.old = correlated;
                i += 1;
            }
            Ok(name) => {
                if let Some(p) = r.node.and_then(|n| n.property(name)) {
                    r.field = child(&r.field, name);
                    r.node = Some(p);
                    r.value = r.value.and_then(|v| v.get(name));
                    r.old = r.old.and_then(|v| v.get(name));
                    i += 1;
                    continue;
                }
                // A map key, possibly containing dots: take the longest key present.
                let mut taken = 1;
                let mut k = name.clone();
                let mut candidate = name.clone();
                for (j, s) in segs.iter().enumerate().skip(i + 1) {
                    let Ok(s) = s else { break };
                    candidate = format!("{candidate}.{s}");
                    if r.value.and_then(|v| v.get(&candidate)).is_some() {
                        k = candidate.clone();
                        taken = j - i + 1;
                    }
                }
                let additional = r.node.and_then(|n| n.additional_schema());
                r.field = match additional {
                    Some(_) => key(&r.field, &k),
                    None => child(&r.field, &k),
                };
                r.node = additional.flatten();
                r.value = r.value.and_then(|v| v.get(&k));
                r.old = r.old.and_then(|v| v.get(&k));
                i += taken;
            }
        }
    }
    if r.field.is_empty() {
        r.field = "<nil>".to_string();
    }
    r
}

/// What a kube-cel error becomes: kube's cause, or — a failing rule on a value ratcheting
/// lets through — kube's warning (the cause's text), or nothing.
enum Outcome {
    Cause(Cause),
    Warning(String),
    Nothing,
}

fn to_cause(root: &Node, obj: &Value, old: Option<&Value>, e: &ValidationError) -> Outcome {
    let r = resolve(root, obj, old, &e.field_path);
    let type_name = r.node.map_or("", |n| n.type_name.as_str());
    match e.kind {
        ErrorKind::ValidationFailure => {
            let default_msg = format!("failed rule: {}", e.rule);
            let detail = if e.message == default_msg {
                format!("failed rule: {}", e.rule.trim())
            } else {
                e.message.trim().to_string()
            };
            // kube 1.35 shows a scalar's value and omits an object's or a list's.
            let value = match r.value {
                Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                    BadValue::from(v)
                }
                _ => BadValue::Omit,
            };
            let unchanged = r.unchanged();
            let cause = match e.reason.as_deref() {
                Some("FieldValueForbidden") => Cause::forbidden(r.field, &detail),
                Some("FieldValueRequired") => Cause::required(r.field, &detail),
                Some("FieldValueDuplicate") => Cause::duplicate(r.field, value),
                _ => Cause::invalid(r.field, value, &detail),
            };
            // Ratcheting: a failing rule on an unchanged value is a warning (transition rules
            // excepted).
            if old.is_some() && !e.rule.contains("oldSelf") && unchanged {
                return Outcome::Warning(cause.to_string());
            }
            Outcome::Cause(cause)
        }
        ErrorKind::EvaluationError | ErrorKind::InvalidResult => {
            let detail = e.message.trim_start_matches("rule evaluation error: ");
            Outcome::Cause(Cause::invalid(
                r.field,
                type_name,
                &format!("{detail} evaluating rule: {}", e.rule.trim()),
            ))
        }
        _ => {
            // A rule kube-cel cannot evaluate (a CEL feature it lacks): kube-apiserver would
            // evaluate it; we do not reject the object for our own gap.
            tracing::warn!(rule = %e.rule, path = %e.field_path, error = %e.message, "x-kubernetes-validations rule not evaluated");
            Outcome::Nothing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(schema: &Value) -> (Node, CelRules) {
        let root = Node::parse(schema, "s", &mut Vec::new());
        let rules = CelRules::compile(schema, &root);
        (root, rules)
    }

    fn run(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<String> {
        let (root, rules) = rules(schema);
        rules
            .validate_with_warnings(&root, obj, old, false)
            .0
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn failing_rules_are_reported_like_kube() {
        let s = json!({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.spec)", "message": "spec is required "}],
            "properties": {"spec": {"type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.min <= self.max"},
                    {"rule": "self.min >= 0", "message": "min must not be negative", "reason": "FieldValueForbidden"}],
                "properties": {"min": {"type": "integer"}, "max": {"type": "integer"},
                    "tags": {"type": "object", "additionalProperties": {"type": "string",
                        "x-kubernetes-validations": [{"rule": "self != 'bad'", "message": "no bad tags"}]}}}}}});
        assert_eq!(
            run(&s, &json!({}), None),
            vec!["<nil>: Invalid value: spec is required"]
        );
        assert_eq!(
            run(
                &s,
                &json!({"spec": {"min": -5, "max": -6, "tags": {"a.b": "bad", "c": "ok"}}}),
                None
            ),
            vec![
                "spec: Invalid value: failed rule: self.min <= self.max",
                "spec: Forbidden: min must not be negative",
                "spec.tags[a.b]: Invalid value: \"bad\": no bad tags",
            ]
        );
        assert!(run(&s, &json!({"spec": {"min": 1, "max": 2}}), None).is_empty());
    }

    #[test]
    fn transition_rules_and_ratcheting() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "mode": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]},
            "n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]}}}}});
        assert!(run(&s, &json!({"spec": {"mode": "a"}}), None).is_empty());
        let old = json!({"spec": {"mode": "a", "n": 20}});
        assert_eq!(
            run(&s, &json!({"spec": {"mode": "b", "n": 20}}), Some(&old)),
            vec!["spec.mode: Invalid value: \"b\": mode is immutable"]
        );
        assert_eq!(
            run(&s, &json!({"spec": {"mode": "a", "n": 21}}), Some(&old)),
            vec!["spec.n: Invalid value: 21: failed rule: self < 10"]
        );
        // The unchanged `n` fails but is ratcheted: kube answers its failure as a warning.
        let (root, rules) = rules(&s);
        let (causes, warnings) = rules.validate_with_warnings(
            &root,
            &json!({"spec": {"mode": "a", "n": 20}}),
            Some(&old),
            false,
        );
        assert!(causes.is_empty());
        assert_eq!(
            warnings,
            ["spec.n: Invalid value: 20: failed rule: self < 10"]
        );
    }

    #[test]
    fn blocking_errors_skip_cel() {
        let s = json!({"type": "object", "x-kubernetes-validations": [{"rule": "false"}]});
        let (root, r) = rules(&s);
        let got: Vec<String> = r
            .validate_with_warnings(&root, &json!({}), None, true)
            .0
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            vec![
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            ]
        );
        assert!(is_blocking(&[Cause::required("x", "")]));
        assert!(!is_blocking(&[Cause::invalid("x", "", "")]));
    }

    #[test]
    fn compile_errors_name_the_rule() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.a ==="}]}}});
        let (_, r) = rules(&s);
        let errs = r.compile_errors(&s, "openAPIV3Schema", &HashSet::new());
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].field,
            "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
        );
        assert!(errs[0].message.contains("compilation failed"));
    }

    #[test]
    fn path_resolution() {
        let s = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object",
            "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}}}});
        let root = Node::parse(&s, "s", &mut Vec::new());
        let obj = json!({"a": [{"m": {"x.y": "v"}}]});
        let r = resolve(&root, &obj, None, "a[0].m.x.y");
        assert_eq!(r.field, "a[0].m[x.y]");
        assert_eq!(r.value, Some(&json!("v")));
        assert_eq!(r.node.map(|n| n.type_name.as_str()), Some("string"));
    }
}

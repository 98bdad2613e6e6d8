//! CEL condition rules (`conditionRules[].type: CEL`): each of `celExpressions` is evaluated
//! with the variable `object` bound to the live object; the condition is True when all return
//! true, False (reason `ConditionRuleEvaluated`) at the first that returns false, and False
//! with reason `ConditionRuleExpressionError` and the error as message when one does not
//! compile, fails, or returns something other than a bool. The message comes from
//! `messageExpression` (variables `object` and `result`; a non-empty string wins; its error
//! becomes the message), else `message`, else `Manifest is <condition>` /
//! `Manifest is not <condition>` — as upstream's work agent.
//!
//! The environment: the `cel` crate's standard functions, the Kubernetes libraries of
//! `kube-cel`, and `hasConditions(x)` (true when `x.conditions` is a non-empty list).
//! Unknown identifiers and functions are compile errors (cel-go's `undeclared reference`).
//! There is no cost budget.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use kube_cel::KubeCelExt;
use kube_cel::cel::common::value::Val;
use kube_cel::cel::objects::Key;
use kube_cel::cel::parser::Parser;
use kube_cel::cel::{Context, Value};
use ocm_placement::cel_check::{json_to_cel, undeclared_references};

/// The outcome of a CEL rule: condition status, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleOutcome {
    /// `True` or `False`.
    pub status: &'static str,
    /// One of the `ConditionRule*` reasons.
    pub reason: &'static str,
    /// The condition message.
    pub message: String,
}

/// Functions OCM adds to the condition-rule environment.
const OCM_FUNCTIONS: &[&str] = &["hasConditions"];

fn root() -> &'static Context<'static> {
    static ROOT: OnceLock<Context<'static>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx.add_function("hasConditions", |value: Value| -> bool {
            match value {
                Value::Map(map) => matches!(
                    map.get(&Key::String(Arc::new("conditions".to_string()))),
                    Some(Value::List(list)) if !list.is_empty()
                ),
                _ => false,
            }
        });
        ctx
    })
}

fn evaluate(source: &str, variables: &[(&str, &Value)]) -> Result<Value, String> {
    let expr = Parser::new()
        .enable_optional_syntax(true)
        .parse(source)
        .map_err(|e| e.to_string())?;
    let names: Vec<&str> = variables.iter().map(|(n, _)| *n).collect();
    let problems = undeclared_references(&expr, &names, OCM_FUNCTIONS);
    if !problems.is_empty() {
        let lines: Vec<String> = problems
            .iter()
            .map(|p| format!("ERROR: <input>: {p}"))
            .collect();
        return Err(lines.join("\n"));
    }
    let mut bound: BTreeMap<String, Box<dyn Val>> = BTreeMap::new();
    for (name, value) in variables {
        let value = Box::<dyn Val>::try_from((*value).clone()).map_err(|e| e.to_string())?;
        bound.insert((*name).to_string(), value);
    }
    let ctx = Context::Child {
        parent: root(),
        variables: bound,
        resolver: None,
    };
    ctx.resolve(&expr).map_err(|e| e.to_string())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::Bool(_) => "bool",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Null => "null",
        Value::Bytes(_) => "bytes",
        _ => "other",
    }
}

/// Evaluates a CEL rule for `condition` against `object` (the live object as JSON).
pub fn evaluate_rule(
    condition: &str,
    expressions: &[String],
    message: Option<&str>,
    message_expression: Option<&str>,
    object: &serde_json::Value,
) -> RuleOutcome {
    use ocm_api::work::names::manifest_reasons as reasons;
    let object = json_to_cel(object, false);
    let mut result = true;
    for source in expressions {
        match evaluate(source, &[("object", &object)]) {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => {
                result = false;
                break;
            }
            Ok(other) => {
                return RuleOutcome {
                    status: "False",
                    reason: reasons::CONDITION_RULE_EXPRESSION_ERROR,
                    message: format!("expected bool result, got {}", type_name(&other)),
                };
            }
            Err(error) => {
                return RuleOutcome {
                    status: "False",
                    reason: reasons::CONDITION_RULE_EXPRESSION_ERROR,
                    message: error,
                };
            }
        }
    }
    let from_expression =
        message_expression.filter(|e| !e.is_empty()).map(|source| {
            match evaluate(
                source,
                &[("object", &object), ("result", &Value::Bool(result))],
            ) {
                Ok(Value::String(s)) => Ok((*s).clone()),
                Ok(other) => Err(format!(
                    "expected message expression to have a string result, got {}",
                    type_name(&other)
                )),
                Err(e) => Err(e),
            }
        });
    let message = match from_expression {
        Some(Ok(m)) if !m.is_empty() => m,
        Some(Err(e)) => e,
        _ => match message.filter(|m| !m.is_empty()) {
            Some(m) => m.to_string(),
            None if result => format!("Manifest is {condition}"),
            None => format!("Manifest is not {condition}"),
        },
    };
    RuleOutcome {
        status: if result { "True" } else { "False" },
        reason: reasons::CONDITION_RULE_EVALUATED,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "test"},
               "status": {"readyReplicas": 1, "replicas": 2,
                          "conditions": [{"type": "Available", "status": "True"}]}})
    }

    fn rule(expressions: &[&str], message: Option<&str>, expression: Option<&str>) -> RuleOutcome {
        let expressions: Vec<String> = expressions.iter().map(|e| (*e).to_string()).collect();
        evaluate_rule(
            "Available",
            &expressions,
            message,
            expression,
            &deployment(),
        )
    }

    #[test]
    fn true_with_a_message_expression() {
        let out = rule(
            &[r#"object.status.conditions.exists(c, c.type == "Available" && c.status == "True")"#],
            None,
            Some(r#"result ? "Deployment available" : "Deployment unavailable""#),
        );
        assert_eq!(
            out,
            RuleOutcome {
                status: "True",
                reason: "ConditionRuleEvaluated",
                message: "Deployment available".into()
            }
        );
    }

    #[test]
    fn the_first_false_expression_decides_and_default_messages() {
        let out = rule(
            &[
                "true",
                "object.status.readyReplicas == object.status.replicas",
            ],
            None,
            None,
        );
        assert_eq!(
            (out.status, out.reason, out.message.as_str()),
            (
                "False",
                "ConditionRuleEvaluated",
                "Manifest is not Available"
            )
        );
        let out = rule(&["object.status.replicas == 2"], None, None);
        assert_eq!(out.message, "Manifest is Available");
        let out = rule(&["true"], Some("fixed"), None);
        assert_eq!(out.message, "fixed");
    }

    #[test]
    fn expression_errors() {
        let out = rule(
            &[r#"object.status.conditions.filter(c, c.type == "Available")[0].status"#],
            None,
            None,
        );
        assert_eq!(
            (out.status, out.reason, out.message.as_str()),
            (
                "False",
                "ConditionRuleExpressionError",
                "expected bool result, got string"
            )
        );
        let out = rule(&["object.missing"], None, None);
        assert_eq!(out.reason, "ConditionRuleExpressionError");
        assert!(
            out.message.to_lowercase().contains("no such key: missing"),
            "{}",
            out.message
        );
        let out = rule(&["badcel == 1"], None, None);
        assert_eq!(out.reason, "ConditionRuleExpressionError");
        assert!(
            out.message.contains("undeclared reference to 'badcel'"),
            "{}",
            out.message
        );
        let out = rule(&["object.status.("], None, None);
        assert_eq!(out.reason, "ConditionRuleExpressionError");
    }

    #[test]
    fn a_broken_message_expression_keeps_the_status_and_reports_itself() {
        let out = rule(&["true"], None, Some("badcel"));
        assert_eq!((out.status, out.reason), ("True", "ConditionRuleEvaluated"));
        assert!(
            out.message.contains("undeclared reference to 'badcel'"),
            "{}",
            out.message
        );
        let out = rule(&["true"], None, Some("1"));
        assert_eq!(
            out.message,
            "expected message expression to have a string result, got int"
        );
    }

    #[test]
    fn has_conditions() {
        let out = rule(
            &[
                r#"hasConditions(object.status) && !hasConditions({}) && !hasConditions("x")
                 && !hasConditions({"conditions": []}) && !hasConditions({"conditions": null})"#,
            ],
            None,
            None,
        );
        assert_eq!(out.status, "True", "{}", out.message);
    }
}

//! Evaluating one policy for one request and one param: `matchConditions`, then `variables`
//! and `validations`, with kube's failure messages and `failurePolicy`. Pure.

use kube_cel::cel;
use serde_json::Value;

use super::spec::{Named, Policy};
use crate::admission_cel::Activation;
use crate::webhook::FailurePolicy;
use ocm_apiserver_schema::cel_cost::{
    BUDGET_ERROR, Budget, MATCH_CONDITIONS_BUDGET, RUNTIME_BUDGET,
};

/// What the CEL variables of an evaluation are bound to (`Value::Null` when absent).
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// `object` (null on delete).
    pub object: &'a Value,
    /// `oldObject` (null on create).
    pub old_object: &'a Value,
    /// `request`: the admission request's attributes.
    pub request: &'a Value,
    /// `params` (null without a `paramKind` or `paramRef`).
    pub params: &'a Value,
    /// `namespaceObject` (null for cluster-scoped requests).
    pub namespace_object: &'a Value,
    /// `authorizer` (see [`super::authorizer`]; null when the caller has none).
    pub authorizer: &'a cel::Value,
}

/// A validation that did not pass (or an error that the failure policy turns into one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The message (kube's wording when the policy gives none).
    pub message: String,
    /// The Status reason (`Invalid`, `Forbidden`, `Unauthorized`, `RequestEntityTooLarge`).
    pub reason: String,
    /// An audit annotation that could not be computed: it denies the request whatever the
    /// binding's `validationActions` say.
    pub denies_always: bool,
}

/// The result of evaluating a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A match condition is false (or failed under `failurePolicy: Ignore`): the policy does
    /// not apply.
    NotMatched,
    /// The failed validations (empty: all passed).
    Evaluated(Vec<Failure>),
}

/// The longest message a `messageExpression` may produce (kube's limit).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

fn error_failure(message: String) -> Failure {
    Failure {
        message,
        reason: "Invalid".to_owned(),
        denies_always: false,
    }
}

/// The CEL type name of a value, as cel-go prints it.
fn type_name(value: &cel::Value) -> &'static str {
    match value {
        cel::Value::List(_) => "list",
        cel::Value::Map(_) => "map",
        cel::Value::Int(_) => "int",
        cel::Value::UInt(_) => "uint",
        cel::Value::Float(_) => "double",
        cel::Value::String(_) => "string",
        cel::Value::Bytes(_) => "bytes",
        cel::Value::Bool(_) => "bool",
        cel::Value::Null => "null_type",
        _ => "dyn",
    }
}

/// Audit annotations publish nothing here (there is no audit log), but one that fails to
/// evaluate under `failurePolicy: Fail`, or yields neither a string nor null, denies.
fn audit_annotation_failures(
    policy: &Policy,
    act: &Activation,
    fail: bool,
    budget: &mut Budget,
) -> Vec<Failure> {
    let mut failures = Vec::new();
    for annotation in &policy.audit_annotations {
        let result = run(act, &annotation.program, budget);
        let message = match result {
            Ok(cel::Value::String(_) | cel::Value::Null) => continue,
            Ok(other) => format!(
                "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                annotation.expression,
                type_name(&other)
            ),
            Err(_) if !fail => continue,
            Err(err) => resulted_in_error(&annotation.expression, &err),
        };
        failures.push(Failure {
            denies_always: true,
            ..error_failure(message)
        });
    }
    failures
}

/// Evaluates a compiled expression (one that did not compile is an evaluation error) if
/// `budget` allows it: kube's runtime cost limits, checked with the cost the expression
/// would have over the values bound now, before it runs (see [`ocm_apiserver_schema::cel_cost`]).
fn run(
    act: &Activation,
    program: &crate::admission_cel::CompiledExpression,
    budget: &mut Budget,
) -> Result<cel::Value, String> {
    match program {
        Ok(program) => {
            budget.charge(act.cost(program))?;
            act.eval(program)
        }
        Err(err) => Err(format!("compilation failed: {err}")),
    }
}

/// The outcome when the budget ran out: kube's error, subject to the failure policy.
fn out_of_budget(fail: bool) -> Outcome {
    Outcome::Evaluated(if fail {
        vec![error_failure(BUDGET_ERROR.to_owned())]
    } else {
        Vec::new()
    })
}

fn resulted_in_error(expression: &str, err: &str) -> String {
    format!("expression '{expression}' resulted in error: {err}")
}

/// Evaluates the match conditions: `Ok(false)` when one is false, `Err` with the joined errors
/// when none is false but some failed.
fn match_conditions(conditions: &[Named], act: &Activation) -> Result<bool, String> {
    let mut errors = Vec::new();
    let mut budget = Budget::new(MATCH_CONDITIONS_BUDGET);
    for condition in conditions {
        let result = run(act, &condition.program, &mut budget);
        if budget.exhausted() {
            return Err(BUDGET_ERROR.to_owned());
        }
        match result {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(_) => errors.push(resulted_in_error(
                &condition.expression,
                "expression must evaluate to bool",
            )),
            Err(err) => errors.push(resulted_in_error(&condition.expression, &err)),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// Evaluates `policy` for one request and param, as kube-apiserver's validator does.
pub fn evaluate(policy: &Policy, inputs: &Inputs<'_>) -> Outcome {
    let mut act = Activation::new(&[
        ("object", inputs.object),
        ("oldObject", inputs.old_object),
        ("request", inputs.request),
        ("params", inputs.params),
        ("namespaceObject", inputs.namespace_object),
    ]);
    act.bind_value("authorizer", inputs.authorizer.clone());
    let fail = policy.failure_policy == FailurePolicy::Fail;
    match match_conditions(&policy.match_conditions, &act) {
        Ok(true) => {}
        Ok(false) => return Outcome::NotMatched,
        Err(err) if fail => return Outcome::Evaluated(vec![error_failure(err)]),
        Err(err) => {
            tracing::debug!(policy = policy.name, %err, "match condition failed; ignored");
            return Outcome::NotMatched;
        }
    }
    // Variables are evaluated in order; one that fails is left out, and an expression that
    // uses it reports its error.
    let mut budget = Budget::new(RUNTIME_BUDGET);
    let mut variable_errors: Vec<(String, String)> = Vec::new();
    for variable in &policy.variables {
        let value = run(&act, &variable.program, &mut budget);
        match value {
            Ok(v) => act.add_variable(&variable.name, v),
            Err(err) => variable_errors.push((variable.name.clone(), err)),
        }
    }
    let explain = |expression: &str, err: String| -> String {
        let failed = variable_errors
            .iter()
            .find(|(name, _)| expression.contains(&format!("variables.{name}")));
        match failed {
            Some((name, cause)) => resulted_in_error(
                expression,
                &format!("composited variable \"{name}\" fails to evaluate: {cause}"),
            ),
            None => resulted_in_error(expression, &err),
        }
    };
    let mut failures = Vec::new();
    for validation in &policy.validations {
        let result = run(&act, &validation.program, &mut budget);
        if budget.exhausted() {
            return out_of_budget(fail);
        }
        let passed = match result {
            Ok(cel::Value::Bool(b)) => b,
            Ok(_) => false,
            Err(err) => {
                if fail {
                    failures.push(error_failure(explain(&validation.expression, err)));
                }
                continue;
            }
        };
        if passed {
            continue;
        }
        let from_expression = validation
            .message_expression
            .as_ref()
            .and_then(|p| p.as_ref().ok())
            .filter(|p| budget.charge(act.cost(p)).is_ok())
            .and_then(|p| match act.eval(p) {
                Ok(cel::Value::String(s)) => Some(s.trim().to_owned()),
                _ => None,
            })
            .filter(|m| !m.is_empty() && m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'));
        let message = from_expression
            .or_else(|| Some(validation.message.clone()).filter(|m| !m.is_empty()))
            .unwrap_or_else(|| format!("failed expression: {}", validation.expression.trim()));
        failures.push(Failure {
            message,
            reason: if validation.reason.is_empty() {
                "Invalid".to_owned()
            } else {
                validation.reason.clone()
            },
            denies_always: false,
        });
    }
    failures.extend(audit_annotation_failures(policy, &act, fail, &mut budget));
    if budget.exhausted() {
        return out_of_budget(fail);
    }
    Outcome::Evaluated(failures)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(spec: Value) -> Policy {
        Policy::parse(&json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn run(p: &Policy, object: Value, params: Value) -> Outcome {
        let request = json!({"operation": "CREATE"});
        evaluate(
            p,
            &Inputs {
                object: &object,
                old_object: &Value::Null,
                request: &request,
                params: &params,
                namespace_object: &Value::Null,
                authorizer: &cel::Value::Null,
            },
        )
    }

    #[test]
    fn messages_come_from_message_expression_message_or_the_expression() {
        let p = policy(json!({"validations": [
            {"expression": "object.n < 3", "messageExpression": "'n is ' + string(object.n)"},
            {"expression": "object.n < 2", "message": "too big", "reason": "Forbidden"},
            {"expression": " object.n < 1 "},
            {"expression": "object.n < 10"},
        ]}));
        let Outcome::Evaluated(failures) = run(&p, json!({"n": 5}), Value::Null) else {
            panic!("not evaluated");
        };
        let got: Vec<(&str, &str)> = failures
            .iter()
            .map(|f| (f.message.as_str(), f.reason.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("n is 5", "Invalid"),
                ("too big", "Forbidden"),
                ("failed expression: object.n < 1", "Invalid")
            ]
        );
    }

    #[test]
    fn errors_follow_the_failure_policy() {
        let spec = |fp: &str| json!({"failurePolicy": fp, "validations": [{"expression": "object.missing == 1"}]});
        let failed = run(&policy(spec("Fail")), json!({}), Value::Null);
        assert_eq!(
            failed,
            Outcome::Evaluated(vec![Failure {
                message: "expression 'object.missing == 1' resulted in error: no such key: missing"
                    .into(),
                reason: "Invalid".into(),
                denies_always: false,
            }])
        );
        assert_eq!(
            run(&policy(spec("Ignore")), json!({}), Value::Null),
            Outcome::Evaluated(vec![])
        );
    }

    #[test]
    fn audit_annotations_that_cannot_be_computed_deny() {
        let p = policy(json!({"auditAnnotations": [
            {"key": "a", "valueExpression": "'fine'"},
            {"key": "b", "valueExpression": "1"},
            {"key": "c", "valueExpression": "object.nope"},
        ]}));
        let Outcome::Evaluated(f) = run(&p, json!({}), Value::Null) else {
            panic!("not evaluated");
        };
        let messages: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "valueExpression '1' resulted in unsupported return type: int. Return type must be either string or null.",
                "expression 'object.nope' resulted in error: no such key: nope",
            ]
        );
        assert!(f.iter().all(|f| f.denies_always));
    }

    #[test]
    fn match_conditions_variables_and_params() {
        let p = policy(json!({
            "matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels)"}],
            "variables": [{"name": "limit", "expression": "int(params.data.max)"}],
            "validations": [{"expression": "size(object.data) <= variables.limit"}],
        }));
        let params = json!({"data": {"max": "1"}});
        assert_eq!(
            run(&p, json!({"metadata": {}, "data": {}}), params.clone()),
            Outcome::NotMatched
        );
        let small = json!({"metadata": {"labels": {}}, "data": {"a": "1"}});
        assert_eq!(run(&p, small, params.clone()), Outcome::Evaluated(vec![]));
        let big = json!({"metadata": {"labels": {}}, "data": {"a": "1", "b": "2"}});
        let Outcome::Evaluated(f) = run(&p, big.clone(), params) else {
            panic!("not evaluated");
        };
        assert_eq!(
            f[0].message,
            "failed expression: size(object.data) <= variables.limit"
        );
        let Outcome::Evaluated(f) = run(&p, big, json!({"data": {}})) else {
            panic!("not evaluated");
        };
        assert!(
            f[0].message
                .contains("composited variable \"limit\" fails to evaluate"),
            "{}",
            f[0].message
        );
    }
}

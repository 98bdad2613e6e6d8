//! kube's estimated cost limits on a CRD's `x-kubernetes-validations` rules, checked when the
//! CRD is written: each rule's estimate (see [`crate::cel_cost`]) times how many times it can
//! run per object must stay within `StaticEstimatedCostLimit`, and all of them together
//! within `StaticEstimatedCRDCostLimit`.

use serde_json::Value;

use crate::cel_cost::{
    self, STATIC_EXPRESSION_LIMIT, STATIC_SCHEMA_LIMIT, SchemaSizes, cardinality_factor,
    unbounded_cardinality,
};
use crate::validation::{Cause, child};
use kube_cel::cel::Program;

/// Rules costing less than this share of the schema limit are not named when the total is
/// over it (kube's 1 %).
const NAMED_SHARE: u64 = STATIC_SCHEMA_LIMIT / 100;
/// How many of the most expensive rules kube names.
const NAMED_RULES: usize = 4;

/// The running total of a schema's estimated rule costs.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    total: u64,
    /// The most expensive rules (field path, cost), most expensive first.
    most_expensive: Vec<(String, u64)>,
}

impl Tally {
    fn observe(&mut self, field: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < NAMED_SHARE {
            return;
        }
        self.most_expensive.push((field, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(NAMED_RULES);
    }

    /// kube's causes when the total is over the schema limit: each of the most expensive
    /// rules, then the total at `schema_path` (the `openAPIV3Schema` field).
    pub(crate) fn causes(&self, schema_path: &str) -> Vec<Cause> {
        if self.total <= STATIC_SCHEMA_LIMIT {
            return Vec::new();
        }
        let mut out: Vec<Cause> = self
            .most_expensive
            .iter()
            .map(|(field, _)| {
                Cause::forbidden(
                    field.clone(),
                    "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
                )
            })
            .collect();
        out.push(Cause::forbidden(
            schema_path,
            &cel_cost::over_limit_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                self.total,
                STATIC_SCHEMA_LIMIT,
            ),
        ));
        out
    }
}

/// How many times a rule on a node can run per object: `Some(n)` when every list and map
/// above it is bounded, `None` otherwise.
pub(crate) type Cardinality = Option<u64>;

/// The cardinality of a child of `parent` (a property, the items, the map values).
pub(crate) fn child_cardinality(parent_cardinality: Cardinality, parent: &Value) -> Cardinality {
    let factor = cardinality_factor(parent)?;
    parent_cardinality.map(|c| c.saturating_mul(factor))
}

/// One rule (or message expression) of the schema node `schema` being checked.
pub(crate) struct RuleCost<'a> {
    /// The node's schema.
    pub schema: &'a Value,
    /// Whether the node is the top of the custom resource.
    pub at_root: bool,
    /// How many times the node's rules run per object.
    pub cardinality: Cardinality,
    /// Whether the expression was in the stored CRD (then its own limit is not applied).
    pub preexisting: bool,
}

impl RuleCost<'_> {
    /// Estimate `rule` (at `field`), add it to `tally`, and return kube's cause when it is
    /// over the per-expression limit. A rule's cost counts once per time it can run; a
    /// message expression's once (as kube counts them).
    pub(crate) fn check(
        &self,
        program: &Program,
        field: String,
        message_expression: bool,
        tally: &mut Tally,
    ) -> Option<Cause> {
        let sizes = SchemaSizes::for_rule(self.schema, self.at_root);
        let once = cel_cost::estimate(program.expression(), &sizes);
        let cost = match (message_expression, self.cardinality) {
            (true, _) => once,
            (false, Some(n)) => cel_cost::mul(once, n),
            (false, None) => cel_cost::mul(once, unbounded_cardinality(self.schema)),
        };
        let what = if message_expression {
            "estimated messageExpression cost"
        } else {
            "estimated rule cost"
        };
        let cause = (!self.preexisting && cost > STATIC_EXPRESSION_LIMIT).then(|| {
            Cause::forbidden(
                field.clone(),
                &cel_cost::over_limit_message(what, cost, STATIC_EXPRESSION_LIMIT),
            )
        });
        tally.observe(field, cost);
        cause
    }
}

/// `<rule_path>.rule` or `<rule_path>.messageExpression`.
pub(crate) fn expression_field(rule_path: &str, message_expression: bool) -> String {
    child(
        rule_path,
        if message_expression {
            "messageExpression"
        } else {
            "rule"
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(
        schema: &Value,
        cardinality: Cardinality,
        rule: &str,
        tally: &mut Tally,
    ) -> Option<String> {
        let program = Program::compile(rule).expect("parses");
        let at = RuleCost {
            schema,
            at_root: false,
            cardinality,
            preexisting: false,
        };
        at.check(&program, "s.rule".to_owned(), false, tally)
            .map(|c| c.to_string())
    }

    #[test]
    fn rules_over_the_limit_are_forbidden() {
        let unbounded = json!({"type": "array", "items": {"type": "string"}});
        let mut tally = Tally::default();
        let cause = check(
            &unbounded,
            Some(1),
            "self.all(x, self.all(y, x != y))",
            &mut tally,
        );
        assert_eq!(
            cause.as_deref(),
            Some(
                "s.rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
            )
        );
        let bounded =
            json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}});
        assert_eq!(
            check(
                &bounded,
                Some(1),
                "self.all(x, self.all(y, x != y))",
                &mut Tally::default()
            ),
            None
        );
        // The same rule under an unbounded list runs once per item there.
        assert!(
            check(
                &bounded,
                None,
                "self.all(x, self.all(y, x != y))",
                &mut Tally::default()
            )
            .is_some()
        );
    }

    #[test]
    fn the_total_names_the_most_expensive_rules() {
        // Each rule: 2 + 1_000 * (3 + ceil(4_001 * 0.1) * ceil(2 * 0.25) + 1) = 405_002, times
        // 20: 8_100_040 (under the rule limit); 13 of them are over the schema limit.
        let s = json!({"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 1000}});
        let mut tally = Tally::default();
        for i in 0..13 {
            let rule = format!("self.all(x, x.matches('a{i}'))");
            assert_eq!(check(&s, Some(20), &rule, &mut tally), None);
        }
        let causes: Vec<String> = tally
            .causes("spec.validation.openAPIV3Schema")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(causes.len(), 5);
        assert_eq!(
            causes[0],
            "s.rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        );
        assert!(causes[4].starts_with("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.0"), "{}", causes[4]);
        assert!(Tally::default().causes("x").is_empty());
    }

    #[test]
    fn cardinality_multiplies_down_the_schema() {
        let list = json!({"type": "array", "maxItems": 5, "items": {}});
        let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let object = json!({"type": "object", "properties": {}});
        assert_eq!(child_cardinality(Some(2), &list), Some(10));
        assert_eq!(child_cardinality(Some(2), &map), None);
        assert_eq!(child_cardinality(Some(2), &object), Some(2));
        assert_eq!(child_cardinality(None, &object), None);
    }
}

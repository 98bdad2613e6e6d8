//! kube's runtime cost limits on admission policy expressions: one evaluation may cost at
//! most `PerCallLimit`; the match conditions of one evaluation of a policy share one budget,
//! its variables, validations, messages and audit annotations another.
//!
//! Each expression is costed against the values bound when it is about to run (see
//! [`crate::cel_cost`]) and refused before it runs when it would go over, with kube's error,
//! so an expensive expression cannot hold a server thread.

use kube_cel::cel::Program;

use super::cel::Activation;
use crate::cel_cost::{BUDGET_ERROR, CALL_LIMIT_ERROR, PER_CALL_LIMIT};

/// What is left of a cost budget.
#[derive(Debug)]
pub(crate) struct Budget {
    remaining: u64,
    exhausted: bool,
}

impl Budget {
    /// A budget of `total` cost units.
    pub(crate) fn new(total: u64) -> Budget {
        Budget {
            remaining: total,
            exhausted: false,
        }
    }

    /// Charges `program`'s cost before it runs; `Err` with kube's error when it is over the
    /// per-call limit (kube charges what ran until it cancelled) or over what is left (then
    /// the budget is exhausted).
    pub(crate) fn charge(&mut self, act: &Activation, program: &Program) -> Result<(), String> {
        if self.exhausted {
            return Err(BUDGET_ERROR.to_owned());
        }
        let cost = act.cost(program);
        if cost > PER_CALL_LIMIT && PER_CALL_LIMIT <= self.remaining {
            self.remaining -= PER_CALL_LIMIT;
            return Err(CALL_LIMIT_ERROR.to_owned());
        }
        if cost > self.remaining {
            self.exhausted = true;
            return Err(BUDGET_ERROR.to_owned());
        }
        self.remaining -= cost;
        Ok(())
    }

    /// Whether an expression found the budget used up.
    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_over_the_limit_fail_and_the_budget_runs_out() {
        let items: Vec<i64> = (0..600).collect();
        let act = Activation::new(&[("object", &json!({"items": items}))]);
        let cheap = Program::compile("object.items.all(x, x >= 0)").expect("parses");
        let dear = Program::compile("object.items.all(x, object.items.all(y, x != y || x == y))")
            .expect("parses");
        let mut budget = Budget::new(2_500_000);
        assert_eq!(budget.charge(&act, &cheap), Ok(()));
        assert_eq!(budget.charge(&act, &dear), Err(CALL_LIMIT_ERROR.to_owned()));
        assert_eq!(budget.charge(&act, &dear), Err(CALL_LIMIT_ERROR.to_owned()));
        assert!(!budget.exhausted());
        assert_eq!(budget.charge(&act, &dear), Err(BUDGET_ERROR.to_owned()));
        assert!(budget.exhausted());
        assert_eq!(budget.charge(&act, &cheap), Err(BUDGET_ERROR.to_owned()));
    }
}

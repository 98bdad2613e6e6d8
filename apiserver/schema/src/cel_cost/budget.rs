//! A runtime cost budget: what one request's CEL evaluations may still cost, charged before
//! each evaluation runs (see the module above for how the cost is found).

use super::{BUDGET_ERROR, CALL_LIMIT_ERROR, PER_CALL_LIMIT};

/// What is left of a cost budget.
#[derive(Debug)]
pub struct Budget {
    remaining: u64,
    exhausted: bool,
}

impl Budget {
    /// A budget of `total` cost units.
    pub fn new(total: u64) -> Budget {
        Budget {
            remaining: total,
            exhausted: false,
        }
    }

    /// Charges an evaluation about to cost `cost`; `Err` with kube's error when it is over
    /// the per-call limit (kube charges what ran until it cancelled: the limit) or over what
    /// is left (then the budget is exhausted and stays so).
    pub fn charge(&mut self, cost: u64) -> Result<(), &'static str> {
        if self.exhausted {
            return Err(BUDGET_ERROR);
        }
        if cost > PER_CALL_LIMIT && PER_CALL_LIMIT <= self.remaining {
            self.remaining -= PER_CALL_LIMIT;
            return Err(CALL_LIMIT_ERROR);
        }
        if cost > self.remaining {
            self.exhausted = true;
            return Err(BUDGET_ERROR);
        }
        self.remaining -= cost;
        Ok(())
    }

    /// Whether an evaluation found the budget used up.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_over_the_limit_fail_and_the_budget_runs_out() {
        let mut budget = Budget::new(2_500_000);
        assert_eq!(budget.charge(3_000), Ok(()));
        assert_eq!(budget.charge(3_200_000), Err(CALL_LIMIT_ERROR));
        assert_eq!(budget.charge(3_200_000), Err(CALL_LIMIT_ERROR));
        assert!(!budget.exhausted());
        // 497_000 left: a call over it runs the budget out, even under the per-call limit.
        assert_eq!(budget.charge(497_000), Ok(()));
        assert_eq!(budget.charge(1), Err(BUDGET_ERROR));
        assert!(budget.exhausted());
        assert_eq!(budget.charge(0), Err(BUDGET_ERROR));
    }
}

//! The cost of CEL expressions, counted in cel-go's cost units as kube-apiserver counts them,
//! and kube's limits on it.
//!
//! The `cel` interpreter the server uses has no cost tracking, so one estimator serves both
//! checks kube-apiserver makes:
//!
//! - **At write** ([`estimate`] with [`SchemaSizes`]): the sizes of strings, lists and maps
//!   come from the schema (`maxLength`, `maxItems`, `maxProperties`; when absent, what fits
//!   in a request, as kube derives them), giving the worst case kube's estimator gives.
//! - **At evaluation** ([`estimate`] with [`ValueSizes`]): the sizes come from the values the
//!   expression is about to see (the longest string, the longest list at each path), so the
//!   estimate bounds what evaluating it costs. An expression over the per-call limit, or over
//!   what is left of a request's budget, is refused *before* it runs: an expensive rule
//!   cannot hold a server thread, and the interpreter needs no hooks.
//!
//! The estimate follows cel-go's model (`checker/cost.go`: identifiers and selections cost 1,
//! a comprehension costs its range size times its loop body, string operations cost a tenth
//! of a unit per character, `matches` the product of string and regex lengths…) over the
//! parsed expression without a type checker; `estimate.rs` says where it differs.

mod budget;
mod estimate;
mod schema_sizes;
mod value_sizes;

pub use budget::Budget;
pub use estimate::estimate;
pub use schema_sizes::{SchemaSizes, cardinality_factor, unbounded_cardinality};
pub use value_sizes::ValueSizes;

/// The most one evaluation of an expression may cost (kube's `PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// What all the rules of one custom resource, or all the expressions of one policy
/// evaluation, may cost together (kube's `RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// What the match conditions of one policy evaluation may cost together (kube's
/// `RuntimeCELCostBudgetMatchConditions`).
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;
/// The most one CRD rule may be estimated to cost, times how often it can run (kube's
/// `StaticEstimatedCostLimit`).
pub const STATIC_EXPRESSION_LIMIT: u64 = 10_000_000;
/// The most all the rules of a CRD schema may be estimated to cost together (kube's
/// `StaticEstimatedCRDCostLimit`).
pub const STATIC_SCHEMA_LIMIT: u64 = 100_000_000;
/// The largest request body, which bounds sizes the schema leaves open (kube's
/// `DefaultMaxRequestSizeBytes`).
pub const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// kube's error for an evaluation stopped at the per-call limit.
pub const CALL_LIMIT_ERROR: &str = "operation cancelled: actual cost limit exceeded";
/// kube's error when a request's budget is used up.
pub const BUDGET_ERROR: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// What a value at some path is, as far as cost is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A number, boolean, timestamp, duration or null: size 1.
    Scalar,
    /// A string or bytes: size is its length.
    Text,
    /// A list: size is its number of items.
    List,
    /// A map or an object: size is its number of entries.
    Map,
    /// Not known.
    Unknown,
}

/// The kind of a value and its largest size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// What the value is.
    pub kind: Kind,
    /// Its largest size (`u64::MAX`: unbounded).
    pub max: u64,
}

impl Size {
    /// A scalar (size 1).
    pub const SCALAR: Size = Size {
        kind: Kind::Scalar,
        max: 1,
    };

    /// A value of `kind` with at most `max` elements.
    pub fn new(kind: Kind, max: u64) -> Size {
        Size { kind, max }
    }

    /// The larger of two sizes (the kind of the first when they differ).
    pub fn union(self, other: Size) -> Size {
        let kind = if self.kind == Kind::Unknown {
            other.kind
        } else {
            self.kind
        };
        Size {
            kind,
            max: self.max.max(other.max),
        }
    }
}

/// One step of a path from a variable into its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// A field of an object, or an entry of a map selected by name.
    Field(String),
    /// An item of a list or a value of a map.
    Elem,
    /// A key of a map.
    Key,
}

/// Where sizes come from: the schema (at write) or the values (at evaluation).
pub trait Sizes {
    /// The size of what `path` (a variable, then fields, items and keys) reaches, or `None`
    /// when nothing is known about it.
    fn lookup(&self, path: &[Seg]) -> Option<Size>;
    /// The size assumed for a value nothing is known about.
    fn unknown(&self) -> u64;
}

/// kube's detail for a cost over its limit: `<what> exceeds budget by factor of <f>x (try
/// simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps,
/// and strings are declared)`.
pub fn over_limit_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// Saturating multiplication of costs.
pub fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// `ceil(x * factor)`, saturating: cel-go's cost factors (a tenth of a unit per character…).
pub fn by_factor(x: u64, factor: f64) -> u64 {
    let product = (x as f64 * factor).ceil();
    if product >= u64::MAX as f64 {
        u64::MAX
    } else {
        product as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_limit_messages_read_as_kube() {
        assert_eq!(
            over_limit_message("estimated rule cost", 12_000_000, 10_000_000),
            "estimated rule cost exceeds budget by factor of 1.200000x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(over_limit_message("x", 25_000_000, 10_000_000).contains("factor of 2.5x ("));
        assert!(over_limit_message("x", u64::MAX, 10_000_000).contains("more than 100x"));
    }

    #[test]
    fn factors_round_up_and_saturate() {
        assert_eq!(by_factor(4, 0.1), 1);
        assert_eq!(by_factor(40, 0.1), 4);
        assert_eq!(by_factor(0, 0.1), 0);
        assert_eq!(by_factor(u64::MAX, 0.25), u64::MAX / 4 + 1);
        assert_eq!(by_factor(u64::MAX, 1.0), u64::MAX);
        assert_eq!(mul(u64::MAX, 2), u64::MAX);
    }
}

//! Table-driven tests of the pure scheduler core (`ocm_placement::scheduler`).

#![allow(clippy::unwrap_used, clippy::expect_used)]
// Case tables are tuples; naming each tuple type would not make them clearer.
#![allow(clippy::type_complexity)]

mod common;
mod eligibility;
mod explain;
mod groups;
mod predicates;
mod prioritizers;
mod scenarios;
mod selection;
mod spread;
mod taints;

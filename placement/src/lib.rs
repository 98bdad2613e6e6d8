//! Placement: the pure scheduler core and the controller that turns Placement into PlacementDecision.

pub mod cel_check;
pub mod controller;
pub mod scheduler;

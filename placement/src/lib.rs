//! Placement: the pure scheduler core, the controller that turns Placement into
//! PlacementDecision, and the debugger that shows how the scheduler treats a placement.

pub mod cel_check;
pub mod controller;
pub mod debugger;
pub mod scheduler;

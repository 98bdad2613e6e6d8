//! Work: the agent that applies ManifestWork to its managed cluster, and the hub's
//! ManifestWorkReplicaSet fan-out.
//!
//! - [`agent`]: pulls ManifestWorks from the cluster namespace on the hub, applies them to the
//!   managed cluster, keeps AppliedManifestWork bookkeeping and reports status.
//! - [`status`]: pure functions that turn what the agent observed into conditions and status
//!   feedback.
//! - [`hub`]: the ManifestWorkReplicaSet controller (fan-out of a template by placement).
//! - [`validation`]: the checks the hub runs on every ManifestWork write.
//! - [`gates`]: the hub's work feature gates.

pub mod agent;
pub mod gates;
pub mod hub;
pub mod status;
pub mod validation;

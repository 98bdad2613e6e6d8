//! The hub side of work: the ManifestWorkReplicaSet controller, which rolls one ManifestWork
//! template out to every cluster a placement selects.
//!
//! - [`rollout`]: pure rollout planning (`All`, `Progressive`, `ProgressivePerGroup`).
//! - [`replicaset`]: pure planning of one ManifestWorkReplicaSet reconcile.
//! - [`overrides`]: the ocm-rs per-cluster overrides extension.
//! - [`controller`]: reads the hub, applies the plan, writes status.
//! - [`completed`]: deletes completed ManifestWorks after their TTL
//!   (`CleanUpCompletedManifestWork`).

pub mod completed;
pub mod controller;
pub mod overrides;
pub mod replicaset;
pub mod rollout;

pub use controller::{ReplicaSetError, ReplicaSetOptions, run};

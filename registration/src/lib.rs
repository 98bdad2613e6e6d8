//! Registration, OCM's one mandatory module: which clusters belong to the fleet, the
//! credentials and namespace each one gets on the hub, and whether each one is alive.
//!
//! - [`hub`]: controllers that run beside the hub API server — acceptance (cluster namespace
//!   and RBAC), CSR renewal approval, lease-based availability and taints, cluster sets, and
//!   the checks upstream does in admission webhooks.
//! - [`agent`]: the registration agent on a managed cluster — bootstrap, CSR, hub kubeconfig,
//!   lease heartbeat, status and claims, certificate rotation.
//!
//! - [`accept`]: the hub admin's acceptance (or denial) of a cluster that asked to join, as
//!   `ocm accept` and `ocm dashboard` do it.
//!
//! Hub and agent never call each other: they cooperate only through hub API objects.

pub mod accept;
pub mod agent;
pub mod hub;

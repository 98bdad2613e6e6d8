//! What every ocm-rs controller process needs, and nothing more: the accept loop of its HTTP
//! endpoints ([`accept`]), clients built from
//! kubeconfigs ([`kubeconfig`]), watch backoff that grows while a watch keeps failing
//! ([`backoff`]), condition helpers ([`conditions`]), lease-based leader election
//! ([`leader`]), reconcile metrics and the health/metrics endpoint ([`metrics`]), tracing setup
//! ([`telemetry`]) and cooperative shutdown ([`shutdown`]); for the commands that print
//! them, plain-text tables as kubectl prints them ([`text_table`]).

pub mod accept;
pub mod backoff;
pub mod cache;
pub mod client;
pub mod conditions;
pub mod kubeconfig;
pub mod leader;
pub mod metrics;
pub mod shutdown;
pub mod telemetry;
pub mod text_table;

pub use metrics::serve_health;

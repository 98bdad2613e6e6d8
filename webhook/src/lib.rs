//! The hub's admission and conversion webhooks.
//!
//! Upstream OCM enforces its hub policies (who may accept a cluster, bind a set, use an
//! executor; taint times; defaults) in admission webhooks. Here they are one dispatcher,
//! [`policy::admit`], over pure policy functions, reached two ways: as in-process hooks of the
//! embedded API server, and as the HTTPS webhook server of this crate ([`serve::serve`]) that a
//! real kube-apiserver — or the embedded server, which calls webhooks the same way — is
//! pointed at by the configurations [`install`] applies.

pub mod access;
pub mod addon_admission;
pub mod certs;
pub mod install;
pub mod policy;
pub mod request;
pub mod review;
pub mod serve;

pub use access::ServerAccess;
pub use certs::ServingCerts;
pub use serve::{RunningWebhook, WebhookOptions, serve};

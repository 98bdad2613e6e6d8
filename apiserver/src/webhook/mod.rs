//! Admission and conversion webhooks, called as kube-apiserver calls them.
//!
//! - [`config`]: `admissionregistration.k8s.io/v1` Validating/MutatingWebhookConfiguration
//!   defaulting, validation and parsing (pure).
//! - [`matching`]: rules, namespace/object selectors and `matchConditions` (pure).
//! - [`client`]: the HTTPS POST to `clientConfig.url`, trusting only `caBundle`.
//! - [`service`]: `clientConfig.service` resolved to a pod this server can reach.
//! - [`admission`]: the configurations of a logical cluster and the mutating and validating
//!   runs of a write.
//! - [`conversion`]: CRD conversion webhooks (`spec.conversion.strategy: Webhook`).
//!
//! Order of a write (create, update, patch, apply, delete and subresource writes): the
//! server's defaulting and the in-process hooks of [`crate::admission`], then the mutating
//! webhooks (configurations in name order, webhooks in their order, `IfNeeded` ones once more
//! when a later one changed the object), then schema and object validation, then the
//! validating webhooks (in parallel; all must allow). Each logical cluster uses the
//! configurations stored in it.
//!
//! `clientConfig.service`: there is no cluster network, but pods that run as local processes
//! publish their ports ([`service`]); a Service reference goes to such a pod behind the
//! Service, else the call fails (`service "ns/name" has no endpoints this server can reach`),
//! subject to the failure policy. Conversion webhooks are still reached by URL only.

pub mod admission;
pub mod client;
pub mod config;
pub mod conversion;
pub mod matching;
pub mod service;

pub use admission::{
    ClusterWebhooks, Converter, Invocation, WebhookCache, run_mutating, run_validating,
};
pub use config::{
    ClientConfig, FailurePolicy, MatchCondition, Rule, Webhook, apply_defaults,
    parse_configuration, validate_configuration,
};
pub use matching::{Equivalent, RequestAttributes};

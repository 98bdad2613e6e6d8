//! Embedded Kubernetes-compatible API server: storage, REST and watch, discovery, CRDs,
//! patches and server-side apply, TLS. It knows nothing about OCM.
//!
//! Judged by fidelity: wherever it and kube-apiserver differ, kube-apiserver is right.
//!
//! Start one with [`ApiServer::start`] (or [`ApiServer::in_memory`]); hand
//! [`ApiServer::service`] to `kube::Client::new(service, "default")` for in-process clients,
//! or serve it over TLS with [`serve::serve_tls`] and [`tls::TlsMaterial`]. Logical clusters
//! are addressed with a `/clusters/{name}` URL prefix (or [`ApiServer::service_for_cluster`]);
//! the unprefixed URLs are the default cluster.
//!
//! Below it are crates of their own, used directly (not through this one): storage
//! (`ocm-apiserver-storage`: the revisioned store, SQLite or memory), patches, CRD schemas and
//! CEL, selectors, validation, RBAC, certificates, protobuf, and the `Status` of a failed
//! request; docs/development.md shows which may use which.
//!
//! Layers of this crate, each using only those before it: [`registry`] (served resources) → `state` (what every part shares) → `ops` (the write
//! pipeline) → `controllers` and `handlers` (REST verbs) → [`http`] (the tower service) →
//! `server` ([`ApiServer`]); docs/development.md draws them whole;
//! [`discovery`], [`openapi`] and [`table`] for clients' metadata; `controllers` for the
//! garbage collector, namespace lifecycle, CRD establishment, ClusterRole aggregation, the
//! `kubernetes.io/kube-apiserver-client` CSR signer and the CSR cleaner.
//!
//! Security: every request is authenticated ([`authn`]: client certificates against
//! [`ApiServerConfig::client_ca`], bootstrap and service-account bearer tokens, anonymous) and
//! authorized against the cluster's RBAC policy (`ocm-apiserver-rbac`) before any handler runs; RBAC
//! writes are checked for escalation and CSR approval/signing by signer name.

pub mod admission;
pub mod admission_cel;
mod apf;
pub mod auth;
pub mod authn;
mod authz;
mod client_config;
mod control;
mod controllers;
pub mod discovery;
mod fieldvalidation;
pub mod flowcontrol;
mod handlers;
pub mod health;
pub mod http;
mod kinds;
pub mod meta;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod pki;
pub mod policy;
pub mod quantity;
mod quota;
mod rbac_policies;
pub mod registry;
mod reply;
pub mod request;
pub mod request_info;
pub mod serve;
mod server;
mod state;
pub mod table;
pub mod tls;
pub mod tokens;
pub mod validation;
pub mod version;
mod watch_encodings;
pub mod webhook;
mod yaml_out;

pub use admission::{
    AdmissionDenial, AdmissionHook, AdmissionOperation, AdmissionRequest, AdmissionResult,
};
pub use auth::Identity;
pub use http::{ApiService, ResponseBody};
pub use ocm_apiserver_status::ApiError;
pub use server::{
    ApiServer, ApiServerConfig, ConversionHook, DEFAULT_CLUSTER, SYSTEM_NAMESPACES, StartError,
};

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
//! Layers, each using only those before it: [`storage`] (revisioned store, SQLite or memory) →
//! [`registry`] (served resources) → `state` (what every part shares) → `ops` (the write
//! pipeline) → `controllers` and `handlers` (REST verbs) → [`http`] (the tower service) →
//! `server` ([`ApiServer`]); docs/development.md draws them whole;
//! [`discovery`], [`openapi`] and [`table`] for clients' metadata; `controllers` for the
//! garbage collector, namespace lifecycle, CRD establishment, ClusterRole aggregation, the
//! `kubernetes.io/kube-apiserver-client` CSR signer and the CSR cleaner.
//!
//! Security: every request is authenticated ([`authn`]: client certificates against
//! [`ApiServerConfig::client_ca`], bootstrap and service-account bearer tokens, anonymous) and
//! authorized against the cluster's RBAC policy ([`rbac`]) before any handler runs; RBAC
//! writes are checked for escalation and CSR approval/signing by signer name.

pub mod admission;
pub mod auth;
pub mod authn;
mod authz;
mod controllers;
pub mod discovery;
pub use ocm_apiserver_status as error;
mod fieldvalidation;
pub mod flowcontrol;
mod handlers;
pub mod health;
pub mod http;
use ocm_apiserver_json as json_out;
pub mod meta;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub use ocm_apiserver_patch as patch;
pub mod pki;
pub mod policy;
pub use ocm_apiserver_protobuf as protobuf;
pub mod quantity;
mod quota;
pub use ocm_apiserver_rbac as rbac;
pub mod registry;
pub mod request;
pub mod request_info;
pub use ocm_apiserver_schema as schema;
pub use ocm_apiserver_selector as selector;
mod rbac_policies;
pub mod serve;
mod server;
mod state;
pub use ocm_apiserver_storage as storage;
pub mod table;
pub mod tls;
pub mod tokens;
pub mod validation;
pub mod webhook;
mod yaml_out;

pub use admission::{
    AdmissionDenial, AdmissionHook, AdmissionOperation, AdmissionRequest, AdmissionResult,
};
pub use auth::Identity;
pub use error::ApiError;
pub use http::{ApiService, ResponseBody};
pub use server::{
    ApiServer, ApiServerConfig, ConversionHook, DEFAULT_CLUSTER, SYSTEM_NAMESPACES, StartError,
};

//! The apiserver crate's integration tests, one module per file beside this one, built as one
//! test binary (one link instead of one per file: less disk and build time).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod access_review_selectors;
mod admission;
mod all_errors;
mod apiservices;
mod app_kinds;
mod bad_input;
mod cel_cost;
mod cel_ratcheting;
mod cluster_objects;
mod config_data;
mod controller;
mod crd;
mod crud;
mod discovery_health;
mod discovery_media;
mod field_validation;
mod flowcontrol;
mod json_numbers;
mod openapi_v2;
mod pod_connect;
mod podtemplates;
mod protobuf_bodies;
mod protobuf_responses;
mod quantities;
mod rbac_incremental;
mod request_timeout;
mod resource_quota;
mod restart;
mod schema_props;
mod secrets;
mod security_csr;
mod security_fuzz;
mod security_pki;
mod security_rbac;
mod security_tokens;
mod security_wiring;
mod semantics;
mod simulator;
mod ssa_smp;
mod subresource_metadata;
mod subresources;
mod tls;
mod token_review;
mod vap;
mod watch;
mod webhooks;
mod wide_integers;
mod wire_format;
mod yaml_responses;

//! The ClusterManager: its components ([`component`]), what it installs on the hub
//! ([`render`]), with which permissions ([`rbac`]), the webhook server's certificate
//! ([`webhook_cert`]), and the controller that keeps it there ([`controller`]).

pub mod component;
pub mod controller;
pub mod rbac;
pub mod render;
pub mod webhook_cert;

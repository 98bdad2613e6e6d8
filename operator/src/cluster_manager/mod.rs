//! The ClusterManager: its components ([`component`]), what it installs on the hub
//! ([`render`]), with which permissions ([`rbac`]), the webhook server's certificate
//! ([`webhook_cert`]), where the webhook servers listen and a Hosted hub reaches them
//! ([`hosted`]), and the controller that keeps it there ([`controller`]).

pub mod component;
pub mod controller;
pub mod hosted;
pub mod rbac;
pub mod render;
pub mod webhook_cert;

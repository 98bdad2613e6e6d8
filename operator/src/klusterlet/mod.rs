//! The Klusterlet: what it installs on a managed cluster ([`render`]), with which permissions
//! ([`rbac`]), how its hub connection is judged ([`hub_connection`]), which bootstrap
//! kubeconfig it uses ([`bootstrap_secrets`]), and its controller ([`controller`]).

pub mod bootstrap_secrets;
pub mod controller;
pub mod hub_connection;
pub mod rbac;
pub mod render;

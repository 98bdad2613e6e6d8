//! The Klusterlet: what it installs on a managed cluster ([`render`]), with which permissions
//! ([`rbac`]), how its hub connection is judged ([`hub_connection`]), and its controller
//! ([`controller`]).

pub mod controller;
pub mod hub_connection;
pub mod rbac;
pub mod render;

//! The Klusterlet: its modes and agents ([`agents`]), what it installs on a managed cluster
//! ([`render`]), with which permissions ([`rbac`]), how its hub connection is judged
//! ([`hub_connection`]), which hubs its agent may choose from ([`hub_list`]) and what it says
//! about that list ([`bootstrap_secrets`]), where it reports its agents run
//! ([`hosting_report`]), and its controller ([`controller`]).

pub mod agents;
pub mod bootstrap_secrets;
pub mod controller;
pub mod hosting_report;
pub mod hub_connection;
pub mod hub_list;
pub mod rbac;
pub mod render;

//! `ocm dashboard`: the fleet on a web page, live.
//!
//! One process keeps one watch per kind ([`cache`]) with the credentials it was given — the
//! user's own kubeconfig, so the hub's RBAC decides what each person sees and may do — and
//! serves server-rendered pages ([`pages`]) over HTTP/1 ([`server`]), loopback by default. Each
//! page subscribes to the kinds it shows through Server-Sent Events ([`live`]) and re-fetches
//! its live part when they change. The only writes are accepting and denying join requests
//! ([`actions`]), done exactly as `ocm accept` does them. HTML, CSS and the small script are
//! embedded in the binary; nothing is loaded from elsewhere.

pub mod actions;
pub mod cache;
pub mod clusters;
pub mod history;
pub mod html;
pub mod live;
pub mod pages;
pub mod query;
pub mod server;

pub use server::{Dashboard, DashboardError};

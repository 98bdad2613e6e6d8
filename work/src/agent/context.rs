//! What every pass of the work agent shares ([`Ctx`]): its clients, identity, options,
//! discovery cache and what it last applied.

use std::sync::Arc;

use ocm_api::work::v1::ManifestWork;

use super::WorkAgentOptions;
use super::apply::Discovery;

/// Everything a pass needs.
pub(crate) struct Ctx {
    pub(crate) hub: kube::Client,
    pub(crate) spoke: kube::Client,
    pub(crate) hub_hash: String,
    pub(crate) agent_id: String,
    pub(crate) options: WorkAgentOptions,
    pub(crate) discovery: Discovery,
    pub(crate) stats: Arc<tokio::sync::watch::Sender<super::WorkAgentStats>>,
    /// Hash of the manifest content last applied per object (work and resource identity):
    /// an object whose manifest changed is written even when the live object already holds
    /// every field the manifest sets, so fields removed from a manifest are removed on the
    /// cluster. Kept in memory only: after a restart, only the live object counts.
    pub(crate) last_applied: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// The ManifestWorks of this cluster as the reconciler's watch sees them, once it runs:
    /// the sweep looks works up here rather than asking the hub for each.
    pub(crate) hub_works: std::sync::OnceLock<kube::runtime::reflector::Store<ManifestWork>>,
}

impl Ctx {
    pub(crate) fn new(
        hub: kube::Client,
        spoke: kube::Client,
        hub_url: &str,
        options: WorkAgentOptions,
        stats: Arc<tokio::sync::watch::Sender<super::WorkAgentStats>>,
    ) -> Ctx {
        let hub_hash = super::hashes::hub_hash(hub_url);
        let agent_id = options.agent_id.clone().unwrap_or_else(|| hub_hash.clone());
        Ctx {
            hub,
            spoke,
            hub_hash,
            agent_id,
            options,
            discovery: Discovery::default(),
            stats,
            last_applied: std::sync::Mutex::default(),
            hub_works: std::sync::OnceLock::new(),
        }
    }
}

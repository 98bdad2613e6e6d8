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

/// What the agent knows of the hub it works for.
pub(crate) struct Hub<'a> {
    /// The hub's API server URL.
    pub(crate) url: &'a str,
    /// The registration agent's id stored beside the hub credentials, if any.
    pub(crate) agent_name: Option<&'a str>,
}

/// The agent id recorded in AppliedManifestWorks: the one configured, else the registration
/// agent's (the same on every hub the agent moves to), else the hub hash (upstream's default
/// for a work agent given no id).
pub(crate) fn agent_id(configured: Option<&str>, stored: Option<&str>, hub_hash: &str) -> String {
    configured
        .filter(|id| !id.is_empty())
        .or(stored.filter(|id| !id.is_empty()))
        .unwrap_or(hub_hash)
        .to_owned()
}

impl Ctx {
    pub(crate) fn new(
        hub: kube::Client,
        spoke: kube::Client,
        seen: Hub<'_>,
        options: WorkAgentOptions,
        stats: Arc<tokio::sync::watch::Sender<super::WorkAgentStats>>,
    ) -> Ctx {
        let hub_hash = super::hashes::hub_hash(seen.url);
        let agent_id = agent_id(options.agent_id.as_deref(), seen.agent_name, &hub_hash);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_id_is_the_configured_one_else_the_registration_agents_else_the_hub_hash() {
        assert_eq!(agent_id(Some("uid-1"), Some("abcde"), "hash"), "uid-1");
        assert_eq!(agent_id(None, Some("abcde"), "hash"), "abcde");
        assert_eq!(agent_id(Some(""), Some("abcde"), "hash"), "abcde");
        assert_eq!(agent_id(None, None, "hash"), "hash");
        assert_eq!(agent_id(None, Some(""), "hash"), "hash");
    }
}

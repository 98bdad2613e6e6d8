//! `cluster-proxy`: reach every managed cluster's API server from the hub, though the hub never
//! dials a cluster. Each cluster's agent opens one long-lived outbound TLS connection to the
//! proxy server on the hub and turns it into a tunnel the server sends HTTP/2 requests through;
//! users point kubectl at `https://<proxy>/clusters/<cluster>` with their hub credentials.
//!
//! - [`addon::ClusterProxy`] is the addon (an [`ocm_addon_framework::AgentAddon`]): the agent's
//!   Deployment and its impersonation-only RBAC, installed through ManifestWork; registration
//!   with upstream's default client-certificate subject; Lease health.
//! - [`server`] is the proxy server: tunnels in, user requests out, authenticated and authorized
//!   by the hub (permission: `managedclusters/proxy` of the cluster, verb by HTTP method).
//! - [`agent`] is the agent: tunnel out, requests to its cluster as `ocm:hub:<user>`.
//! - [`upgrade`] carries upgrade requests (exec, attach, port-forward) over the tunnel.
//! - [`access`] turns a user's hub kubeconfig toward the proxy and lists its tunnels.
//! - [`identity`] holds the rules of who becomes whom, with no I/O.
//! - [`credentials`] is the consumer side of a ClusterProfile: its kubeconfig and the exec
//!   plugin's answer.
//! - [`profiles`] publishes the proxy as the access provider of every OCM ClusterProfile.

pub mod access;
pub mod addon;
pub mod agent;
pub mod authn;
pub mod credentials;
pub mod error;
pub mod identity;
pub mod pki;
pub mod profiles;
pub mod server;
pub mod status;
pub mod tunnel;
pub mod upgrade;

use std::path::Path;
use std::time::Duration;

pub use error::ProxyError;

/// The addon's name (and its ClusterManagementAddOn's).
pub const ADDON_NAME: &str = "cluster-proxy";

/// Runs the agent of `cluster` in this process with exactly the credentials its pod would
/// mount (written under `dir`), as `ocm demo` and tests do for simulated clusters: waits for
/// the addon's registration, then tunnels to `endpoint` through `spoke`. Returns the install
/// namespace and the agent's tunnel state.
pub async fn run_agent_in_process(
    hub: &kube::Client,
    spoke: kube::Client,
    cluster: &str,
    endpoint: &pki::Endpoint,
    dir: &Path,
    max_backoff: Duration,
    shutdown: ocm_runtime::shutdown::Shutdown,
) -> Result<(String, tokio::sync::watch::Receiver<agent::TunnelState>), ProxyError> {
    run_agent_in_process_with(
        hub,
        spoke,
        None,
        cluster,
        endpoint,
        dir,
        max_backoff,
        shutdown,
    )
    .await
}

/// [`run_agent_in_process`] with an HTTP/1.1 client of the cluster for upgrade requests
/// (see [`agent::TunnelAgentOptions::upgrades`]).
#[allow(clippy::too_many_arguments)]
pub async fn run_agent_in_process_with(
    hub: &kube::Client,
    spoke: kube::Client,
    upgrades: Option<agent::UpgradeClient>,
    cluster: &str,
    endpoint: &pki::Endpoint,
    dir: &Path,
    max_backoff: Duration,
    shutdown: ocm_runtime::shutdown::Shutdown,
) -> Result<(String, tokio::sync::watch::Receiver<agent::TunnelState>), ProxyError> {
    let namespace = ocm_addon_framework::agent_helpers::mount_agent_credentials(
        hub,
        &spoke,
        cluster,
        ADDON_NAME,
        dir,
        Duration::from_secs(120),
    )
    .await
    .map_err(|e| ProxyError::Config(format!("credentials of the agent on {cluster}: {e}")))?;
    let mut options = agent::TunnelAgentOptions::new(
        cluster,
        namespace.clone(),
        endpoint.url.clone(),
        endpoint.ca_pem.clone(),
        dir,
    );
    options.max_backoff = max_backoff;
    options.upgrades = upgrades;
    let (state, watch) = tokio::sync::watch::channel(agent::TunnelState::default());
    tokio::spawn(agent::run_with_state(spoke, options, state, shutdown));
    Ok((namespace, watch))
}

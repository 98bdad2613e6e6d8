//! The registration agent on a managed cluster.
//!
//! [`Agent::run`] takes a managed cluster from nothing to a joined, heartbeating member of the
//! hub, and keeps it there:
//!
//! 1. **Bootstrap.** With the bootstrap kubeconfig (spoke Secret
//!    [`BOOTSTRAP_KUBECONFIG_SECRET`]) it creates its ManagedCluster and a CSR for an ECDSA key
//!    that never leaves the managed cluster, waits for the hub admin to approve it, and writes
//!    the certificate, key and a hub kubeconfig into [`HUB_KUBECONFIG_SECRET`]. A valid
//!    certificate already in that secret skips this step.
//! 2. **Joined.** With its own certificate it waits until the hub accepts the cluster, then
//!    sets `ManagedClusterJoined`, renews the `managed-cluster-lease`, reports availability,
//!    version, resources and cluster claims, and rotates its certificate at the deadline
//!    computed from the certificate itself ([`rotation`]), retrying while the hub is
//!    unreachable until the certificate expires. It also serves the addons enabled on the
//!    cluster: their client certificates ([`addons`]) and their Lease health
//!    ([`addon_health`]).
//! 3. **Rebootstrap** when the certificate expired before it could be rotated (reported as
//!    `ClusterCertificateRotated` False, reason `ClientCertificateExpired`, once the agent can
//!    write again), when the hub refuses the certificate (401), when the bootstrap kubeconfig
//!    changes, or — given several hubs — when its hub stayed out of reach for the connection
//!    timeout and another one answers ([`AgentOptions::bootstrap_kubeconfig_secrets`]).
//!    Nothing else: as upstream, the ManagedCluster is created only while bootstrapping, so
//!    one a hub admin deleted stays deleted ([`AgentProgress::Deleted`]) until the agent
//!    registers again.
//!
//! Everything it does goes through the hub and spoke API servers; [`Agent::progress`] tells a
//! caller (the `ocm` CLI) where it stands.

pub mod addon_env;
pub mod addon_health;
pub mod addon_tokens;
pub mod addons;
mod bootstrap;
mod certs;
mod hubs;
mod joined;
pub mod managed_namespaces;
pub mod rotation;
mod secrets;
mod status;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use ocm_runtime::kubeconfig::{KubeconfigError, SharedClient};
use ocm_runtime::shutdown::Shutdown;
use tokio::sync::watch;

pub use certs::{MANAGED_CLUSTERS_GROUP, cluster_group, common_name};

/// Spoke Secret (key `kubeconfig`) holding the kubeconfig the agent bootstraps with.
pub const BOOTSTRAP_KUBECONFIG_SECRET: &str = "bootstrap-hub-kubeconfig";
/// Spoke Secret where the agent keeps its hub credentials (keys `kubeconfig`, `tls.crt`,
/// `tls.key`, `cluster-name`, `agent-name`).
pub const HUB_KUBECONFIG_SECRET: &str = "hub-kubeconfig-secret";
/// Default namespace of the agent and its secrets on the managed cluster.
pub const DEFAULT_AGENT_NAMESPACE: &str = "open-cluster-management-agent";
/// The agent creates no more CSRs while this many CSRs for its cluster exist on the hub.
pub const MAX_PENDING_CSRS: usize = 10;
/// Signer of the agent's client certificates.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// Keys of [`HUB_KUBECONFIG_SECRET`] and [`BOOTSTRAP_KUBECONFIG_SECRET`].
pub mod keys {
    /// The kubeconfig.
    pub const KUBECONFIG: &str = "kubeconfig";
    /// PEM client certificate.
    pub const TLS_CRT: &str = "tls.crt";
    /// PEM private key.
    pub const TLS_KEY: &str = "tls.key";
    /// Name of the managed cluster.
    pub const CLUSTER_NAME: &str = "cluster-name";
    /// Id of the agent.
    pub const AGENT_NAME: &str = "agent-name";
}

/// How the agent runs. `Default` gives upstream's defaults and an empty cluster name.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// Name of the managed cluster; empty = the `cluster-name` stored in the hub secret, else
    /// a random UUID.
    pub cluster_name: String,
    /// Agent id; `None` = the `agent-name` stored in the hub secret, else 5 random characters.
    pub agent_id: Option<String>,
    /// Namespace of the agent's secrets on the managed cluster.
    pub agent_namespace: String,
    /// Requested lifetime of client certificates (CSR `expirationSeconds`); `None` = the
    /// signer's default.
    pub client_cert_expiration_seconds: Option<i64>,
    /// Labels put on the ManagedCluster when the agent creates it.
    pub cluster_labels: BTreeMap<String, String>,
    /// Annotations put on the ManagedCluster when the agent creates it; only keys with the
    /// prefix `agent.open-cluster-management.io/` are used.
    pub cluster_annotations: BTreeMap<String, String>,
    /// URLs (and CA bundles) the hub may reach the managed cluster's API server at
    /// (`spec.managedClusterClientConfigs`).
    pub external_server_urls: Vec<(String, Option<Vec<u8>>)>,
    /// Period of the status sync (upstream `--cluster-healthcheck-period`, 60 s).
    pub status_sync_period: Duration,
    /// Longest time between two looks at the certificate (upstream's check period, 5 min).
    /// Rotation itself is scheduled at the certificate's own deadline (see [`rotation`]); this
    /// is only a safety net.
    pub cert_check_period: Duration,
    /// Most custom cluster claims reported (upstream: 20).
    pub max_custom_cluster_claims: usize,
    /// Report ClusterClaims in the ManagedCluster status (upstream's `ClusterClaim` feature
    /// gate, on by default).
    pub cluster_claims: bool,
    /// Report ClusterProperties (`about.k8s.io`) in the ManagedCluster status beside the
    /// claims; a property wins over a claim of the same name (upstream's `ClusterProperty`
    /// feature gate, off by default).
    pub cluster_properties: bool,
    /// Claim name suffixes treated like the reserved claims (always reported, first).
    pub reserved_claim_suffixes: Vec<String>,
    /// The certificate is renewed when its remaining lifetime falls below a fraction of the
    /// total drawn at random from this range (upstream: 0.20–0.25).
    pub rotation_threshold: (f64, f64),
    /// How often the health of Lease-mode addons is judged from their Leases on the managed
    /// cluster (upstream: 30 s).
    pub addon_lease_check_period: Duration,
    /// How long after its last renewal an addon's Lease still counts as renewed (upstream:
    /// 5 × 60 s).
    pub addon_lease_grace: Duration,
    /// How `kubeClient` addon registrations get hub credentials (upstream
    /// `--addon-kubeclient-registration-auth`, default CSR certificates).
    pub addon_kube_client_auth: addon_tokens::AddonKubeClientAuth,
    /// Several hubs to choose from (upstream's `MultipleHubs`): bootstrap kubeconfig secrets
    /// in the agent namespace, in order of preference. Empty: only
    /// [`BOOTSTRAP_KUBECONFIG_SECRET`] is used, and the agent never moves to another hub.
    pub bootstrap_kubeconfig_secrets: Vec<String>,
    /// With [`Self::bootstrap_kubeconfig_secrets`]: how long the hub may stay out of reach,
    /// counted from the last lease renewal, before the agent moves to the next hub that
    /// answers (upstream `--hub-connection-timeout-seconds`, 600 s).
    pub hub_connection_timeout: Duration,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            cluster_name: String::new(),
            agent_id: None,
            agent_namespace: DEFAULT_AGENT_NAMESPACE.to_owned(),
            client_cert_expiration_seconds: None,
            cluster_labels: BTreeMap::new(),
            cluster_annotations: BTreeMap::new(),
            external_server_urls: Vec::new(),
            status_sync_period: Duration::from_secs(60),
            cert_check_period: Duration::from_secs(5 * 60),
            max_custom_cluster_claims: ocm_api::cluster::names::claims::DEFAULT_MAX_CUSTOM_CLAIMS,
            cluster_claims: true,
            cluster_properties: false,
            reserved_claim_suffixes: Vec::new(),
            rotation_threshold: (0.20, 0.25),
            addon_lease_check_period: Duration::from_secs(30),
            addon_lease_grace: Duration::from_secs(5 * 60),
            addon_kube_client_auth: addon_tokens::AddonKubeClientAuth::Csr,
            bootstrap_kubeconfig_secrets: Vec::new(),
            hub_connection_timeout: Duration::from_secs(600),
        }
    }
}

impl AgentOptions {
    /// Applies upstream's `--feature-gates` syntax (`Name=true,Other=false`) to the gates the
    /// agent knows (`ClusterClaim`, `ClusterProperty`); returns the names of the other gates
    /// (upstream's other registration gates, which change nothing here). A malformed entry is
    /// an error.
    pub fn apply_feature_gates(&mut self, gates: &str) -> Result<Vec<String>, String> {
        let mut ignored = Vec::new();
        for entry in gates.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, value) = entry
                .split_once('=')
                .ok_or_else(|| format!("feature gate {entry:?} is not Name=true|false"))?;
            let on = match value.trim().to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(format!(
                        "feature gate {name}: {value:?} is not true or false"
                    ));
                }
            };
            match name.trim() {
                "ClusterClaim" => self.cluster_claims = on,
                "ClusterProperty" => self.cluster_properties = on,
                other => ignored.push(other.to_owned()),
            }
        }
        Ok(ignored)
    }
}

/// Where the agent stands (more variants may be added).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentProgress {
    /// Just started.
    Starting,
    /// The bootstrap kubeconfig secret does not exist yet.
    WaitingForBootstrapKubeconfig,
    /// Creating the ManagedCluster and a CSR with the bootstrap kubeconfig.
    Bootstrapping,
    /// The CSR waits for the hub admin's approval.
    WaitingForCsrApproval {
        /// Name of the CSR on the hub.
        csr_name: String,
    },
    /// The hub issued a client certificate; it is stored in the hub kubeconfig secret.
    CertificateIssued,
    /// The hub has not accepted the cluster yet (`hubAcceptsClient`).
    WaitingForAcceptance,
    /// The cluster joined the hub.
    Joined,
    /// The cluster joined and reports itself available.
    Available,
    /// The hub admin deleted the cluster's ManagedCluster. The agent does not create it again
    /// (as upstream): a new bootstrap kubeconfig registers the cluster anew.
    Deleted,
    /// Something failed; the agent retries after a backoff.
    Retrying {
        /// What failed.
        error: String,
    },
    /// Going back to bootstrap.
    Rebootstrapping {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for AgentProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentProgress::Starting => f.write_str("starting"),
            AgentProgress::WaitingForBootstrapKubeconfig => {
                f.write_str("waiting for the bootstrap kubeconfig secret")
            }
            AgentProgress::Bootstrapping => {
                f.write_str("registering with the hub using the bootstrap kubeconfig")
            }
            AgentProgress::WaitingForCsrApproval { csr_name } => write!(
                f,
                "waiting for the hub admin to approve certificate signing request {csr_name}"
            ),
            AgentProgress::CertificateIssued => f.write_str("the hub issued a client certificate"),
            AgentProgress::WaitingForAcceptance => {
                f.write_str("waiting for the hub admin to accept the cluster")
            }
            AgentProgress::Joined => f.write_str("joined the hub"),
            AgentProgress::Available => f.write_str("joined the hub and available"),
            AgentProgress::Deleted => f.write_str(
                "the hub deleted this cluster's ManagedCluster; it stays deleted until the agent registers again with a new bootstrap kubeconfig",
            ),
            AgentProgress::Retrying { error } => write!(f, "retrying after an error: {error}"),
            AgentProgress::Rebootstrapping { reason } => {
                write!(f, "registering again: {reason}")
            }
        }
    }
}

/// Errors of the agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The cluster name is not a DNS-1123 label.
    #[error("invalid cluster name {name:?}: {reason}")]
    InvalidClusterName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The bootstrap kubeconfig secret does not exist.
    #[error("bootstrap kubeconfig secret {namespace}/{name} not found")]
    BootstrapKubeconfigMissing {
        /// Namespace of the secret.
        namespace: String,
        /// Name of the secret.
        name: String,
    },
    /// The bootstrap kubeconfig cannot be used.
    #[error("bootstrap kubeconfig in secret {namespace}/{name} is malformed: {reason}")]
    BootstrapKubeconfigInvalid {
        /// Namespace of the secret.
        namespace: String,
        /// Name of the secret.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A kubeconfig could not be turned into a client.
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    /// Key or certificate handling failed.
    #[error("client certificate: {0}")]
    Certificate(String),
    /// The hub denied the CSR, or signing failed.
    #[error("certificate signing request {name} was {outcome}: {message}")]
    CsrNotIssued {
        /// Name of the CSR.
        name: String,
        /// `denied`, `failed` or `deleted`.
        outcome: String,
        /// The hub's message.
        message: String,
    },
    /// Too many CSRs of this cluster exist on the hub; no more are created.
    #[error(
        "{count} certificate signing requests for cluster {cluster} exist on the hub; not creating more"
    )]
    TooManyCsrs {
        /// The cluster.
        cluster: String,
        /// How many exist.
        count: usize,
    },
    /// Too many CSRs of one addon on this cluster are pending on the hub; no more are created.
    #[error(
        "{count} certificate signing requests of addon {addon} on cluster {cluster} are pending on the hub; not creating more"
    )]
    TooManyAddonCsrs {
        /// The cluster.
        cluster: String,
        /// The addon.
        addon: String,
        /// How many are pending.
        count: usize,
    },
    /// None of the listed bootstrap kubeconfigs reaches a hub that lets it in.
    #[error("no listed bootstrap kubeconfig reaches a hub that answers ({details})")]
    NoHubAnswers {
        /// Each listed secret and why it was not used.
        details: String,
    },
    /// A call to the hub failed.
    #[error("hub API: {0}")]
    Hub(#[source] kube::Error),
    /// A call to the managed cluster's API server failed.
    #[error("managed cluster API: {0}")]
    Spoke(#[source] kube::Error),
}

/// Checks that `name` can name a managed cluster: a DNS-1123 label (lowercase letters, digits
/// and `-`, starting and ending with a letter or digit, at most 63 characters).
pub fn validate_cluster_name(name: &str) -> Result<(), AgentError> {
    let fail = |reason: &str| {
        Err(AgentError::InvalidClusterName {
            name: name.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if name.is_empty() {
        return fail("must not be empty");
    }
    if name.len() > 63 {
        return fail("must be at most 63 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return fail("must consist of lowercase letters, digits and '-'");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return fail("must start and end with a letter or digit");
    }
    Ok(())
}

/// The registration agent of one managed cluster.
pub struct Agent {
    spoke: kube::Client,
    secrets: kube::Client,
    options: AgentOptions,
    progress: watch::Sender<AgentProgress>,
    hub_client: SharedClient,
}

impl Agent {
    /// An agent for the managed cluster reached through `spoke`.
    pub fn new(spoke: kube::Client, options: AgentOptions) -> Agent {
        let (progress, _) = watch::channel(AgentProgress::Starting);
        Agent {
            secrets: spoke.clone(),
            spoke,
            options,
            progress,
            hub_client: SharedClient::new(),
        }
    }

    /// Builds its hub client through `shared`, so that another agent of the same cluster in
    /// this process (the work agent) uses the same connection to the hub.
    pub fn with_shared_hub_client(mut self, shared: SharedClient) -> Agent {
        self.hub_client = shared;
        self
    }

    /// Keeps the bootstrap and hub kubeconfig secrets on another cluster than the managed
    /// one (Hosted mode: the management cluster the agent runs on).
    pub fn with_secrets_on(mut self, management: kube::Client) -> Agent {
        self.secrets = management;
        self
    }

    /// Follows the agent's progress.
    pub fn progress(&self) -> watch::Receiver<AgentProgress> {
        self.progress.subscribe()
    }

    /// Runs until `shutdown` is cancelled (then returns `Ok`). Returns an error only when the
    /// agent cannot start at all: an invalid cluster name, or a malformed bootstrap kubeconfig
    /// while it holds no usable hub credentials. Every other failure is logged and retried.
    #[inline(never)]
    pub fn run(
        self,
        shutdown: Shutdown,
    ) -> futures::future::BoxFuture<'static, Result<(), AgentError>> {
        Box::pin(self.run_body(shutdown))
    }

    async fn run_body(self, shutdown: Shutdown) -> Result<(), AgentError> {
        if !self.options.cluster_name.is_empty() {
            validate_cluster_name(&self.options.cluster_name)?;
        }
        let ctx = Ctx {
            spoke: self.spoke,
            secrets: self.secrets,
            options: self.options,
            progress: self.progress,
            hub_client: self.hub_client,
            hub_contact: hubs::HubContact::default(),
            chosen_name: std::sync::OnceLock::new(),
        };
        let mut state = RunState::default();
        let mut backoff = Backoff::default();
        loop {
            let pass = async {
                let outcome = run_once(&ctx, &mut state).await;
                after_pass(&ctx, &mut backoff, state.ever_joined, outcome).await
            };
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                done = pass => done?,
                // Said by the switch itself (which may also end the pass first).
                _moved = hubs::switch_when_lost(&ctx) => backoff.reset(),
            }
        }
    }
}

/// Handles what one pass ended with: starts over at once after a reason to register again,
/// waits for a missing bootstrap kubeconfig, backs off after other errors. Returns an error
/// only when the agent cannot go on (a malformed bootstrap kubeconfig before it ever joined).
async fn after_pass(
    ctx: &Ctx,
    backoff: &mut Backoff,
    ever_joined: bool,
    outcome: Result<String, AgentError>,
) -> Result<(), AgentError> {
    match outcome {
        Ok(reason) => {
            tracing::info!(%reason, "registering again");
            ctx.set_progress(AgentProgress::Rebootstrapping { reason });
            backoff.reset();
        }
        Err(err @ AgentError::BootstrapKubeconfigInvalid { .. }) if !ever_joined => {
            return Err(err);
        }
        Err(AgentError::BootstrapKubeconfigMissing { namespace, name }) => {
            ctx.set_progress(AgentProgress::WaitingForBootstrapKubeconfig);
            secrets::wait_for_change(&ctx.secrets, &namespace, &name, None).await;
        }
        Err(err) => {
            let delay = backoff.next_delay();
            tracing::warn!(error = %err, retry_in = ?delay, "registration agent");
            ctx.set_progress(AgentProgress::Retrying {
                error: err.to_string(),
            });
            tokio::time::sleep(delay).await;
        }
    }
    Ok(())
}

/// What the phases share.
pub(crate) struct Ctx {
    pub(crate) spoke: kube::Client,
    /// Where the bootstrap and hub kubeconfig secrets are (the managed cluster, or in Hosted
    /// mode the management cluster).
    pub(crate) secrets: kube::Client,
    pub(crate) options: AgentOptions,
    pub(crate) progress: watch::Sender<AgentProgress>,
    /// Where the agent gets its hub client (shared with the work agent in one process).
    pub(crate) hub_client: SharedClient,
    /// When the agent last reached its hub (for moving to another one; [`hubs`]).
    pub(crate) hub_contact: hubs::HubContact,
    /// The cluster's name once chosen (a random one is chosen at the first pass).
    pub(crate) chosen_name: std::sync::OnceLock<String>,
}

impl Ctx {
    /// The cluster's name: given, or chosen at the first pass; before that, a placeholder
    /// (what a hub lets the bootstrap credentials read does not depend on it).
    pub(crate) fn cluster_name(&self) -> String {
        Some(self.options.cluster_name.as_str())
            .filter(|n| !n.is_empty())
            .or(self.chosen_name.get().map(String::as_str))
            .unwrap_or("ocm-hub-access-check")
            .to_owned()
    }

    pub(crate) fn set_progress(&self, progress: AgentProgress) {
        if progress == AgentProgress::WaitingForAcceptance {
            self.hub_contact.not_accepted();
        }
        self.progress.send_if_modified(|current| {
            if *current == progress {
                false
            } else {
                tracing::info!(%progress, "registration agent");
                *current = progress;
                true
            }
        });
    }
}

/// State kept across restarts of the phases.
#[derive(Default)]
struct RunState {
    /// Cluster name and agent id once chosen (random ones must not change on restart).
    identity: Option<(String, String)>,
    /// The stored certificate must not be reused (the hub refused it).
    force_bootstrap: bool,
    /// The agent held usable hub credentials at some point.
    ever_joined: bool,
    /// The last certificate expired before it could be rotated: reported on the
    /// ManagedCluster by the next joined phase.
    expiry_note: Option<String>,
}

/// One pass: bootstrap if needed, then the joined phase. Returns why the agent must start
/// over, or an error.
async fn run_once(ctx: &Ctx, state: &mut RunState) -> Result<String, AgentError> {
    let ns = ctx.options.agent_namespace.clone();
    let bootstrap_secret = secrets::read_secret(&ctx.secrets, &ns, BOOTSTRAP_KUBECONFIG_SECRET)
        .await
        .map_err(AgentError::Spoke)?;
    let bootstrap_raw = bootstrap_secret
        .as_ref()
        .and_then(|s| secrets::data(s, keys::KUBECONFIG));
    if bootstrap_raw.is_none() && !ctx.options.bootstrap_kubeconfig_secrets.is_empty() {
        return hubs::switch_bootstrap(ctx, None, "").await;
    }
    let bootstrap = match &bootstrap_raw {
        None => Err(AgentError::BootstrapKubeconfigMissing {
            namespace: ns.clone(),
            name: BOOTSTRAP_KUBECONFIG_SECRET.to_owned(),
        }),
        Some(raw) => {
            secrets::parse_bootstrap(raw).map_err(|reason| AgentError::BootstrapKubeconfigInvalid {
                namespace: ns.clone(),
                name: BOOTSTRAP_KUBECONFIG_SECRET.to_owned(),
                reason,
            })
        }
    };
    let hub_secret = secrets::read_secret(&ctx.secrets, &ns, HUB_KUBECONFIG_SECRET)
        .await
        .map_err(AgentError::Spoke)?;
    let (cluster, agent) = match &state.identity {
        Some(identity) => identity.clone(),
        None => {
            let stored = |key| hub_secret.as_ref().and_then(|s| secrets::text(s, key));
            let cluster = Some(ctx.options.cluster_name.clone())
                .filter(|c| !c.is_empty())
                .or_else(|| stored(keys::CLUSTER_NAME).filter(|c| validate_cluster_name(c).is_ok()))
                .unwrap_or_else(certs::random_uuid);
            let agent = ctx
                .options
                .agent_id
                .clone()
                .filter(|a| !a.is_empty())
                .or_else(|| stored(keys::AGENT_NAME).filter(|a| !a.is_empty()))
                .unwrap_or_else(|| certs::random_name(5));
            state.identity = Some((cluster.clone(), agent.clone()));
            let _ = ctx.chosen_name.set(cluster.clone());
            (cluster, agent)
        }
    };

    let stored = hub_secret.as_ref().and_then(|s| {
        match secrets::usable_credentials(s, &cluster, &agent, bootstrap.as_ref().ok()) {
            Ok(creds) => Some(creds),
            Err(reason) => {
                if reason.contains("expired") {
                    let message = format!(
                        "the stored client certificate cannot be used ({reason}); registering again with the bootstrap kubeconfig"
                    );
                    tracing::warn!("{message}");
                    state.expiry_note.get_or_insert(message);
                } else {
                    tracing::info!(%reason, "stored hub credentials are not usable");
                }
                None
            }
        }
    });
    let creds = match stored {
        Some(creds) if !state.force_bootstrap => {
            if let Err(err) = &bootstrap {
                tracing::warn!(error = %err, "continuing with the stored hub kubeconfig");
            }
            if !state.ever_joined {
                // Credentials from an earlier run: the hub counts as reached at start and
                // lost unless reached again, so a hub that stays down is left after the
                // timeout even across restarts.
                ctx.hub_contact.resumed();
            }
            creds
        }
        _ => {
            let bootstrap = bootstrap?;
            let creds = tokio::select! {
                creds = bootstrap::bootstrap(ctx, &bootstrap, &cluster, &agent) => creds?,
                () = secrets::wait_for_change(&ctx.secrets, &ns, BOOTSTRAP_KUBECONFIG_SECRET, bootstrap_raw.clone()) => {
                    return Ok("the bootstrap kubeconfig changed".into());
                }
            };
            state.force_bootstrap = false;
            creds
        }
    };
    state.ever_joined = true;
    let outcome = tokio::select! {
        outcome = joined::run(ctx, creds, &cluster, &agent, state.expiry_note.take()) => outcome?,
        () = secrets::wait_for_change(&ctx.secrets, &ns, BOOTSTRAP_KUBECONFIG_SECRET, bootstrap_raw.clone()) => {
            return Ok("the bootstrap kubeconfig changed".into());
        }
    };
    if outcome.force_bootstrap {
        state.force_bootstrap = true;
    }
    if outcome.expired.is_some() {
        state.expiry_note = outcome.expired;
    }
    Ok(outcome.reason)
}

/// Capped exponential backoff, 1 s to 30 s.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: Duration::from_secs(1),
        }
    }
}

impl Backoff {
    const MAX: Duration = Duration::from_secs(30);

    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        delay
    }

    pub(crate) fn reset(&mut self) {
        self.next = Duration::from_secs(1);
    }
}

/// The HTTP status code of an API error, if the error is one.
pub(crate) fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cluster_names_must_be_dns_labels() {
        assert!(validate_cluster_name("cluster-1").is_ok());
        assert!(validate_cluster_name(&"a".repeat(63)).is_ok());
        for bad in ["", "Cluster", "-a", "a-", "a.b", "a_b", &"a".repeat(64)] {
            let err = validate_cluster_name(bad).unwrap_err().to_string();
            assert!(err.contains("invalid cluster name"), "{bad}: {err}");
        }
    }

    #[test]
    fn feature_gates_use_upstreams_syntax() {
        let mut options = AgentOptions::default();
        assert!(options.cluster_claims && !options.cluster_properties);
        let ignored = options
            .apply_feature_gates("ClusterProperty=true, ClusterClaim=false,AddonManagement=true")
            .unwrap();
        assert!(options.cluster_properties && !options.cluster_claims);
        assert_eq!(ignored, ["AddonManagement"]);
        assert!(options.apply_feature_gates("ClusterProperty").is_err());
        assert!(options.apply_feature_gates("ClusterProperty=yes").is_err());
        assert_eq!(options.apply_feature_gates(""), Ok(Vec::new()));
    }

    #[test]
    fn backoff_doubles_up_to_thirty_seconds() {
        let mut b = Backoff::default();
        let delays: Vec<u64> = (0..7).map(|_| b.next_delay().as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30]);
        b.reset();
        assert_eq!(b.next_delay().as_secs(), 1);
    }

    /// The CLI spawns the agent on a multi-threaded runtime.
    #[allow(dead_code)]
    fn run_future_is_send(agent: Agent) {
        fn send<T: Send>(_: T) {}
        send(agent.run(Shutdown::new()));
    }

    #[test]
    fn progress_reads_as_plain_words() {
        let p = AgentProgress::WaitingForCsrApproval {
            csr_name: "c1-abcde".into(),
        };
        assert!(
            p.to_string()
                .contains("approve certificate signing request c1-abcde")
        );
    }
}

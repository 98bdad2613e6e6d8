//! Scenario tests across crates: an embedded hub (real TLS, real CSR signer, real RBAC) plus
//! simulated managed clusters, with real `ocm` processes and real kubectl where a user would
//! use them. This library holds the shared fixtures; the scenarios are in `tests/`.

pub mod browser;
pub mod faultproxy;
pub mod operator;
pub mod process;

use std::fmt::Debug;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::wait::await_condition;
use ocm::embedded::{EmbeddedHub, EmbeddedHubOptions};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::{Agent, AgentOptions, AgentProgress};
use ocm_registration::hub::HubOptions;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::kubeconfig::{KubeconfigAuth, ServerInfo};
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;

/// How long scenario waits may take before the test fails (generous: CI machines are slow).
pub const WAIT: Duration = Duration::from_secs(60);

/// Starts an embedded hub in `data_dir` on a free port.
pub async fn start_hub(
    data_dir: &Path,
    hub: HubOptions,
    csr_signing_duration: Duration,
) -> anyhow::Result<EmbeddedHub> {
    EmbeddedHub::start(EmbeddedHubOptions {
        listen: ([127, 0, 0, 1], 0).into(),
        hub,
        csr_signing_duration,
        ..EmbeddedHubOptions::new(data_dir)
    })
    .await
}

/// An embedded hub in `data_dir` with [`fast_hub_options`] and one-year client certificates
/// (for scenarios that do not exercise rotation).
pub async fn start_fast_hub(data_dir: &Path) -> anyhow::Result<EmbeddedHub> {
    start_hub(
        data_dir,
        fast_hub_options(),
        Duration::from_secs(365 * 24 * 3600),
    )
    .await
}

/// Hub options for tests: short requeues, a small lease grace multiplier.
pub fn fast_hub_options() -> HubOptions {
    HubOptions {
        lease_grace_multiplier: 2,
        cleanup_requeue: Duration::from_millis(500),
        ..HubOptions::default()
    }
}

/// A bootstrap kubeconfig for `hub` with a fresh token from `ocm init`.
pub async fn bootstrap_kubeconfig(hub: &EmbeddedHub) -> anyhow::Result<String> {
    bootstrap_kubeconfig_via(hub, &hub.url).await
}

/// A bootstrap kubeconfig for `hub` with a fresh token, reaching it at `server` (a proxy in
/// front of the hub, say; it must present the hub's certificate).
pub async fn bootstrap_kubeconfig_via(hub: &EmbeddedHub, server: &str) -> anyhow::Result<String> {
    let token = ocm::bootstrap::init_hub(&hub.admin_client(), None).await?;
    Ok(ocm::commands::join::bootstrap_kubeconfig(
        server,
        &hub.ca_pem,
        &token.to_string(),
    ))
}

/// Makes the cluster's agent heartbeat every `seconds` (the agent follows spec changes).
pub async fn set_lease_duration(
    hub: &EmbeddedHub,
    cluster: &str,
    seconds: i32,
) -> anyhow::Result<()> {
    use kube::api::{Patch, PatchParams};
    Api::<ManagedCluster>::all(hub.admin_client())
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"leaseDurationSeconds": seconds}})),
        )
        .await
        .with_context(|| format!("setting the lease duration of {cluster}"))?;
    Ok(())
}

/// A simulated managed cluster: a logical cluster on the hub's embedded server.
pub async fn simulated_spoke(hub: &EmbeddedHub, name: &str) -> anyhow::Result<kube::Client> {
    ocm::simulated::logical_spoke(&hub.server, name).await
}

/// A registration agent running in this process.
pub struct RunningAgent {
    /// Its progress.
    pub progress: tokio::sync::watch::Receiver<AgentProgress>,
    shutdown: Shutdown,
    task: tokio::task::JoinHandle<Result<(), ocm_registration::agent::AgentError>>,
}

impl RunningAgent {
    /// Stops the agent and waits for it to end.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let result = tokio::time::timeout(WAIT, self.task)
            .await
            .context("agent did not stop")??;
        Ok(result?)
    }
}

/// Writes the bootstrap kubeconfig on `spoke` (as `ocm join` does) and starts an agent.
pub async fn join(
    spoke: &kube::Client,
    bootstrap_kubeconfig: &str,
    options: AgentOptions,
) -> anyhow::Result<RunningAgent> {
    ocm::commands::join::prepare_spoke(spoke, bootstrap_kubeconfig).await?;
    Ok(start_agent(spoke, options))
}

/// Starts an agent on an already prepared spoke.
pub fn start_agent(spoke: &kube::Client, options: AgentOptions) -> RunningAgent {
    let agent = Agent::new(spoke.clone(), options);
    let progress = agent.progress();
    let shutdown = Shutdown::new();
    let token = shutdown.clone();
    let task = tokio::spawn(async move { agent.run(token).await });
    RunningAgent {
        progress,
        shutdown,
        task,
    }
}

/// A work agent running in this process (status every 500 ms, eviction after 2 s).
pub struct RunningWorkAgent {
    shutdown: Shutdown,
    task: tokio::task::JoinHandle<()>,
}

impl RunningWorkAgent {
    /// Starts the work agent of `cluster` on `spoke`.
    pub fn start(spoke: &kube::Client, cluster: &str) -> RunningWorkAgent {
        let agent = ocm_work::agent::WorkAgent::new(
            spoke.clone(),
            ocm_work::agent::WorkAgentOptions {
                cluster_name: cluster.to_owned(),
                status_sync_interval: Duration::from_millis(500),
                eviction_grace: Duration::from_secs(2),
                ..Default::default()
            },
        );
        let shutdown = Shutdown::new();
        let token = shutdown.clone();
        let task = tokio::spawn(async move {
            if let Err(err) = agent.run(token).await {
                tracing::error!(error = %err, "work agent");
            }
        });
        RunningWorkAgent { shutdown, task }
    }

    /// Stops the agent and waits (up to [`WAIT`]) for it to end.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(WAIT, self.task).await;
    }
}

/// Agent options for tests: fast status sync and certificate checks.
pub fn fast_agent_options(cluster: &str) -> AgentOptions {
    AgentOptions {
        cluster_name: cluster.to_owned(),
        status_sync_period: Duration::from_secs(1),
        cert_check_period: Duration::from_secs(1),
        ..AgentOptions::default()
    }
}

/// Waits (watch-based, up to [`WAIT`]) until the named object satisfies `condition`.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    condition: impl Fn(&K) -> bool,
) -> anyhow::Result<K>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    wait_for_within(WAIT, api, name, what, condition).await
}

/// [`wait_for`] up to `wait`, for what takes longer by nature (a timeout the API sets).
pub async fn wait_for_within<K>(
    wait: Duration,
    api: &Api<K>,
    name: &str,
    what: &str,
    condition: impl Fn(&K) -> bool,
) -> anyhow::Result<K>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let object = tokio::time::timeout(
        wait,
        await_condition(api.clone(), name, move |o: Option<&K>| {
            o.is_some_and(&condition)
        }),
    )
    .await
    .with_context(|| format!("timed out waiting for {name}: {what}"))??;
    object.with_context(|| format!("{name} vanished while waiting for: {what}"))
}

/// Waits until the named object is gone.
pub async fn wait_gone<K>(api: &Api<K>, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), name, |o: Option<&K>| o.is_none()),
    )
    .await
    .with_context(|| format!("timed out waiting for {name} to be deleted"))??;
    Ok(())
}

/// Creates namespace `ns` and binds it to ManagedClusterSet `set` (a binding named after the
/// set, as the API requires), so placements in `ns` can select the set's clusters.
pub async fn bind_namespace(client: &kube::Client, ns: &str, set: &str) -> anyhow::Result<()> {
    let namespace: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": ns}}))?;
    Api::all(client.clone())
        .create(&Default::default(), &namespace)
        .await
        .with_context(|| format!("creating namespace {ns}"))?;
    let binding: ocm_api::cluster::v1beta2::ManagedClusterSetBinding =
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": set}, "spec": {"clusterSet": set}}))?;
    Api::namespaced(client.clone(), ns)
        .create(&Default::default(), &binding)
        .await
        .with_context(|| format!("binding {ns} to {set}"))?;
    Ok(())
}

/// Creates ManagedCluster `name`, accepted, with no agent behind it (the hub will soon call it
/// unreachable), and waits until the hub has made its namespace.
pub async fn accepted_cluster_without_agent(
    client: &kube::Client,
    name: &str,
) -> anyhow::Result<()> {
    let cluster: ManagedCluster = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}, "spec": {"hubAcceptsClient": true}}))?;
    Api::<ManagedCluster>::all(client.clone())
        .create(&Default::default(), &cluster)
        .await
        .with_context(|| format!("creating cluster {name}"))?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    wait_for(
        &namespaces,
        name,
        "the accepted cluster's namespace",
        |_| true,
    )
    .await?;
    Ok(())
}

/// Creates or updates Placement `name` in `ns` with `spec` (server-side apply).
pub async fn apply_placement(
    client: &kube::Client,
    ns: &str,
    name: &str,
    spec: serde_json::Value,
) -> anyhow::Result<()> {
    use kube::api::{Patch, PatchParams};
    Api::<ocm_api::cluster::v1beta1::Placement>::namespaced(client.clone(), ns)
        .patch(
            name,
            &PatchParams::apply("ocm-e2e").force(),
            &Patch::Apply(serde_json::json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
                "metadata": {"name": name}, "spec": spec})),
        )
        .await
        .with_context(|| format!("applying placement {ns}/{name}"))?;
    Ok(())
}

/// The clusters of one PlacementDecision page, in its order.
pub fn decided_clusters(decision: &ocm_api::cluster::v1beta1::PlacementDecision) -> Vec<String> {
    decision
        .status
        .iter()
        .flat_map(|s| s.decisions.iter().map(|c| c.cluster_name.clone()))
        .collect()
}

/// Waits until the first decision page of Placement `name` in `ns` holds exactly the clusters
/// `want` (in any order).
pub async fn wait_decided(
    client: &kube::Client,
    ns: &str,
    name: &str,
    want: &[&str],
) -> anyhow::Result<()> {
    let mut want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
    want.sort();
    let decisions: Api<ocm_api::cluster::v1beta1::PlacementDecision> =
        Api::namespaced(client.clone(), ns);
    wait_for(
        &decisions,
        &format!("{name}-decision-1"),
        &format!("decided {want:?}"),
        move |d| {
            let mut decided = decided_clusters(d);
            decided.sort();
            decided == want
        },
    )
    .await?;
    Ok(())
}

/// Binds `ns` to the `global` set, creates Placement `p` there selecting every cluster (also
/// unreachable ones) and waits until it decided on `cluster`.
pub async fn wait_placed_on(client: &kube::Client, ns: &str, cluster: &str) -> anyhow::Result<()> {
    bind_namespace(client, ns, "global").await?;
    apply_placement(
        client,
        ns,
        "p",
        serde_json::json!({"clusterSets": ["global"], "tolerations": [
            {"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"}]}),
    )
    .await?;
    let decisions: Api<ocm_api::cluster::v1beta1::PlacementDecision> =
        Api::namespaced(client.clone(), ns);
    wait_for(
        &decisions,
        "p-decision-1",
        &format!("{cluster} decided"),
        |d| decided_clusters(d).iter().any(|c| c == cluster),
    )
    .await?;
    Ok(())
}

/// Condition `type_` of a Placement, if it has one.
pub fn placement_condition<'a>(
    placement: &'a ocm_api::cluster::v1beta1::Placement,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    placement
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// Condition `type_` of a ManagedCluster, if it has one.
pub fn managed_cluster_condition<'a>(
    cluster: &'a ManagedCluster,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    cluster
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// The status of condition `type_` of a ManagedCluster ("" when absent).
pub fn cluster_condition(cluster: &ManagedCluster, type_: &str) -> String {
    managed_cluster_condition(cluster, type_)
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

pub use ocm::fleet::joined_and_available;

/// Joins simulated cluster `name` to `hub` with `bootstrap` and accepts it as `ocm accept`
/// would; returns its admin client and its agent once it is Joined and Available.
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub async fn join_and_accept(
    hub: &ocm::embedded::EmbeddedHub,
    bootstrap: &str,
    name: &str,
) -> (kube::Client, RunningAgent) {
    let spoke = simulated_spoke(hub, name).await.unwrap();
    let agent = join(&spoke, bootstrap, fast_agent_options(name))
        .await
        .unwrap();
    let accepted = tokio::time::timeout(
        WAIT,
        ocm::accept::accept_when_asked(&hub.admin_client(), name, false),
    )
    .await
    .expect("cluster asks to join")
    .unwrap();
    assert!(accepted.accepted_now);
    assert_eq!(accepted.approved_csrs.len(), 1);
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    wait_for(
        &clusters,
        name,
        "Joined and Available",
        joined_and_available,
    )
    .await
    .unwrap();
    (spoke, agent)
}

/// The entries of the agent's `hub-kubeconfig-secret` on its cluster, as text.
async fn agent_hub_secret(
    spoke: &kube::Client,
) -> anyhow::Result<impl Fn(&str) -> anyhow::Result<String>> {
    let secret = Api::<Secret>::namespaced(spoke.clone(), "open-cluster-management-agent")
        .get("hub-kubeconfig-secret")
        .await
        .context("reading hub-kubeconfig-secret")?;
    let data = secret.data.unwrap_or_default();
    Ok(move |key: &str| -> anyhow::Result<String> {
        let bytes = data
            .get(key)
            .with_context(|| format!("hub-kubeconfig-secret has no {key}"))?;
        Ok(String::from_utf8(bytes.0.clone())?)
    })
}

/// The hub server the agent's stored hub kubeconfig points at.
pub async fn hub_server_of_agent(spoke: &kube::Client) -> anyhow::Result<String> {
    let text = agent_hub_secret(spoke).await?;
    let kubeconfig = ocm_runtime::kubeconfig::parse(&text("kubeconfig")?)?;
    Ok(ocm_runtime::kubeconfig::current_server(&kubeconfig)?.server)
}

/// The agent's hub credentials, read from the `hub-kubeconfig-secret` on its cluster, as a
/// client of the hub over TLS.
pub async fn hub_client_of_agent(
    spoke: &kube::Client,
    hub: &EmbeddedHub,
) -> anyhow::Result<kube::Client> {
    let text = agent_hub_secret(spoke).await?;
    Ok(ocm_runtime::kubeconfig::client_for(
        &ServerInfo {
            server: hub.url.clone(),
            ca_pem: Some(hub.ca_pem.clone()),
            proxy_url: None,
        },
        &KubeconfigAuth::ClientCertData {
            cert_pem: text("tls.crt")?,
            key_pem: text("tls.key")?,
        },
    )
    .await?)
}

/// A hub (in memory) whose bootstrap token is auto-approved, with `n` joined simulated
/// clusters `c01`…, each running a registration agent and a work agent (status every second)
/// until the returned token is cancelled.
pub async fn fleet(dir: &Path, n: usize) -> anyhow::Result<(EmbeddedHub, Vec<String>, Shutdown)> {
    fleet_with(dir, n, fast_agent_options).await
}

/// [`fleet`] with the registration agent of each cluster run with `agent_options(name)`.
pub async fn fleet_with(
    dir: &Path,
    n: usize,
    agent_options: impl Fn(&str) -> AgentOptions + Send + Sync + 'static,
) -> anyhow::Result<(EmbeddedHub, Vec<String>, Shutdown)> {
    let fleet = ocm::fleet::Fleet::start(
        dir,
        ocm::fleet::FleetOptions {
            hub: fast_hub_options(),
            agent_options: std::sync::Arc::new(agent_options),
            join_timeout: WAIT,
            ..ocm::fleet::FleetOptions::new(n)
        },
    )
    .await?;
    let agents = fleet.agents();
    Ok((fleet.hub, fleet.clusters, agents))
}

/// Agent options for rotation scenarios: a fast status sync, but upstream's five-minute
/// certificate check period, so that rotation cannot lean on a short one.
pub fn rotation_agent_options(cluster: &str) -> AgentOptions {
    AgentOptions {
        cluster_name: cluster.to_owned(),
        status_sync_period: Duration::from_secs(1),
        ..AgentOptions::default()
    }
}

/// The certificate in the agent's `hub-kubeconfig-secret` (PEM) and its end of validity,
/// verified against the hub CA `ca_pem`.
pub async fn agent_certificate(
    spoke: &kube::Client,
    ca_pem: &str,
) -> anyhow::Result<(Vec<u8>, jiff::Timestamp)> {
    let pem = agent_hub_secret(spoke).await?("tls.crt")?.into_bytes();
    Ok((pem.clone(), certificate_not_after(&pem, ca_pem)?))
}

/// Waits (watching the hub, up to [`WAIT`]) until a CSR of `cluster` from a bootstrap identity
/// waits for approval: the agent asks to join (again) with its bootstrap kubeconfig.
pub async fn wait_for_bootstrap_csr(hub: &kube::Client, cluster: &str) -> anyhow::Result<()> {
    wait_for_pending_csr(hub, cluster, ocm::accept::from_bootstrap_identity).await
}

/// Waits (watching the hub, up to [`WAIT`]) until a pending CSR labelled with `cluster` for
/// which `matches` holds exists.
pub async fn wait_for_pending_csr(
    hub: &kube::Client,
    cluster: &str,
    matches: impl Fn(&k8s_openapi::api::certificates::v1::CertificateSigningRequest) -> bool,
) -> anyhow::Result<()> {
    use futures::StreamExt;
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    use kube::runtime::{WatchStreamExt, watcher};
    let csrs: Api<CertificateSigningRequest> = Api::all(hub.clone());
    let config = watcher::Config::default().labels(&format!(
        "open-cluster-management.io/cluster-name={cluster}"
    ));
    let asked = async {
        let mut events = std::pin::pin!(watcher(csrs, config).applied_objects());
        while let Some(event) = events.next().await {
            if let Ok(csr) = event
                && ocm::accept::is_pending(&csr)
                && matches(&csr)
            {
                return Ok(());
            }
        }
        anyhow::bail!("the CSR watch ended")
    };
    tokio::time::timeout(WAIT, asked)
        .await
        .with_context(|| format!("timed out waiting for a pending CSR of {cluster}"))?
}

/// The end of validity of the first certificate of `pem`, verified against `ca_pem`.
pub fn certificate_not_after(pem: &[u8], ca_pem: &str) -> anyhow::Result<jiff::Timestamp> {
    use ocm_apiserver::pki::{ClientCaBundle, verify_client_chain};
    use ocm_apiserver_pki::cert::pem_blocks;
    let blocks = pem_blocks(pem, "CERTIFICATE");
    let leaf = blocks.first().context("no certificate in the PEM")?;
    let valid = verify_client_chain(
        &[leaf.as_slice()],
        &ClientCaBundle::from_pem(ca_pem),
        jiff::Timestamp::now(),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(valid.until)
}

/// Waits until the wall clock reads `at` (scenario timing around a certificate's lifetime).
pub async fn sleep_until(at: jiff::Timestamp) {
    let wait = at.duration_since(jiff::Timestamp::now());
    tokio::time::sleep(Duration::try_from(wait).unwrap_or(Duration::ZERO)).await;
}

/// What a [`CsrLog`] saw of one CSR.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CsrSeen {
    /// `spec.username`: who asked.
    pub username: String,
    /// Reason of its `Approved` condition, once approved.
    pub approved_reason: Option<String>,
    /// Whether it got a certificate.
    pub issued: bool,
}

/// Every CSR of one cluster seen on the hub since the log started, by name (kept after the
/// hub's cleaner deletes them).
pub struct CsrLog {
    seen: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, CsrSeen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl CsrLog {
    /// Starts watching the CSRs of `cluster` on `hub`.
    pub fn start(hub: &kube::Client, cluster: &str) -> CsrLog {
        use futures::StreamExt;
        use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
        use kube::runtime::{WatchStreamExt, watcher};
        let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
        let api: Api<CertificateSigningRequest> = Api::all(hub.clone());
        let config = watcher::Config::default().labels(&format!(
            "open-cluster-management.io/cluster-name={cluster}"
        ));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            let mut events =
                std::pin::pin!(watcher(api, config).backoff_on_errors().applied_objects());
            while let Some(event) = events.next().await {
                let Ok(csr) = event else { continue };
                let status = csr.status.as_ref();
                let entry = CsrSeen {
                    username: csr.spec.username.clone().unwrap_or_default(),
                    approved_reason: status
                        .and_then(|s| s.conditions.as_ref())
                        .into_iter()
                        .flatten()
                        .find(|c| c.type_ == "Approved")
                        .map(|c| c.reason.clone().unwrap_or_default()),
                    issued: status
                        .and_then(|s| s.certificate.as_ref())
                        .is_some_and(|c| !c.0.is_empty()),
                };
                let name = csr.metadata.name.clone().unwrap_or_default();
                log.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(name, entry);
            }
        });
        CsrLog { seen, task }
    }

    /// What was seen so far.
    pub fn snapshot(&self) -> std::collections::BTreeMap<String, CsrSeen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for CsrLog {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Writes, next to `admin_kubeconfig`, a kubeconfig for the same server presenting a token of
/// service account `namespace/sa` (what a pod running as that account would use).
pub async fn service_account_kubeconfig(
    admin: &kube::Client,
    admin_kubeconfig: &Path,
    namespace: &str,
    sa: &str,
) -> anyhow::Result<std::path::PathBuf> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    let token =
        Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), namespace)
            .create_token_request(sa, &Default::default(), &request)
            .await
            .with_context(|| format!("a token for {namespace}/{sa}"))?
            .status
            .context("token request without status")?
            .token;
    let text = std::fs::read_to_string(admin_kubeconfig)?;
    let server = ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(&text)?)?;
    let yaml = ocm_runtime::kubeconfig::render(&ocm_runtime::kubeconfig::KubeconfigSpec {
        server,
        auth: KubeconfigAuth::Token(token),
        context: sa.into(),
        user: sa.into(),
        namespace: None,
    });
    let path = admin_kubeconfig.with_file_name(format!("{namespace}-{sa}.kubeconfig"));
    std::fs::write(&path, yaml)?;
    Ok(path)
}

/// Starts the process kubelet on the cluster behind `admin_kubeconfig`: Deployments of
/// `image` (or another tag of it) run as processes of `binary`, their folders under `home`.
/// Runs until the returned token is cancelled.
pub async fn start_process_kubelet(
    binary: &str,
    admin_kubeconfig: &Path,
    image: &str,
    home: &Path,
) -> anyhow::Result<Shutdown> {
    start_process_kubelet_with_local(binary, admin_kubeconfig, image, home, Vec::new()).await
}

/// [`start_process_kubelet`] that also runs `local_images`, each as its executable.
pub async fn start_process_kubelet_with_local(
    binary: &str,
    admin_kubeconfig: &Path,
    image: &str,
    home: &Path,
    local_images: Vec<ocm::process_kubelet::LocalImage>,
) -> anyhow::Result<Shutdown> {
    start_process_kubelet_with(
        binary,
        admin_kubeconfig,
        image,
        home,
        ocm::process_kubelet::DEFAULT_SYNC_PERIOD,
        ocm::process_kubelet::DEFAULT_TOKEN_REFRESH,
        local_images,
    )
    .await
}

/// [`start_process_kubelet`] with its volume sync period, token refresh age and the other
/// images it runs as local executables.
pub async fn start_process_kubelet_with(
    binary: &str,
    admin_kubeconfig: &Path,
    image: &str,
    home: &Path,
    sync_period: Duration,
    token_refresh: Duration,
    local_images: Vec<ocm::process_kubelet::LocalImage>,
) -> anyhow::Result<Shutdown> {
    let client = ocm_runtime::kubeconfig::client_from_file(admin_kubeconfig).await?;
    let text = std::fs::read_to_string(admin_kubeconfig)?;
    let server = ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(&text)?)?;
    let shutdown = Shutdown::new();
    let options = ocm::process_kubelet::ProcessKubeletOptions {
        agent_binary: agent_beside_test_binary(binary),
        binary: binary.into(),
        images: vec![image.to_owned()],
        local_images,
        work_dir: home.join("pods"),
        server,
        node_name: "node-1".into(),
        echo_logs: true,
        sync_period,
        token_refresh,
    };
    tokio::spawn(ocm::process_kubelet::run(client, options, shutdown.clone()));
    Ok(shutdown)
}

/// The test crate's `ocm-agent` (its `ocm-e2e-agent` executable, built beside `binary`, its
/// `ocm-e2e-ocm`), which the process kubelet runs for the klusterlet's agent containers.
fn agent_beside_test_binary(binary: &str) -> Option<std::path::PathBuf> {
    let agent = Path::new(binary).parent()?.join("ocm-e2e-agent");
    agent.is_file().then_some(agent)
}

/// Condition `type_` of a ManagedClusterAddOn as (status, reason, message), if present.
pub fn addon_condition(
    mca: &ocm_api::addon::v1beta1::ManagedClusterAddOn,
    type_: &str,
) -> Option<(String, String, String)> {
    mca.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Creates the object `value` describes through `api`; one that exists already is kept.
pub async fn create_or_keep<K>(api: &Api<K>, value: serde_json::Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + Debug,
{
    let object: K = serde_json::from_value(value)?;
    match api.create(&kube::api::PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// Runs `kubectl --kubeconfig KUBECONFIG ARGS…` (with `stdin` piped in, if any) as a user
/// types it; returns (success, stdout, stderr). `OCM_HUB_KUBECONFIG` is not passed on, so a
/// kubectl plugin cannot lean on the caller's hub identity.
pub async fn kubectl(
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<(bool, String, String)> {
    let (code, out, err) = kubectl_exit_code(kubeconfig, args, stdin).await?;
    Ok((code == 0, out, err))
}

/// [`kubectl`], answering kubectl's exit code (-1 when a signal ended it) instead of success:
/// for commands whose code carries meaning (`kubectl exec` passes the command's on).
pub async fn kubectl_exit_code(
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<(i32, String, String)> {
    use std::process::Stdio;
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("OCM_HUB_KUBECONFIG")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("running kubectl")?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).await?;
    }
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .with_context(|| format!("kubectl {args:?} did not finish"))??;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Lets the hub ServiceAccount `namespace/account` use the cluster proxy for `cluster` with
/// `verbs`: a ClusterRole `role` on that cluster's `managedclusters/proxy` and a
/// ClusterRoleBinding `binding` of it (each kept if it exists).
pub async fn allow_proxy(
    admin: &kube::Client,
    (role, binding): (&str, &str),
    cluster: &str,
    (namespace, account): (&str, &str),
    verbs: &[&str],
) -> anyhow::Result<()> {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    create_or_keep(
        &Api::<ClusterRole>::all(admin.clone()),
        serde_json::json!({"metadata": {"name": role},
               "rules": [{"apiGroups": ["cluster.open-cluster-management.io"],
                          "resources": ["managedclusters/proxy"], "resourceNames": [cluster],
                          "verbs": verbs}]}),
    )
    .await?;
    create_or_keep(
        &Api::<ClusterRoleBinding>::all(admin.clone()),
        serde_json::json!({"metadata": {"name": binding},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": role},
               "subjects": [{"kind": "ServiceAccount", "name": account,
                             "namespace": namespace}]}),
    )
    .await
}

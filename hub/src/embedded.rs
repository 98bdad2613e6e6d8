//! The embedded hub: our API server under a data directory, served over TLS, with the OCM
//! CRDs installed, the hub-side hooks registered (addon version conversion, the checks
//! upstream does in admission webhooks), `kube-public/cluster-info` published for joining
//! agents, and the hub controllers (registration, placement, ManifestWorkReplicaSet) running
//! under leader election.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::wait::await_condition;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::crds::Target;
use ocm_apiserver::serve::Serving;
use ocm_apiserver::tls::{TlsMaterial, write_file};
use ocm_apiserver::{ApiServer, ApiServerConfig};
use ocm_registration::hub::{HubContext, HubOptions};
use ocm_runtime::cache::SharedCache;
use ocm_runtime::kubeconfig::{KubeconfigAuth, KubeconfigSpec, ServerInfo};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use ocm_work::gates::HubWorkGates;
use serde_json::json;

/// Field manager of what `ocm hub` applies itself.
pub const FIELD_MANAGER: &str = "ocm-hub";

/// Namespace the hub components use (leader-election lease, hub-side secrets).
pub const HUB_NAMESPACE: &str = "open-cluster-management-hub";

/// How to run the embedded hub.
#[derive(Clone, Debug)]
pub struct EmbeddedHubOptions {
    /// Database, TLS material and admin.kubeconfig live here.
    pub data_dir: PathBuf,
    /// Keep objects in memory only (TLS material and kubeconfig are still written).
    pub memory: bool,
    /// Address to serve the API on (port 0 picks one).
    pub listen: SocketAddr,
    /// Extra names for the serving certificate.
    pub tls_sans: Vec<String>,
    /// Hub controller tunables.
    pub hub: HubOptions,
    /// Longest client certificate the CSR signer issues.
    pub csr_signing_duration: Duration,
    /// Whether to run the registration hub controllers.
    pub run_controllers: bool,
    /// Controllers run beside the hub's own, under the same leader election (`ocm hub` adds
    /// the addons' install strategies).
    pub extra_controllers: HubControllers,
    /// The hub's work feature gates (`NilExecutorValidating` in the ManifestWork admission,
    /// `CleanUpCompletedManifestWork` in the work controller; ManifestWorkReplicaSet runs
    /// whatever its gate says).
    pub work_gates: HubWorkGates,
}

/// A controller a hub runs beside its own: started with the hub's admin client and stopped by
/// the token (when the hub stops or loses its leader lease).
pub type HubController =
    Arc<dyn Fn(kube::Client, Shutdown) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// Extra hub controllers.
#[derive(Clone, Default)]
pub struct HubControllers(pub Vec<HubController>);

impl std::fmt::Debug for HubControllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HubControllers({})", self.0.len())
    }
}

impl EmbeddedHubOptions {
    /// Defaults for `data_dir`: listen on 127.0.0.1:6443, one-year certificates, controllers on.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        EmbeddedHubOptions {
            data_dir: data_dir.into(),
            memory: false,
            listen: SocketAddr::from(([127, 0, 0, 1], 6443)),
            tls_sans: Vec::new(),
            hub: HubOptions::default(),
            csr_signing_duration: Duration::from_secs(365 * 24 * 3600),
            run_controllers: true,
            extra_controllers: HubControllers::default(),
            work_gates: HubWorkGates::default(),
        }
    }
}

/// A running embedded hub.
pub struct EmbeddedHub {
    /// The API server (in-process access for tools and tests).
    pub server: ApiServer,
    /// `https://host:port` agents and kubectl use.
    pub url: String,
    /// The admin kubeconfig written into the data dir.
    pub admin_kubeconfig: PathBuf,
    /// PEM of the CA that signs the serving certificate and client certificates.
    pub ca_pem: String,
    /// Metrics of the hub controllers.
    pub metrics: ControllerMetrics,
    serving: Option<Serving>,
    shutdown: Shutdown,
    controllers: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for EmbeddedHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedHub")
            .field("url", &self.url)
            .finish()
    }
}

impl EmbeddedHub {
    /// Starts the server, installs the CRDs and hooks, and starts the hub controllers.
    #[inline(never)]
    pub fn start(
        options: EmbeddedHubOptions,
    ) -> futures::future::BoxFuture<'static, anyhow::Result<EmbeddedHub>> {
        Box::pin(Self::start_body(options))
    }

    async fn start_body(options: EmbeddedHubOptions) -> anyhow::Result<EmbeddedHub> {
        std::fs::create_dir_all(&options.data_dir)
            .with_context(|| format!("creating {}", options.data_dir.display()))?;
        let tls = TlsMaterial::load_or_create(&options.data_dir.join("pki"), &options.tls_sans)?;
        let host = advertised_host(options.listen);
        let config = ApiServerConfig {
            data_dir: (!options.memory).then(|| options.data_dir.clone()),
            advertise_address: format!("{host}:{}", options.listen.port()),
            client_ca: Some(tls.ca_cert.clone()),
            serving_ca: Some(tls.ca_cert.clone()),
            client_ca_key: Some(tls.ca_key.clone()),
            csr_signing_duration: options.csr_signing_duration,
            ..ApiServerConfig::default()
        };
        let server = ApiServer::start(config).await?;
        register_hooks(&server);
        crate::admission::register(
            &server,
            options.hub.default_cluster_sets,
            options.work_gates,
        );
        let serving =
            ocm_apiserver::serve::serve_tls(server.clone(), options.listen, tls.server_config()?)
                .await
                .with_context(|| format!("listening on {}", options.listen))?;
        let url = format!("https://{host}:{}", serving.local_addr.port());

        // Everything a joining cluster needs comes first; the admin kubeconfig is written
        // last, so a script that waits for it can run `ocm init` and `ocm join` at once.
        let admin = kube::Client::new(server.service(), "default");
        install_crds(&admin, &ocm_api::crds::stored_values(Target::Hub)?).await?;
        if options.hub.cluster_profiles {
            install_crds(&admin, &ocm_api::crds::stored_values(Target::Multicluster)?).await?;
        }
        publish_cluster_info(&admin, &url, &tls.ca_cert).await?;
        crate::bootstrap::apply_bootstrap_rbac(&admin).await?;
        ensure_namespace(&admin, HUB_NAMESPACE).await?;
        let admin_kubeconfig = admin_kubeconfig_path(&options.data_dir);
        write_file(&admin_kubeconfig, &tls.admin_kubeconfig(&url), true)?;

        let shutdown = Shutdown::new();
        let metrics = ControllerMetrics::new("ocm_hub");
        let controllers = options.run_controllers.then(|| {
            let ctx = Arc::new(HubContext {
                client: admin.clone(),
                options: options.hub.clone(),
                metrics: metrics.clone(),
                shutdown: shutdown.clone(),
            });
            tokio::spawn(run_controllers_as_leader(
                ctx,
                options.extra_controllers.clone(),
                options.work_gates,
                data_dir_identity(&options.data_dir),
            ))
        });
        Ok(EmbeddedHub {
            server,
            url,
            admin_kubeconfig,
            ca_pem: tls.ca_cert,
            metrics,
            serving: Some(serving),
            shutdown,
            controllers,
        })
    }

    /// An admin client over the in-process service (no TLS).
    pub fn admin_client(&self) -> kube::Client {
        kube::Client::new(self.server.service(), "default")
    }

    /// What an agent needs to find and trust the hub.
    pub fn server_info(&self) -> ServerInfo {
        ServerInfo {
            server: self.url.clone(),
            ca_pem: Some(self.ca_pem.clone()),
            proxy_url: None,
        }
    }

    /// A kubeconfig for the hub with a bearer token (e.g. a bootstrap kubeconfig).
    pub fn token_kubeconfig(&self, token: &str) -> String {
        ocm_runtime::kubeconfig::render(&KubeconfigSpec {
            server: self.server_info(),
            auth: KubeconfigAuth::Token(token.to_owned()),
            context: "bootstrap".into(),
            user: "bootstrap".into(),
            namespace: None,
        })
    }

    /// The token that is cancelled when the hub stops.
    pub fn shutdown_token(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Stops the controllers and the listener.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.controllers.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
        if let Some(serving) = self.serving.take() {
            serving.shutdown().await;
        }
        self.server.shutdown();
    }
}

/// Name of the Lease the registration hub controllers elect their leader on.
pub const LEADER_LEASE: &str = "cluster-manager-registration-controller-lock";

/// Runs the hub controllers (registration, placement, ManifestWorkReplicaSet) while this
/// process holds the hub's leader lease, so that two hub processes never both write.
#[inline(never)]
pub fn run_controllers_as_leader(
    ctx: Arc<HubContext>,
    extra: HubControllers,
    work_gates: HubWorkGates,
    identity: String,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_controllers_as_leader_body(
        ctx, extra, work_gates, identity,
    ))
}

async fn run_controllers_as_leader_body(
    ctx: Arc<HubContext>,
    extra: HubControllers,
    work_gates: HubWorkGates,
    identity: String,
) {
    let election = ocm_runtime::leader::LeaderElection::new(
        ctx.client.clone(),
        HUB_NAMESPACE,
        LEADER_LEASE,
        &identity,
    );
    let shutdown = ctx.shutdown.clone();
    election
        .run_as_leader(shutdown, move |leading| {
            let ctx = Arc::new(HubContext {
                client: ctx.client.clone(),
                options: ctx.options.clone(),
                metrics: ctx.metrics.clone(),
                shutdown: leading,
            });
            run_hub_controllers(ctx, extra.clone(), work_gates)
        })
        .await;
}

/// Every hub controller — registration, placement, ManifestWorkReplicaSet and the extra ones —
/// until `ctx.shutdown` is cancelled.
async fn run_hub_controllers(
    ctx: Arc<HubContext>,
    extra: HubControllers,
    work_gates: HubWorkGates,
) {
    // Registration and placement read one cache of every ManagedCluster.
    let clusters = SharedCache::<ManagedCluster>::new();
    let components = futures::future::join_all(HubComponent::ALL.iter().map(|component| {
        run_component(
            ctx.clone(),
            *component,
            extra.clone(),
            work_gates,
            Some(clusters.clone()),
        )
    }));
    futures::future::join(
        ocm_registration::hub::fill_cluster_cache(&ctx, &clusters),
        components,
    )
    .await;
}

/// A group of hub controllers that can run as a process of its own (as the operator's
/// Deployments do), each electing its leader on a Lease of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HubComponent {
    /// Cluster registration: acceptance, cluster namespaces and RBAC, leases, CSRs, sets.
    Registration,
    /// Placement scheduling.
    Placement,
    /// ManifestWorkReplicaSet, and the completed-work cleanup (CleanUpCompletedManifestWork).
    Work,
    /// The addons' generic controllers (install strategies, configs): the extra controllers.
    AddonManager,
}

impl HubComponent {
    /// Every component, in start order.
    pub const ALL: [HubComponent; 4] = [
        HubComponent::Registration,
        HubComponent::Placement,
        HubComponent::Work,
        HubComponent::AddonManager,
    ];

    /// The component's name on the command line (`registration`, `placement`, `work`,
    /// `addon-manager`).
    pub fn name(self) -> &'static str {
        match self {
            HubComponent::Registration => "registration",
            HubComponent::Placement => "placement",
            HubComponent::Work => "work",
            HubComponent::AddonManager => "addon-manager",
        }
    }

    /// The component named `name`.
    pub fn parse(name: &str) -> Option<HubComponent> {
        HubComponent::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The Lease this component elects its leader on when it runs alone (registration's is
    /// the one the whole hub uses, so an all-in-one hub and a lone registration process never
    /// both run).
    pub fn leader_lease(self) -> String {
        match self {
            HubComponent::Registration => LEADER_LEASE.to_owned(),
            other => format!("cluster-manager-{}-controller-lock", other.name()),
        }
    }
}

/// One component's controllers until `ctx.shutdown` is cancelled; with `clusters`, the
/// components that read ManagedClusters read that shared cache (kept filled by the caller).
async fn run_component(
    ctx: Arc<HubContext>,
    component: HubComponent,
    extra: HubControllers,
    work_gates: HubWorkGates,
    clusters: Option<SharedCache<ManagedCluster>>,
) {
    match (component, clusters) {
        (HubComponent::Registration, Some(clusters)) => {
            ocm_registration::hub::run_sharing(ctx, clusters).await;
        }
        (HubComponent::Registration, None) => ocm_registration::hub::run(ctx).await,
        (HubComponent::Placement, Some(clusters)) => {
            ocm_placement::controller::run_sharing(
                ctx.client.clone(),
                clusters,
                ctx.shutdown.clone(),
            )
            .await;
        }
        (HubComponent::Placement, None) => {
            ocm_placement::controller::run(ctx.client.clone(), ctx.shutdown.clone()).await;
        }
        (HubComponent::Work, _) => {
            let replica_sets = ocm_work::hub::run(
                ctx.client.clone(),
                ocm_work::hub::ReplicaSetOptions::default(),
                ctx.metrics.clone(),
                ctx.shutdown.clone(),
            );
            let cleanup = async {
                if work_gates.clean_up_completed_manifest_work {
                    ocm_work::hub::completed::run(
                        ctx.client.clone(),
                        ctx.metrics.clone(),
                        ctx.shutdown.clone(),
                    )
                    .await;
                }
            };
            futures::future::join(replica_sets, cleanup).await;
        }
        (HubComponent::AddonManager, _) => {
            futures::future::join_all(
                extra
                    .0
                    .iter()
                    .map(|controller| controller(ctx.client.clone(), ctx.shutdown.clone())),
            )
            .await;
        }
    }
}

/// Runs each of `components` while this process holds that component's leader lease.
#[inline(never)]
pub fn run_components_as_leader(
    ctx: Arc<HubContext>,
    components: &[HubComponent],
    extra: HubControllers,
    work_gates: HubWorkGates,
    identity: String,
) -> futures::future::BoxFuture<'_, ()> {
    Box::pin(run_components_as_leader_body(
        ctx, components, extra, work_gates, identity,
    ))
}

async fn run_components_as_leader_body(
    ctx: Arc<HubContext>,
    components: &[HubComponent],
    extra: HubControllers,
    work_gates: HubWorkGates,
    identity: String,
) {
    futures::future::join_all(components.iter().map(|component| {
        let ctx = ctx.clone();
        let extra = extra.clone();
        let component = *component;
        let election = ocm_runtime::leader::LeaderElection::new(
            ctx.client.clone(),
            HUB_NAMESPACE,
            &component.leader_lease(),
            &identity,
        );
        async move {
            election
                .run_as_leader(ctx.shutdown.clone(), move |leading| {
                    let ctx = Arc::new(HubContext {
                        client: ctx.client.clone(),
                        options: ctx.options.clone(),
                        metrics: ctx.metrics.clone(),
                        shutdown: leading,
                    });
                    run_component(ctx, component, extra.clone(), work_gates, None)
                })
                .await;
        }
    }))
    .await;
}

/// A leader-election identity unique to this process: host name plus a random suffix.
pub fn process_identity() -> String {
    format!(
        "{}_{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "ocm-hub".into()),
        uuid_like()
    )
}

/// The embedded hub's leader-election identity, kept in its data dir: only one process can
/// own a data dir, so a restarted hub takes its lease back at once instead of waiting for it
/// to expire.
fn data_dir_identity(data_dir: &Path) -> String {
    let path = data_dir.join("hub-identity");
    if let Ok(text) = std::fs::read_to_string(&path)
        && !text.trim().is_empty()
    {
        return text.trim().to_owned();
    }
    let identity = process_identity();
    if let Err(err) = std::fs::write(&path, format!("{identity}\n")) {
        tracing::warn!(%err, "cannot persist the hub identity");
    }
    identity
}

/// A short random identifier.
fn uuid_like() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Registers the conversion of the addon kinds between v1alpha1 and v1beta1.
fn register_hooks(server: &ApiServer) {
    for kind in ["ClusterManagementAddOn", "ManagedClusterAddOn"] {
        server.register_conversion(
            ocm_api::addon::GROUP,
            kind,
            Arc::new(|object, api_version| {
                ocm_api::addon::conversion::convert(object, api_version).map_err(|e| e.to_string())
            }),
        );
    }
}

/// Applies `crds` (server-side apply) and waits until each is Established. The CRDs may be
/// typed or plain JSON objects (as [`ocm_api::crds::stored_values`] reads them): they are
/// sent and read back as JSON, so installing them runs no typed CRD code.
pub async fn install_crds<T: serde::Serialize>(
    client: &kube::Client,
    crds: &[T],
) -> anyhow::Result<()> {
    let resource = ApiResource::erase::<CustomResourceDefinition>(&());
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::with_capacity(crds.len());
    for crd in crds {
        let crd = serde_json::to_value(crd).context("a CRD that is not JSON")?;
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .with_context(|| format!("installing CRD {name}"))?;
        names.push(name);
    }
    for name in names {
        tokio::time::timeout(
            Duration::from_secs(30),
            await_condition(api.clone(), &name, is_established),
        )
        .await
        .with_context(|| format!("CRD {name} not established in 30 s"))?
        .with_context(|| format!("waiting for CRD {name}"))?;
    }
    Ok(())
}

/// Whether a CRD read as JSON has the condition `Established` True.
fn is_established(crd: Option<&DynamicObject>) -> bool {
    crd.and_then(|crd| crd.data["status"]["conditions"].as_array())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

/// Creates `name` if it does not exist.
pub async fn ensure_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
    }))?;
    api.patch(name, &PatchParams::apply(FIELD_MANAGER), &Patch::Apply(&ns))
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// Publishes `kube-public/cluster-info` unless the hub already has one (kubeadm hubs do; that
/// one and its RBAC are left alone). Returns whether it published.
pub async fn ensure_cluster_info(
    client: &kube::Client,
    url: &str,
    ca_pem: &str,
) -> anyhow::Result<bool> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-public");
    if configmaps
        .get_opt("cluster-info")
        .await
        .context("reading kube-public/cluster-info")?
        .is_some()
    {
        return Ok(false);
    }
    ensure_namespace(client, "kube-public").await?;
    publish_cluster_info(client, url, ca_pem).await?;
    Ok(true)
}

/// Publishes `kube-public/cluster-info` (a kubeconfig with the hub URL and CA, no user) and lets
/// anonymous users and bootstrap tokens read exactly that object, as kubeadm does; `ocm join`
/// uses it to learn the hub CA.
pub async fn publish_cluster_info(
    client: &kube::Client,
    url: &str,
    ca_pem: &str,
) -> anyhow::Result<()> {
    let kubeconfig = cluster_info_kubeconfig(url, ca_pem);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-public");
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cluster-info", "namespace": "kube-public"},
        "data": {"kubeconfig": kubeconfig},
    }))?;
    configmaps
        .patch("cluster-info", &params, &Patch::Apply(&cm))
        .await
        .context("publishing kube-public/cluster-info")?;
    let role_name = "ocm:bootstrap-signer-clusterinfo";
    let roles: Api<Role> = Api::namespaced(client.clone(), "kube-public");
    let role: Role = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": role_name, "namespace": "kube-public"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                   "resourceNames": ["cluster-info"], "verbs": ["get"]}],
    }))?;
    roles
        .patch(role_name, &params, &Patch::Apply(&role))
        .await
        .context("granting anonymous read of cluster-info")?;
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), "kube-public");
    let binding: RoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": role_name, "namespace": "kube-public"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
             "name": crate::bootstrap::BOOTSTRAP_GROUP},
        ],
    }))?;
    bindings
        .patch(role_name, &params, &Patch::Apply(&binding))
        .await
        .context("granting anonymous read of cluster-info")?;
    Ok(())
}

/// The kubeconfig text stored in `cluster-info`: the hub's URL and CA, no user.
pub fn cluster_info_kubeconfig(url: &str, ca_pem: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    certificate-authority-data: {ca}\n    server: {url}\ncontexts: []\nusers: []\npreferences: {{}}\n"
    )
}

/// The host clients reach a server listening on `listen` at: loopback for an unspecified
/// address, brackets around IPv6.
pub fn advertised_host(listen: SocketAddr) -> String {
    match listen.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    }
}

/// The admin kubeconfig path of an embedded hub's data dir.
pub fn admin_kubeconfig_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.kubeconfig")
}

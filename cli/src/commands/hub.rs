//! `ocm hub`: runs a hub. Without `--kubeconfig` it starts the embedded API server under
//! `--data-dir` (durable), installs the OCM CRDs and runs the hub controllers beside it, with
//! the hub's admission policies as in-process hooks. With `--kubeconfig` it runs the hub
//! controllers against that cluster and serves the policies as admission and conversion
//! webhooks, which it registers there. Either way it serves the web dashboard with its own
//! credentials (the embedded hub's admin, or `--kubeconfig`'s user) unless `--no-dashboard`.
//! `ocm hub webhook` runs the webhook server alone.
//!
//! Either way the hub reports ready (`/readyz`, the banner, and for the embedded server the
//! admin kubeconfig) only once a cluster can join: CRDs established, `kube-public/cluster-info`
//! readable, bootstrap roles in place and, on an existing cluster, its API server calling the
//! webhooks.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use ocm_registration::hub::{HubContext, HubOptions};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use ocm_webhook::{RunningWebhook, ServerAccess, ServingCerts, WebhookOptions};
use ocm_work::gates::HubWorkGates;

use crate::embedded::{EmbeddedHub, EmbeddedHubOptions};

/// Flags of `ocm hub`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HubArgs {
    #[command(subcommand)]
    command: Option<HubCommand>,
    /// Run the hub controllers against this cluster instead of the embedded server.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Data directory of the embedded server (default ~/.ocm/hub); with --kubeconfig, where
    /// the webhook serving certificate is kept.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Address the embedded server listens on.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Extra subject alternative names (DNS names or IPs) for the serving certificate.
    #[arg(long = "tls-san")]
    tls_san: Vec<String>,
    /// Address of the /metrics, /healthz and /readyz endpoint.
    #[arg(long, default_value = "127.0.0.1:0")]
    metrics_addr: SocketAddr,
    /// Users whose clusters are accepted automatically (comma separated).
    #[arg(long, value_delimiter = ',')]
    auto_approved_users: Vec<String>,
    /// A cluster becomes unavailable after this many lease durations without a renewal.
    #[arg(long, default_value_t = 5)]
    lease_grace_multiplier: u32,
    /// Longest client certificate the embedded CSR signer issues, in seconds.
    #[arg(long, default_value_t = 365 * 24 * 3600)]
    cluster_signing_duration_seconds: u64,
    /// Hub feature gates in upstream's syntax, e.g.
    /// `ClusterProfile=true,NilExecutorValidating=true`: registration's ClusterProfile and
    /// DefaultClusterSet; work's ManifestWorkReplicaSet, NilExecutorValidating,
    /// CleanUpCompletedManifestWork, CloudEventsDrivers.
    #[arg(long = "feature-gates")]
    feature_gates: Vec<String>,
    #[command(flatten)]
    webhook: WebhookFlags,
    #[command(flatten)]
    dashboard: super::dashboard::DashboardFlags,
}

#[derive(Debug, Subcommand)]
enum HubCommand {
    /// Run only the admission and conversion webhook server (for a hub whose controllers
    /// run elsewhere, e.g. as its own Deployment).
    Webhook(WebhookArgs),
    /// Run only some hub controllers against an existing cluster (as the operator's
    /// Deployments do: one component per process, each electing its own leader).
    Controllers(ControllersArgs),
}

/// Flags of `ocm hub controllers`.
#[derive(Debug, Args)]
pub struct ControllersArgs {
    /// Kubeconfig of the hub cluster; without it, the in-cluster service account (or
    /// $KUBECONFIG).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Components to run (comma separated): registration, placement, work, addon-manager.
    #[arg(long, value_delimiter = ',', required = true)]
    only: Vec<String>,
    /// Address of the /metrics, /healthz and /readyz endpoint.
    #[arg(long, default_value = "127.0.0.1:0")]
    metrics_addr: SocketAddr,
    /// Users whose clusters are accepted automatically (comma separated; registration).
    #[arg(long, value_delimiter = ',')]
    auto_approved_users: Vec<String>,
    /// A cluster becomes unavailable after this many lease durations without a renewal
    /// (registration).
    #[arg(long, default_value_t = 5)]
    lease_grace_multiplier: u32,
    /// Hub feature gates in upstream's syntax, e.g.
    /// `ClusterProfile=true,NilExecutorValidating=true`: registration's ClusterProfile and
    /// DefaultClusterSet; work's ManifestWorkReplicaSet, NilExecutorValidating,
    /// CleanUpCompletedManifestWork, CloudEventsDrivers.
    #[arg(long = "feature-gates")]
    feature_gates: Vec<String>,
    /// Also serve the placement debugger (`/debug/placements/`, HTTPS with a self-signed
    /// certificate) on this address, in every replica and not only the leader (upstream's
    /// PlacementDebugServer gate).
    #[arg(long)]
    placement_debug_listen: Option<SocketAddr>,
}

/// Flags of `ocm hub webhook`.
#[derive(Debug, Args)]
pub struct WebhookArgs {
    /// Kubeconfig of the hub cluster (access checks are asked there); without it, the
    /// in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Where a self-made serving certificate is kept (default ~/.ocm/hub).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Also register the webhook configurations and the addon CRDs' conversion webhook on the
    /// hub (otherwise an installer such as the operator does).
    #[arg(long)]
    install: bool,
    /// Whether clusters without a cluster set label go into `default`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    default_cluster_set: bool,
    /// Hub feature gates in upstream's syntax, e.g.
    /// `ClusterProfile=true,NilExecutorValidating=true`: registration's ClusterProfile and
    /// DefaultClusterSet; work's ManifestWorkReplicaSet, NilExecutorValidating,
    /// CleanUpCompletedManifestWork, CloudEventsDrivers.
    #[arg(long = "feature-gates")]
    feature_gates: Vec<String>,
    #[command(flatten)]
    webhook: WebhookFlags,
}

/// Where the webhook server listens and how the hub's API server reaches it.
#[derive(Debug, Clone, Args)]
pub struct WebhookFlags {
    /// Address the admission/conversion webhook server listens on (with --kubeconfig).
    #[arg(long, default_value = "127.0.0.1:9443")]
    webhook_listen: SocketAddr,
    /// URL the hub's API server calls the webhooks at (default https://<listen address>); it
    /// must be reachable from the API server and its host must be in the serving certificate.
    #[arg(long)]
    webhook_url: Option<String>,
    /// Directory with tls.crt, tls.key (and ca.crt) to serve instead of a certificate the hub
    /// makes and rotates itself.
    #[arg(long)]
    webhook_cert_dir: Option<PathBuf>,
}

/// How long `ocm hub --kubeconfig` waits for the API server to reach its webhooks.
const WEBHOOK_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Field manager of what the hub registers on a cluster.
const FIELD_MANAGER: &str = "ocm-hub";

/// A webhook server up and the URL the API server must use.
struct Webhooks {
    running: RunningWebhook,
    url: String,
    ca_bundle: String,
}

impl WebhookFlags {
    /// The URL the API server calls: `--webhook-url`, else `https://<listen address>`.
    fn url(&self, local_addr: SocketAddr) -> String {
        self.webhook_url.clone().unwrap_or_else(|| {
            let host = crate::embedded::advertised_host(self.webhook_listen);
            format!("https://{host}:{}", local_addr.port())
        })
    }

    /// Starts the webhook server with a provided or self-made certificate.
    async fn start(
        &self,
        client: &kube::Client,
        data_dir: &Path,
        default_cluster_set: bool,
        work_gates: HubWorkGates,
    ) -> anyhow::Result<Webhooks> {
        let certs = match &self.webhook_cert_dir {
            Some(dir) => ServingCerts::provided(dir).with_context(|| {
                format!("loading the webhook certificate from {}", dir.display())
            })?,
            None => {
                let mut hosts = vec![crate::embedded::advertised_host(self.webhook_listen)];
                if let Some(host) = self
                    .webhook_url
                    .as_deref()
                    .and_then(|u| u.parse::<http::Uri>().ok())
                    .and_then(|u| u.host().map(str::to_owned))
                {
                    hosts.push(host);
                }
                ServingCerts::managed(&data_dir.join("webhook-pki"), &hosts)
                    .context("making the webhook serving certificate")?
            }
        };
        let ca_bundle = certs.ca_bundle();
        let running = ocm_webhook::serve(
            WebhookOptions {
                listen: self.webhook_listen,
                default_cluster_set,
                work_gates,
            },
            certs,
            ServerAccess::new(client.clone()),
        )
        .await?;
        let url = self.url(running.local_addr);
        Ok(Webhooks {
            running,
            url,
            ca_bundle,
        })
    }
}

/// Registers the webhooks on the hub cluster: the addon CRDs with their conversion webhook
/// (and the other hub CRDs), then both webhook configurations; waits until the API server
/// calls them.
async fn install_webhooks(
    client: &kube::Client,
    webhooks: &Webhooks,
    options: &HubOptions,
) -> anyhow::Result<()> {
    let mut crds = ocm_api::crds::hub();
    if options.cluster_profiles {
        // As upstream: installed with the gate, never removed (other tools may use it).
        crds.extend(ocm_api::crds::multicluster());
    }
    ocm_webhook::install::with_conversion_webhook(&mut crds, &webhooks.url, &webhooks.ca_bundle);
    crate::embedded::install_crds(client, &crds).await?;
    ocm_webhook::install::apply_configurations(
        client,
        &webhooks.url,
        &webhooks.ca_bundle,
        FIELD_MANAGER,
    )
    .await?;
    ocm_webhook::install::wait_until_answering(client, WEBHOOK_READY_TIMEOUT)
        .await
        .with_context(|| {
            format!(
                "the hub's API server must reach the webhooks at {} (check --webhook-url and \
                 that nothing blocks the API server from dialing it)",
                webhooks.url
            )
        })?;
    Ok(())
}

/// Runs until SIGINT/SIGTERM.
pub async fn run(args: HubArgs) -> anyhow::Result<()> {
    match args.command {
        Some(HubCommand::Webhook(webhook)) => return run_webhook(webhook).await,
        Some(HubCommand::Controllers(controllers)) => return run_components(controllers).await,
        None => {}
    }
    let (options, work_gates) = hub_options(
        &args.auto_approved_users,
        args.lease_grace_multiplier,
        &args.feature_gates,
    )?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let (ready_tx, ready) = tokio::sync::watch::channel(false);
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| super::ocm_home().join(super::hub_access::HUB_DIR));
    if let Some(kubeconfig) = &args.kubeconfig {
        let client = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
            .await
            .with_context(|| format!("loading {}", kubeconfig.display()))?;
        let metrics = ControllerMetrics::new("ocm_hub");
        let health =
            ocm_runtime::serve_health(args.metrics_addr, metrics.clone(), ready, shutdown.clone())
                .await
                .context("starting the metrics endpoint")?;
        std::fs::create_dir_all(&data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let webhooks = args
            .webhook
            .start(&client, &data_dir, options.default_cluster_sets, work_gates)
            .await?;
        install_webhooks(&client, &webhooks, &options).await?;
        prepare_for_joins(&client, kubeconfig).await?;
        crate::embedded::ensure_namespace(&client, crate::embedded::HUB_NAMESPACE).await?;
        let dashboard = args.dashboard.start(client.clone(), &shutdown).await?;
        // Commands run after this one talk to this hub unless told otherwise.
        super::hub_access::record_current_hub(kubeconfig);
        let _ = ready_tx.send(true);
        println!("ocm hub ready");
        println!("  hub cluster: {}", kubeconfig.display());
        println!("  webhooks:    {}", webhooks.url);
        println!("  metrics:     http://{}/metrics", health.local_addr);
        if let Some(dashboard) = &dashboard {
            println!("  dashboard:   {}", dashboard.url);
        }
        println!("next: ocm init --kubeconfig {}", kubeconfig.display());
        let ctx = Arc::new(HubContext {
            client,
            options,
            metrics,
            shutdown: shutdown.clone(),
        });
        crate::embedded::run_controllers_as_leader(
            ctx,
            ocm_setup::controllers::addon_controllers(),
            work_gates,
            crate::embedded::process_identity(),
        )
        .await;
        webhooks.running.stop().await;
        return Ok(());
    }
    let hub = EmbeddedHub::start(EmbeddedHubOptions {
        listen: args.listen,
        tls_sans: args.tls_san.clone(),
        hub: options,
        csr_signing_duration: std::time::Duration::from_secs(args.cluster_signing_duration_seconds),
        extra_controllers: ocm_setup::controllers::addon_controllers(),
        work_gates,
        ..EmbeddedHubOptions::new(&data_dir)
    })
    .await?;
    let health = ocm_runtime::serve_health(
        args.metrics_addr,
        hub.metrics.clone(),
        ready,
        shutdown.clone(),
    )
    .await
    .context("starting the metrics endpoint")?;
    let dashboard = args.dashboard.start(hub.admin_client(), &shutdown).await?;
    // Recorded before anything reports ready: a command run once it is ready finds this hub.
    super::hub_access::record_current_hub(&hub.admin_kubeconfig);
    let _ = ready_tx.send(true);
    println!("ocm hub ready");
    println!("  API server:  {}", hub.url);
    println!("  kubeconfig:  {}", hub.admin_kubeconfig.display());
    println!("  metrics:     http://{}/metrics", health.local_addr);
    if let Some(dashboard) = &dashboard {
        println!("  dashboard:   {}", dashboard.url);
    }
    println!(
        "next: ocm init --kubeconfig {}",
        hub.admin_kubeconfig.display()
    );
    tracing::info!(url = hub.url, "ocm hub ready");
    shutdown.cancelled().await;
    hub.stop().await;
    Ok(())
}

/// The hub controllers' options and the work gates from the flags `ocm hub` and `ocm hub
/// controllers` share: `--auto-approved-users`, `--lease-grace-multiplier` (at least 1) and
/// `--feature-gates` (registration's gates taken first, the rest must be work's).
fn hub_options(
    auto_approved_users: &[String],
    lease_grace_multiplier: u32,
    feature_gates: &[String],
) -> anyhow::Result<(HubOptions, HubWorkGates)> {
    let mut options = HubOptions {
        auto_approved_users: auto_approved_users.to_vec(),
        lease_grace_multiplier: lease_grace_multiplier.max(1),
        ..HubOptions::default()
    };
    let work_gates = HubWorkGates::parse(&options.take_feature_gates(feature_gates))
        .context("--feature-gates")?;
    Ok((options, work_gates))
}

/// `ocm hub controllers`: the chosen components, each while it holds its leader lease.
async fn run_components(args: ControllersArgs) -> anyhow::Result<()> {
    let (options, work_gates) = hub_options(
        &args.auto_approved_users,
        args.lease_grace_multiplier,
        &args.feature_gates,
    )?;
    let mut components = Vec::new();
    for name in &args.only {
        let component = crate::embedded::HubComponent::parse(name.trim()).with_context(|| {
            let known: Vec<&str> = crate::embedded::HubComponent::ALL
                .iter()
                .map(|c| c.name())
                .collect();
            format!("unknown component {name:?}: use {}", known.join(", "))
        })?;
        if !components.contains(&component) {
            components.push(component);
        }
    }
    let client = ocm_agent::cluster_client(args.kubeconfig.as_deref()).await?;
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let (ready_tx, ready) = tokio::sync::watch::channel(false);
    let metrics = ControllerMetrics::new("ocm_hub");
    let health =
        ocm_runtime::serve_health(args.metrics_addr, metrics.clone(), ready, shutdown.clone())
            .await
            .context("starting the metrics endpoint")?;
    // The leases live in the hub namespace; an installer normally made it already (the
    // operator does, and gives the components no right to make namespaces).
    if let Err(err) =
        crate::embedded::ensure_namespace(&client, crate::embedded::HUB_NAMESPACE).await
    {
        tracing::debug!(%err, "could not make sure the hub namespace exists");
    }
    if let Some(listen) = args.placement_debug_listen {
        let server =
            ocm_placement::debugger::server::serve(client.clone(), listen, shutdown.clone())
                .await
                .context("starting the placement debugger")?;
        println!(
            "  placement debugger: https://{}/debug/placements/",
            server.local_addr
        );
    }
    let _ = ready_tx.send(true);
    let names: Vec<&str> = components.iter().map(|c| c.name()).collect();
    println!("ocm hub controllers running: {}", names.join(", "));
    println!("  metrics: http://{}/metrics", health.local_addr);
    let ctx = Arc::new(HubContext {
        client,
        options,
        metrics,
        shutdown: shutdown.clone(),
    });
    crate::embedded::run_components_as_leader(
        ctx,
        &components,
        ocm_setup::controllers::addon_controllers(),
        work_gates,
        crate::embedded::process_identity(),
    )
    .await;
    Ok(())
}

/// On an existing cluster: `kube-public/cluster-info` (unless it has one) and the bootstrap
/// roles, so that `ocm init` then `ocm join` work as soon as the hub says it is ready.
async fn prepare_for_joins(client: &kube::Client, kubeconfig: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let hub = ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(&text)?)?;
    if let Some(ca) = &hub.ca_pem {
        crate::embedded::ensure_cluster_info(client, &hub.server, ca).await?;
    }
    crate::bootstrap::apply_bootstrap_rbac(client).await
}

/// `ocm hub webhook`: the webhook server alone, until SIGINT/SIGTERM.
async fn run_webhook(args: WebhookArgs) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    // The registration gates are the controllers' (and, with --install, decide the CRDs);
    // the webhook takes the work gates.
    let mut options = HubOptions::default();
    let work_gates = HubWorkGates::parse(&options.take_feature_gates(&args.feature_gates))
        .context("--feature-gates")?;
    let client = ocm_agent::cluster_client(args.kubeconfig.as_deref()).await?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| super::ocm_home().join(super::hub_access::HUB_DIR));
    // With a mounted certificate nothing is written (a pod's root filesystem may be
    // read-only).
    if args.webhook.webhook_cert_dir.is_none() {
        std::fs::create_dir_all(&data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
    }
    let webhooks = args
        .webhook
        .start(&client, &data_dir, args.default_cluster_set, work_gates)
        .await?;
    if args.install {
        install_webhooks(&client, &webhooks, &options).await?;
    }
    println!("ocm hub webhook serving at {}", webhooks.url);
    shutdown.cancelled().await;
    webhooks.running.stop().await;
    Ok(())
}

//! `ocm hub`: runs a hub. Without `--kubeconfig` it starts the embedded API server under
//! `--data-dir` (durable), installs the OCM CRDs and runs the hub controllers beside it; with
//! `--kubeconfig` it runs the hub controllers against that cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use ocm_registration::hub::{HubContext, HubOptions};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;

use crate::embedded::{EmbeddedHub, EmbeddedHubOptions};

/// Flags of `ocm hub`.
#[derive(Debug, Args)]
pub struct HubArgs {
    /// Run the hub controllers against this cluster instead of the embedded server.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Data directory of the embedded server (default ~/.ocm/hub).
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
}

/// Runs until SIGINT/SIGTERM.
pub async fn run(args: HubArgs) -> anyhow::Result<()> {
    let options = HubOptions {
        auto_approved_users: args.auto_approved_users.clone(),
        lease_grace_multiplier: args.lease_grace_multiplier.max(1),
        ..HubOptions::default()
    };
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();
    let (ready_tx, ready) = tokio::sync::watch::channel(false);
    if let Some(kubeconfig) = &args.kubeconfig {
        let client = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
            .await
            .with_context(|| format!("loading {}", kubeconfig.display()))?;
        let metrics = ControllerMetrics::new("ocm_hub");
        let health =
            ocm_runtime::serve_health(args.metrics_addr, metrics.clone(), ready, shutdown.clone())
                .await
                .context("starting the metrics endpoint")?;
        eprintln!(
            "ocm hub: controllers running against {}",
            kubeconfig.display()
        );
        eprintln!("metrics: http://{}/metrics", health.local_addr);
        let _ = ready_tx.send(true);
        let ctx = Arc::new(HubContext {
            client,
            options,
            metrics,
            shutdown: shutdown.clone(),
        });
        crate::embedded::install_crds(&ctx.client, &ocm_api::crds::hub()).await?;
        crate::embedded::ensure_namespace(&ctx.client, crate::embedded::HUB_NAMESPACE).await?;
        crate::embedded::run_controllers_as_leader(ctx, crate::embedded::process_identity()).await;
        return Ok(());
    }
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| super::ocm_home().join("hub"));
    let hub = EmbeddedHub::start(EmbeddedHubOptions {
        listen: args.listen,
        tls_sans: args.tls_san.clone(),
        hub: options,
        csr_signing_duration: std::time::Duration::from_secs(args.cluster_signing_duration_seconds),
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
    let _ = ready_tx.send(true);
    println!("ocm hub ready");
    println!("  API server:  {}", hub.url);
    println!("  kubeconfig:  {}", hub.admin_kubeconfig.display());
    println!("  metrics:     http://{}/metrics", health.local_addr);
    println!(
        "next: ocm init --kubeconfig {}",
        hub.admin_kubeconfig.display()
    );
    tracing::info!(url = hub.url, "ocm hub ready");
    shutdown.cancelled().await;
    hub.stop().await;
    Ok(())
}

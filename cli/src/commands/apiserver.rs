//! `ocm apiserver`: runs the embedded Kubernetes-compatible API server standalone, over TLS,
//! and writes an admin kubeconfig into the data directory.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use ocm_apiserver::tls::{TlsMaterial, write_file};
use ocm_apiserver::{ApiServer, ApiServerConfig};

/// Flags of `ocm apiserver`.
#[derive(Debug, Args)]
pub struct ApiserverArgs {
    /// Directory for the database, TLS material and admin.kubeconfig.
    #[arg(long)]
    data_dir: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Extra subject alternative names (DNS names or IPs) for the serving certificate.
    #[arg(long = "tls-san")]
    tls_san: Vec<String>,
    /// Keep objects in memory only (TLS material and kubeconfig are still written).
    #[arg(long)]
    memory: bool,
    /// Whether requests without credentials run as system:anonymous (false: they get 401).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    anonymous_auth: bool,
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(args: &ApiserverArgs) -> anyhow::Result<()> {
    ocm_runtime::telemetry::init("info");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(args))
}

async fn serve(args: &ApiserverArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let tls = TlsMaterial::load_or_create(&args.data_dir.join("pki"), &args.tls_san)?;
    let host = crate::embedded::advertised_host(args.listen);
    let config = ApiServerConfig {
        data_dir: (!args.memory).then(|| args.data_dir.clone()),
        advertise_address: format!("{host}:{}", args.listen.port()),
        anonymous_auth: args.anonymous_auth,
        client_ca: Some(tls.ca_cert.clone()),
        serving_ca: Some(tls.ca_cert.clone()),
        client_ca_key: Some(tls.ca_key.clone()),
        ..ApiServerConfig::default()
    };
    let server = ApiServer::start(config).await?;
    let serving = ocm_apiserver::serve::serve_tls(server, args.listen, tls.server_config()?)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let url = format!("https://{host}:{}", serving.local_addr.port());
    let kubeconfig = args.data_dir.join("admin.kubeconfig");
    write_file(&kubeconfig, &tls.admin_kubeconfig(&url), true)?;
    tracing::info!(
        url,
        kubeconfig = %kubeconfig.display(),
        "ocm apiserver ready"
    );
    ocm_runtime::shutdown::wait_for_signal().await;
    tracing::info!("shutting down");
    serving.shutdown().await;
    Ok(())
}

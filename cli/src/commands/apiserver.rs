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
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
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
    let host = match args.listen.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    let config = ApiServerConfig {
        data_dir: (!args.memory).then(|| args.data_dir.clone()),
        advertise_address: format!("{host}:{}", args.listen.port()),
        anonymous_auth: args.anonymous_auth,
        client_ca: Some(tls.ca_cert.clone()),
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
    wait_for_signal().await;
    tracing::info!("shutting down");
    serving.shutdown().await;
    Ok(())
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

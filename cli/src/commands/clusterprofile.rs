//! `ocm clusterprofile`: the consumer side of SIG-Multicluster's Cluster Inventory API on an
//! ocm-rs hub. `credentials` is the exec credential plugin a consumer (kubectl, Argo CD's
//! ClusterProfile integration, MultiKueue) configures for the access provider
//! `open-cluster-management`: it hands over the consumer's own hub credentials, with which the
//! cluster-proxy lets it through as far as `managedclusters/proxy` allows. `kubeconfig`
//! turns a ClusterProfile into a kubeconfig that runs that plugin, as a consumer library
//! would.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use kube::api::Api;
use ocm_api::multicluster::ACCESS_PROVIDER_NAME;
use ocm_api::multicluster::v1alpha1::ClusterProfile;
use ocm_cluster_proxy::credentials::{self, EXEC_INFO_ENV, ExecPlugin};

/// Where a pod finds its service account token (the hub identity of an in-cluster consumer).
const IN_CLUSTER_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// Flags of `ocm clusterprofile`.
#[derive(Debug, Args)]
pub struct ClusterProfileArgs {
    #[command(subcommand)]
    command: ClusterProfileCommand,
}

#[derive(Debug, Subcommand)]
enum ClusterProfileCommand {
    /// Exec credential plugin for the `open-cluster-management` access provider: prints an
    /// ExecCredential carrying your hub credentials (run by kubectl / client-go, not by hand).
    Credentials(CredentialsArgs),
    /// Print (or write) a kubeconfig reaching a ClusterProfile's cluster through its access
    /// provider, its user running `ocm clusterprofile credentials`.
    Kubeconfig(KubeconfigArgs),
}

/// Flags of `ocm clusterprofile credentials`.
#[derive(Debug, Args)]
pub struct CredentialsArgs {
    /// Kubeconfig whose current user is your hub identity (token or client certificate);
    /// without it, the pod's service account token. $KUBECONFIG is not read: it usually
    /// names the kubeconfig that runs this plugin.
    #[arg(long, env = "OCM_HUB_KUBECONFIG")]
    hub_kubeconfig: Option<PathBuf>,
}

/// Flags of `ocm clusterprofile kubeconfig`.
#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    /// Name of the ClusterProfile (the cluster's name).
    name: String,
    /// Namespace of the ClusterProfile (default: the kubeconfig context's, else `default`).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Access provider to use.
    #[arg(long, default_value = ACCESS_PROVIDER_NAME)]
    provider: String,
    /// Write the kubeconfig here (mode 0600) instead of printing it.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The hub kubeconfig the plugin passes on (default: the one this command uses).
    #[arg(long)]
    plugin_hub_kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Runs `ocm clusterprofile`.
pub async fn run(args: ClusterProfileArgs) -> anyhow::Result<()> {
    match args.command {
        ClusterProfileCommand::Credentials(args) => print_credentials(&args),
        ClusterProfileCommand::Kubeconfig(args) => kubeconfig(args).await,
    }
}

fn print_credentials(args: &CredentialsArgs) -> anyhow::Result<()> {
    let info = std::env::var(EXEC_INFO_ENV).ok();
    let api_version = credentials::requested_api_version(info.as_deref())?;
    let credentials = match &args.hub_kubeconfig {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let config = ocm_runtime::kubeconfig::parse(&text)
                .with_context(|| format!("in {}", path.display()))?;
            let base = path.parent().unwrap_or(Path::new("."));
            ocm_runtime::kubeconfig::current_credentials(&config, base)
                .with_context(|| format!("in {}", path.display()))?
        }
        None => {
            let token = std::fs::read_to_string(IN_CLUSTER_TOKEN).with_context(|| {
                format!(
                    "no --hub-kubeconfig (or $OCM_HUB_KUBECONFIG) and no service account \
                     token at {IN_CLUSTER_TOKEN}"
                )
            })?;
            ocm_runtime::kubeconfig::UserCredentials::Token(token.trim().to_owned())
        }
    };
    println!(
        "{}",
        credentials::exec_credential(api_version, &credentials)
    );
    Ok(())
}

async fn kubeconfig(args: KubeconfigArgs) -> anyhow::Result<()> {
    let hub = args.hub.connect().await?;
    let namespace = args
        .namespace
        .clone()
        .or_else(|| hub.context_namespace())
        .unwrap_or_else(|| "default".to_owned());
    let hub_file = match &args.plugin_hub_kubeconfig {
        Some(path) => path.clone(),
        None => hub.single_file()?.to_path_buf(),
    };
    let hub_file = std::path::absolute(&hub_file)
        .with_context(|| format!("resolving {}", hub_file.display()))?;
    let profile = Api::<ClusterProfile>::namespaced(hub.client.clone(), &namespace)
        .get(&args.name)
        .await
        .with_context(|| format!("reading cluster profile {namespace}/{}", args.name))?;
    let command = std::env::current_exe().context("locating the ocm executable")?;
    let plugin = ExecPlugin {
        command: command.display().to_string(),
        args: vec![
            "clusterprofile".to_owned(),
            "credentials".to_owned(),
            "--hub-kubeconfig".to_owned(),
            hub_file.display().to_string(),
        ],
    };
    let config = credentials::consumer_kubeconfig(&profile, &args.provider, &plugin)?;
    let text = serde_saphyr::to_string(&config).context("encoding the kubeconfig")?;
    match &args.output {
        Some(path) => ocm_apiserver::tls::write_file(path, &text, true)
            .with_context(|| format!("writing {}", path.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

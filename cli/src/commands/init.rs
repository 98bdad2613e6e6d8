//! `ocm init`: prepares the hub for joining clusters (bootstrap RBAC and a bootstrap token)
//! and prints the exact `ocm join` command.

use anyhow::Context;
use clap::Args;

/// Flags of `ocm init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    hub: super::HubAccess,
    /// Lifetime of the bootstrap token in seconds (0: never expires).
    #[arg(long, default_value_t = 24 * 3600)]
    token_ttl_seconds: u64,
    /// Print only the join command's token.
    #[arg(long)]
    token_only: bool,
}

/// Does what the printed `ocm join` will do first — learn the hub CA and present the token —
/// so that `ocm init` returns only once that works (a hub may take a moment to see a new token
/// or role; the wait is bounded).
async fn verify_join_works(server: &str, token: &str) -> anyhow::Result<()> {
    let ca = super::join::discover_ca(server, token)
        .await
        .context("the join command would not find the hub CA")?;
    let kubeconfig = super::join::bootstrap_kubeconfig(server, &ca, token);
    super::join::check_token(server, &kubeconfig, "ocm-init-check")
        .await
        .context("the join command's token does not work yet")
}

/// Creates the token and prints the join command.
pub async fn run(args: InitArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    let kubeconfig = ocm_runtime::kubeconfig::parse(
        &std::fs::read_to_string(args.hub.path()).unwrap_or_default(),
    )?;
    let hub = ocm_runtime::kubeconfig::current_server(&kubeconfig)?;
    let server = hub.server.clone();
    let ttl = (args.token_ttl_seconds > 0)
        .then(|| std::time::Duration::from_secs(args.token_ttl_seconds));
    if let Some(ca) = &hub.ca_pem
        && crate::embedded::ensure_cluster_info(&client, &server, ca).await?
        && !args.token_only
    {
        println!("published kube-public/cluster-info (hub URL and CA) for joining clusters");
    }
    let token = crate::bootstrap::init_hub(&client, ttl).await?;
    verify_join_works(&server, &token.to_string()).await?;
    if args.token_only {
        println!("{token}");
        return Ok(());
    }
    println!("The hub is ready for clusters to join. On each managed cluster run:");
    println!();
    println!(
        "    ocm join --hub-apiserver {server} --hub-token {token} --cluster-name <cluster-name>"
    );
    println!();
    println!("(add --simulated to try it with a simulated cluster, or --spoke-kubeconfig FILE)");
    Ok(())
}

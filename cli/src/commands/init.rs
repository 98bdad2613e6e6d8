//! `ocm init`: prepares the hub for joining clusters (bootstrap RBAC and a bootstrap token)
//! and prints the exact `ocm join` command.

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

/// Creates the token and prints the join command.
pub async fn run(args: InitArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    let kubeconfig = ocm_runtime::kubeconfig::parse(
        &std::fs::read_to_string(args.hub.path()).unwrap_or_default(),
    )?;
    let server = ocm_runtime::kubeconfig::current_server(&kubeconfig)?.server;
    let ttl = (args.token_ttl_seconds > 0)
        .then(|| std::time::Duration::from_secs(args.token_ttl_seconds));
    let token = crate::bootstrap::init_hub(&client, ttl).await?;
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

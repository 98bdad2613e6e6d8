//! `ocm init`: prepares the hub for joining clusters (bootstrap RBAC and a bootstrap token)
//! and prints the exact `ocm join` command. With `--operator`, first installs the hub the
//! way production does: the ClusterManager operator (from its own manifests) and a
//! ClusterManager, whose hub components then run as Deployments of the `ocm` image.

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
    /// Install the hub through the ClusterManager operator (on a real cluster, or one whose
    /// pods run: see the process kubelet in docs/install.md).
    #[arg(long)]
    operator: bool,
    /// The `ocm` image the operator and the hub components run (with --operator).
    #[arg(long, default_value_t = ocm_setup::operators::default_image(), requires = "operator")]
    image: String,
    /// With --operator: wait until every hub component runs.
    #[arg(long, requires = "operator")]
    wait: bool,
    /// Seconds to wait with --wait.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
}

/// Installs the ClusterManager operator and a ClusterManager `cluster-manager`; with `wait`,
/// returns once the ClusterManager reports its components applied and rolled out.
async fn install_with_operator(client: &kube::Client, args: &InitArgs) -> anyhow::Result<()> {
    ocm_setup::operators::install_hub(client, &args.image).await?;
    println!(
        "installed the cluster-manager operator ({}) and ClusterManager cluster-manager",
        args.image
    );
    if args.wait {
        ocm_setup::operators::wait_hub_ready(client, std::time::Duration::from_secs(args.timeout))
            .await?;
        println!("hub components running");
    }
    Ok(())
}

/// Does what the printed `ocm join` will do first — learn the hub CA and present the token —
/// so that `ocm init` returns only once that works (a hub may take a moment to see a new token
/// or role; the wait is bounded).
async fn verify_join_works(server: &str, token: &str) -> anyhow::Result<()> {
    let ca = ocm_setup::discovery::discover_ca(server, token)
        .await
        .context("the join command would not find the hub CA")?;
    let kubeconfig = ocm_hub::join::bootstrap_kubeconfig(server, &ca, token);
    ocm_setup::discovery::check_token(server, &kubeconfig, Some("ocm-init-check"))
        .await
        .context("the join command's token does not work yet")
}

/// Creates the token and prints the join command.
pub async fn run(args: InitArgs) -> anyhow::Result<()> {
    let connected = args.hub.connect().await?;
    let client = connected.client;
    let hub = ocm_runtime::kubeconfig::current_server(&connected.kubeconfig)?;
    let server = hub.server.clone();
    if args.operator {
        install_with_operator(&client, &args).await?;
    }
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
    if args.operator {
        println!(
            "    ocm join --hub-apiserver {server} --hub-token {token} --cluster-name <cluster-name> \\\n        --operator --image {} --spoke-kubeconfig <managed-cluster-kubeconfig>",
            args.image
        );
    } else {
        println!(
            "    ocm join --hub-apiserver {server} --hub-token {token} --cluster-name <cluster-name>"
        );
        println!();
        println!(
            "(add --simulated to try it with a simulated cluster, or --spoke-kubeconfig FILE)"
        );
    }
    Ok(())
}

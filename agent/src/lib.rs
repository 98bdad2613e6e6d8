//! The agents of a managed cluster as commands: `agent` (registration, with the work agent
//! beside it unless `--registration-only`; [`agents`]) and `work agent` (the work agent alone;
//! [`work`]), with the flag checks they share ([`flags`]). The `ocm` command serves them as
//! `ocm agent` and `ocm work agent`; the `ocm-agent` executable serves only them, so a managed
//! cluster runs a program that holds its agents and nothing of the hub or the API server.

pub mod agents;
pub mod flags;
pub mod work;

use std::path::Path;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// A client of the cluster `kubeconfig` names; without it, the in-cluster configuration (or
/// `$KUBECONFIG`).
pub async fn cluster_client(kubeconfig: Option<&Path>) -> anyhow::Result<kube::Client> {
    match kubeconfig {
        Some(path) => ocm_runtime::kubeconfig::client_from_file(path)
            .await
            .with_context(|| format!("loading {}", path.display())),
        None => kube::Client::try_default()
            .await
            .context("no --kubeconfig, and neither in-cluster configuration nor $KUBECONFIG"),
    }
}

/// The agents of an Open Cluster Management managed cluster.
#[derive(Debug, Parser)]
#[command(name = "ocm-agent", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the registration agent (and the work agent beside it) of an already bootstrapped
    /// managed cluster.
    Agent(agents::AgentArgs),
    /// The work agent alone (`ocm-agent work agent`).
    Work(work::WorkArgs),
}

/// Parses the command line, runs the agent until SIGINT/SIGTERM and reports an error on
/// stderr.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = ocm_runtime::telemetry::block_on("info", async move {
        match cli.command {
            Command::Agent(args) => agents::run(args).await,
            Command::Work(args) => work::run(args).await,
        }
    });
    match result.context("starting the async runtime").and_then(|r| r) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

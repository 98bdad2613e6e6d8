//! Flags and behaviour of each `ocm` subcommand.

pub mod accept;
pub mod addon;
pub mod addon_create;
pub mod apiserver;
pub mod clusterprofile;
pub mod crds;
pub mod create;
pub mod dashboard;
pub mod demo;
pub mod demo_operator;
pub mod demo_proxy;
pub mod demo_steps;
pub mod get;
pub mod get_output;
pub mod hub;
pub mod hub_access;
pub mod init;
pub mod join;
pub mod join_hubs;
pub mod join_plan;
pub mod operator;
pub mod placement;
pub mod proxy;
pub mod unjoin;
pub mod work;

// The agent commands live in `ocm-agent`, which the small `ocm-agent` executable serves too.
pub use ocm_agent::{agents as agent, flags as agent_flags, work as work_agent};

pub(crate) use hub_access::client_from;
pub use hub_access::{HubAccess, ocm_home};

use anyhow::Context;
use clap::{Parser, Subcommand};

/// Open Cluster Management in Rust.
#[derive(Debug, Parser)]
#[command(name = "ocm", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the CustomResourceDefinitions of the OCM APIs as multi-document YAML.
    Crds(crds::CrdsArgs),
    /// Run the embedded Kubernetes-compatible API server (TLS; writes DIR/admin.kubeconfig).
    Apiserver(apiserver::ApiserverArgs),
    /// Run a hub: the embedded API server (default) or an existing cluster, plus the hub
    /// controllers.
    Hub(hub::HubArgs),
    /// Prepare the hub for joining clusters and print the `ocm join` command.
    Init(init::InitArgs),
    /// Join a managed cluster to a hub: runs the registration agent.
    Join(join::JoinArgs),
    /// Run the registration agent of an already bootstrapped managed cluster.
    Agent(agent::AgentArgs),
    /// Accept clusters that asked to join: approve their CSRs and set hubAcceptsClient.
    Accept(accept::AcceptArgs),
    /// Enable or disable addons on clusters.
    Addon(addon::AddonArgs),
    /// Show hub objects.
    Get(get::GetArgs),
    /// Serve the fleet's live web page (clusters, join requests, placements, rollouts,
    /// addons) with your kubeconfig's rights; prints its URL.
    Dashboard(dashboard::DashboardArgs),
    /// Reach managed clusters' API servers through the cluster-proxy addon.
    Proxy(proxy::ProxyArgs),
    /// Reach clusters as a Cluster Inventory API consumer does: a ClusterProfile's kubeconfig
    /// and the exec credential plugin behind it.
    Clusterprofile(clusterprofile::ClusterProfileArgs),
    /// Create hub objects (ManifestWork).
    Create(create::CreateArgs),
    /// Explain a hub decision (why each cluster was or was not placed).
    Explain(placement::ExplainArgs),
    /// Run an operator that installs ocm-rs on a cluster (`ocm operator hub`).
    Operator(operator::OperatorArgs),
    /// The work agent alone (`ocm work agent`).
    Work(work_agent::WorkArgs),
    /// Remove the agent and its credentials from a managed cluster.
    Unjoin(unjoin::UnjoinArgs),
    /// A hub and simulated clusters in one process, joined step by step.
    Demo(demo::DemoArgs),
    /// Benchmarks that print figures (see docs/performance.md).
    Bench(ocm_bench::BenchArgs),
}

/// Parses the command line, runs the command and reports an error on stderr.
pub fn main() -> std::process::ExitCode {
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Crds(args) => crds::run(&args),
        Command::Apiserver(args) => apiserver::run(&args),
        Command::Hub(args) => block_on("info", hub::run(args)),
        Command::Init(args) => block_on(QUIET, init::run(args)),
        Command::Join(args) => block_on(QUIET, join::run(args)),
        Command::Agent(args) => block_on("info", agent::run(args)),
        Command::Accept(args) => block_on(QUIET, accept::run(args)),
        Command::Addon(args) => block_on(QUIET, addon::run(args)),
        Command::Get(args) => block_on(QUIET, get::run(args)),
        Command::Dashboard(args) => block_on(QUIET, dashboard::run(args)),
        Command::Proxy(args) => block_on(QUIET, proxy::run(args)),
        Command::Clusterprofile(args) => block_on(QUIET, clusterprofile::run(args)),
        Command::Create(args) => block_on(QUIET, create::run(args)),
        Command::Explain(args) => block_on(QUIET, placement::explain(args)),
        Command::Operator(args) => block_on("info", operator::run(args)),
        Command::Work(args) => block_on("info", work_agent::run(args)),
        Command::Unjoin(args) => block_on(QUIET, unjoin::run(args)),
        Command::Demo(args) => block_on(QUIET, demo::run(args)),
        Command::Bench(args) => block_on(QUIET, ocm_bench::run(args)),
    }
}

/// Log filter of interactive commands: they print progress themselves; transient errors
/// that the controllers retry (conflicts, a watch that starts before its RBAC exists) would
/// only be noise. `RUST_LOG` overrides it.
const QUIET: &str = "error";

fn block_on<F: std::future::Future<Output = anyhow::Result<()>>>(
    log_filter: &str,
    f: F,
) -> anyhow::Result<()> {
    ocm_runtime::telemetry::block_on(log_filter, f).context("starting the async runtime")?
}

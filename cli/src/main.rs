//! The `ocm` command: one binary to run and operate an Open Cluster Management hub, its
//! agents and the embedded API server. Thin: it parses flags and calls the library crates.

mod apiserver_cmd;
mod crds_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Open Cluster Management in Rust.
#[derive(Debug, Parser)]
#[command(name = "ocm", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the CustomResourceDefinitions of the OCM APIs as multi-document YAML.
    Crds(crds_cmd::CrdsArgs),
    /// Run the embedded Kubernetes-compatible API server (TLS; writes DIR/admin.kubeconfig).
    Apiserver(apiserver_cmd::ApiserverArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds(args) => crds_cmd::run(&args),
        Command::Apiserver(args) => apiserver_cmd::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

//! `ocm crds`: prints the CRDs to install on a hub, on a managed cluster, or both.

use std::io::Write;

use anyhow::Context;
use clap::Args;
use ocm_api::crds::{self, Target};

/// Which CRDs to print. With neither flag, both sets are printed (hub first).
#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Only the CRDs installed on the hub cluster.
    #[arg(long, conflicts_with = "klusterlet")]
    hub: bool,
    /// Only the CRDs installed on a managed cluster (by the Klusterlet).
    #[arg(long)]
    klusterlet: bool,
}

impl CrdsArgs {
    fn targets(&self) -> Vec<Target> {
        match (self.hub, self.klusterlet) {
            (true, _) => vec![Target::Hub],
            (_, true) => vec![Target::Klusterlet],
            _ => vec![Target::Hub, Target::Klusterlet],
        }
    }
}

/// Writes the selected CRDs to standard output.
pub fn run(args: &CrdsArgs) -> anyhow::Result<()> {
    let mut all = Vec::new();
    for target in args.targets() {
        all.extend(crds::for_target(target));
    }
    let yaml = crds::to_multi_yaml(&all).context("rendering CRDs")?;
    let mut out = std::io::stdout().lock();
    out.write_all(yaml.as_bytes())
        .context("writing to standard output")?;
    Ok(())
}

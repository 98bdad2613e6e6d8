//! What the agent commands (`ocm agent`, `ocm work agent`, `ocm join`, `ocm unjoin`) check
//! and parse alike: the cluster name, durations and the work agent's eviction flag.

use std::time::Duration;

use anyhow::bail;
use clap::Args;

/// The work agent's eviction grace, the same flag in `ocm agent`, `ocm join` and `ocm work
/// agent` (upstream's work agent flag).
#[derive(Clone, Debug, Args)]
pub struct EvictionArgs {
    /// How long the work agent keeps one of its AppliedManifestWorks that is no longer managed
    /// (of a hub the agent moved away from, or whose ManifestWork is gone from the hub) before
    /// deleting it and the objects only it applied (e.g. 60m; 876000h, 100 years, or more:
    /// never).
    #[arg(
        long = "appliedmanifestwork-eviction-grace-period",
        alias = "applied-manifest-work-eviction-grace-period",
        default_value = "60m",
        value_parser = parse_duration
    )]
    pub grace: Duration,
}

/// Checks a cluster name the way the hub will (it names a namespace).
pub fn check_cluster_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !ok {
        bail!(
            "invalid cluster name {name:?}: must be a DNS label (lowercase letters, digits and '-', \
             starting and ending with a letter or digit, at most 63 characters)"
        );
    }
    Ok(())
}

/// Parses a Go-style duration (`10s`, `1m30s`), not zero.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    ocm_work::hub::rollout::parse_go_duration(text)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text:?} is not a duration such as 10s or 1m"))
}

//! What the agent commands (`ocm agent`, `ocm work agent`, `ocm join`, `ocm unjoin`) check
//! and parse alike: the cluster name and durations.

use std::time::Duration;

use anyhow::bail;

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

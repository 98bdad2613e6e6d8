//! Addons: a cluster × addon matrix of health, with per-addon totals; paged by cluster like the
//! overview (`q` filters cluster names, `page` pages).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

use kube::ResourceExt;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;

use super::{Page, Section, cluster_filter, notices, pager};
use crate::cache::{Kind, Snapshot};
use crate::html::{Tone, badge, condition_status, esc, path_segment};
use crate::query::Query;

/// Kinds the page shows.
pub const KINDS: [Kind; 3] = [Kind::Addons, Kind::ClusterAddons, Kind::Clusters];

/// Clusters per page.
pub const PER_PAGE: usize = 100;

/// An addon's health on one cluster, in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AddonHealth {
    /// Available.
    Available,
    /// Degraded.
    Degraded,
    /// Available is False.
    Unavailable,
    /// Available is Unknown (its agent stopped reporting).
    Unknown,
    /// Being installed or upgraded.
    Progressing,
    /// Enabled, no status yet.
    Installing,
}

impl AddonHealth {
    /// The health of `addon`.
    pub fn of(addon: &ManagedClusterAddOn) -> AddonHealth {
        let conditions = addon
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        if condition_status(conditions, "Degraded") == "True" {
            return AddonHealth::Degraded;
        }
        match condition_status(conditions, "Available") {
            "True" => AddonHealth::Available,
            "False" => AddonHealth::Unavailable,
            "Unknown" => AddonHealth::Unknown,
            _ if condition_status(conditions, "Progressing") == "True" => AddonHealth::Progressing,
            _ => AddonHealth::Installing,
        }
    }

    /// Its word and badge tone.
    pub fn word(self) -> (&'static str, Tone) {
        match self {
            AddonHealth::Available => ("Available", Tone::Good),
            AddonHealth::Degraded => ("Degraded", Tone::Bad),
            AddonHealth::Unavailable => ("Unavailable", Tone::Bad),
            AddonHealth::Unknown => ("Unknown", Tone::Warn),
            AddonHealth::Progressing => ("Progressing", Tone::Warn),
            AddonHealth::Installing => ("Installing", Tone::Idle),
        }
    }
}

/// The matrix page.
pub fn render(snapshot: &Snapshot, query: &Query) -> Page {
    let mut body = notices(snapshot, &KINDS);
    let mut addons: BTreeSet<String> = snapshot.addons.iter().map(|a| a.name_any()).collect();
    let mut cells: HashMap<(String, String), AddonHealth> = HashMap::new();
    for addon in &snapshot.cluster_addons {
        let Some(cluster) = addon.namespace() else {
            continue;
        };
        addons.insert(addon.name_any());
        cells.insert((cluster, addon.name_any()), AddonHealth::of(addon));
    }
    let addons: Vec<String> = addons.into_iter().collect();
    if addons.is_empty() {
        body.push_str(
            "<p class=\"muted\">No addons. Enable one with <code>ocm addon enable</code>.</p>",
        );
        return Page::new("Addons", Section::Addons, &KINDS, body);
    }

    // Totals per addon, over every cluster.
    let mut totals: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for ((_, addon), health) in &cells {
        let entry = totals.entry(addon.as_str()).or_default();
        entry.1 += 1;
        if *health == AddonHealth::Available {
            entry.0 += 1;
        }
    }

    let filter = query.get("q").unwrap_or_default().to_lowercase();
    let mut clusters: Vec<String> = snapshot
        .clusters
        .iter()
        .map(|c| c.name_any())
        .chain(cells.keys().map(|(c, _)| c.clone()))
        .filter(|c| c.to_lowercase().contains(&filter))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let pages = clusters.len().div_ceil(PER_PAGE).max(1);
    let page = query.number("page", 1).clamp(1, pages);
    let total = clusters.len();
    clusters = clusters
        .into_iter()
        .skip((page - 1) * PER_PAGE)
        .take(PER_PAGE)
        .collect();

    body.push_str(&cluster_filter("addon-filter", &filter));
    body.push_str(
        "<div class=\"scroll\"><table id=\"addon-matrix\"><caption>Addon health by cluster</caption><thead><tr><th scope=\"col\">Cluster</th>",
    );
    for addon in &addons {
        let (available, enabled) = totals.get(addon.as_str()).copied().unwrap_or_default();
        let _ = write!(
            body,
            "<th scope=\"col\" id=\"addon-{0}\">{0}<br><span class=\"muted\">{available}/{enabled} available</span></th>",
            esc(addon)
        );
    }
    body.push_str("</tr></thead><tbody>");
    for cluster in &clusters {
        let _ = write!(
            body,
            "<tr><th scope=\"row\"><a href=\"/clusters/{}\">{}</a></th>",
            path_segment(cluster),
            esc(cluster)
        );
        for addon in &addons {
            match cells.get(&(cluster.clone(), addon.clone())) {
                Some(health) => {
                    let (word, tone) = health.word();
                    let _ = write!(body, "<td>{}</td>", badge(tone, word));
                }
                None => body.push_str("<td class=\"muted\">not enabled</td>"),
            }
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table></div>");
    body.push_str(&pager(query, page, pages, &format!("{total} clusters")));
    Page::new("Addons", Section::Addons, &KINDS, body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn addon(cluster: &str, name: &str, available: Option<&str>) -> Arc<ManagedClusterAddOn> {
        let conditions: Vec<serde_json::Value> = available
            .map(|s| {
                vec![
                    json!({"type": "Available", "status": s, "reason": "", "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}),
                ]
            })
            .unwrap_or_default();
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ManagedClusterAddOn",
                "metadata": {"name": name, "namespace": cluster},
                "spec": {}, "status": {"conditions": conditions}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn matrix_shows_health_in_words_and_totals() {
        let snapshot = Snapshot {
            clusters: ["c1", "c2"]
                .iter()
                .map(|n| Arc::new(crate::clusters::tests::cluster(n, true, "True", "8")))
                .collect(),
            cluster_addons: vec![
                addon("c1", "helloworld", Some("True")),
                addon("c2", "helloworld", Some("Unknown")),
                addon("c1", "proxy", None),
            ],
            ..Snapshot::default()
        };
        let page = render(&snapshot, &Query::default());
        assert!(page.body.contains("1/2 available"));
        assert!(page.body.contains(">Available</span>"));
        assert!(page.body.contains(">Unknown</span>"));
        assert!(page.body.contains(">Installing</span>"));
        assert!(page.body.contains("not enabled"));
        let empty = render(&Snapshot::default(), &Query::default());
        assert!(empty.body.contains("No addons."));
    }
}

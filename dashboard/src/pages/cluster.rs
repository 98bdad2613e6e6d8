//! One cluster: its state and facts, conditions and how they changed, its lease, its
//! ManifestWorks with each manifest's status and feedback, its addons and its join requests.

use std::fmt::Write;

use ocm_api::work::v1::{FieldValue, ManifestWork, ValueType};

use super::{Page, Section, notices};
use crate::cache::{Kind, Snapshot};
use crate::clusters::ClusterRow;
use crate::history::Transition;
use crate::html::{
    Tone, age_element, badge, condition_status, conditions_table, esc, is_bad_when_true,
    status_badge, table,
};

/// Kinds the cluster page shows.
pub const KINDS: [Kind; 5] = [
    Kind::Clusters,
    Kind::Works,
    Kind::ClusterAddons,
    Kind::Csrs,
    Kind::Leases,
];

/// The page of cluster `name`; `history` is its recorded condition changes, newest first.
pub fn render(snapshot: &Snapshot, name: &str, history: &[Transition]) -> Page {
    let Some(cluster) = snapshot
        .clusters
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(name))
    else {
        let mut page = super::not_found(&format!("Cluster {name}"));
        page.kinds = KINDS.to_vec();
        page.body = format!("{}{}", notices(snapshot, &KINDS), page.body);
        return page;
    };
    let now = snapshot.now;
    let row = ClusterRow::of(cluster);
    let status = cluster.status.as_ref();
    let mut body = notices(snapshot, &KINDS);

    // Facts.
    let lease = snapshot.leases.get(name);
    let renewed = lease
        .and_then(|l| l.spec.as_ref())
        .and_then(|s| s.renew_time.as_ref())
        .map(|t| t.0);
    let lease_seconds = cluster.spec.lease_duration_seconds.unwrap_or(60);
    let mut facts = vec![
        ("State", badge(row.state.tone(), row.state.name())),
        (
            "Accepted by the hub",
            if cluster.spec.hub_accepts_client {
                "yes".to_owned()
            } else {
                "no (<a href=\"/join-requests\">join requests</a>)".to_owned()
            },
        ),
        ("Kubernetes", esc(&row.version)),
        ("Cluster set", esc(&row.set)),
        (
            "Lease renewed",
            match renewed {
                Some(_) => format!("{} ago (every {lease_seconds}s)", age_element(now, renewed)),
                None => "never".to_owned(),
            },
        ),
        ("Created", format!("{} ago", age_element(now, row.created))),
        (
            "Taints",
            if row.taints.is_empty() {
                "none".to_owned()
            } else {
                row.taints
                    .iter()
                    .map(|t| format!("<code>{}</code>", esc(t)))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
        ),
    ];
    if let Some(labels) = &cluster.metadata.labels {
        facts.push((
            "Labels",
            labels
                .iter()
                .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
                .collect::<Vec<_>>()
                .join(" "),
        ));
    }
    body.push_str("<dl class=\"facts\">");
    for (term, value) in facts {
        let _ = write!(body, "<dt>{term}</dt><dd>{value}</dd>");
    }
    body.push_str("</dl>");

    // Resources and claims.
    if let Some(status) = status {
        let rows: Vec<Vec<String>> = status
            .capacity
            .iter()
            .map(|(resource, capacity)| {
                vec![
                    esc(resource),
                    esc(&capacity.0),
                    esc(&status
                        .allocatable
                        .get(resource)
                        .map(|q| q.0.clone())
                        .unwrap_or_default()),
                ]
            })
            .collect();
        body.push_str(&table(
            "Resources",
            &["Resource", "Capacity", "Allocatable"],
            &rows,
        ));
        if !status.cluster_claims.is_empty() {
            let rows: Vec<Vec<String>> = status
                .cluster_claims
                .iter()
                .map(|c| vec![esc(&c.name), esc(&c.value)])
                .collect();
            body.push_str(&table("Cluster claims", &["Claim", "Value"], &rows));
        }
    }

    // Conditions now and over time.
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    body.push_str(&conditions_table("Conditions", conditions, now));
    let rows: Vec<Vec<String>> = history
        .iter()
        .map(|t| {
            vec![
                match t.at {
                    Some(at) => format!("{} ago", age_element(now, Some(at))),
                    None => String::new(),
                },
                esc(&t.type_),
                status_badge(&t.status, is_bad_when_true(&t.type_)),
                esc(&t.reason),
                esc(&t.message),
            ]
        })
        .collect();
    body.push_str(&table(
        "Condition changes seen by this dashboard",
        &["When", "Type", "Status", "Reason", "Message"],
        &rows,
    ));

    // Works.
    let mut works: Vec<&ManifestWork> = snapshot
        .works
        .iter()
        .filter(|w| w.metadata.namespace.as_deref() == Some(name))
        .map(|w| &**w)
        .collect();
    works.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let _ = write!(
        body,
        "<section aria-labelledby=\"works\"><h2 id=\"works\">ManifestWorks ({})</h2>",
        works.len()
    );
    if works.is_empty() {
        body.push_str("<p class=\"muted\">None.</p>");
    }
    for work in works {
        body.push_str(&work_section(work, now));
    }
    body.push_str("</section>");

    // Addons.
    let rows: Vec<Vec<String>> = snapshot
        .cluster_addons
        .iter()
        .filter(|a| a.metadata.namespace.as_deref() == Some(name))
        .map(|a| {
            let conditions = a
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default();
            let available = crate::html::condition(conditions, "Available");
            vec![
                format!(
                    "<a href=\"/addons#addon-{0}\">{0}</a>",
                    esc(a.metadata.name.as_deref().unwrap_or_default())
                ),
                status_badge(condition_status(conditions, "Available"), false),
                status_badge(condition_status(conditions, "Degraded"), true),
                status_badge(condition_status(conditions, "Progressing"), false),
                esc(available.map(|c| c.message.as_str()).unwrap_or_default()),
            ]
        })
        .collect();
    body.push_str(&table(
        "Addons",
        &["Addon", "Available", "Degraded", "Progressing", "Message"],
        &rows,
    ));

    // Join requests.
    let rows: Vec<Vec<String>> = snapshot
        .csrs
        .iter()
        .filter(|c| {
            c.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(crate::cache::CLUSTER_NAME_LABEL))
                .is_some_and(|n| n == name)
        })
        .map(|csr| {
            vec![
                esc(csr.metadata.name.as_deref().unwrap_or_default()),
                esc(csr.spec.username.as_deref().unwrap_or_default()),
                badge_for_csr(csr),
                age_element(now, csr.metadata.creation_timestamp.as_ref().map(|t| t.0)),
            ]
        })
        .collect();
    body.push_str(&table(
        "Certificate signing requests",
        &["Name", "Requested by", "Decision", "Age"],
        &rows,
    ));

    Page::new(format!("Cluster {name}"), Section::Clusters, &KINDS, body)
}

/// A CSR's decision as a badge: Approved, Denied, Failed or Pending.
pub fn badge_for_csr(
    csr: &k8s_openapi::api::certificates::v1::CertificateSigningRequest,
) -> String {
    let conditions = csr
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (type_, tone) in [
        ("Denied", Tone::Bad),
        ("Failed", Tone::Bad),
        ("Approved", Tone::Good),
    ] {
        if conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == "True")
        {
            return badge(tone, type_);
        }
    }
    badge(Tone::Warn, "Pending")
}

/// One work: its conditions and a table of its manifests.
fn work_section(work: &ManifestWork, now: jiff::Timestamp) -> String {
    let name = work.metadata.name.as_deref().unwrap_or_default();
    let status = work.status.as_ref();
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    let summary: Vec<String> = ["Applied", "Available", "Progressing", "Degraded"]
        .iter()
        .filter(|t| crate::html::condition(conditions, t).is_some())
        .map(|t| {
            format!(
                "{t} {}",
                status_badge(condition_status(conditions, t), is_bad_when_true(t))
            )
        })
        .collect();
    let mut out = format!(
        "<details class=\"work\" open><summary><span class=\"work-name\">{}</span> {}</summary>",
        esc(name),
        summary.join(" ")
    );
    let rows: Vec<Vec<String>> = status
        .and_then(|s| s.resource_status.as_ref())
        .map(|r| r.manifests.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|m| {
            let meta = &m.resource_meta;
            let target = if meta.namespace.is_empty() {
                meta.name.clone()
            } else {
                format!("{}/{}", meta.namespace, meta.name)
            };
            vec![
                meta.ordinal.to_string(),
                esc(&meta.kind),
                esc(&target),
                status_badge(condition_status(&m.conditions, "Applied"), false),
                status_badge(condition_status(&m.conditions, "Available"), false),
                m.status_feedback
                    .as_ref()
                    .map(|f| {
                        f.values
                            .iter()
                            .map(|v| {
                                format!(
                                    "<code>{}={}</code>",
                                    esc(&v.name),
                                    esc(&feedback_value(&v.field_value))
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str(&table(
        &format!("Manifests of {name}"),
        &["#", "Kind", "Name", "Applied", "Available", "Feedback"],
        &rows,
    ));
    out.push_str(&conditions_table(
        &format!("Conditions of {name}"),
        conditions,
        now,
    ));
    out.push_str("</details>");
    out
}

/// A feedback value as text.
pub fn feedback_value(value: &FieldValue) -> String {
    match value.type_ {
        ValueType::Integer => value.integer.map(|i| i.to_string()).unwrap_or_default(),
        ValueType::String => value.string.clone().unwrap_or_default(),
        ValueType::Boolean => value.boolean.map(|b| b.to_string()).unwrap_or_default(),
        ValueType::JsonRaw => value.json_raw.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn shows_works_with_manifest_status_and_feedback() {
        let work: ManifestWork = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "web", "namespace": "c1"},
            "spec": {"workload": {"manifests": []}},
            "status": {"conditions": [
                {"type": "Applied", "status": "True", "reason": "r", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}],
              "resourceStatus": {"manifests": [{
                "resourceMeta": {"ordinal": 0, "group": "apps", "version": "v1",
                  "kind": "Deployment", "resource": "deployments", "name": "web",
                  "namespace": "default"},
                "statusFeedback": {"values": [{"name": "readyReplicas",
                  "fieldValue": {"type": "Integer", "integer": 2}}]},
                "conditions": [{"type": "Available", "status": "True", "reason": "r",
                  "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}}
        }))
        .unwrap();
        let snapshot = Snapshot {
            clusters: vec![Arc::new(crate::clusters::tests::cluster(
                "c1", true, "True", "8",
            ))],
            works: vec![Arc::new(work)],
            now: "2026-01-02T00:00:00Z".parse().unwrap(),
            ..Snapshot::default()
        };
        let page = render(&snapshot, "c1", &[]);
        assert_eq!(page.status, 200);
        assert!(page.body.contains("ManifestWorks (1)"));
        assert!(page.body.contains("<code>readyReplicas=2</code>"));
        assert!(page.body.contains("default/web"));
        assert!(page.body.contains("Lease renewed</dt><dd>never"));
        assert_eq!(render(&snapshot, "c2", &[]).status, 404);
    }
}

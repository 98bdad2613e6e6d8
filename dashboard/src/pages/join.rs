//! Join requests: clusters that asked to join and wait for the hub admin, with what asked,
//! for which identity, whether `ocm accept`'s checks pass, and Accept / Deny buttons when the
//! user's own rights allow them (the hub still decides when the button is pressed).

use std::collections::BTreeMap;
use std::fmt::Write;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use ocm_registration::accept::{csrs_to_approve, from_bootstrap_identity, is_pending};

use super::{Page, Section, notices};
use crate::cache::{CLUSTER_NAME_LABEL, Kind, Snapshot};
use crate::html::{Tone, age_element, badge, esc, path_segment, table};
use crate::query::Query;

/// Kinds the page shows.
pub const KINDS: [Kind; 2] = [Kind::Clusters, Kind::Csrs];

/// What the user may do here, as the hub answered SelfSubjectAccessReviews.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    /// May approve CSRs and accept clusters.
    pub accept: bool,
    /// May deny CSRs.
    pub deny: bool,
}

/// One cluster waiting.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinRequest {
    /// Cluster name.
    pub cluster: String,
    /// Its pending CSRs from bootstrap identities.
    pub csrs: Vec<CertificateSigningRequest>,
    /// Whether its ManagedCluster exists and is accepted already.
    pub accepted: bool,
    /// Whether its ManagedCluster exists.
    pub registered: bool,
    /// When it first asked.
    pub since: Option<jiff::Timestamp>,
}

/// Clusters that wait: not accepted, or with a pending CSR from a bootstrap identity.
pub fn join_requests(snapshot: &Snapshot) -> Vec<JoinRequest> {
    let mut requests: BTreeMap<String, JoinRequest> = BTreeMap::new();
    for cluster in &snapshot.clusters {
        let Some(name) = cluster.metadata.name.as_deref() else {
            continue;
        };
        if !cluster.spec.hub_accepts_client {
            entry(&mut requests, name).since =
                cluster.metadata.creation_timestamp.as_ref().map(|t| t.0);
        }
    }
    for csr in &snapshot.csrs {
        if !(is_pending(csr) && from_bootstrap_identity(csr)) {
            continue;
        }
        let Some(name) = csr
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CLUSTER_NAME_LABEL))
        else {
            continue;
        };
        let request = entry(&mut requests, name);
        let created = csr.metadata.creation_timestamp.as_ref().map(|t| t.0);
        request.since = match (request.since, created) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        request.csrs.push((**csr).clone());
    }
    for cluster in &snapshot.clusters {
        if let Some(request) = cluster
            .metadata
            .name
            .as_deref()
            .and_then(|n| requests.get_mut(n))
        {
            request.registered = true;
            request.accepted = cluster.spec.hub_accepts_client;
        }
    }
    requests.into_values().collect()
}

/// The request of cluster `name`, created empty if needed.
fn entry<'a>(requests: &'a mut BTreeMap<String, JoinRequest>, name: &str) -> &'a mut JoinRequest {
    requests
        .entry(name.to_owned())
        .or_insert_with(|| JoinRequest {
            cluster: name.to_owned(),
            csrs: Vec::new(),
            accepted: false,
            registered: false,
            since: None,
        })
}

/// The join requests page. `query` may carry the outcome of an action (`done`, `error`).
pub fn render(snapshot: &Snapshot, query: &Query, permissions: &Permissions, token: &str) -> Page {
    let mut body = notices(snapshot, &KINDS);
    if let Some(done) = query.get("done") {
        let _ = write!(
            body,
            "<p class=\"notice\" role=\"status\">{}</p>",
            esc(done)
        );
    }
    if let Some(error) = query.get("error") {
        let _ = write!(
            body,
            "<p class=\"notice error\" role=\"alert\" id=\"action-error\">{}</p>",
            esc(error)
        );
    }
    if !permissions.accept {
        body.push_str(
            "<p class=\"muted\" id=\"view-only\">Your credentials may not accept clusters \
             (approving certificate requests and setting <code>hubAcceptsClient</code> need \
             more than view rights), so no Accept button is shown.</p>",
        );
    }
    let requests = join_requests(snapshot);
    let rows: Vec<Vec<String>> = requests
        .iter()
        .map(|r| row(r, snapshot.now, permissions, token))
        .collect();
    body.push_str(&table(
        "Clusters waiting to join",
        &[
            "Cluster",
            "Requested by",
            "Identity",
            "Waiting",
            "Check",
            "Actions",
        ],
        &rows,
    ));
    Page::new("Join requests", Section::JoinRequests, &KINDS, body)
}

fn row(
    request: &JoinRequest,
    now: jiff::Timestamp,
    permissions: &Permissions,
    token: &str,
) -> Vec<String> {
    let name = esc(&request.cluster);
    let users: Vec<String> = request
        .csrs
        .iter()
        .filter_map(|c| c.spec.username.as_deref())
        .map(|u| format!("<code>{}</code>", esc(u)))
        .collect();
    let identities: Vec<String> = request
        .csrs
        .iter()
        .filter_map(|c| ocm_registration::hub::validate_agent_csr(c).ok())
        .map(|agent| format!("<code>{}</code>", esc(&agent.common_name)))
        .collect();
    let approvable = csrs_to_approve(&request.cluster, &request.csrs, false);
    let check = if request.csrs.is_empty() {
        if request.accepted {
            badge(Tone::Idle, "accepted")
        } else {
            badge(Tone::Idle, "waiting for a certificate request")
        }
    } else {
        match &approvable {
            Ok(_) => badge(Tone::Good, "ready to accept"),
            Err(err) => format!(
                "{} {}",
                badge(Tone::Bad, "check failed"),
                esc(&err.to_string())
            ),
        }
    };
    let path = path_segment(&request.cluster);
    let mut actions = String::new();
    if permissions.accept && approvable.is_ok() {
        actions.push_str(&action_form(&request.cluster, "accept", "primary", token));
    }
    if permissions.deny && !request.csrs.is_empty() {
        actions.push_str(&action_form(&request.cluster, "deny", "danger", token));
    }
    let cluster_cell = if request.registered {
        format!("<a href=\"/clusters/{path}\">{name}</a>")
    } else {
        name.clone()
    };
    vec![
        cluster_cell,
        users.join(" "),
        identities.join(" "),
        age_element(now, request.since),
        check,
        actions,
    ]
}

/// A form posting `action` (`accept`, `deny`) for `cluster`, with the page's token.
fn action_form(cluster: &str, action: &str, class: &str, token: &str) -> String {
    let label = if action == "accept" { "Accept" } else { "Deny" };
    format!(
        "<form method=\"post\" action=\"/join-requests/{path}/{action}\">\
<input type=\"hidden\" name=\"token\" value=\"{token}\">\
<button type=\"submit\" class=\"{class}\" data-{action}=\"{name}\">{label} {name}</button></form>",
        path = path_segment(cluster),
        token = esc(token),
        name = esc(cluster),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    fn snapshot() -> Snapshot {
        let pending = crate::clusters::tests::cluster("c3", false, "True", "8");
        let accepted = crate::clusters::tests::cluster("c1", true, "True", "8");
        Snapshot {
            clusters: vec![Arc::new(pending), Arc::new(accepted)],
            now: "2026-01-02T00:00:00Z".parse().unwrap(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn unaccepted_clusters_wait_and_buttons_follow_permissions() {
        let s = snapshot();
        let requests = join_requests(&s);
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].cluster, "c3");
        assert!(requests[0].registered);
        // no CSR yet: nothing to accept, whoever looks
        let all = Permissions {
            accept: true,
            deny: true,
        };
        let page = render(&s, &Query::default(), &all, "t");
        assert!(page.body.contains("waiting for a certificate request"));
        assert!(!page.body.contains("data-accept"));
        assert!(!page.body.contains("id=\"view-only\""));

        let viewer = render(&s, &Query::default(), &Permissions::default(), "t");
        assert!(viewer.body.contains("id=\"view-only\""));
    }

    #[test]
    fn action_outcomes_are_shown_escaped() {
        let page = render(
            &snapshot(),
            &Query::parse("error=forbidden+%3Cb%3E"),
            &Permissions::default(),
            "t",
        );
        assert!(
            page.body
                .contains("role=\"alert\" id=\"action-error\">forbidden &lt;b&gt;")
        );
    }
}

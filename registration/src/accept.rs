//! The hub admin's half of the double opt-in, shared by `ocm accept` and `ocm dashboard`.
//! Accepting a cluster approves its pending bootstrap CSRs (after checking who asked and which
//! subject they asked for) and sets `spec.hubAcceptsClient: true` on its ManagedCluster;
//! denying it denies those CSRs (as `kubectl certificate deny` would) and leaves the
//! ManagedCluster unaccepted.

use std::collections::BTreeSet;

use base64::Engine;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use kube::api::{Api, ListParams, Patch, PatchParams};
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::json;

/// Label on CSRs and hub objects naming their cluster.
pub const CLUSTER_NAME_LABEL: &str = "open-cluster-management.io/cluster-name";

/// User name prefixes of identities that may ask to join (bootstrap tokens, upstream's
/// bootstrap service accounts).
const BOOTSTRAP_USER_PREFIXES: [&str; 3] = [
    "system:bootstrap:",
    "system:serviceaccount:open-cluster-management:agent-registration-bootstrap",
    "system:serviceaccount:open-cluster-management-hub:grpc-server-sa",
];

/// Groups of identities that may ask to join.
const BOOTSTRAP_GROUPS: [&str; 3] = [
    "system:bootstrappers:managedcluster",
    "system:serviceaccounts:open-cluster-management",
    "system:serviceaccounts:open-cluster-management-hub",
];

/// Why a cluster could not be accepted (or denied).
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// No pending CSR from a bootstrap identity names the cluster.
    #[error("cluster {0:?} has no pending certificate request from a bootstrap identity")]
    NoPendingCsr(String),
    /// Pending CSRs ask for more than one identity: someone else may be posing as the cluster.
    #[error(
        "cluster {cluster:?} has pending requests for {count} different identities ({names}); \
         check them with `kubectl get csr -l {CLUSTER_NAME_LABEL}={cluster}` and approve by hand, \
         or pass --skip-approve-check"
    )]
    AmbiguousRequesters {
        /// The cluster.
        cluster: String,
        /// How many distinct common names.
        count: usize,
        /// Those names.
        names: String,
    },
    /// No ManagedCluster of that name exists.
    #[error("cluster {0:?} has not asked to join this hub")]
    NotFound(String),
    /// The hub refused or failed a request (the source says how).
    #[error("{what}")]
    Api {
        /// What was being done.
        what: String,
        /// The hub's answer.
        #[source]
        source: kube::Error,
    },
    /// The watch on the hub ended.
    #[error("lost the watch on the hub")]
    WatchEnded,
}

impl AcceptError {
    /// Whether the hub answered 403 Forbidden.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, AcceptError::Api { source: kube::Error::Api(status), .. } if status.code == 403)
    }
}

/// Wraps a kube error with what was being done.
fn api(what: impl Into<String>) -> impl FnOnce(kube::Error) -> AcceptError {
    let what = what.into();
    move |source| AcceptError::Api { what, source }
}

/// Whether a CSR has neither an Approved nor a Denied condition.
pub fn is_pending(csr: &CertificateSigningRequest) -> bool {
    !csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Approved" || c.type_ == "Denied")
        })
}

/// Whether the CSR was made by a bootstrap identity.
pub fn from_bootstrap_identity(csr: &CertificateSigningRequest) -> bool {
    let user = csr.spec.username.as_deref().unwrap_or_default();
    let groups = csr.spec.groups.clone().unwrap_or_default();
    BOOTSTRAP_USER_PREFIXES.iter().any(|p| user.starts_with(p))
        || groups
            .iter()
            .any(|g| BOOTSTRAP_GROUPS.contains(&g.as_str()))
}

/// The pending CSRs of `cluster` that `ocm accept` approves: requests from a bootstrap identity
/// (with `skip_approve_check`, from anyone — say a hub admin's kubeconfig used to bootstrap, as
/// clusteradm's `--skip-approve-check` allows) whose subject names an agent of `cluster`.
pub fn csrs_to_approve(
    cluster: &str,
    csrs: &[CertificateSigningRequest],
    skip_approve_check: bool,
) -> Result<Vec<String>, AcceptError> {
    // The same subject check the hub applies to renewals: label, signer, organizations,
    // common name and usages must all name an agent of `cluster`.
    let candidates: Vec<(&CertificateSigningRequest, String)> = csrs
        .iter()
        .filter(|csr| is_pending(csr) && (skip_approve_check || from_bootstrap_identity(csr)))
        .filter_map(|csr| {
            let agent = crate::hub::validate_agent_csr(csr).ok()?;
            (agent.cluster == cluster).then_some((csr, agent.common_name))
        })
        .collect();
    if candidates.is_empty() {
        return Err(AcceptError::NoPendingCsr(cluster.to_owned()));
    }
    let names: BTreeSet<&str> = candidates.iter().map(|(_, cn)| cn.as_str()).collect();
    if names.len() > 1 && !skip_approve_check {
        return Err(AcceptError::AmbiguousRequesters {
            cluster: cluster.to_owned(),
            count: names.len(),
            names: names.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    Ok(candidates
        .into_iter()
        .filter_map(|(csr, _)| csr.metadata.name.clone())
        .collect())
}

/// What accepting one cluster did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Accepted {
    /// CSRs approved.
    pub approved_csrs: Vec<String>,
    /// Whether `hubAcceptsClient` was changed (false: it was already true).
    pub accepted_now: bool,
}

/// Approves `cluster`'s pending bootstrap CSRs and sets `hubAcceptsClient`. A cluster already
/// accepted with no pending CSR is fine (nothing to do).
pub async fn accept_cluster(
    client: &kube::Client,
    cluster: &str,
    skip_approve_check: bool,
) -> Result<Accepted, AcceptError> {
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let managed = clusters
        .get_opt(cluster)
        .await
        .map_err(api(format!("reading ManagedCluster {cluster}")))?
        .ok_or_else(|| AcceptError::NotFound(cluster.to_owned()))?;
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let list = cluster_csrs(&csrs, cluster).await?;
    let already = managed.spec.hub_accepts_client;
    let to_approve = match csrs_to_approve(cluster, &list, skip_approve_check) {
        Ok(names) => names,
        Err(AcceptError::NoPendingCsr(_)) if already => Vec::new(),
        Err(err) => return Err(err),
    };
    for name in &to_approve {
        decide(&csrs, name, Decision::Approve).await?;
    }
    if !already {
        clusters
            .patch(
                cluster,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"hubAcceptsClient": true}})),
            )
            .await
            .map_err(api(format!("setting hubAcceptsClient on {cluster}")))?;
    }
    Ok(Accepted {
        approved_csrs: to_approve,
        accepted_now: !already,
    })
}

/// Every CSR labelled with `cluster`'s name.
async fn cluster_csrs(
    csrs: &Api<CertificateSigningRequest>,
    cluster: &str,
) -> Result<Vec<CertificateSigningRequest>, AcceptError> {
    Ok(csrs
        .list(&ListParams::default().labels(&format!("{CLUSTER_NAME_LABEL}={cluster}")))
        .await
        .map_err(api("listing certificate signing requests"))?
        .items)
}

/// What to write on a CSR's approval subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Approve,
    Deny,
}

async fn decide(
    csrs: &Api<CertificateSigningRequest>,
    name: &str,
    decision: Decision,
) -> Result<(), AcceptError> {
    let mut csr = csrs
        .get(name)
        .await
        .map_err(api(format!("reading CSR {name}")))?;
    let status = csr.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now());
    let (type_, reason, message, verb) = match decision {
        Decision::Approve => (
            "Approved",
            "ocm Approve",
            "This CSR was approved by ocm accept",
            "approving",
        ),
        Decision::Deny => (
            "Denied",
            "ocm Deny",
            "This CSR was denied by the hub admin",
            "denying",
        ),
    };
    conditions.push(CertificateSigningRequestCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    });
    csrs.replace_subresource("approval", name, &Default::default(), &csr)
        .await
        .map_err(api(format!("{verb} CSR {name}")))?;
    Ok(())
}

/// The pending CSRs of `cluster` that a hub admin's "deny" refuses: every pending request from
/// a bootstrap identity labelled with the cluster, whatever subject it asks for (a request
/// that fails the subject check is exactly what one wants to refuse).
pub fn csrs_to_deny(cluster: &str, csrs: &[CertificateSigningRequest]) -> Vec<String> {
    csrs.iter()
        .filter(|csr| is_pending(csr) && from_bootstrap_identity(csr))
        .filter(|csr| {
            csr.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CLUSTER_NAME_LABEL))
                .is_some_and(|name| name == cluster)
        })
        .filter_map(|csr| csr.metadata.name.clone())
        .collect()
}

/// Denies `cluster`'s pending bootstrap CSRs; returns their names. The ManagedCluster is left
/// as it is (not accepted); its agent keeps asking and a later request can still be accepted.
pub async fn deny_cluster(
    client: &kube::Client,
    cluster: &str,
) -> Result<Vec<String>, AcceptError> {
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let list = cluster_csrs(&csrs, cluster).await?;
    let to_deny = csrs_to_deny(cluster, &list);
    if to_deny.is_empty() {
        return Err(AcceptError::NoPendingCsr(cluster.to_owned()));
    }
    for name in &to_deny {
        decide(&csrs, name, Decision::Deny).await?;
    }
    Ok(to_deny)
}

/// Tries to accept `cluster` each time it or its CSRs change, until it succeeds.
pub async fn accept_when_asked(
    client: &kube::Client,
    cluster: &str,
    skip_approve_check: bool,
) -> Result<Accepted, AcceptError> {
    use futures::StreamExt;
    use kube::runtime::watcher;
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let label = format!("{CLUSTER_NAME_LABEL}={cluster}");
    let mut events = futures::stream::select(
        watcher(
            clusters,
            watcher::Config::default().fields(&format!("metadata.name={cluster}")),
        )
        .map(|_| ()),
        watcher(csrs, watcher::Config::default().labels(&label)).map(|_| ()),
    )
    .boxed();
    loop {
        match accept_cluster(client, cluster, skip_approve_check).await {
            // Accepted already (a hub that accepts clusters by itself) with no CSR yet: the
            // agent's CSR is still to come and to approve.
            Ok(accepted)
                if accepted.approved_csrs.is_empty()
                    && !accepted.accepted_now
                    && !has_credentials(client, cluster).await? =>
            {
                tracing::debug!(cluster, "accepted, waiting for the agent's CSR");
            }
            Ok(accepted) => return Ok(accepted),
            Err(err) => tracing::debug!(%err, cluster, "not acceptable yet"),
        }
        if events.next().await.is_none() {
            return Err(AcceptError::WatchEnded);
        }
    }
}

/// Whether `cluster`'s agent holds (or is being given) hub credentials: the cluster has joined,
/// or one of its CSRs is approved.
async fn has_credentials(client: &kube::Client, cluster: &str) -> Result<bool, AcceptError> {
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let joined = clusters
        .get_opt(cluster)
        .await
        .map_err(api(format!("reading ManagedCluster {cluster}")))?
        .is_some_and(|c| {
            c.status.is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == ocm_api::cluster::names::conditions::JOINED && c.status == "True"
                })
            })
        });
    if joined {
        return Ok(true);
    }
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let list = cluster_csrs(&csrs, cluster).await?;
    Ok(list.iter().any(|csr| {
        csr.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Approved" && c.status == "True")
            })
    }))
}

/// Base64 of a PEM CSR, for tests and tools.
pub fn encode_request(pem: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(pem)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::ByteString;

    fn csr(
        name: &str,
        label: &str,
        user: &str,
        cn: &str,
        orgs: &[&str],
    ) -> CertificateSigningRequest {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        // rcgen keeps one value per attribute type: add further organizations under the
        // same OID spelled as a custom type.
        for (i, o) in orgs.iter().enumerate() {
            let kind = if i == 0 {
                rcgen::DnType::OrganizationName
            } else {
                rcgen::DnType::CustomDnType(vec![2, 5, 4, 10])
            };
            params.distinguished_name.push(kind, *o);
        }
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {CLUSTER_NAME_LABEL: label}},
            "spec": {
                "request": ByteString(pem.into_bytes()),
                "signerName": "kubernetes.io/kube-apiserver-client",
                "username": user,
                "groups": ["system:bootstrappers", "system:bootstrappers:managedcluster"],
                "usages": ["client auth"],
            }
        }))
        .unwrap()
    }

    const O1: &str = "system:open-cluster-management:c1";
    const OALL: &str = "system:open-cluster-management:managed-clusters";

    #[test]
    fn the_clusters_own_bootstrap_request_is_approved() {
        let list = vec![csr(
            "c1-abc",
            "c1",
            "system:bootstrap:abcdef",
            "system:open-cluster-management:c1:agent1",
            &[O1, OALL],
        )];
        assert_eq!(csrs_to_approve("c1", &list, false).unwrap(), ["c1-abc"]);
    }

    #[test]
    fn requests_for_another_cluster_or_odd_subjects_are_not_approved() {
        let cases = [
            // label says c1, subject says c2
            csr(
                "a",
                "c1",
                "system:bootstrap:x",
                "system:open-cluster-management:c2:a",
                &["system:open-cluster-management:c2", OALL],
            ),
            // prefix-matched organization
            csr(
                "b",
                "c1",
                "system:bootstrap:x",
                "system:open-cluster-management:c1:a",
                &["system:open-cluster-management:c1x", OALL],
            ),
            // agent name missing
            csr(
                "c",
                "c1",
                "system:bootstrap:x",
                "system:open-cluster-management:c1:",
                &[O1, OALL],
            ),
            // an extra organization beside the cluster's group
            csr(
                "e",
                "c1",
                "system:bootstrap:x",
                "system:open-cluster-management:c1:a",
                &[O1, "system:masters"],
            ),
            // not from a bootstrap identity
            {
                let mut c = csr(
                    "d",
                    "c1",
                    "alice",
                    "system:open-cluster-management:c1:a",
                    &[O1, OALL],
                );
                c.spec.groups = Some(vec!["system:authenticated".into()]);
                c
            },
        ];
        for case in cases {
            let name = case.metadata.name.clone().unwrap();
            assert!(
                matches!(
                    csrs_to_approve("c1", &[case], false),
                    Err(AcceptError::NoPendingCsr(c)) if c == "c1"
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn skip_approve_check_takes_a_request_from_any_identity_with_a_valid_subject() {
        let mut admin = csr(
            "admin",
            "c1",
            "kubernetes-admin",
            "system:open-cluster-management:c1:a",
            &[O1, OALL],
        );
        admin.spec.groups = Some(vec!["system:masters".into(), "system:authenticated".into()]);
        assert!(matches!(
            csrs_to_approve("c1", std::slice::from_ref(&admin), false),
            Err(AcceptError::NoPendingCsr(_))
        ));
        assert_eq!(
            csrs_to_approve("c1", std::slice::from_ref(&admin), true).unwrap(),
            ["admin"]
        );
        // The subject check stays: a request for another cluster's agent is never approved.
        let other = csr(
            "other",
            "c1",
            "kubernetes-admin",
            "system:open-cluster-management:c2:a",
            &["system:open-cluster-management:c2", OALL],
        );
        assert!(csrs_to_approve("c1", &[other], true).is_err());
    }

    #[test]
    fn two_identities_asking_for_one_cluster_stop_the_approval() {
        let list = vec![
            csr(
                "a",
                "c1",
                "system:bootstrap:x",
                "system:open-cluster-management:c1:agent1",
                &[O1, OALL],
            ),
            csr(
                "b",
                "c1",
                "system:bootstrap:y",
                "system:open-cluster-management:c1:agent2",
                &[O1, OALL],
            ),
        ];
        assert!(matches!(
            csrs_to_approve("c1", &list, false),
            Err(AcceptError::AmbiguousRequesters { count: 2, .. })
        ));
        assert_eq!(csrs_to_approve("c1", &list, true).unwrap().len(), 2);
    }

    #[test]
    fn deny_refuses_every_pending_bootstrap_request_of_the_cluster_only() {
        let mut decided = csr(
            "done",
            "c1",
            "system:bootstrap:x",
            "system:open-cluster-management:c1:a",
            &[O1, OALL],
        );
        decided.status = Some(
            serde_json::from_value(json!({"conditions": [
            {"type": "Approved", "status": "True"}]}))
            .unwrap(),
        );
        let list = vec![
            csr(
                "mine",
                "c1",
                "system:bootstrap:x",
                "system:open-cluster-management:c1:a",
                &[O1, OALL],
            ),
            // an odd subject is still refused
            csr(
                "odd",
                "c1",
                "system:bootstrap:y",
                "system:open-cluster-management:c2:a",
                &["system:masters"],
            ),
            csr(
                "other",
                "c2",
                "system:bootstrap:x",
                "system:open-cluster-management:c2:a",
                &["system:open-cluster-management:c2", OALL],
            ),
            decided,
        ];
        assert_eq!(csrs_to_deny("c1", &list), ["mine", "odd"]);
    }
}

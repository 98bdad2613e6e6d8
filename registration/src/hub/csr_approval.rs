//! Hub approval of managed cluster CSRs.
//!
//! A CSR for the `kubernetes.io/kube-apiserver-client` signer, labelled
//! `open-cluster-management.io/cluster-name=<c>`, whose request is a well-formed agent
//! certificate request for cluster `<c>` (see [`validate`]) is approved:
//! - as a **renewal** when `spec.username` equals the request's common name (the agent asked
//!   with its current hub certificate) and a SubjectAccessReview for that user allows `renew`
//!   on `register.open-cluster-management.io` `managedclusters/clientcertificates` — which the
//!   per-cluster ClusterRole grants only while the cluster is accepted;
//! - as an **auto-approved bootstrap** when `spec.username` is one of
//!   [`HubOptions::auto_approved_users`].
//!
//! Nothing else is ever approved; rejected CSRs are left pending for the hub admin.
//! Approval goes through the `approval` subresource with condition `Approved`, reason
//! `AutoApprovedByHubCSRApprovingController`.
//!
//! [`HubOptions::auto_approved_users`]: super::HubOptions::auto_approved_users

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use ocm_api::addon::names::KUBE_APISERVER_CLIENT_SIGNER;
use ocm_api::cluster::names::REGISTER_GROUP;
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use tracing::{debug, info};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

use super::HubContext;
use super::acceptance::{Error, resync_ticks, retry_delay};
use super::rbac::{MANAGED_CLUSTERS_GROUP, SUBJECT_PREFIX};

const CONTROLLER: &str = "csr-approval";

/// Reason of the approval condition.
pub(crate) const APPROVED_REASON: &str = "AutoApprovedByHubCSRApprovingController";

const APPROVED_MESSAGE: &str =
    "Auto approving Managed cluster agent certificate after SubjectAccessReview.";

/// Key usages an agent client certificate may ask for.
const ALLOWED_USAGES: [&str; 3] = ["digital signature", "key encipherment", "client auth"];

// --- pure policy -----------------------------------------------------------------------------

/// Why a CSR is not a managed cluster agent CSR.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// No `open-cluster-management.io/cluster-name` label.
    #[error("no cluster-name label")]
    NoClusterLabel,
    /// Another signer than `kubernetes.io/kube-apiserver-client`.
    #[error("signer {0:?} is not kubernetes.io/kube-apiserver-client")]
    WrongSigner(String),
    /// The request is not a PEM `CERTIFICATE REQUEST` that parses.
    #[error("request is not a PEM certificate request: {0}")]
    BadRequest(String),
    /// Organizations are not exactly `system:open-cluster-management:<cluster>` (besides the
    /// optional common managed-clusters group).
    #[error("organizations {0:?} are not exactly the cluster's group")]
    BadOrganization(Vec<String>),
    /// Common name is not `system:open-cluster-management:<cluster>:<agent>` for the
    /// labelled cluster.
    #[error("common name {0:?} does not name an agent of the labelled cluster")]
    BadCommonName(String),
    /// Usages beyond digital signature, key encipherment and client auth.
    #[error("usages {0:?} exceed those of an agent client certificate")]
    BadUsages(Vec<String>),
}

/// A CSR that passed [`validate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCsr {
    /// The cluster named by the label, organization and common name.
    pub cluster: String,
    /// The agent name from the common name.
    pub agent: String,
    /// The request's common name: `system:open-cluster-management:<cluster>:<agent>`.
    pub common_name: String,
}

/// How the controller treats a CSR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not an agent CSR, or decided already: left alone.
    Ignore,
    /// A renewal: approve if the SubjectAccessReview allows it.
    Renewal(AgentCsr),
    /// A bootstrap CSR by an auto-approved user: approve.
    AutoApprove(AgentCsr),
    /// An agent CSR nobody may approve automatically: left to the admin.
    Pending,
}

/// Checks that `csr` is an agent client certificate request for the cluster named by its
/// label: signer `kubernetes.io/kube-apiserver-client`; a PEM `CERTIFICATE REQUEST`; the
/// organizations, ignoring `system:open-cluster-management:managed-clusters`, are exactly
/// `system:open-cluster-management:<cluster>`; the common name is exactly
/// `system:open-cluster-management:<cluster>:<agent>`; usages within digital signature, key
/// encipherment and client auth.
pub fn validate(csr: &CertificateSigningRequest) -> Result<AgentCsr, Rejection> {
    let cluster = csr
        .labels()
        .get(CLUSTER_NAME)
        .filter(|c| !c.is_empty())
        .ok_or(Rejection::NoClusterLabel)?
        .clone();
    if csr.spec.signer_name != KUBE_APISERVER_CLIENT_SIGNER {
        return Err(Rejection::WrongSigner(csr.spec.signer_name.clone()));
    }
    let (orgs, cns) = subject(&csr.spec.request.0)?;

    let mut orgs: BTreeSet<String> = orgs.into_iter().collect();
    orgs.remove(MANAGED_CLUSTERS_GROUP);
    let expected_org = format!("{SUBJECT_PREFIX}{cluster}");
    if orgs.len() != 1 || !orgs.contains(&expected_org) {
        return Err(Rejection::BadOrganization(orgs.into_iter().collect()));
    }

    let [common_name] =
        <[String; 1]>::try_from(cns).map_err(|cns| Rejection::BadCommonName(cns.join(",")))?;
    let bad_cn = || Rejection::BadCommonName(common_name.clone());
    let rest = common_name
        .strip_prefix(SUBJECT_PREFIX)
        .ok_or_else(bad_cn)?;
    let parts: Vec<&str> = rest.split(':').collect();
    let [cn_cluster, agent] = parts.as_slice() else {
        return Err(bad_cn());
    };
    if cn_cluster.is_empty() || agent.is_empty() || *cn_cluster != cluster {
        return Err(bad_cn());
    }

    let usages = csr.spec.usages.clone().unwrap_or_default();
    if usages.iter().any(|u| !ALLOWED_USAGES.contains(&u.as_str())) {
        return Err(Rejection::BadUsages(usages));
    }
    Ok(AgentCsr {
        cluster,
        agent: (*agent).to_owned(),
        common_name: common_name.clone(),
    })
}

/// Organizations and common names of a PEM certificate request.
fn subject(pem_bytes: &[u8]) -> Result<(Vec<String>, Vec<String>), Rejection> {
    let bad = |m: String| Rejection::BadRequest(m);
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_bytes).map_err(|e| bad(e.to_string()))?;
    if pem.label != "CERTIFICATE REQUEST" {
        return Err(bad(format!("PEM block is {:?}", pem.label)));
    }
    let (_, req) =
        X509CertificationRequest::from_der(&pem.contents).map_err(|e| bad(e.to_string()))?;
    let subject = &req.certification_request_info.subject;
    let strings = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue>| {
        it.map(|a| a.as_str().map(str::to_owned))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))
    };
    let orgs = strings(&mut subject.iter_organization())?;
    let cns = strings(&mut subject.iter_common_name())?;
    Ok((orgs, cns))
}

/// Whether `csr` was approved, denied or failed already.
pub(crate) fn is_decided(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| matches!(c.type_.as_str(), "Approved" | "Denied" | "Failed"))
        })
}

/// What to do with `csr` given the auto-approved users.
pub(crate) fn verdict(csr: &CertificateSigningRequest, auto_approved_users: &[String]) -> Verdict {
    if is_decided(csr) {
        return Verdict::Ignore;
    }
    let agent = match validate(csr) {
        Ok(a) => a,
        Err(_) => return Verdict::Ignore,
    };
    let username = csr.spec.username.as_deref().unwrap_or_default();
    if username == agent.common_name {
        Verdict::Renewal(agent)
    } else if auto_approved_users.iter().any(|u| u == username) {
        Verdict::AutoApprove(agent)
    } else {
        Verdict::Pending
    }
}

/// The SubjectAccessReview asking whether the CSR's requester may renew its cluster's client
/// certificate.
pub(crate) fn renewal_review(csr: &CertificateSigningRequest) -> SubjectAccessReview {
    SubjectAccessReview {
        metadata: Default::default(),
        spec: SubjectAccessReviewSpec {
            user: csr.spec.username.clone(),
            uid: csr.spec.uid.clone(),
            groups: csr.spec.groups.clone(),
            extra: csr.spec.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some(REGISTER_GROUP.to_owned()),
                resource: Some("managedclusters".to_owned()),
                subresource: Some("clientcertificates".to_owned()),
                verb: Some("renew".to_owned()),
                ..ResourceAttributes::default()
            }),
            non_resource_attributes: None,
        },
        status: None,
    }
}

/// `csr` with the approval condition appended.
pub(crate) fn approved(csr: &CertificateSigningRequest) -> CertificateSigningRequest {
    let mut csr = csr.clone();
    let status = csr.status.get_or_insert_with(Default::default);
    let now = Time(jiff::Timestamp::now());
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(CertificateSigningRequestCondition {
            type_: "Approved".to_owned(),
            status: "True".to_owned(),
            reason: Some(APPROVED_REASON.to_owned()),
            message: Some(APPROVED_MESSAGE.to_owned()),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(now),
        });
    csr
}

// --- reconcile -------------------------------------------------------------------------------

async fn approve(
    api: &Api<CertificateSigningRequest>,
    csr: &CertificateSigningRequest,
) -> Result<(), Error> {
    api.replace_subresource(
        "approval",
        &csr.name_any(),
        &PostParams::default(),
        &approved(csr),
    )
    .await
    .map(|_| ())
    .map_err(|e| Error::kube(format!("approve csr {}", csr.name_any()), e))
}

async fn reconcile(
    csr: Arc<CertificateSigningRequest>,
    ctx: Arc<HubContext>,
) -> Result<Action, Error> {
    if csr.spec.signer_name != KUBE_APISERVER_CLIENT_SIGNER {
        return Ok(Action::await_change());
    }
    ctx.metrics.reconciled(CONTROLLER);
    let api: Api<CertificateSigningRequest> = Api::all(ctx.client.clone());
    match verdict(&csr, &ctx.options.auto_approved_users) {
        Verdict::Ignore | Verdict::Pending => {}
        Verdict::Renewal(agent) => {
            let reviews: Api<SubjectAccessReview> = Api::all(ctx.client.clone());
            let review = reviews
                .create(&PostParams::default(), &renewal_review(&csr))
                .await
                .map_err(|e| Error::kube("create subjectaccessreview", e))?;
            if review.status.is_some_and(|s| s.allowed) {
                approve(&api, &csr).await?;
                info!(csr = %csr.name_any(), cluster = %agent.cluster, agent = %agent.agent,
                    "managed cluster csr auto approved");
            } else {
                debug!(csr = %csr.name_any(), "renewal not authorized by subject access review");
            }
        }
        Verdict::AutoApprove(agent) => {
            approve(&api, &csr).await?;
            info!(csr = %csr.name_any(), cluster = %agent.cluster, "managed cluster auto approved");
        }
    }
    Ok(Action::await_change())
}

fn error_policy(_csr: Arc<CertificateSigningRequest>, err: &Error, ctx: Arc<HubContext>) -> Action {
    super::error::retry_after(&ctx.metrics, CONTROLLER, err, retry_delay(&ctx.options))
}

/// Runs the CSR approval controller until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>) {
    let controller = ocm_runtime::cache::controller(
        Api::<CertificateSigningRequest>::all(ctx.client.clone()),
        watcher::Config::default().any_semantic(),
    )
    .reconcile_all_on(resync_ticks(ctx.options.resync))
    .run(reconcile, error_policy, ctx.clone())
    .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = controller => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::certificates::v1::{
        CertificateSigningRequestSpec, CertificateSigningRequestStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
    use std::collections::BTreeMap;

    fn request(cn: &str, orgs: &[&str]) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        // rcgen keeps one value per attribute type; a second organization goes in under
        // the same OID (2.5.4.10) spelled as a custom type.
        for (i, o) in orgs.iter().enumerate() {
            let ty = match i {
                0 => DnType::OrganizationName,
                1 => DnType::CustomDnType(vec![2, 5, 4, 10]),
                _ => panic!("at most two organizations"),
            };
            dn.push(ty, *o);
        }
        params.distinguished_name = dn;
        params
            .serialize_request(&key)
            .unwrap()
            .pem()
            .unwrap()
            .into_bytes()
    }

    fn csr(label: Option<&str>, username: &str, req: Vec<u8>) -> CertificateSigningRequest {
        CertificateSigningRequest {
            metadata: ObjectMeta {
                name: Some("csr-1".to_owned()),
                labels: label.map(|l| BTreeMap::from([(CLUSTER_NAME.to_owned(), l.to_owned())])),
                ..ObjectMeta::default()
            },
            spec: CertificateSigningRequestSpec {
                request: ByteString(req),
                signer_name: KUBE_APISERVER_CLIENT_SIGNER.to_owned(),
                username: Some(username.to_owned()),
                usages: Some(vec![
                    "digital signature".to_owned(),
                    "key encipherment".to_owned(),
                    "client auth".to_owned(),
                ]),
                ..CertificateSigningRequestSpec::default()
            },
            status: None,
        }
    }

    const CN: &str = "system:open-cluster-management:c1:agent1";
    const ORG: &str = "system:open-cluster-management:c1";

    #[test]
    fn a_well_formed_renewal_is_recognised() {
        let c = csr(Some("c1"), CN, request(CN, &[ORG]));
        let agent = validate(&c).unwrap();
        assert_eq!(agent.cluster, "c1");
        assert_eq!(agent.agent, "agent1");
        assert_eq!(verdict(&c, &[]), Verdict::Renewal(agent.clone()));
        // The common managed-clusters group is tolerated.
        let c = csr(Some("c1"), CN, request(CN, &[ORG, MANAGED_CLUSTERS_GROUP]));
        assert_eq!(verdict(&c, &[]), Verdict::Renewal(agent));
    }

    #[test]
    fn attack_requests_are_rejected() {
        // Prefix-matched organization.
        let c = csr(
            Some("c1"),
            "system:open-cluster-management:c1x:a",
            request(
                "system:open-cluster-management:c1x:a",
                &["system:open-cluster-management:c1x"],
            ),
        );
        assert!(matches!(validate(&c), Err(Rejection::BadOrganization(_))));
        let c = csr(
            Some("c1"),
            CN,
            request(CN, &["system:open-cluster-management:c1x"]),
        );
        assert!(matches!(validate(&c), Err(Rejection::BadOrganization(_))));
        // CN prefix-matched cluster.
        let cn = "system:open-cluster-management:c1x:agent";
        let c = csr(Some("c1"), cn, request(cn, &[ORG]));
        assert!(matches!(validate(&c), Err(Rejection::BadCommonName(_))));
        // CN and O agree on a cluster other than the label.
        let cn2 = "system:open-cluster-management:c2:agent";
        let c = csr(
            Some("c1"),
            cn2,
            request(cn2, &["system:open-cluster-management:c2"]),
        );
        assert!(validate(&c).is_err());
        // Extra organization.
        let c = csr(Some("c1"), CN, request(CN, &[ORG, "system:masters"]));
        assert!(matches!(validate(&c), Err(Rejection::BadOrganization(_))));
        // No organization.
        let c = csr(Some("c1"), CN, request(CN, &[]));
        assert!(matches!(validate(&c), Err(Rejection::BadOrganization(_))));
        // Extra CN segment and empty agent.
        for cn in [
            "system:open-cluster-management:c1:a:b",
            "system:open-cluster-management:c1:",
            "system:open-cluster-management:c1",
            "c1:agent",
        ] {
            let c = csr(Some("c1"), cn, request(cn, &[ORG]));
            assert!(
                matches!(validate(&c), Err(Rejection::BadCommonName(_))),
                "{cn}"
            );
        }
        // Missing label.
        let c = csr(None, CN, request(CN, &[ORG]));
        assert_eq!(validate(&c), Err(Rejection::NoClusterLabel));
        // Wrong signer.
        let mut c = csr(Some("c1"), CN, request(CN, &[ORG]));
        c.spec.signer_name = "example.com/other".to_owned();
        assert!(matches!(validate(&c), Err(Rejection::WrongSigner(_))));
        // Garbage PEM and a non-request PEM block.
        let c = csr(Some("c1"), CN, b"not a pem".to_vec());
        assert!(matches!(validate(&c), Err(Rejection::BadRequest(_))));
        let pem = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec();
        let c = csr(Some("c1"), CN, pem);
        assert!(matches!(validate(&c), Err(Rejection::BadRequest(_))));
        let pem = b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
            .to_vec();
        let c = csr(Some("c1"), CN, pem);
        assert!(matches!(validate(&c), Err(Rejection::BadRequest(_))));
        // Server-auth usage.
        let mut c = csr(Some("c1"), CN, request(CN, &[ORG]));
        c.spec.usages = Some(vec!["server auth".to_owned()]);
        assert!(matches!(validate(&c), Err(Rejection::BadUsages(_))));
    }

    #[test]
    fn test_requests_really_carry_two_organizations() {
        let (orgs, cns) = subject(&request(CN, &[ORG, "system:masters"])).unwrap();
        assert_eq!(orgs, vec![ORG.to_owned(), "system:masters".to_owned()]);
        assert_eq!(cns, vec![CN.to_owned()]);
    }

    #[test]
    fn username_mismatch_is_not_a_renewal() {
        let c = csr(Some("c1"), "system:bootstrap:abc", request(CN, &[ORG]));
        assert_eq!(verdict(&c, &[]), Verdict::Pending);
        let c = csr(
            Some("c1"),
            "system:open-cluster-management:c1:other",
            request(CN, &[ORG]),
        );
        assert_eq!(verdict(&c, &[]), Verdict::Pending);
    }

    #[test]
    fn auto_approved_users_get_bootstrap_csrs_approved() {
        let users = vec!["system:bootstrap:abc".to_owned()];
        let c = csr(Some("c1"), "system:bootstrap:abc", request(CN, &[ORG]));
        assert!(matches!(verdict(&c, &users), Verdict::AutoApprove(_)));
        let c = csr(Some("c1"), "system:bootstrap:zzz", request(CN, &[ORG]));
        assert_eq!(verdict(&c, &users), Verdict::Pending);
        // Even listed users cannot get an invalid request approved.
        let c = csr(
            Some("c1"),
            "system:bootstrap:abc",
            request(CN, &[ORG, "system:masters"]),
        );
        assert_eq!(verdict(&c, &users), Verdict::Ignore);
    }

    #[test]
    fn decided_csrs_are_ignored_and_approval_is_well_formed() {
        let c = csr(Some("c1"), CN, request(CN, &[ORG]));
        let a = approved(&c);
        let conds = a.status.as_ref().unwrap().conditions.as_ref().unwrap();
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].type_, "Approved");
        assert_eq!(conds[0].status, "True");
        assert_eq!(conds[0].reason.as_deref(), Some(APPROVED_REASON));
        assert!(is_decided(&a));
        assert_eq!(verdict(&a, &[]), Verdict::Ignore);
        let mut denied = c.clone();
        denied.status = Some(CertificateSigningRequestStatus {
            conditions: Some(vec![CertificateSigningRequestCondition {
                type_: "Denied".to_owned(),
                status: "True".to_owned(),
                ..CertificateSigningRequestCondition::default()
            }]),
            certificate: None,
        });
        assert_eq!(verdict(&denied, &[]), Verdict::Ignore);
    }

    #[test]
    fn review_asks_for_renew_on_clientcertificates() {
        let mut c = csr(Some("c1"), CN, request(CN, &[ORG]));
        c.spec.groups = Some(vec![ORG.to_owned(), "system:authenticated".to_owned()]);
        let r = renewal_review(&c);
        assert_eq!(r.spec.user.as_deref(), Some(CN));
        assert_eq!(r.spec.groups.as_ref().unwrap().len(), 2);
        let ra = r.spec.resource_attributes.unwrap();
        assert_eq!(
            ra.group.as_deref(),
            Some("register.open-cluster-management.io")
        );
        assert_eq!(ra.resource.as_deref(), Some("managedclusters"));
        assert_eq!(ra.subresource.as_deref(), Some("clientcertificates"));
        assert_eq!(ra.verb.as_deref(), Some("renew"));
        assert_eq!(ra.namespace, None);
        assert_eq!(ra.name, None);
    }
}

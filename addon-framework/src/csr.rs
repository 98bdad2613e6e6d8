//! Which addon CSRs the hub approves — a pure decision.
//!
//! An addon agent's CSR is labelled `open-cluster-management.io/cluster-name=<cluster>` and
//! `open-cluster-management.io/addon-name=<addon>` and is created by the registration agent of
//! that cluster with the cluster's own hub credentials. The hub approves it only when:
//! - the addon is one of the manager's and is enabled on that cluster (its ManagedClusterAddOn
//!   exists — checked by the caller);
//! - the requester (`spec.username`) is an agent of the labelled cluster
//!   (`system:open-cluster-management:<cluster>:<agent>`), so one cluster cannot obtain
//!   credentials in another's name;
//! - the signer is one of the addon's registrations;
//! - for kube-apiserver-client CSRs, the addon's approve check passes (the default accepts only
//!   a subject of this cluster's and this addon's agent, see
//!   [`crate::registration::default_approve`]).
//!
//! Custom-signer CSRs are approved and then signed by the addon's signer.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use ocm_api::addon::names::KUBE_APISERVER_CLIENT_SIGNER;
use ocm_api::addon::names::labels::ADDON_NAME;
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

use crate::agent::{CsrInfo, RegistrationConfig};

/// What to do with a CSR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CsrDecision {
    /// Not ours to decide (already decided, another addon, not an addon CSR).
    Ignore,
    /// Refused: left pending, with the reason logged.
    Refuse(String),
    /// Approve (the API server's signer issues the certificate).
    Approve,
    /// Approve and sign with the addon's signer.
    ApproveAndSign,
}

/// The labelled cluster and addon of an addon CSR.
pub fn labels(csr: &CertificateSigningRequest) -> Option<(String, String)> {
    let labels = csr.metadata.labels.as_ref()?;
    Some((
        labels.get(CLUSTER_NAME)?.clone(),
        labels.get(ADDON_NAME)?.clone(),
    ))
}

/// Whether the CSR was approved, denied or failed already.
pub fn is_decided(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| matches!(c.type_.as_str(), "Approved" | "Denied" | "Failed"))
        })
}

/// What the framework shows an addon of `csr`: signer, requester and the request's subject.
pub fn info(csr: &CertificateSigningRequest) -> Result<CsrInfo, String> {
    let request = String::from_utf8(csr.spec.request.0.clone())
        .map_err(|_| "the request is not PEM text".to_owned())?;
    let (_, pem) =
        x509_parser::pem::parse_x509_pem(request.as_bytes()).map_err(|e| e.to_string())?;
    if pem.label != "CERTIFICATE REQUEST" {
        return Err(format!("PEM block is {:?}", pem.label));
    }
    let (_, parsed) =
        X509CertificationRequest::from_der(&pem.contents).map_err(|e| e.to_string())?;
    let subject = &parsed.certification_request_info.subject;
    let texts = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue>| {
        it.filter_map(|a| a.as_str().ok().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    Ok(CsrInfo {
        name: csr.metadata.name.clone().unwrap_or_default(),
        signer_name: csr.spec.signer_name.clone(),
        username: csr.spec.username.clone().unwrap_or_default(),
        common_name: texts(&mut subject.iter_common_name())
            .into_iter()
            .next()
            .unwrap_or_default(),
        organizations: texts(&mut subject.iter_organization()),
        request_pem: request,
    })
}

/// Decides for a CSR of `cluster`'s agent for an addon with `registrations`; `approve` is the
/// addon's check for kube-apiserver-client CSRs.
pub fn decide(
    cluster: &str,
    info: &CsrInfo,
    registrations: &[RegistrationConfig],
    approve: &dyn Fn(&CsrInfo) -> bool,
) -> CsrDecision {
    let agent_prefix = format!("system:open-cluster-management:{cluster}:");
    if !info.username.starts_with(&agent_prefix) {
        return CsrDecision::Refuse(format!(
            "requester {} is not an agent of cluster {cluster}",
            info.username
        ));
    }
    let signers: Vec<&str> = registrations
        .iter()
        .map(|r| match r {
            RegistrationConfig::KubeClient { .. } => KUBE_APISERVER_CLIENT_SIGNER,
            RegistrationConfig::CustomSigner { signer_name, .. } => signer_name.as_str(),
        })
        .collect();
    if !signers.contains(&info.signer_name.as_str()) {
        return CsrDecision::Refuse(format!(
            "signer {} is not one of the addon's registrations",
            info.signer_name
        ));
    }
    if info.signer_name == KUBE_APISERVER_CLIENT_SIGNER {
        if approve(info) {
            CsrDecision::Approve
        } else {
            CsrDecision::Refuse(format!(
                "subject {} / {:?} is not this addon's agent on cluster {cluster}",
                info.common_name, info.organizations
            ))
        }
    } else {
        CsrDecision::ApproveAndSign
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(username: &str, signer: &str, cn: &str, orgs: &[&str]) -> CsrInfo {
        CsrInfo {
            name: "csr".into(),
            signer_name: signer.into(),
            username: username.into(),
            common_name: cn.into(),
            organizations: orgs.iter().map(|o| (*o).to_owned()).collect(),
            request_pem: String::new(),
        }
    }

    #[test]
    fn only_this_clusters_agent_gets_this_addons_certificates() {
        let registrations = [crate::registration::default_kube_client("c1", "hello")];
        let approve = |i: &CsrInfo| crate::registration::default_approve("c1", "hello", i);
        let cn = crate::registration::default_user("c1", "hello", "hello");
        let group = crate::registration::cluster_addon_group("c1", "hello");
        let good = info(
            "system:open-cluster-management:c1:agent1",
            KUBE_APISERVER_CLIENT_SIGNER,
            &cn,
            &[&group],
        );
        assert_eq!(
            decide("c1", &good, &registrations, &approve),
            CsrDecision::Approve
        );
        let other_requester = info(
            "system:open-cluster-management:c2:agent1",
            KUBE_APISERVER_CLIENT_SIGNER,
            &cn,
            &[&group],
        );
        assert!(matches!(
            decide("c1", &other_requester, &registrations, &approve),
            CsrDecision::Refuse(_)
        ));
        let other_addon_cn = crate::registration::default_user("c1", "other", "x");
        let other_addon = info(
            "system:open-cluster-management:c1:agent1",
            KUBE_APISERVER_CLIENT_SIGNER,
            &other_addon_cn,
            &[&group],
        );
        assert!(matches!(
            decide("c1", &other_addon, &registrations, &approve),
            CsrDecision::Refuse(_)
        ));
        let other_signer = info(
            "system:open-cluster-management:c1:agent1",
            "example.com/signer",
            &cn,
            &[&group],
        );
        assert!(matches!(
            decide("c1", &other_signer, &registrations, &approve),
            CsrDecision::Refuse(_)
        ));
        let custom = [RegistrationConfig::CustomSigner {
            signer_name: "example.com/signer".into(),
            user: "u".into(),
            groups: vec![],
            organization_units: vec![],
        }];
        assert_eq!(
            decide("c1", &other_signer, &custom, &approve),
            CsrDecision::ApproveAndSign
        );
    }
}

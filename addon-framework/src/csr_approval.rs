//! Approval (and, for custom signers, signing) of the addon agents' CSRs on the hub.

use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::addon::names::labels::ADDON_NAME;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::shutdown::Shutdown;

use crate::agent::AgentAddon;
use crate::manager::ManagerError;

/// Approves (and for custom signers signs) the CSRs of the addons' agents, per
/// [`crate::csr::decide`].
pub(crate) async fn run_csr_approval(
    client: kube::Client,
    addons: Vec<Arc<dyn AgentAddon>>,
    shutdown: Shutdown,
) {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let events = watcher(csrs.clone(), watcher::Config::default().labels(ADDON_NAME))
        .default_backoff()
        .applied_objects();
    let mut events = std::pin::pin!(events.take_until(shutdown.cancelled()));
    while let Some(event) = events.next().await {
        let Ok(csr) = event else { continue };
        if let Err(err) = handle_csr(&client, &addons, &csrs, &csr).await {
            tracing::debug!(%err, "addon CSR not handled yet");
        }
    }
}

async fn handle_csr(
    client: &kube::Client,
    addons: &[Arc<dyn AgentAddon>],
    csrs: &Api<k8s_openapi::api::certificates::v1::CertificateSigningRequest>,
    csr: &k8s_openapi::api::certificates::v1::CertificateSigningRequest,
) -> Result<(), ManagerError> {
    use crate::csr::{CsrDecision, decide, info, is_decided, labels};
    if is_decided(csr) {
        return Ok(());
    }
    let Some((cluster, addon_name)) = labels(csr) else {
        return Ok(());
    };
    let Some(addon) = addons.iter().find(|a| a.options().name == addon_name) else {
        return Ok(());
    };
    let Some(registration) = addon.options().registration.as_ref() else {
        return Ok(());
    };
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let (Some(mca), Some(managed)) = (
        mcas.get_opt(&addon_name).await?,
        clusters.get_opt(&cluster).await?,
    ) else {
        return Ok(());
    };
    let name = csr.metadata.name.clone().unwrap_or_default();
    let info = match info(csr) {
        Ok(info) => info,
        Err(err) => {
            tracing::info!(csr = name, %err, "addon CSR refused");
            return Ok(());
        }
    };
    let configs = (registration.configurations)(&managed, &mca).unwrap_or_default();
    let approve = |i: &crate::agent::CsrInfo| (registration.approve)(&managed, &mca, i);
    let decision = decide(&cluster, &info, &configs, &approve);
    let sign = match decision {
        CsrDecision::Ignore => return Ok(()),
        CsrDecision::Refuse(reason) => {
            tracing::info!(
                csr = name,
                addon = addon_name,
                cluster,
                reason,
                "addon CSR refused"
            );
            return Ok(());
        }
        CsrDecision::Approve => false,
        CsrDecision::ApproveAndSign => true,
    };
    let mut approved = csr.clone();
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now());
    approved
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(
            k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("AutoApprovedByAddonManager".into()),
                message: Some(format!("Auto approved by the {addon_name} addon manager")),
                last_update_time: Some(now.clone()),
                last_transition_time: Some(now),
            },
        );
    let approved = csrs
        .replace_subresource("approval", &name, &PostParams::default(), &approved)
        .await?;
    if sign {
        let Some(signer) = registration.sign.as_ref() else {
            tracing::info!(
                csr = name,
                "custom-signer CSR approved but the addon has no signer"
            );
            return Ok(());
        };
        match signer(&managed, &mca, &info) {
            Ok(certificate) => {
                let mut signed = approved;
                signed
                    .status
                    .get_or_insert_with(Default::default)
                    .certificate = Some(k8s_openapi::ByteString(certificate.into_bytes()));
                csrs.replace_status(&name, &PostParams::default(), &signed)
                    .await?;
            }
            Err(err) => tracing::warn!(csr = name, %err, "signing the addon CSR failed"),
        }
    }
    Ok(())
}

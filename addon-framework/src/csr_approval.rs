//! Approval (and, for custom signers, signing) of the addon agents' CSRs on the hub.

use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::addon::names::labels::ADDON_NAME;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;

use crate::agent::AgentAddon;
use crate::error::ManagerError;

/// How often CSRs whose handling failed (a hub error, a signing CA not readable yet) are
/// tried again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// Approves (and for custom signers signs) the CSRs of the addons' agents, per
/// [`crate::csr::decide`]. A CSR whose handling failed is tried again every [`RETRY`] until it
/// is decided or gone.
pub(crate) async fn run_csr_approval(
    client: kube::Client,
    addons: Vec<Arc<dyn AgentAddon>>,
    shutdown: Shutdown,
) {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let events = watcher(csrs.clone(), watcher::Config::default().labels(ADDON_NAME))
        .backoff_on_errors()
        .applied_objects();
    let mut events = std::pin::pin!(events.take_until(shutdown.cancelled()));
    let mut failed: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut retry = tokio::time::interval(RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = events.next() => {
                let Some(event) = event else { break };
                let Ok(csr) = event else { continue };
                let name = csr.metadata.name.clone().unwrap_or_default();
                match handle_csr(&client, &addons, &csrs, &csr).await {
                    Ok(()) => { failed.remove(&name); }
                    Err(err) => {
                        tracing::debug!(csr = name, %err, "addon CSR not handled yet");
                        failed.insert(name);
                    }
                }
            }
            _ = retry.tick(), if !failed.is_empty() => {
                for name in std::mem::take(&mut failed) {
                    let csr = match csrs.get_opt(&name).await {
                        Ok(Some(csr)) => csr,
                        Ok(None) => continue,
                        Err(_) => { failed.insert(name); continue; }
                    };
                    if let Err(err) = handle_csr(&client, &addons, &csrs, &csr).await {
                        tracing::debug!(csr = name, %err, "addon CSR still not handled");
                        failed.insert(name);
                    }
                }
            }
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
    // A custom signer's certificate is made before the approval: a CSR approved but never
    // signed would be left alone from then on.
    let certificate = if sign {
        let Some(signer) = registration.sign.as_ref() else {
            tracing::info!(
                csr = name,
                "custom-signer CSR left alone: the addon has no signer"
            );
            return Ok(());
        };
        Some(signer(&managed, &mca, &info).map_err(ManagerError::Sign)?)
    } else {
        None
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
    if let Some(certificate) = certificate {
        let mut signed = approved;
        signed
            .status
            .get_or_insert_with(Default::default)
            .certificate = Some(k8s_openapi::ByteString(certificate.into_bytes()));
        csrs.replace_status(&name, &PostParams::default(), &signed)
            .await?;
    }
    Ok(())
}

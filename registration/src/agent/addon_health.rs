//! Lease health of addons on the agent.
//!
//! An addon whose ManagedClusterAddOn has `status.healthCheck.mode` `Lease` (or no health
//! check) renews a Lease named after the addon in its install namespace on the managed
//! cluster. Every `addon_lease_check_period` (and whenever the MCAs change) the agent judges
//! that Lease ([`lease_availability`]) and sets the MCA's `Available` condition when the
//! judgement changed:
//!
//! | Lease | Available | reason |
//! |---|---|---|
//! | missing | Unknown | `ManagedClusterAddOnLeaseNotFound` |
//! | renewed within `addon_lease_grace` | True | `ManagedClusterAddOnLeaseUpdated` |
//! | older (or never renewed) | False | `ManagedClusterAddOnLeaseUpdateStopped` |
//!
//! MCAs in `Customized` mode are left to the hub. The Lease is looked for in the addon's
//! install namespace ([`super::addon_env::install_namespace`]: the hub's choice, else the v1alpha1
//! `installNamespace`, else `open-cluster-management-agent-addon`), as upstream's agent does —
//! so an addon no addon manager runs still gets its health from a Lease its agent renews.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use ocm_api::addon::names::conditions::{AVAILABLE, available};
use ocm_api::addon::v1beta1::{HealthCheckMode, ManagedClusterAddOn};
use ocm_runtime::conditions::condition;

use super::addon_env::{AddonEnv, SeenAddons, install_namespace, is_hosted, set_addon_condition};

/// What the agent concludes from an addon's Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseJudgement {
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// The condition reason.
    pub reason: &'static str,
    /// The condition message.
    pub message: String,
}

/// Judges addon `addon` from its Lease: `None` when there is none, else its last renewal
/// (`None` when never renewed), at `now` with `grace`.
pub fn lease_availability(
    addon: &str,
    lease: Option<Option<Timestamp>>,
    now: Timestamp,
    grace: Duration,
) -> LeaseJudgement {
    match lease {
        None => LeaseJudgement {
            status: "Unknown",
            reason: available::LEASE_NOT_FOUND,
            message: format!("The status of {addon} add-on is unknown."),
        },
        Some(renewed) => {
            let fresh = renewed.is_some_and(|at| {
                at.checked_add(grace)
                    .map(|until| now < until)
                    .unwrap_or(true)
            });
            if fresh {
                LeaseJudgement {
                    status: "True",
                    reason: available::LEASE_UPDATED,
                    message: format!("{addon} add-on is available."),
                }
            } else {
                LeaseJudgement {
                    status: "False",
                    reason: available::LEASE_UPDATE_STOPPED,
                    message: format!("{addon} add-on is not available."),
                }
            }
        }
    }
}

/// Whether the agent judges `mca`'s health from a Lease (mode `Lease` or none), and where:
/// the install namespace.
pub fn lease_checked_namespace(mca: &ManagedClusterAddOn) -> Option<String> {
    if mca.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let mode = mca
        .status
        .as_ref()
        .and_then(|s| s.health_check.as_ref())
        .and_then(|h| h.mode)
        .unwrap_or(HealthCheckMode::Lease);
    (mode == HealthCheckMode::Lease).then(|| install_namespace(mca))
}

/// Judges every Lease-mode addon periodically and on MCA changes. Never returns.
pub(crate) async fn run(env: AddonEnv, mut seen: SeenAddons) -> std::convert::Infallible {
    let period = env.options.addon_lease_check_period;
    loop {
        let snapshot = seen.borrow_and_update().clone();
        for mca in snapshot.into_iter().flat_map(|m| m.into_values()) {
            let Some(ns) = lease_checked_namespace(&mca) else {
                continue;
            };
            let addon = mca.metadata.name.clone().unwrap_or_default();
            // A hosted addon's agent renews its Lease where it runs.
            let cluster = env.agent_cluster(is_hosted(&mca));
            let lease = match Api::<Lease>::namespaced(cluster, &ns).get_opt(&addon).await {
                Ok(lease) => lease,
                Err(err) => {
                    tracing::warn!(error = %err, addon, "reading the addon's lease");
                    continue;
                }
            };
            let renewed = lease.map(|l| l.spec.and_then(|s| s.renew_time).map(|t| t.0));
            let judged = lease_availability(
                &addon,
                renewed,
                Timestamp::now(),
                env.options.addon_lease_grace,
            );
            let current = mca
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == AVAILABLE));
            if current.is_some_and(|c| {
                c.status == judged.status
                    && c.reason == judged.reason
                    && c.message == judged.message
            }) {
                continue;
            }
            let wanted = condition(
                AVAILABLE,
                judged.status,
                judged.reason,
                &judged.message,
                None,
            );
            match set_addon_condition(&env.hub(), &env.cluster, &addon, wanted).await {
                Ok(true) => tracing::info!(
                    addon,
                    status = judged.status,
                    reason = judged.reason,
                    "addon availability"
                ),
                Ok(false) => {}
                Err(err) => {
                    tracing::warn!(error = %err, addon, "reporting the addon's availability")
                }
            }
        }
        tokio::select! {
            changed = seen.changed() => {
                if changed.is_err() {
                    return std::future::pending().await;
                }
            }
            _ = tokio::time::sleep(period) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ocm_api::addon::v1beta1::{HealthCheck, ManagedClusterAddOnStatus};

    #[test]
    fn the_lease_decides_availability() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let grace = Duration::from_secs(300);
        let missing = lease_availability("hello", None, now, grace);
        assert_eq!(
            (missing.status, missing.reason),
            ("Unknown", "ManagedClusterAddOnLeaseNotFound")
        );
        assert_eq!(missing.message, "The status of hello add-on is unknown.");
        let fresh = lease_availability(
            "hello",
            Some(Some(now - jiff::SignedDuration::from_secs(299))),
            now,
            grace,
        );
        assert_eq!(
            (fresh.status, fresh.reason, fresh.message.as_str()),
            (
                "True",
                "ManagedClusterAddOnLeaseUpdated",
                "hello add-on is available."
            )
        );
        let stale = lease_availability(
            "hello",
            Some(Some(now - jiff::SignedDuration::from_secs(300))),
            now,
            grace,
        );
        assert_eq!(
            (stale.status, stale.reason, stale.message.as_str()),
            (
                "False",
                "ManagedClusterAddOnLeaseUpdateStopped",
                "hello add-on is not available."
            )
        );
        let never = lease_availability("hello", Some(None), now, grace);
        assert_eq!(never.status, "False");
    }

    #[test]
    fn lease_mode_addons_are_checked_in_their_install_namespace() {
        let mut mca = ManagedClusterAddOn::new("hello", Default::default());
        // Nobody said where: upstream's default namespace.
        assert_eq!(
            lease_checked_namespace(&mca).as_deref(),
            Some("open-cluster-management-agent-addon")
        );
        // A v1alpha1 client's installNamespace (no addon manager wrote the status).
        mca.metadata.annotations = Some(
            [(
                "addon.open-cluster-management.io/v1alpha1-install-namespace".to_owned(),
                "asked".to_owned(),
            )]
            .into(),
        );
        assert_eq!(lease_checked_namespace(&mca).as_deref(), Some("asked"));
        // The hub's choice wins.
        mca.status = Some(ManagedClusterAddOnStatus {
            namespace: "ns".into(),
            ..Default::default()
        });
        assert_eq!(lease_checked_namespace(&mca).as_deref(), Some("ns"));
        mca.status.as_mut().unwrap().health_check = Some(HealthCheck {
            mode: Some(HealthCheckMode::Lease),
        });
        assert_eq!(lease_checked_namespace(&mca).as_deref(), Some("ns"));
        mca.status.as_mut().unwrap().health_check = Some(HealthCheck {
            mode: Some(HealthCheckMode::Customized),
        });
        assert_eq!(lease_checked_namespace(&mca), None);
        mca.status.as_mut().unwrap().health_check = None;
        mca.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
        );
        assert_eq!(lease_checked_namespace(&mca), None);
    }
}

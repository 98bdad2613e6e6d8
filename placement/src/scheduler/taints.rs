//! The `TaintToleration` filter.
//!
//! A taint is tolerated when
//! - its effect is `PreferNoSelect` (always; it has no scoring effect either), or
//! - its effect is `NoSelectIfNew` and the cluster is already in this placement's decisions,
//!   or
//! - some toleration matches it: the toleration's effect is empty or equal, its key is empty or
//!   equal, and with operator `Equal` (or empty) the values are equal, with `Exists` any value
//!   matches (any other operator matches nothing); and, when the toleration has
//!   `tolerationSeconds`, `now` is before `timeAdded + tolerationSeconds` (a taint without
//!   `timeAdded` counts as added long ago, so such a toleration has expired).
//!
//! A cluster passes when all its taints are tolerated; the earliest expiry of the tolerations
//! it relies on is when the placement must be looked at again.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ocm_api::cluster::names::{TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS};
use ocm_api::cluster::v1::{ManagedCluster, Taint, TaintEffect};
use ocm_api::cluster::v1beta1::Toleration;

use super::result::{Misconfiguration, TaintRejection};

/// Plugin name of the taint filter.
pub(crate) const TAINT_TOLERATION: &str = "TaintToleration";

/// Upstream's checks on tolerations, in its order.
pub(crate) fn validate(tolerations: &[Toleration]) -> Result<(), Misconfiguration> {
    for t in tolerations {
        let operator = t.operator.as_deref().unwrap_or_default();
        if t.key.is_empty() && operator != TOLERATION_OP_EXISTS {
            return Err(Misconfiguration::new(
                TAINT_TOLERATION,
                "If the key is empty, operator must be Exists.",
            ));
        }
        if operator == TOLERATION_OP_EXISTS && !t.value.is_empty() {
            return Err(Misconfiguration::new(
                TAINT_TOLERATION,
                "If the operator is Exists, the value should be empty.",
            ));
        }
    }
    Ok(())
}

/// The verdict on one cluster.
pub(crate) enum Verdict {
    /// Every taint is tolerated; `expires` is the earliest toleration expiry relied upon.
    Tolerated { expires: Option<Timestamp> },
    /// `taint` (index into the cluster's taints) is not tolerated.
    Rejected {
        taint: usize,
        rejection: TaintRejection,
    },
}

/// Checks every taint of `cluster`.
pub(crate) fn check(
    cluster: &ManagedCluster,
    tolerations: &[Toleration],
    in_decisions: bool,
    now: Timestamp,
) -> Verdict {
    let mut expires: Option<Timestamp> = None;
    for (index, taint) in cluster.spec.taints.iter().enumerate() {
        match check_taint(taint, tolerations, in_decisions, now) {
            Ok(Some(t)) => expires = Some(expires.map_or(t, |e| e.min(t))),
            Ok(None) => {}
            Err(rejection) => {
                return Verdict::Rejected {
                    taint: index,
                    rejection,
                };
            }
        }
    }
    Verdict::Tolerated { expires }
}

/// `Ok(expiry)` when tolerated.
fn check_taint(
    taint: &Taint,
    tolerations: &[Toleration],
    in_decisions: bool,
    now: Timestamp,
) -> Result<Option<Timestamp>, TaintRejection> {
    if taint.effect == TaintEffect::PreferNoSelect {
        return Ok(None);
    }
    if taint.effect == TaintEffect::NoSelectIfNew && in_decisions {
        return Ok(None);
    }
    let mut rejection = TaintRejection::NoMatchingToleration;
    for toleration in tolerations {
        if !matches(taint, toleration) {
            continue;
        }
        let Some(seconds) = toleration.toleration_seconds else {
            return Ok(None);
        };
        let Some(added) = taint.time_added.as_ref() else {
            rejection = TaintRejection::TolerationExpired { at: None };
            continue;
        };
        // Overflow (absurdly long tolerations) means "never expires".
        let Ok(expiry) = added.0.checked_add(SignedDuration::from_secs(seconds)) else {
            return Ok(None);
        };
        if now < expiry {
            return Ok(Some(expiry));
        }
        if rejection == TaintRejection::NoMatchingToleration {
            rejection = TaintRejection::TolerationExpired { at: Some(expiry) };
        }
    }
    Err(rejection)
}

fn matches(taint: &Taint, toleration: &Toleration) -> bool {
    if toleration.effect.is_some_and(|e| e != taint.effect) {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | TOLERATION_OP_EQUAL => toleration.value == taint.value,
        TOLERATION_OP_EXISTS => true,
        _ => false,
    }
}

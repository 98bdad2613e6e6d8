//! When to renew a client certificate, computed from the certificate itself.
//!
//! Upstream renews a certificate once its remaining lifetime is at most a random 20–25 % of
//! its total lifetime, `notAfter − notBefore`, and looks at the certificate every five minutes.
//! Two things go wrong with short certificates:
//!
//! * **The five-minute look.** With a lifetime under about 25 minutes the rotation window is
//!   shorter than the period, so rotation depends on when the timer happens to fire. Here the
//!   agent instead sleeps until the certificate's own deadline (the periodic look stays as a
//!   safety net).
//! * **The backdate.** kube's signers (and ours) set `notBefore` five minutes before issuance
//!   to tolerate clock skew, and end short certificates (under 8 h) at issuance + duration. A
//!   60 s certificate therefore spans 360 s, and "20–25 % of 360 s remain" (72–90 s) is already
//!   true when it is issued: upstream's rule would renew it at once, again and again.
//!
//! **The rule used here.** The lifetime counts from `start = max(notBefore, received)`, where
//! `received` is when the agent got the certificate from its CSR (unknown, so `notBefore`, for a
//! certificate read back from storage after a restart). The certificate is due at
//!
//! ```text
//! deadline = notAfter − threshold × (notAfter − start),  threshold drawn once per certificate
//!                                                          in [0.20, 0.25]
//! ```
//!
//! so a freshly issued certificate is always used for 75–80 % of what is left of it: a 60 s
//! certificate is renewed 45–48 s after it arrives, a one-hour one after 45–48 minutes, and a
//! one-year one, where five minutes do not matter, as upstream. A certificate read from storage
//! whose deadline has passed (a restart late in its life, or a short one) is renewed at once,
//! and its successor is scheduled by the rule above, so there is no renewal loop.
//!
//! **Failures.** Past the deadline, a failed renewal is retried after 1 s, doubling up to 30 s,
//! but never later than half of the time the certificate has left (at least 1 s), so that
//! retries come more often as expiry approaches and the renewal lands as soon as the hub
//! answers again. Only an expired certificate is given up on (the caller then bootstraps
//! again).
//!
//! [`RotationSchedule`] holds this logic apart from the cluster agent, so that addon
//! registrations can schedule their certificates the same way.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::Backoff;
use super::certs;

/// Upstream's rotation threshold: renew when at most this fraction of the lifetime is left.
pub const DEFAULT_THRESHOLD: (f64, f64) = (0.20, 0.25);

/// The shortest wait before retrying a failed renewal.
const MIN_RETRY: Duration = Duration::from_secs(1);

/// What the scheduler needs to know about a certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertValidity {
    /// Start of validity (as signed; kube's signers backdate it five minutes).
    pub not_before: Timestamp,
    /// End of validity.
    pub not_after: Timestamp,
    /// When the holder received it from its CSR; `None` when it was read back from storage.
    pub received: Option<Timestamp>,
}

impl CertValidity {
    /// Validity from Unix seconds (as in a parsed certificate).
    pub fn from_seconds(
        not_before: i64,
        not_after: i64,
        received: Option<Timestamp>,
    ) -> CertValidity {
        let ts = |s: i64| Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH);
        CertValidity {
            not_before: ts(not_before),
            not_after: ts(not_after),
            received,
        }
    }

    /// Where the lifetime used for rotation starts: `max(notBefore, received)`.
    pub fn lifetime_start(&self) -> Timestamp {
        match self.received {
            Some(received) if received > self.not_before => received,
            _ => self.not_before,
        }
    }

    /// Whether the certificate has expired at `now`.
    pub fn expired(&self, now: Timestamp) -> bool {
        now >= self.not_after
    }
}

/// When a certificate valid from `not_before` to `not_after` is due for renewal: when at most
/// `threshold` (a fraction, e.g. 0.2) of `not_after − not_before` is left. Pass the lifetime
/// start of [`CertValidity::lifetime_start`] as `not_before` to get this module's rule.
pub fn rotation_deadline(not_before: Timestamp, not_after: Timestamp, threshold: f64) -> Timestamp {
    let total = not_after.duration_since(not_before);
    if total <= SignedDuration::ZERO {
        return not_after;
    }
    let threshold = threshold.clamp(0.0, 1.0);
    let left = SignedDuration::from_secs_f64(total.as_secs_f64() * threshold);
    not_after.checked_sub(left).unwrap_or(not_before)
}

/// When to try a failed renewal again: after `delay` (the backoff), but no later than half
/// of the time left until `not_after`, and no sooner than one second.
pub fn retry_at(now: Timestamp, delay: Duration, not_after: Timestamp) -> Timestamp {
    let left = not_after.duration_since(now);
    let half = Duration::try_from(left / 2).unwrap_or(Duration::ZERO);
    let wait = delay.min(half).max(MIN_RETRY);
    now.checked_add(wait).unwrap_or(now)
}

/// Renewal schedule of one certificate holder: the deadline of the current certificate (with
/// its threshold drawn once) and the retry backoff after failed renewals.
#[derive(Debug)]
pub struct RotationSchedule {
    threshold_range: (f64, f64),
    /// The certificate the deadline was drawn for, and the deadline.
    planned: Option<(CertValidity, Timestamp)>,
    backoff: Backoff,
}

impl RotationSchedule {
    /// A schedule drawing thresholds from `threshold_range` (e.g. [`DEFAULT_THRESHOLD`]).
    pub fn new(threshold_range: (f64, f64)) -> RotationSchedule {
        RotationSchedule {
            threshold_range,
            planned: None,
            backoff: Backoff::default(),
        }
    }

    /// The rotation deadline of `cert`; the threshold is drawn the first time a certificate is
    /// seen and kept while it stays the current one.
    pub fn deadline(&mut self, cert: &CertValidity) -> Timestamp {
        if let Some((planned, deadline)) = &self.planned
            && planned == cert
        {
            return *deadline;
        }
        let threshold = certs::random_in(self.threshold_range);
        let deadline = rotation_deadline(cert.lifetime_start(), cert.not_after, threshold);
        self.planned = Some((*cert, deadline));
        deadline
    }

    /// Whether `cert` is due for renewal at `now`.
    pub fn due(&mut self, cert: &CertValidity, now: Timestamp) -> bool {
        now >= self.deadline(cert)
    }

    /// A renewal of `cert` failed at `now`: when to try again (see [`retry_at`]).
    pub fn failed(&mut self, cert: &CertValidity, now: Timestamp) -> Timestamp {
        retry_at(now, self.backoff.next_delay(), cert.not_after)
    }

    /// A renewal succeeded: the next failure starts the backoff from one second again.
    pub fn succeeded(&mut self) {
        self.backoff.reset();
    }
}

impl Default for RotationSchedule {
    fn default() -> Self {
        RotationSchedule::new(DEFAULT_THRESHOLD)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    #[test]
    fn deadline_leaves_the_threshold_of_the_lifetime() {
        // 100 s lifetime: due when 20 (or 25) s are left.
        assert_eq!(rotation_deadline(at(0), at(100), 0.2), at(80));
        assert_eq!(rotation_deadline(at(0), at(100), 0.25), at(75));
        // One year, upstream's default: due 73 to 91 days before the end.
        let year = 365 * 24 * 3600;
        assert_eq!(rotation_deadline(at(0), at(year), 0.2), at(year - year / 5));
        // A certificate without lifetime is due at its end.
        assert_eq!(rotation_deadline(at(10), at(10), 0.2), at(10));
        assert_eq!(rotation_deadline(at(20), at(10), 0.2), at(10));
    }

    #[test]
    fn a_backdated_short_certificate_is_due_at_issuance_by_notbefore_alone() {
        // The signer issues a 60 s certificate at t=0: notBefore = −300 s, notAfter = +60 s.
        // Its lifetime from notBefore is 360 s; 20–25 % of it (72–90 s) is more than the 60 s
        // left, so upstream's rule is due before the certificate even arrives.
        let (nb, na) = (at(-300), at(60));
        assert_eq!(rotation_deadline(nb, na, 0.2), at(60 - 72));
        assert_eq!(rotation_deadline(nb, na, 0.25), at(60 - 90));
        // Counting from when the agent received it (t=0) it is due 45–48 s later.
        let cert = CertValidity {
            not_before: nb,
            not_after: na,
            received: Some(at(0)),
        };
        assert_eq!(cert.lifetime_start(), at(0));
        assert_eq!(rotation_deadline(cert.lifetime_start(), na, 0.2), at(48));
        assert_eq!(rotation_deadline(cert.lifetime_start(), na, 0.25), at(45));
        // Read back from storage (no receipt time), notBefore counts, as upstream.
        let stored = CertValidity {
            received: None,
            ..cert
        };
        assert_eq!(stored.lifetime_start(), nb);
        // A long certificate: the backdate hardly moves the deadline (1 h: 45–48 min after
        // issuance instead of 43.75–47 min).
        let hour = CertValidity {
            not_before: at(-300),
            not_after: at(3600),
            received: Some(at(1)),
        };
        assert_eq!(
            rotation_deadline(hour.lifetime_start(), hour.not_after, 0.25),
            at(1 + (3599 * 3) / 4) + SignedDuration::from_millis(250)
        );
    }

    #[test]
    fn a_receipt_before_notbefore_does_not_stretch_the_lifetime() {
        let cert = CertValidity {
            not_before: at(10),
            not_after: at(110),
            received: Some(at(0)),
        };
        assert_eq!(cert.lifetime_start(), at(10));
        assert!(!cert.expired(at(109)));
        assert!(cert.expired(at(110)));
    }

    #[test]
    fn retries_back_off_but_never_past_expiry() {
        let end = at(60);
        assert_eq!(retry_at(at(0), Duration::from_secs(1), end), at(1));
        assert_eq!(retry_at(at(0), Duration::from_secs(30), end), at(30));
        // 10 s left: at most 5 s.
        assert_eq!(retry_at(at(50), Duration::from_secs(16), end), at(55));
        // Under two seconds left: one second, the floor.
        assert_eq!(retry_at(at(59), Duration::from_secs(8), end), at(60));
        assert_eq!(retry_at(at(70), Duration::from_secs(8), end), at(71));
    }

    #[test]
    fn the_schedule_keeps_a_threshold_per_certificate_and_resets_its_backoff() {
        let mut schedule = RotationSchedule::new((0.2, 0.25));
        let cert = CertValidity {
            not_before: at(-300),
            not_after: at(60),
            received: Some(at(0)),
        };
        let deadline = schedule.deadline(&cert);
        assert!(deadline >= at(45) && deadline <= at(48), "{deadline}");
        for _ in 0..20 {
            assert_eq!(schedule.deadline(&cert), deadline);
        }
        assert!(!schedule.due(&cert, at(44)));
        assert!(schedule.due(&cert, at(48)));
        // Failures back off 1, 2, 4 s..., capped by half the time left.
        assert_eq!(schedule.failed(&cert, at(48)), at(49));
        assert_eq!(schedule.failed(&cert, at(49)), at(51));
        assert_eq!(schedule.failed(&cert, at(51)), at(55));
        assert_eq!(
            schedule.failed(&cert, at(55)),
            at(57) + SignedDuration::from_millis(500)
        );
        schedule.succeeded();
        assert_eq!(schedule.failed(&cert, at(10)), at(11));
        // The next certificate gets its own deadline.
        let next = CertValidity {
            not_before: at(-250),
            not_after: at(110),
            received: Some(at(50)),
        };
        let d = schedule.deadline(&next);
        assert!(d >= at(95) && d <= at(98), "{d}");
    }

    #[test]
    fn fixed_thresholds_give_fixed_deadlines() {
        let mut schedule = RotationSchedule::new((0.2, 0.2));
        let cert = CertValidity::from_seconds(0, 100, None);
        assert_eq!(
            schedule.deadline(&cert),
            Timestamp::from_second(80).unwrap()
        );
    }
}

//! Status conditions (`metav1.Condition`) as Kubernetes controllers keep them:
//! `lastTransitionTime` moves only when `status` changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// A condition stamped now.
pub fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation,
        last_transition_time: Time(jiff::Timestamp::now()),
    }
}

/// The condition of type `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

/// Sets `new` in `conditions`, replacing the condition of the same type. When the status does
/// not change, the existing `lastTransitionTime` is kept. Returns whether anything other than
/// the timestamp changed (i.e. whether the status needs writing).
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(new);
            true
        }
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            let changed = existing.status != new.status
                || existing.reason != new.reason
                || existing.message != new.message
                || existing.observed_generation != new.observed_generation;
            *existing = new;
            changed
        }
    }
}

/// Removes the condition of type `type_`; returns whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Time {
        Time(jiff::Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn same_status_keeps_the_transition_time_and_reports_reason_changes() {
        let mut list = vec![Condition {
            last_transition_time: at(100),
            ..condition("Available", "True", "A", "m", Some(1))
        }];
        assert!(!set_condition(
            &mut list,
            condition("Available", "True", "A", "m", Some(1))
        ));
        assert_eq!(list[0].last_transition_time, at(100));
        assert!(set_condition(
            &mut list,
            condition("Available", "True", "B", "m", Some(1))
        ));
        assert_eq!(list[0].last_transition_time, at(100));
        assert_eq!(list[0].reason, "B");
    }

    #[test]
    fn status_change_moves_the_transition_time() {
        let mut list = vec![Condition {
            last_transition_time: at(100),
            ..condition("Available", "True", "A", "m", None)
        }];
        assert!(set_condition(
            &mut list,
            condition("Available", "Unknown", "A", "m", None)
        ));
        assert_ne!(list[0].last_transition_time, at(100));
        assert!(!is_true(&list, "Available"));
        assert!(set_condition(
            &mut list,
            condition("Joined", "True", "J", "", None)
        ));
        assert_eq!(list.len(), 2);
        assert!(is_true(&list, "Joined"));
        assert!(remove_condition(&mut list, "Joined"));
        assert!(find_condition(&list, "Joined").is_none());
    }
}

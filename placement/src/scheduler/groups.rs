//! Decision groups (`spec.decisionStrategy.groupStrategy`), as upstream's
//! `generateDecisionGroups`:
//!
//! 1. The group length is `clustersPerDecisionGroup` of the selected clusters: an integer as
//!    is, a percentage `p%` as `ceil(p / 100 × selected)`; a length ≤ 0 or above the number of
//!    selected clusters means "all of them" (so does an absent value). Any other string is a
//!    misconfiguration (`<value> invalid type: string is not a percentage`).
//! 2. Each `decisionGroups` entry, in order, takes the selected clusters matching its label
//!    and claim selectors that no earlier entry took, sorts them by name and cuts them into
//!    groups of the group length, all with the entry's name. An entry matching nothing yields
//!    no group.
//! 3. The selected clusters no entry took, sorted by name, are cut the same way into groups
//!    with an empty name.
//! 4. If that gives no group at all, there is one empty group.
//!
//! Group indices count from 0 in that order. An invalid group selector is a misconfiguration;
//! as upstream, the groups built before it are kept and no leftover or empty group is added
//! (so an invalid `clustersPerDecisionGroup` yields no group and no PlacementDecision).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use ocm_api::cluster::v1beta1::Placement;

use super::filter::CompiledSelector;
use super::result::Misconfiguration;
use super::snapshot::Snapshot;

/// A group: its name and its clusters (snapshot indices, ascending = by name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) name: String,
    pub(crate) clusters: Vec<u32>,
}

/// Groups `selected` (snapshot indices, best first).
pub(crate) fn build(
    placement: &Placement,
    snapshot: &Snapshot,
    selected: &[u32],
) -> (Vec<Group>, Option<Misconfiguration>) {
    let strategy = placement
        .spec
        .decision_strategy
        .as_ref()
        .and_then(|d| d.group_strategy.as_ref());
    let per_group = strategy.and_then(|s| s.clusters_per_decision_group.as_ref());
    let length = match group_length(per_group, selected.len()) {
        Ok(length) => length,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut groups = Vec::new();
    let mut taken = vec![false; selected.len()];
    for group in strategy
        .map(|s| s.decision_groups.as_slice())
        .unwrap_or_default()
    {
        let selector = match CompiledSelector::compile_group(&group.group_cluster_selector) {
            Ok(s) => s,
            Err(e) => return (groups, Some(Misconfiguration::new("", e))),
        };
        let mut matched = Vec::new();
        for (k, &i) in selected.iter().enumerate() {
            if !taken[k] && selector.matches(snapshot.entry(i), None) {
                taken[k] = true;
                matched.push(i);
            }
        }
        divide(&group.group_name, matched, length, &mut groups);
    }
    let rest: Vec<u32> = selected
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(&i, _)| i)
        .collect();
    divide("", rest, length, &mut groups);
    if groups.is_empty() {
        groups.push(Group::default());
    }
    (groups, None)
}

fn divide(name: &str, mut clusters: Vec<u32>, length: usize, out: &mut Vec<Group>) {
    clusters.sort_unstable();
    for chunk in clusters.chunks(length.max(1)) {
        out.push(Group {
            name: name.to_string(),
            clusters: chunk.to_vec(),
        });
    }
}

/// Upstream's `calculateLength`.
fn group_length(value: Option<&IntOrString>, total: usize) -> Result<usize, Misconfiguration> {
    let length: i64 = match value {
        None => total as i64,
        Some(IntOrString::Int(n)) => i64::from(*n),
        Some(IntOrString::String(s)) => {
            let invalid = || {
                Misconfiguration::new("", format!("{s} invalid type: string is not a percentage"))
            };
            let percent = s.strip_suffix('%').ok_or_else(invalid)?;
            let p: f64 = percent.parse().map_err(|_| invalid())?;
            let l = (p / 100.0 * total as f64).ceil();
            if l.is_nan() { 0 } else { l as i64 }
        }
    };
    if length <= 0 || length > total as i64 {
        return Ok(total);
    }
    Ok(length as usize)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::group_length;

    #[test]
    fn group_length_follows_upstream() {
        let s = |v: &str| Some(IntOrString::String(v.to_string()));
        let cases: Vec<(Option<IntOrString>, usize, Result<usize, String>)> = vec![
            (None, 7, Ok(7)),
            (Some(IntOrString::Int(3)), 7, Ok(3)),
            (Some(IntOrString::Int(0)), 7, Ok(7)),
            (Some(IntOrString::Int(-2)), 7, Ok(7)),
            (Some(IntOrString::Int(9)), 7, Ok(7)),
            (s("25%"), 7, Ok(2)),
            (s("50%"), 7, Ok(4)),
            (s("100%"), 7, Ok(7)),
            (s("150%"), 7, Ok(7)),
            (s("1%"), 0, Ok(0)),
            (
                s("abc"),
                7,
                Err(":abc invalid type: string is not a percentage".into()),
            ),
            (
                s("x%"),
                7,
                Err(":x% invalid type: string is not a percentage".into()),
            ),
        ];
        for (value, total, want) in cases {
            let got = group_length(value.as_ref(), total).map_err(|e| e.to_string());
            assert_eq!(got, want, "{value:?} of {total}");
        }
    }
}

//! Pure functions of the status the agent reports on its ManagedCluster: resources summed over
//! nodes, cluster claims, availability, and the merge patch between two statuses.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use ocm_api::cluster::names::claims::RESERVED;
use ocm_api::cluster::names::conditions;
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterClaim, ManagedClusterStatus};
use ocm_runtime::conditions::is_true;
use serde_json::{Map, Value, json};

/// How long the spoke API server health check must keep failing before the cluster is
/// reported unavailable (upstream: 20 s).
pub const UNAVAILABLE_AFTER: Duration = Duration::from_secs(20);

/// How often the health check is retried while it fails (upstream: 5 s).
pub const RETRY_WHILE_FAILING: Duration = Duration::from_secs(5);

/// A ClusterClaim as the status sync sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Claim name.
    pub name: String,
    /// Claim value.
    pub value: String,
    /// Labelled `open-cluster-management.io/spoke-only`: not reported.
    pub spoke_only: bool,
}

/// The claims to report: reserved claims (well-known names and names ending in one of
/// `reserved_suffixes`) first, sorted by name, then custom claims sorted by name and cut to
/// `max_custom`. Spoke-only claims are left out.
pub fn reported_claims(
    claims: &[Claim],
    max_custom: usize,
    reserved_suffixes: &[String],
) -> Vec<ManagedClusterClaim> {
    let is_reserved = |name: &str| {
        RESERVED.contains(&name)
            || reserved_suffixes
                .iter()
                .any(|s| !s.is_empty() && name.ends_with(s.as_str()))
    };
    let mut reserved = Vec::new();
    let mut custom = Vec::new();
    for claim in claims.iter().filter(|c| !c.spoke_only) {
        let out = ManagedClusterClaim {
            name: claim.name.clone(),
            value: claim.value.clone(),
        };
        if is_reserved(&claim.name) {
            reserved.push(out);
        } else {
            custom.push(out);
        }
    }
    reserved.sort_by(|a, b| a.name.cmp(&b.name));
    custom.sort_by(|a, b| a.name.cmp(&b.name));
    custom.truncate(max_custom);
    reserved.extend(custom);
    reserved
}

/// ClusterProperties and ClusterClaims as one list of claims: every reported property, then
/// the claims whose name no reported property has (a property wins, as upstream). Spoke-only
/// ones are not reported, so they shadow nothing.
pub fn with_properties(properties: Vec<Claim>, claims: Vec<Claim>) -> Vec<Claim> {
    let mut out: Vec<Claim> = properties.into_iter().filter(|p| !p.spoke_only).collect();
    let taken: std::collections::HashSet<String> = out.iter().map(|p| p.name.clone()).collect();
    out.extend(claims.into_iter().filter(|c| !taken.contains(&c.name)));
    out
}

/// Sum of node capacity (all nodes) and allocatable (schedulable nodes only).
pub fn node_resources(nodes: &[Node]) -> (BTreeMap<String, Quantity>, BTreeMap<String, Quantity>) {
    let mut capacity: BTreeMap<String, Sum> = BTreeMap::new();
    let mut allocatable: BTreeMap<String, Sum> = BTreeMap::new();
    for node in nodes {
        let Some(status) = &node.status else { continue };
        for (name, q) in status.capacity.iter().flatten() {
            add(&mut capacity, name, q);
        }
        let unschedulable = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        if !unschedulable {
            for (name, q) in status.allocatable.iter().flatten() {
                add(&mut allocatable, name, q);
            }
        }
    }
    let finish = |m: BTreeMap<String, Sum>| {
        m.into_iter()
            .map(|(k, s)| (k, Quantity(s.format())))
            .collect()
    };
    (finish(capacity), finish(allocatable))
}

/// Capacity to report: the current capacity (keys set by others are kept) with the node sums
/// written over it.
pub fn merged_capacity(
    current: &BTreeMap<String, Quantity>,
    nodes: BTreeMap<String, Quantity>,
) -> BTreeMap<String, Quantity> {
    let mut out = current.clone();
    out.extend(nodes);
    out
}

#[derive(Default)]
struct Sum {
    milli: i128,
    binary: bool,
}

fn add(map: &mut BTreeMap<String, Sum>, name: &str, q: &Quantity) {
    let Some((milli, binary)) = parse_quantity(&q.0) else {
        tracing::debug!(
            resource = name,
            quantity = q.0,
            "unparsable quantity ignored"
        );
        return;
    };
    let entry = map
        .entry(name.to_owned())
        .or_insert_with(|| Sum { milli: 0, binary });
    entry.milli += milli;
}

const BINARY: [(&str, u32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];
const DECIMAL: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// A Kubernetes quantity in thousandths (rounded up), and whether it used a binary suffix.
pub fn parse_quantity(text: &str) -> Option<(i128, bool)> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let negative = int_part.starts_with('-');
    let int_digits = int_part.trim_start_matches(['+', '-']);
    if int_digits.is_empty() && frac_part.is_empty() {
        return None;
    }
    // Value as digits / 10^frac_len.
    let digits: String = format!("{int_digits}{frac_part}");
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let mut scale_den: i128 = 10i128.checked_pow(u32::try_from(frac_part.len()).ok()?)?;
    let mut multiplier: i128 = 1000; // to milli-units
    let mut binary = false;
    if suffix.is_empty() {
    } else if let Some((_, p)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        multiplier = multiplier.checked_mul(1024i128.checked_pow(*p)?)?;
        binary = true;
    } else if let Some((_, e)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        apply_exponent(&mut multiplier, &mut scale_den, *e)?;
    } else if let Some(exp) = suffix.strip_prefix(['e', 'E']) {
        apply_exponent(&mut multiplier, &mut scale_den, exp.parse().ok()?)?;
    } else {
        return None;
    }
    let numerator = mantissa.checked_mul(multiplier)?;
    let value = (numerator + scale_den - 1) / scale_den;
    Some((if negative { -value } else { value }, binary))
}

fn apply_exponent(multiplier: &mut i128, den: &mut i128, exp: i32) -> Option<()> {
    let pow = 10i128.checked_pow(exp.unsigned_abs())?;
    if exp >= 0 {
        *multiplier = multiplier.checked_mul(pow)?;
    } else {
        *den = den.checked_mul(pow)?;
    }
    Some(())
}

impl Sum {
    /// Canonical text, as Kubernetes prints a quantity.
    fn format(&self) -> String {
        if self.milli % 1000 != 0 {
            return format!("{}m", self.milli);
        }
        let v = self.milli / 1000;
        if v == 0 {
            return "0".into();
        }
        if self.binary {
            for (suffix, p) in BINARY.iter().rev() {
                let unit = 1024i128.pow(*p);
                if v % unit == 0 {
                    return format!("{}{suffix}", v / unit);
                }
            }
            return v.to_string();
        }
        for (suffix, e) in DECIMAL.iter().rev().filter(|(_, e)| *e > 0) {
            let unit = 10i128.pow(e.unsigned_abs());
            if v % unit == 0 {
                return format!("{}{suffix}", v / unit);
            }
        }
        v.to_string()
    }
}

/// Availability of the spoke API server as the health checks have seen it.
#[derive(Clone, Debug, Default)]
pub struct Availability {
    /// When the current run of failed checks started.
    pub failing_since: Option<std::time::Instant>,
}

/// What to report for a health check result at `now`: `Some((status, reason, message))`, or
/// `None` to keep the current condition (failures shorter than [`UNAVAILABLE_AFTER`]).
pub fn availability(
    state: &mut Availability,
    probe: Result<(), String>,
    now: std::time::Instant,
) -> Option<(&'static str, &'static str, String)> {
    use ocm_api::cluster::names::conditions::available;
    match probe {
        Ok(()) => {
            state.failing_since = None;
            Some((
                "True",
                available::AVAILABLE,
                "Managed cluster is available".into(),
            ))
        }
        Err(err) => {
            let since = *state.failing_since.get_or_insert(now);
            if now.duration_since(since) >= UNAVAILABLE_AFTER {
                Some((
                    "False",
                    available::KUBE_APISERVER_UNAVAILABLE,
                    format!("The kube-apiserver is not ok, {err}"),
                ))
            } else {
                None
            }
        }
    }
}

/// The JSON merge patch turning status `old` into `new` (fields the agent writes only), or
/// `None` when nothing changed. Maps get `null` for removed keys; lists are replaced whole.
pub fn status_patch(old: &ManagedClusterStatus, new: &ManagedClusterStatus) -> Option<Value> {
    let mut status = Map::new();
    if old.conditions != new.conditions {
        status.insert("conditions".into(), json!(new.conditions));
    }
    for (field, o, n) in [
        ("capacity", &old.capacity, &new.capacity),
        ("allocatable", &old.allocatable, &new.allocatable),
    ] {
        if o != n {
            let mut m = Map::new();
            for k in o.keys().filter(|k| !n.contains_key(*k)) {
                m.insert(k.clone(), Value::Null);
            }
            for (k, v) in n.iter().filter(|(k, v)| o.get(*k) != Some(*v)) {
                m.insert(k.clone(), json!(v));
            }
            status.insert(field.into(), Value::Object(m));
        }
    }
    if old.version != new.version {
        status.insert("version".into(), json!(new.version));
    }
    if old.cluster_claims != new.cluster_claims {
        status.insert("clusterClaims".into(), json!(new.cluster_claims));
    }
    if old.managed_namespaces != new.managed_namespaces {
        status.insert("managedNamespaces".into(), json!(new.managed_namespaces));
    }
    if status.is_empty() {
        None
    } else {
        Some(json!({ "status": status }))
    }
}

/// Whether the hub accepted the cluster (its accepted condition is True).
pub(super) fn accepted(cluster: &ManagedCluster) -> bool {
    cluster
        .status
        .as_ref()
        .is_some_and(|s| is_true(&s.conditions, conditions::HUB_ACCEPTED))
}

/// Whether the hub accepted `cluster` and finished preparing it (its namespace and the
/// agent's RBAC exist once the accepted condition is True).
pub(crate) fn accepted_and_prepared(cluster: &ManagedCluster) -> bool {
    cluster.spec.hub_accepts_client && accepted(cluster)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ocm_api::cluster::v1::ManagedClusterVersion;

    fn claim(name: &str, spoke_only: bool) -> Claim {
        Claim {
            name: name.into(),
            value: format!("v-{name}"),
            spoke_only,
        }
    }

    #[test]
    fn accepted_means_accepted_by_the_admin_and_prepared_by_the_hub() {
        let accepted_condition = |status: &str| ocm_api::cluster::v1::ManagedClusterStatus {
            conditions: vec![ocm_runtime::conditions::condition(
                conditions::HUB_ACCEPTED,
                status,
                "HubClusterAdminAccepted",
                "Accepted by hub cluster admin",
                None,
            )],
            ..Default::default()
        };
        let mut cluster = ManagedCluster::new("c1", Default::default());
        assert!(!accepted_and_prepared(&cluster));
        // Accepted by the admin, not yet prepared by the hub.
        cluster.spec.hub_accepts_client = true;
        assert!(!accepted_and_prepared(&cluster));
        cluster.status = Some(accepted_condition("True"));
        assert!(accepted_and_prepared(&cluster));
        // Denied again while the condition still says True.
        cluster.spec.hub_accepts_client = false;
        assert!(!accepted_and_prepared(&cluster));
        cluster.spec.hub_accepts_client = true;
        cluster.status = Some(accepted_condition("False"));
        assert!(!accepted_and_prepared(&cluster));
    }

    #[test]
    fn properties_win_over_claims_of_the_same_name() {
        let property = |name: &str, value: &str, spoke_only: bool| Claim {
            name: name.into(),
            value: value.into(),
            spoke_only,
        };
        let merged = with_properties(
            vec![
                property("prop1", "from-property", false),
                property("hidden", "p", true),
            ],
            vec![
                property("prop1", "from-claim", false),
                property("hidden", "from-claim", false),
                property("other", "c", false),
            ],
        );
        let out = reported_claims(&merged, 20, &[]);
        let pairs: Vec<(&str, &str)> = out
            .iter()
            .map(|c| (c.name.as_str(), c.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("hidden", "from-claim"),
                ("other", "c"),
                ("prop1", "from-property")
            ]
        );
    }

    #[test]
    fn reserved_claims_come_first_and_custom_ones_are_sorted_and_truncated() {
        let claims = vec![
            claim("zeta", false),
            claim("alpha", false),
            claim("platform.open-cluster-management.io", false),
            claim("secret", true),
            claim("id.k8s.io", false),
            claim("beta", false),
            claim("x.mine.io", false),
        ];
        let out = reported_claims(&claims, 2, &["mine.io".into()]);
        let names: Vec<_> = out.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "id.k8s.io",
                "platform.open-cluster-management.io",
                "x.mine.io",
                "alpha",
                "beta"
            ]
        );
        assert_eq!(out[0].value, "v-id.k8s.io");
    }

    #[test]
    fn quantities_parse_and_sum_canonically() {
        assert_eq!(parse_quantity("4"), Some((4000, false)));
        assert_eq!(parse_quantity("500m"), Some((500, false)));
        assert_eq!(parse_quantity("1Gi"), Some((1024i128.pow(3) * 1000, true)));
        assert_eq!(parse_quantity("1.5"), Some((1500, false)));
        assert_eq!(parse_quantity("2e3"), Some((2_000_000, false)));
        assert_eq!(parse_quantity("1k"), Some((1_000_000, false)));
        assert_eq!(parse_quantity("bogus"), None);
        let node = |cpu: &str, mem: &str, unschedulable: bool| -> Node {
            serde_json::from_value(json!({
                "metadata": {"name": "n"},
                "spec": {"unschedulable": unschedulable},
                "status": {
                    "capacity": {"cpu": cpu, "memory": mem, "pods": "110"},
                    "allocatable": {"cpu": cpu, "memory": mem, "pods": "110"},
                }
            }))
            .unwrap()
        };
        let (cap, alloc) = node_resources(&[
            node("4", "8Gi", false),
            node("2500m", "8Gi", true),
            node("2", "1024Mi", false),
        ]);
        assert_eq!(cap["cpu"].0, "8500m");
        assert_eq!(cap["memory"].0, "17Gi");
        assert_eq!(cap["pods"].0, "330");
        assert_eq!(alloc["cpu"].0, "6");
        assert_eq!(alloc["memory"].0, "9Gi");
        assert_eq!(alloc["pods"].0, "220");
    }

    #[test]
    fn capacity_keeps_keys_set_by_others() {
        let current = BTreeMap::from([
            ("cpu".to_owned(), Quantity("1".into())),
            ("gpu.example.com".to_owned(), Quantity("2".into())),
        ]);
        let merged = merged_capacity(
            &current,
            BTreeMap::from([("cpu".to_owned(), Quantity("8".into()))]),
        );
        assert_eq!(merged["cpu"].0, "8");
        assert_eq!(merged["gpu.example.com"].0, "2");
    }

    #[test]
    fn availability_turns_false_only_after_failures_persist() {
        let mut state = Availability::default();
        let t0 = std::time::Instant::now();
        assert_eq!(availability(&mut state, Ok(()), t0).unwrap().0, "True");
        assert!(availability(&mut state, Err("down".into()), t0).is_none());
        assert!(
            availability(&mut state, Err("down".into()), t0 + Duration::from_secs(10)).is_none()
        );
        let (status, reason, _) =
            availability(&mut state, Err("down".into()), t0 + UNAVAILABLE_AFTER).unwrap();
        assert_eq!(
            (status, reason),
            ("False", "ManagedClusterKubeAPIServerUnavailable")
        );
        assert_eq!(
            availability(&mut state, Ok(()), t0 + UNAVAILABLE_AFTER)
                .unwrap()
                .0,
            "True"
        );
        assert!(state.failing_since.is_none());
    }

    #[test]
    fn status_patch_is_empty_when_nothing_changed_and_minimal_otherwise() {
        let old = ManagedClusterStatus {
            capacity: BTreeMap::from([
                ("cpu".to_owned(), Quantity("1".into())),
                ("memory".to_owned(), Quantity("1Gi".into())),
            ]),
            allocatable: BTreeMap::from([("cpu".to_owned(), Quantity("1".into()))]),
            ..Default::default()
        };
        assert_eq!(status_patch(&old, &old.clone()), None);
        let mut new = old.clone();
        new.capacity.insert("cpu".into(), Quantity("2".into()));
        new.allocatable.clear();
        new.version = Some(ManagedClusterVersion {
            kubernetes: "v1.33.0".into(),
        });
        let patch = status_patch(&old, &new).unwrap();
        assert_eq!(
            patch,
            json!({"status": {
                "capacity": {"cpu": "2"},
                "allocatable": {"cpu": null},
                "version": {"kubernetes": "v1.33.0"},
            }})
        );
    }
}

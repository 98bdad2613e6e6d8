//! What the ClusterProfiles of the fleet must look like — pure, no I/O.
//!
//! - Which profiles exist: one per ManagedCluster (named after it) in every namespace where a
//!   ManagedClusterSetBinding that is `Bound` binds a set selecting that cluster; clusters
//!   being deleted, and clusters the hub does not accept (`hubAcceptsClient` false), get none —
//!   a fleet's consumers see only clusters both sides agreed to (upstream OCM also lists
//!   unaccepted ones). Several sets bound in one namespace give one profile.
//! - Only profiles labelled `x-k8s.io/cluster-manager=open-cluster-management` are ours to
//!   delete, and only those whose `spec.clusterManager.name` is `open-cluster-management` get
//!   their status and labels kept up to date: a profile another fleet manager made is never
//!   touched.
//! - Status: `version.kubernetes` from the cluster's, `properties` from its claims (which
//!   carry its ClusterProperties too), `ControlPlaneHealthy` from
//!   `ManagedClusterConditionAvailable` and `Joined` from `ManagedClusterJoined`; the access
//!   providers are left to whoever publishes them (the cluster-proxy).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::ResourceExt;
use kube::core::SelectorExt;
use ocm_api::cluster::names::conditions::{AVAILABLE, BOUND, JOINED};
use ocm_api::cluster::names::labels::CLUSTER_SET;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::multicluster::v1alpha1::{
    ClusterManager, ClusterProfile, ClusterProfileSpec, ClusterProfileStatus, ClusterVersion,
    Property,
};
use ocm_api::multicluster::{
    CLUSTER_MANAGER_NAME, CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, LABEL_CLUSTER_MANAGER,
    LABEL_CLUSTER_NAME, LABEL_CLUSTER_SET,
};
use ocm_runtime::conditions::{find_condition, is_true, set_condition};
use serde_json::Value;

use super::super::clustersets::member_selector;

/// A profile's place: (namespace, cluster name).
pub(crate) type ProfileKey = (String, String);

/// The profiles that must exist: for every bound binding, the clusters its set selects.
pub(crate) fn desired_profiles<'a>(
    bindings: impl IntoIterator<Item = &'a ManagedClusterSetBinding>,
    sets: &HashMap<String, &ManagedClusterSet>,
    clusters: &[&ManagedCluster],
) -> BTreeSet<ProfileKey> {
    let mut out = BTreeSet::new();
    for binding in bindings {
        let bound = binding
            .status
            .as_ref()
            .is_some_and(|s| is_true(&s.conditions, BOUND));
        let Some(namespace) = binding.namespace() else {
            continue;
        };
        if !bound || binding.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(set) = sets.get(&binding.spec.cluster_set) else {
            continue;
        };
        let Some(selector) = member_selector(set) else {
            continue;
        };
        for cluster in clusters {
            if cluster.metadata.deletion_timestamp.is_none()
                && cluster.spec.hub_accepts_client
                && selector.matches(cluster.labels())
            {
                out.insert((namespace.clone(), cluster.name_any()));
            }
        }
    }
    out
}

/// Whether the profile carries OCM's cluster-manager label (the only ones created and
/// deleted here).
pub(crate) fn labelled_ours(profile: &ClusterProfile) -> bool {
    profile
        .labels()
        .get(LABEL_CLUSTER_MANAGER)
        .is_some_and(|v| v == CLUSTER_MANAGER_NAME)
}

/// Whether the profile names OCM as its cluster manager (the only ones whose status and
/// labels are kept here).
pub(crate) fn managed_by_us(profile: &ClusterProfile) -> bool {
    profile.spec.cluster_manager.name == CLUSTER_MANAGER_NAME
}

/// The cluster a profile describes: its cluster-name label, else its name.
pub(crate) fn cluster_of(profile: &ClusterProfile) -> String {
    profile
        .labels()
        .get(LABEL_CLUSTER_NAME)
        .cloned()
        .unwrap_or_else(|| profile.name_any())
}

/// Profiles to create and to delete.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Missing profiles.
    pub create: Vec<ProfileKey>,
    /// Profiles of ours that no bound set asks for any more.
    pub delete: Vec<ProfileKey>,
}

/// Compares the desired profiles with the existing ones (only those [`labelled_ours`] count).
pub(crate) fn plan<'a>(
    desired: &BTreeSet<ProfileKey>,
    existing: impl IntoIterator<Item = &'a ClusterProfile>,
) -> Plan {
    let existing: BTreeSet<ProfileKey> = existing
        .into_iter()
        .filter(|p| labelled_ours(p))
        .filter_map(|p| Some((p.namespace()?, p.name_any())))
        .collect();
    Plan {
        create: desired.difference(&existing).cloned().collect(),
        delete: existing.difference(desired).cloned().collect(),
    }
}

/// A new profile for `cluster` in `namespace`, as created (its status comes later).
pub(crate) fn new_profile(namespace: &str, cluster: &str) -> ClusterProfile {
    ClusterProfile {
        metadata: ObjectMeta {
            name: Some(cluster.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([
                (
                    LABEL_CLUSTER_MANAGER.to_owned(),
                    CLUSTER_MANAGER_NAME.to_owned(),
                ),
                (LABEL_CLUSTER_NAME.to_owned(), cluster.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        spec: ClusterProfileSpec {
            display_name: Some(cluster.to_owned()),
            cluster_manager: ClusterManager {
                name: CLUSTER_MANAGER_NAME.to_owned(),
            },
        },
        status: None,
    }
}

/// The profile's status as it must be for `cluster`, or `None` when it already is.
pub(crate) fn desired_status(
    cluster: &ManagedCluster,
    current: Option<&ClusterProfileStatus>,
) -> Option<ClusterProfileStatus> {
    let mut next = current.cloned().unwrap_or_default();
    let status = cluster.status.as_ref();
    let kubernetes = status
        .and_then(|s| s.version.as_ref())
        .map(|v| v.kubernetes.clone())
        .filter(|v| !v.is_empty());
    next.version = Some(ClusterVersion { kubernetes });
    // Properties must have a non-empty name and value; a claim without one is left out
    // rather than failing the whole status.
    next.properties = status
        .map(|s| s.cluster_claims.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|c| !c.name.is_empty() && !c.value.is_empty())
        .map(|c| Property {
            name: c.name.clone(),
            value: c.value.clone(),
            last_observed_time: None,
        })
        .collect();
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    for (from, to) in [
        (AVAILABLE, CONDITION_CONTROL_PLANE_HEALTHY),
        (JOINED, CONDITION_JOINED),
    ] {
        // A condition the cluster does not have leaves the profile's as it is.
        if let Some(source) = find_condition(conditions, from) {
            set_condition(&mut next.conditions, copied(source, to));
        }
    }
    let unchanged = current.is_some_and(|c| same_status(c, &next));
    (!unchanged).then_some(next)
}

/// `source` under another type, keeping its status, reason, message and transition time.
fn copied(source: &Condition, type_: &str) -> Condition {
    Condition {
        type_: type_.to_owned(),
        observed_generation: None,
        ..source.clone()
    }
}

/// Equal as the API server would store them: an empty version is the same as none.
fn same_status(a: &ClusterProfileStatus, b: &ClusterProfileStatus) -> bool {
    let norm = |s: &ClusterProfileStatus| {
        let mut s = s.clone();
        if s.version
            .as_ref()
            .is_some_and(|v| v.kubernetes.as_deref().is_none_or(str::is_empty))
        {
            s.version = None;
        }
        s
    };
    norm(a) == norm(b)
}

/// The label changes (a merge patch's `metadata.labels`) that bring the profile's labels in
/// line with its cluster; empty when none are needed. Other labels stay.
pub(crate) fn label_patch(
    cluster: &ManagedCluster,
    profile: &ClusterProfile,
) -> BTreeMap<String, Value> {
    let set = cluster
        .labels()
        .get(CLUSTER_SET)
        .cloned()
        .unwrap_or_default();
    let wanted = [
        (LABEL_CLUSTER_MANAGER, CLUSTER_MANAGER_NAME.to_owned()),
        (LABEL_CLUSTER_SET, set),
        (LABEL_CLUSTER_NAME, cluster.name_any()),
    ];
    let labels = profile.labels();
    wanted
        .into_iter()
        .filter(|(key, value)| labels.get(*key) != Some(value))
        .map(|(key, value)| (key.to_owned(), Value::String(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
    use ocm_api::cluster::v1::{
        ManagedClusterClaim, ManagedClusterSpec, ManagedClusterStatus, ManagedClusterVersion,
    };
    use ocm_api::cluster::v1beta2::{
        ManagedClusterSelector, ManagedClusterSetBindingSpec, ManagedClusterSetBindingStatus,
        ManagedClusterSetSpec, SelectorType,
    };

    fn cluster(name: &str, labels: &[(&str, &str)]) -> ManagedCluster {
        let mut c = ManagedCluster::new(
            name,
            ManagedClusterSpec {
                hub_accepts_client: true,
                ..ManagedClusterSpec::default()
            },
        );
        c.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        c
    }

    fn exclusive_set(name: &str) -> ManagedClusterSet {
        ManagedClusterSet::new(name, ManagedClusterSetSpec::default())
    }

    fn selector_set(name: &str, selector: LabelSelector) -> ManagedClusterSet {
        ManagedClusterSet::new(
            name,
            ManagedClusterSetSpec {
                cluster_selector: Some(ManagedClusterSelector {
                    selector_type: SelectorType::LabelSelector,
                    label_selector: Some(selector),
                }),
                managed_namespaces: Vec::new(),
            },
        )
    }

    fn binding(namespace: &str, set: &str, bound: bool) -> ManagedClusterSetBinding {
        let mut b = ManagedClusterSetBinding::new(
            set,
            ManagedClusterSetBindingSpec {
                cluster_set: set.to_owned(),
            },
        );
        b.metadata.namespace = Some(namespace.to_owned());
        b.status = Some(ManagedClusterSetBindingStatus {
            conditions: vec![ocm_runtime::conditions::condition(
                BOUND,
                if bound { "True" } else { "False" },
                "R",
                "",
                None,
            )],
        });
        b
    }

    fn key(ns: &str, c: &str) -> ProfileKey {
        (ns.to_owned(), c.to_owned())
    }

    #[test]
    fn bound_sets_decide_which_namespaces_get_which_clusters() {
        let c1 = cluster("c1", &[(CLUSTER_SET, "east")]);
        let c2 = cluster("c2", &[(CLUSTER_SET, "west"), ("env", "prod")]);
        let mut c3 = cluster("c3", &[(CLUSTER_SET, "east")]);
        c3.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        let mut c4 = cluster("c4", &[(CLUSTER_SET, "east")]);
        c4.spec.hub_accepts_client = false;
        let east = exclusive_set("east");
        let prod = selector_set(
            "prod",
            LabelSelector {
                match_labels: Some([("env".to_owned(), "prod".to_owned())].into()),
                ..LabelSelector::default()
            },
        );
        let global = selector_set("global", LabelSelector::default());
        let sets: HashMap<String, &ManagedClusterSet> = [
            ("east".to_owned(), &east),
            ("prod".to_owned(), &prod),
            ("global".to_owned(), &global),
        ]
        .into();
        let clusters = [&c1, &c2, &c3, &c4];
        let bindings = [
            binding("team-a", "east", true),
            binding("team-a", "prod", true),
            binding("team-b", "prod", true),
            binding("team-c", "global", false),
            binding("team-d", "missing", true),
        ];
        let desired = desired_profiles(&bindings, &sets, &clusters);
        assert_eq!(
            desired,
            [
                key("team-a", "c1"),
                key("team-a", "c2"),
                key("team-b", "c2")
            ]
            .into()
        );
    }

    #[test]
    fn plan_creates_missing_and_deletes_only_our_stale_profiles() {
        let desired: BTreeSet<ProfileKey> = [key("a", "c1"), key("a", "c2")].into();
        let ours_stale = new_profile("a", "c3");
        let ours_kept = new_profile("a", "c1");
        let mut foreign = new_profile("a", "c4");
        foreign.metadata.labels =
            Some([(LABEL_CLUSTER_MANAGER.to_owned(), "other".to_owned())].into());
        let plan = plan(&desired, [&ours_stale, &ours_kept, &foreign]);
        assert_eq!(
            plan,
            Plan {
                create: vec![key("a", "c2")],
                delete: vec![key("a", "c3")],
            }
        );
    }

    fn joined_available(c: &mut ManagedCluster, available: &str) {
        c.status = Some(ManagedClusterStatus {
            version: Some(ManagedClusterVersion {
                kubernetes: "v1.26.0".to_owned(),
            }),
            cluster_claims: vec![
                ManagedClusterClaim {
                    name: "platform.open-cluster-management.io".to_owned(),
                    value: "gcp".to_owned(),
                },
                ManagedClusterClaim {
                    name: "region.open-cluster-management.io".to_owned(),
                    value: "us-west1".to_owned(),
                },
                ManagedClusterClaim {
                    name: "empty".to_owned(),
                    value: String::new(),
                },
            ],
            conditions: vec![
                ocm_runtime::conditions::condition(
                    AVAILABLE,
                    available,
                    "ManagedClusterAvailable",
                    "Managed cluster is available",
                    None,
                ),
                ocm_runtime::conditions::condition(
                    JOINED,
                    "True",
                    "ManagedClusterJoined",
                    "Managed cluster joined",
                    None,
                ),
            ],
            ..ManagedClusterStatus::default()
        });
    }

    #[test]
    fn status_follows_the_cluster_and_settles() {
        let mut c = cluster("c1", &[]);
        joined_available(&mut c, "True");
        let status = desired_status(&c, None).expect("a new profile gets a status");
        assert_eq!(
            status
                .version
                .as_ref()
                .and_then(|v| v.kubernetes.as_deref()),
            Some("v1.26.0")
        );
        let props: Vec<_> = status
            .properties
            .iter()
            .map(|p| (p.name.as_str(), p.value.as_str()))
            .collect();
        assert_eq!(
            props,
            [
                ("platform.open-cluster-management.io", "gcp"),
                ("region.open-cluster-management.io", "us-west1")
            ]
        );
        let healthy = find_condition(&status.conditions, CONDITION_CONTROL_PLANE_HEALTHY)
            .expect("ControlPlaneHealthy");
        assert_eq!(
            (
                healthy.status.as_str(),
                healthy.reason.as_str(),
                healthy.message.as_str()
            ),
            (
                "True",
                "ManagedClusterAvailable",
                "Managed cluster is available"
            )
        );
        assert!(find_condition(&status.conditions, CONDITION_JOINED).is_some());
        // Nothing to write a second time.
        assert_eq!(desired_status(&c, Some(&status)), None);
        // Availability lost: the condition follows.
        joined_available(&mut c, "Unknown");
        let next = desired_status(&c, Some(&status)).expect("changed");
        assert_eq!(
            find_condition(&next.conditions, CONDITION_CONTROL_PLANE_HEALTHY)
                .map(|c| c.status.as_str()),
            Some("Unknown")
        );
    }

    #[test]
    fn status_keeps_access_providers_and_absent_conditions() {
        let c = cluster("c1", &[]);
        let current = ClusterProfileStatus {
            access_providers: vec![ocm_api::multicluster::v1alpha1::AccessProvider {
                name: "open-cluster-management".to_owned(),
                cluster: None,
            }],
            conditions: vec![ocm_runtime::conditions::condition(
                CONDITION_JOINED,
                "True",
                "ManagedClusterJoined",
                "",
                None,
            )],
            ..ClusterProfileStatus::default()
        };
        // A cluster without status: version and properties empty, the rest kept.
        assert_eq!(desired_status(&c, Some(&current)), None);
        let mut with_version = current.clone();
        with_version.version = Some(ClusterVersion {
            kubernetes: Some("v1.30.0".to_owned()),
        });
        let next = desired_status(&c, Some(&with_version)).expect("version cleared");
        assert_eq!(next.access_providers, current.access_providers);
        assert_eq!(next.conditions, current.conditions);
    }

    #[test]
    fn labels_follow_the_cluster_and_keep_others() {
        let c = cluster("c1", &[(CLUSTER_SET, "east")]);
        let mut p = new_profile("ns", "c1");
        assert_eq!(
            label_patch(&c, &p),
            [(
                LABEL_CLUSTER_SET.to_owned(),
                Value::String("east".to_owned())
            )]
            .into()
        );
        p.labels_mut()
            .insert(LABEL_CLUSTER_SET.to_owned(), "east".to_owned());
        p.labels_mut().insert("team".to_owned(), "x".to_owned());
        assert!(label_patch(&c, &p).is_empty());
        let no_set = cluster("c1", &[]);
        assert_eq!(
            label_patch(&no_set, &p),
            [(LABEL_CLUSTER_SET.to_owned(), Value::String(String::new()))].into()
        );
    }

    #[test]
    fn only_profiles_naming_ocm_are_managed() {
        let mut p = new_profile("ns", "c1");
        assert!(managed_by_us(&p) && labelled_ours(&p));
        assert_eq!(cluster_of(&p), "c1");
        p.spec.cluster_manager.name = "other".to_owned();
        assert!(!managed_by_us(&p));
    }
}

//! What the acceptance controller last saw of the objects it writes, kept as fingerprints.
//!
//! Acceptance is reconciled on every change of a ManagedCluster — the agent's status updates,
//! conditions, claims — and each pass wants the cluster namespace and five RBAC objects in
//! place. Applying all of them every time made no-op server-side applies most of the hub's
//! work while a fleet joins. Instead, the objects' own watch events record a fingerprint of
//! the fields acceptance sets (its labels' values, its finalizer, the rules, the role
//! reference and subjects); a pass applies only what is missing or differs. The same events
//! trigger the owning cluster's reconcile after they are recorded, so an object deleted or
//! changed by someone else is applied again. Fingerprints, not objects: at 10,000 clusters the
//! record is a few MiB where cached copies would be tens.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::Resource;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

/// An object acceptance writes: which of its fields acceptance owns besides metadata.
pub(crate) trait Written: Resource {
    /// The owned fields outside metadata, as JSON (`Null` when there are none).
    fn owned_body(&self) -> Value;
}

impl Written for Namespace {
    fn owned_body(&self) -> Value {
        Value::Null
    }
}

impl Written for ClusterRole {
    fn owned_body(&self) -> Value {
        json!([self.rules, self.aggregation_rule])
    }
}

impl Written for ClusterRoleBinding {
    fn owned_body(&self) -> Value {
        json!([self.role_ref, self.subjects])
    }
}

impl Written for RoleBinding {
    fn owned_body(&self) -> Value {
        json!([self.role_ref, self.subjects])
    }
}

/// Which labels and finalizers acceptance sets; only they enter a fingerprint, so labels or
/// finalizers others add do not make an object differ.
#[derive(Debug, Clone, Default)]
pub(crate) struct Owned {
    /// Label keys acceptance sets.
    pub labels: Vec<String>,
    /// Finalizers acceptance may set.
    pub finalizers: Vec<String>,
}

/// The fingerprint of `object`'s owned fields: equal for the desired object and a stored one
/// exactly when applying the desired one would change nothing acceptance owns. An object being
/// deleted never matches a desired one.
pub(crate) fn fingerprint<K: Written>(object: &K, owned: &Owned) -> u64 {
    let meta = object.meta();
    let labels: BTreeMap<&str, Option<&str>> = owned
        .labels
        .iter()
        .map(|key| {
            let value = meta
                .labels
                .as_ref()
                .and_then(|l| l.get(key))
                .map(String::as_str);
            (key.as_str(), value)
        })
        .collect();
    let finalizers: Vec<bool> = owned
        .finalizers
        .iter()
        .map(|f| meta.finalizers.as_ref().is_some_and(|all| all.contains(f)))
        .collect();
    let mut hasher = DefaultHasher::new();
    labels.hash(&mut hasher);
    finalizers.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    object.owned_body().to_string().hash(&mut hasher);
    hasher.finish()
}

/// The key of an object in a record: `namespace/name`, or `name` for cluster-scoped ones.
fn key<K: Resource>(object: &K) -> String {
    let meta = object.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

#[derive(Debug, Default)]
struct Record {
    /// Fingerprint per object, from the events seen so far.
    seen: HashMap<String, u64>,
    /// Keys listed by a relist in progress; the others leave when it ends.
    relisting: Option<HashSet<String>>,
    /// True once a first list has completed; before, nothing is known to be in place.
    listed: bool,
}

/// Fingerprints of one kind's objects, kept from its watch events.
#[derive(Debug)]
pub(crate) struct Observed {
    owned: Owned,
    record: Mutex<Record>,
}

impl Observed {
    /// An empty record counting the given owned fields.
    pub(crate) fn new(owned: Owned) -> Self {
        Self {
            owned,
            record: Mutex::new(Record::default()),
        }
    }

    /// Takes in one watch event.
    pub(crate) fn record<K: Written>(&self, event: &Event<K>) {
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        match event {
            Event::Init => record.relisting = Some(HashSet::new()),
            Event::InitApply(object) => {
                let key = key(object);
                if let Some(listed) = record.relisting.as_mut() {
                    listed.insert(key.clone());
                }
                record.seen.insert(key, fingerprint(object, &self.owned));
            }
            Event::InitDone => {
                if let Some(listed) = record.relisting.take() {
                    record.seen.retain(|key, _| listed.contains(key));
                }
                record.listed = true;
            }
            Event::Apply(object) => {
                record
                    .seen
                    .insert(key(object), fingerprint(object, &self.owned));
            }
            Event::Delete(object) => {
                record.seen.remove(&key(object));
            }
        }
    }

    /// True when the last event seen of `desired`'s object showed every field acceptance owns
    /// as `desired` has it (so applying it would change nothing).
    pub(crate) fn in_place<K: Written>(&self, desired: &K) -> bool {
        let Ok(record) = self.record.lock() else {
            return false;
        };
        record.listed && record.seen.get(&key(desired)) == Some(&fingerprint(desired, &self.owned))
    }

    /// How many objects are recorded.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.record.lock().map(|r| r.seen.len()).unwrap_or(0)
    }
}

/// The records of every kind acceptance writes.
#[derive(Debug)]
pub(crate) struct ObservedObjects {
    /// Cluster namespaces.
    pub namespaces: Observed,
    /// Common and per-cluster ClusterRoles.
    pub cluster_roles: Observed,
    /// Per-cluster ClusterRoleBindings.
    pub cluster_role_bindings: Observed,
    /// RoleBindings in cluster namespaces.
    pub role_bindings: Observed,
}

impl ObservedObjects {
    /// Empty records counting the given owned fields.
    pub(crate) fn new(owned: &Owned) -> Self {
        Self {
            namespaces: Observed::new(owned.clone()),
            cluster_roles: Observed::new(owned.clone()),
            cluster_role_bindings: Observed::new(owned.clone()),
            role_bindings: Observed::new(owned.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::rbac;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn owned() -> Owned {
        Owned {
            labels: vec![
                "open-cluster-management.io/cluster-name".to_owned(),
                "team".to_owned(),
            ],
            finalizers: vec![ocm_api::work::names::MANIFEST_WORK_FINALIZER.to_owned()],
        }
    }

    fn extra() -> BTreeMap<String, String> {
        BTreeMap::from([("team".to_owned(), "a".to_owned())])
    }

    fn listed(observed: &Observed, objects: Vec<RoleBinding>) {
        observed.record::<RoleBinding>(&Event::Init);
        for object in objects {
            observed.record(&Event::InitApply(object));
        }
        observed.record::<RoleBinding>(&Event::InitDone);
    }

    #[test]
    fn nothing_is_in_place_before_the_first_list_ends() {
        let observed = Observed::new(owned());
        let rb = rbac::work_role_binding("c1", &extra());
        observed.record(&Event::Apply(rb.clone()));
        assert!(!observed.in_place(&rb));
        listed(&observed, vec![rb.clone()]);
        assert!(observed.in_place(&rb));
    }

    #[test]
    fn labels_and_finalizers_of_others_do_not_count_but_ours_do() {
        let observed = Observed::new(owned());
        let desired = rbac::work_role_binding("c1", &extra());
        let mut stored = desired.clone();
        stored
            .metadata
            .labels
            .get_or_insert_default()
            .insert("someone-else".to_owned(), "x".to_owned());
        stored
            .metadata
            .finalizers
            .get_or_insert_default()
            .push("example.com/other".to_owned());
        stored.metadata.resource_version = Some("42".to_owned());
        listed(&observed, vec![stored.clone()]);
        assert!(observed.in_place(&desired));

        let mut relabelled = stored.clone();
        relabelled
            .metadata
            .labels
            .get_or_insert_default()
            .insert("team".to_owned(), "b".to_owned());
        observed.record(&Event::Apply(relabelled));
        assert!(!observed.in_place(&desired));

        let mut unfinalized = stored;
        unfinalized.metadata.finalizers = None;
        observed.record(&Event::Apply(unfinalized));
        assert!(!observed.in_place(&desired));
    }

    #[test]
    fn changed_subjects_deletion_and_deleting_objects_are_not_in_place() {
        let observed = Observed::new(owned());
        let desired = rbac::registration_role_binding("c1", &extra());
        listed(&observed, vec![desired.clone()]);
        assert!(observed.in_place(&desired));

        let mut fewer = desired.clone();
        fewer.subjects.get_or_insert_default().pop();
        observed.record(&Event::Apply(fewer));
        assert!(!observed.in_place(&desired));

        let mut deleting = desired.clone();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        observed.record(&Event::Apply(deleting));
        assert!(!observed.in_place(&desired));

        observed.record(&Event::Apply(desired.clone()));
        assert!(observed.in_place(&desired));
        observed.record(&Event::Delete(desired.clone()));
        assert!(!observed.in_place(&desired));
    }

    #[test]
    fn a_relist_forgets_objects_it_no_longer_lists() {
        let observed = Observed::new(owned());
        let a = rbac::registration_role_binding("c1", &extra());
        let b = rbac::registration_role_binding("c2", &extra());
        listed(&observed, vec![a.clone(), b.clone()]);
        assert_eq!(observed.len(), 2);
        listed(&observed, vec![b.clone()]);
        assert!(!observed.in_place(&a));
        assert!(observed.in_place(&b));
        assert_eq!(observed.len(), 1);
    }

    #[test]
    fn rules_decide_for_cluster_roles_and_nothing_else_for_namespaces() {
        let observed = Observed::new(owned());
        let accepted = rbac::cluster_role("c1", true, &extra());
        observed.record::<ClusterRole>(&Event::Init);
        observed.record(&Event::InitApply(accepted.clone()));
        observed.record::<ClusterRole>(&Event::InitDone);
        assert!(observed.in_place(&accepted));
        assert!(!observed.in_place(&rbac::cluster_role("c1", false, &extra())));

        let namespaces = Observed::new(owned());
        let ns = rbac::cluster_namespace("c1", &extra());
        let mut stored = ns.clone();
        stored.spec = Some(Default::default());
        namespaces.record::<Namespace>(&Event::Init);
        namespaces.record(&Event::InitApply(stored));
        namespaces.record::<Namespace>(&Event::InitDone);
        assert!(namespaces.in_place(&ns));
    }
}

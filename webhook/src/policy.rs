//! The hub's admission policies behind one entry point, free of any transport.
//!
//! [`admit`] takes what a request is ([`Review`]), the few facts a policy needs from outside
//! ([`Facts`]) and a way to answer access checks for the requester, and returns a
//! [`Verdict`]. The embedded server's in-process hooks and the HTTPS webhook server both call
//! it, so a rule exists once and reaches every hub the same way.
//!
//! Like kube-apiserver's admission chain, policies run in two phases: [`Phase::Mutating`]
//! (defaults, taint times) and then [`Phase::Validating`] over the mutated object. An
//! in-process hook runs both in turn ([`admit_both`]); a webhook server answers each phase on
//! its own path. [`WEBHOOKS`] lists which resources each phase covers — the webhook
//! configurations are built from it, so what is served and what is registered cannot drift.

use jiff::Timestamp;
use ocm_registration::hub::admission::{
    AccessCheck, AdmissionInput, Operation as ClusterOperation, admit_managed_cluster_set_binding,
    mutate_managed_cluster, validate_managed_cluster,
};
use serde_json::Value;

pub use crate::request::{Denial, Operation, Review};

/// The admission phase a policy runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// May change the object (and refuse what only this phase can judge).
    Mutating,
    /// Judges the object as mutation left it; never changes it.
    Validating,
}

/// An access check a policy needs answered for the requester (a SubjectAccessReview).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// Verb, e.g. `update`, `create`, `execute-as`.
    pub verb: String,
    /// API group.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (empty for none).
    pub subresource: String,
    /// Namespace (empty for cluster scope).
    pub namespace: String,
    /// Object name.
    pub name: String,
}

/// Facts from outside the request a policy may need.
#[derive(Clone, Copy, Debug)]
pub struct Facts {
    /// The time stamped into new taints.
    pub now: Timestamp,
    /// Whether clusters without a set label go into `default` (DefaultClusterSet gate).
    pub default_cluster_set: bool,
    /// Whether the namespace named like the ManagedCluster is terminating; see
    /// [`namespace_to_check`].
    pub cluster_namespace_terminating: bool,
    /// The `NilExecutorValidating` work gate: a ManifestWork without `spec.executor` is
    /// checked as if its executor were the work agent's default service account.
    pub nil_executor_validating: bool,
}

/// A policy's decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Let the request through unchanged.
    Allow,
    /// Let it through with this object instead (mutating phase only).
    Mutate(Value),
    /// Refuse it.
    Deny(Denial),
}

/// One webhook: the phase, the group/versions/resources it covers and the operations.
#[derive(Clone, Copy, Debug)]
pub struct WebhookSpec {
    /// Fully qualified webhook name (unique in its configuration).
    pub name: &'static str,
    /// Phase, and so the path it is served on.
    pub phase: Phase,
    /// API group.
    pub group: &'static str,
    /// Versions the rule lists.
    pub versions: &'static [&'static str],
    /// Plural resource.
    pub resource: &'static str,
    /// Subresources whose writes the webhook also sees (e.g. `status`).
    pub subresources: &'static [&'static str],
    /// Operations it sees (`CREATE`, `UPDATE`, `DELETE`).
    pub operations: &'static [&'static str],
}

/// What most webhooks see: creates and updates.
const CREATE_UPDATE: &[&str] = &["CREATE", "UPDATE"];

/// Every webhook the hub serves; [`admit`] handles exactly these.
pub const WEBHOOKS: &[WebhookSpec] = &[
    WebhookSpec {
        name: "managedclustermutators.admission.cluster.open-cluster-management.io",
        phase: Phase::Mutating,
        group: "cluster.open-cluster-management.io",
        versions: &["v1"],
        resource: "managedclusters",
        subresources: &[],
        operations: CREATE_UPDATE,
    },
    WebhookSpec {
        name: "managedclustervalidators.admission.cluster.open-cluster-management.io",
        phase: Phase::Validating,
        group: "cluster.open-cluster-management.io",
        versions: &["v1"],
        resource: "managedclusters",
        subresources: &[],
        operations: CREATE_UPDATE,
    },
    WebhookSpec {
        name: "managedclustersetbindingvalidators.admission.cluster.open-cluster-management.io",
        phase: Phase::Validating,
        group: "cluster.open-cluster-management.io",
        versions: &["v1beta2"],
        resource: "managedclustersetbindings",
        subresources: &[],
        operations: CREATE_UPDATE,
    },
    WebhookSpec {
        name: "manifestworkvalidators.admission.work.open-cluster-management.io",
        phase: Phase::Validating,
        group: "work.open-cluster-management.io",
        versions: &["v1"],
        resource: "manifestworks",
        subresources: &[],
        operations: CREATE_UPDATE,
    },
    WebhookSpec {
        name: "manifestworkreplicasetvalidators.admission.work.open-cluster-management.io",
        phase: Phase::Validating,
        group: "work.open-cluster-management.io",
        versions: &["v1alpha1"],
        resource: "manifestworkreplicasets",
        subresources: &[],
        operations: CREATE_UPDATE,
    },
    WebhookSpec {
        name: "clustermanagementaddonvalidators.admission.addon.open-cluster-management.io",
        phase: Phase::Validating,
        group: "addon.open-cluster-management.io",
        versions: &["v1alpha1", "v1beta1"],
        resource: "clustermanagementaddons",
        subresources: &[],
        operations: CREATE_UPDATE,
    },
    WebhookSpec {
        name: "managedclusteraddonvalidators.admission.addon.open-cluster-management.io",
        phase: Phase::Validating,
        group: "addon.open-cluster-management.io",
        versions: &["v1alpha1", "v1beta1"],
        resource: "managedclusteraddons",
        subresources: &["status"],
        operations: &["CREATE", "UPDATE", "DELETE"],
    },
];

/// The namespace whose state [`Facts::cluster_namespace_terminating`] must report for this
/// review: the cluster namespace of a ManagedCluster that is being accepted. `None` when the
/// fact is not needed (callers then pass `false`).
pub fn namespace_to_check(review: &Review) -> Option<&str> {
    let accepted = |v: &Option<Value>| {
        v.as_ref()
            .and_then(|o| o.pointer("/spec/hubAcceptsClient"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    (review.group == ocm_api::cluster::GROUP
        && review.resource == "managedclusters"
        && review.subresource.is_empty()
        && accepted(&review.object)
        && !accepted(&review.old_object)
        && !review.name.is_empty())
    .then_some(review.name.as_str())
}

/// Runs the policy of `review`'s resource for `phase`. `authorize` answers access checks for
/// the requester. Resources without a policy are allowed, and so are deletes and subresource
/// writes except those of ManagedClusterAddOns.
pub fn admit(
    phase: Phase,
    review: &Review,
    facts: &Facts,
    authorize: &(dyn Fn(&Access) -> bool + Sync),
) -> Verdict {
    let Some(operation) = review.operation else {
        return Verdict::Allow;
    };
    if (review.group.as_str(), review.resource.as_str(), phase)
        == (
            ocm_api::addon::GROUP,
            "managedclusteraddons",
            Phase::Validating,
        )
    {
        return match crate::addon_admission::admit_managed_cluster_addon(review) {
            Ok(()) => Verdict::Allow,
            Err(denial) => Verdict::Deny(denial),
        };
    }
    if operation == Operation::Delete || !review.subresource.is_empty() {
        return Verdict::Allow;
    }
    let Some(object) = review.object.as_ref() else {
        return Verdict::Allow;
    };
    let result = match (review.group.as_str(), review.resource.as_str(), phase) {
        ("cluster.open-cluster-management.io", "managedclusters", phase) => {
            cluster_policy(phase, review, operation, object, facts, authorize)
        }
        ("cluster.open-cluster-management.io", "managedclustersetbindings", Phase::Validating) => {
            cluster_policy(phase, review, operation, object, facts, authorize)
        }
        ("work.open-cluster-management.io", "manifestworks", Phase::Validating) => {
            manifest_work(review, object, facts, authorize).map(|()| None)
        }
        ("work.open-cluster-management.io", "manifestworkreplicasets", Phase::Validating) => {
            manifest_work_replica_set(review, object, authorize).map(|()| None)
        }
        ("addon.open-cluster-management.io", "clustermanagementaddons", Phase::Validating) => {
            cluster_management_addon(object).map(|()| None)
        }
        _ => Ok(None),
    };
    match result {
        Ok(None) => Verdict::Allow,
        Ok(Some(object)) if phase == Phase::Mutating => Verdict::Mutate(object),
        Ok(Some(_)) => Verdict::Allow,
        Err(denial) => Verdict::Deny(denial),
    }
}

/// Runs the mutating and then the validating phase, as one in-process hook: the verdict is
/// the mutated object (if any) or the first denial.
pub fn admit_both(
    review: &Review,
    facts: &Facts,
    authorize: &(dyn Fn(&Access) -> bool + Sync),
) -> Verdict {
    let mutated = match admit(Phase::Mutating, review, facts, authorize) {
        Verdict::Deny(denial) => return Verdict::Deny(denial),
        Verdict::Mutate(object) => Some(object),
        Verdict::Allow => None,
    };
    let validated = match &mutated {
        Some(object) => {
            let mut review = review.clone();
            review.object = Some(object.clone());
            admit(Phase::Validating, &review, facts, authorize)
        }
        None => admit(Phase::Validating, review, facts, authorize),
    };
    match (validated, mutated) {
        (Verdict::Deny(denial), _) => Verdict::Deny(denial),
        (_, Some(object)) => Verdict::Mutate(object),
        (_, None) => Verdict::Allow,
    }
}

fn cluster_policy(
    phase: Phase,
    review: &Review,
    operation: Operation,
    object: &Value,
    facts: &Facts,
    authorize: &(dyn Fn(&Access) -> bool + Sync),
) -> Result<Option<Value>, Denial> {
    let check = |c: &AccessCheck<'_>| {
        authorize(&Access {
            verb: c.verb.to_owned(),
            group: c.group.to_owned(),
            resource: c.resource.to_owned(),
            subresource: c.subresource.to_owned(),
            namespace: String::new(),
            name: c.name.to_owned(),
        })
    };
    let input = AdmissionInput {
        operation: match operation {
            Operation::Create => ClusterOperation::Create,
            Operation::Update => ClusterOperation::Update,
            Operation::Delete => ClusterOperation::Delete,
        },
        object: Some(object),
        old_object: review.old_object.as_ref(),
        user: &review.user,
        now: facts.now,
        default_cluster_set: facts.default_cluster_set,
        cluster_namespace_terminating: facts.cluster_namespace_terminating,
        authorize: &check,
    };
    let result = match (review.resource.as_str(), phase) {
        ("managedclusters", Phase::Mutating) => mutate_managed_cluster(&input),
        ("managedclusters", Phase::Validating) => validate_managed_cluster(&input).map(|()| None),
        _ => admit_managed_cluster_set_binding(&input),
    };
    result.map_err(Denial::from)
}

/// Whether the spec changed (status writes and metadata-only changes such as finalizers leave
/// it alone and need no check).
fn spec_unchanged(review: &Review, object: &Value) -> bool {
    review
        .old_object
        .as_ref()
        .is_some_and(|old| old.get("spec") == object.get("spec"))
}

/// Upstream's work checks: the manifests, and that whoever sets or changes an executor may
/// `execute-as` it in the work's namespace. With the `NilExecutorValidating` gate, a work
/// without an executor is checked against the work agent's default service account.
fn manifest_work(
    review: &Review,
    object: &Value,
    facts: &Facts,
    authorize: &(dyn Fn(&Access) -> bool + Sync),
) -> Result<(), Denial> {
    if spec_unchanged(review, object) {
        return Ok(());
    }
    ocm_work::validation::validate_manifest_work(object)
        .map_err(|invalid| Denial::bad_request(invalid.0))?;
    let executor = object.pointer("/spec/executor").filter(|e| !e.is_null());
    if let Some(executor) = executor
        && executor.pointer("/subject/type").and_then(Value::as_str) == Some("ServiceAccount")
        && executor
            .pointer("/subject/serviceAccount")
            .is_none_or(Value::is_null)
    {
        return Err(Denial::bad_request(
            "executor service account can not be nil".into(),
        ));
    }
    let subject = match executor {
        Some(_) => ocm_work::validation::executor_subject(object),
        None if facts.nil_executor_validating => {
            Some(ocm_api::work::names::hub_feature_gates::DEFAULT_EXECUTOR.to_owned())
        }
        None => None,
    };
    executor_check(
        review,
        executor,
        review
            .old_object
            .as_ref()
            .map(|old| old.pointer("/spec/executor").filter(|e| !e.is_null())),
        subject,
        authorize,
    )
}

/// A ManifestWorkReplicaSet's template is checked as the works it will become, and its
/// executor as theirs.
fn manifest_work_replica_set(
    review: &Review,
    object: &Value,
    authorize: &(dyn Fn(&Access) -> bool + Sync),
) -> Result<(), Denial> {
    if spec_unchanged(review, object) {
        return Ok(());
    }
    let template = object
        .pointer("/spec/manifestWorkTemplate")
        .cloned()
        .unwrap_or(Value::Null);
    let as_work = serde_json::json!({ "spec": template });
    ocm_work::validation::validate_manifest_work(&as_work)
        .map_err(|invalid| Denial::bad_request(invalid.0))?;
    let old_executor = review
        .old_object
        .as_ref()
        .map(|old| old.pointer("/spec/manifestWorkTemplate/executor"));
    executor_check(
        review,
        object.pointer("/spec/manifestWorkTemplate/executor"),
        old_executor,
        ocm_work::validation::executor_subject(&as_work),
        authorize,
    )
}

fn executor_check(
    review: &Review,
    executor: Option<&Value>,
    old_executor: Option<Option<&Value>>,
    subject: Option<String>,
    authorize: &(dyn Fn(&Access) -> bool + Sync),
) -> Result<(), Denial> {
    let changed = old_executor.is_none_or(|old| old != executor);
    let Some(subject) = subject.filter(|_| changed) else {
        return Ok(());
    };
    let allowed = authorize(&Access {
        verb: "execute-as".into(),
        group: ocm_api::work::GROUP.into(),
        resource: "manifestworks".into(),
        subresource: String::new(),
        namespace: review.namespace.clone(),
        name: subject.clone(),
    });
    if allowed {
        return Ok(());
    }
    let sa = subject
        .trim_start_matches("system:serviceaccount:")
        .replacen(':', "/", 1);
    Err(Denial::bad_request(format!(
        "user {} cannot manipulate the Manifestwork with executor {sa} in namespace {}",
        review.user, review.namespace
    )))
}

/// A ClusterManagementAddOn's Placements install strategy names each placement once.
fn cluster_management_addon(object: &Value) -> Result<(), Denial> {
    let placements = object
        .pointer("/spec/installStrategy/placements")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for placement in placements {
        let text = |f: &str| placement.get(f).and_then(Value::as_str).unwrap_or("");
        let key = format!("{}/{}", text("namespace"), text("name"));
        if !seen.insert(key.clone()) {
            return Err(Denial::bad_request(format!(
                "placement {key} is listed more than once in spec.installStrategy.placements"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn facts() -> Facts {
        Facts {
            now: "2026-02-02T10:11:12Z".parse().unwrap(),
            default_cluster_set: true,
            nil_executor_validating: false,
            cluster_namespace_terminating: false,
        }
    }

    fn review(resource: &str, group: &str, object: Value, old: Option<Value>) -> Review {
        Review {
            operation: Some(if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            }),
            group: group.into(),
            resource: resource.into(),
            name: object["metadata"]["name"].as_str().unwrap_or("").into(),
            namespace: object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .into(),
            object: Some(object),
            old_object: old,
            user: "bob".into(),
            ..Review::default()
        }
    }

    fn cluster(spec: Value) -> Value {
        json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
               "metadata": {"name": "c1"}, "spec": spec})
    }

    #[test]
    fn mutating_phase_only_mutates_and_validating_phase_only_judges() {
        let r = review(
            "managedclusters",
            "cluster.open-cluster-management.io",
            cluster(
                json!({"hubAcceptsClient": true, "taints": [{"key": "a", "effect": "NoSelect"}]}),
            ),
            None,
        );
        let deny = |_: &Access| false;
        let Verdict::Mutate(mutated) = admit(Phase::Mutating, &r, &facts(), &deny) else {
            panic!("mutation expected");
        };
        assert_eq!(
            mutated["spec"]["taints"][0]["timeAdded"],
            "2026-02-02T10:11:12Z"
        );
        let mut validated = r.clone();
        validated.object = Some(mutated);
        let Verdict::Deny(denial) = admit(Phase::Validating, &validated, &facts(), &deny) else {
            panic!("denial expected");
        };
        assert_eq!(denial.code, 403);
        assert_eq!(denial.resource.as_deref(), Some("managedclusters/accept"));
        assert!(matches!(admit_both(&r, &facts(), &deny), Verdict::Deny(_)));
        assert!(matches!(
            admit_both(&r, &facts(), &|_: &Access| true),
            Verdict::Mutate(_)
        ));
    }

    #[test]
    fn hub_taints_are_the_hubs() {
        let taint = json!({"key": "cluster.open-cluster-management.io/unreachable",
                           "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"});
        let old = cluster(json!({"hubAcceptsClient": true, "taints": [taint]}));
        let new = cluster(json!({"hubAcceptsClient": true, "taints": []}));
        let r = review(
            "managedclusters",
            "cluster.open-cluster-management.io",
            new,
            Some(old),
        );
        let Verdict::Deny(denial) = admit_both(&r, &facts(), &|_: &Access| false) else {
            panic!("denial expected");
        };
        assert!(
            denial.message.contains("hub-managed taint"),
            "{}",
            denial.message
        );
        assert!(!matches!(
            admit_both(&r, &facts(), &|_: &Access| true),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn executors_need_execute_as_in_the_works_namespace() {
        let work = json!({"metadata": {"name": "w", "namespace": "c1"}, "spec": {
            "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "a", "namespace": "d"}}]},
            "executor": {"subject": {"type": "ServiceAccount",
                                     "serviceAccount": {"namespace": "d", "name": "sa"}}}}});
        let r = review(
            "manifestworks",
            "work.open-cluster-management.io",
            work,
            None,
        );
        let asked = std::sync::Mutex::new(Vec::new());
        let verdict = admit(Phase::Validating, &r, &facts(), &|a: &Access| {
            asked.lock().unwrap().push(a.clone());
            false
        });
        let Verdict::Deny(denial) = verdict else {
            panic!("denial expected")
        };
        assert_eq!(
            denial.message,
            "user bob cannot manipulate the Manifestwork with executor d/sa in namespace c1"
        );
        let asked = asked.into_inner().unwrap();
        assert_eq!(asked[0].verb, "execute-as");
        assert_eq!(asked[0].namespace, "c1");
        assert_eq!(asked[0].name, "system:serviceaccount:d:sa");
    }

    #[test]
    fn with_nil_executor_validating_a_work_without_executor_needs_the_default_one() {
        let work = json!({"metadata": {"name": "w", "namespace": "c1"}, "spec": {
            "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "a", "namespace": "d"}}]}}});
        let r = review(
            "manifestworks",
            "work.open-cluster-management.io",
            work.clone(),
            None,
        );
        // Gate off: no executor, no check.
        let asked = std::sync::Mutex::new(Vec::new());
        let deny_all = |a: &Access| {
            asked.lock().unwrap().push(a.clone());
            false
        };
        assert_eq!(
            admit(Phase::Validating, &r, &facts(), &deny_all),
            Verdict::Allow
        );
        assert!(asked.lock().unwrap().is_empty());
        // Gate on: checked as `system:serviceaccount::klusterlet-work-sa`.
        let gated = Facts {
            nil_executor_validating: true,
            ..facts()
        };
        let Verdict::Deny(denial) = admit(Phase::Validating, &r, &gated, &deny_all) else {
            panic!("denial expected")
        };
        assert_eq!(denial.code, 400);
        assert_eq!(
            denial.message,
            "user bob cannot manipulate the Manifestwork with executor /klusterlet-work-sa in namespace c1"
        );
        let asked = asked.into_inner().unwrap();
        assert_eq!(asked[0].verb, "execute-as");
        assert_eq!(asked[0].name, "system:serviceaccount::klusterlet-work-sa");
        assert_eq!(
            admit(Phase::Validating, &r, &gated, &|_: &Access| true),
            Verdict::Allow
        );
        // An update that leaves the (absent) executor alone is not checked again.
        let mut changed = work.clone();
        changed["spec"]["workload"]["manifests"][0]["metadata"]["name"] = json!("b");
        let update = review(
            "manifestworks",
            "work.open-cluster-management.io",
            changed,
            Some(work),
        );
        assert_eq!(
            admit(Phase::Validating, &update, &gated, &|_: &Access| false),
            Verdict::Allow
        );
    }

    #[test]
    fn a_service_account_executor_must_name_one() {
        let work = json!({"metadata": {"name": "w", "namespace": "c1"}, "spec": {
            "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "a", "namespace": "d"}}]},
            "executor": {"subject": {"type": "ServiceAccount"}}}});
        let r = review(
            "manifestworks",
            "work.open-cluster-management.io",
            work,
            None,
        );
        let Verdict::Deny(denial) = admit(Phase::Validating, &r, &facts(), &|_: &Access| true)
        else {
            panic!("denial expected")
        };
        assert_eq!(denial.message, "executor service account can not be nil");
    }

    #[test]
    fn replica_set_templates_are_checked_as_works() {
        let mwrs = json!({"metadata": {"name": "r", "namespace": "apps"},
                          "spec": {"manifestWorkTemplate": {"workload": {"manifests": []}}}});
        let r = review(
            "manifestworkreplicasets",
            "work.open-cluster-management.io",
            mwrs,
            None,
        );
        let Verdict::Deny(denial) = admit(Phase::Validating, &r, &facts(), &|_: &Access| true)
        else {
            panic!("denial expected")
        };
        assert_eq!(denial.message, "manifests should not be empty");
    }

    #[test]
    fn addon_placements_are_listed_once() {
        let cma = json!({"metadata": {"name": "a"}, "spec": {"installStrategy": {
            "type": "Placements",
            "placements": [{"namespace": "n", "name": "p"}, {"namespace": "n", "name": "p"}]}}});
        let r = review(
            "clustermanagementaddons",
            "addon.open-cluster-management.io",
            cma,
            None,
        );
        assert!(matches!(
            admit(Phase::Validating, &r, &facts(), &|_: &Access| true),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn addon_status_writes_and_deletes_reach_the_addon_policy() {
        let alpha = "system:open-cluster-management:cluster:c1:addon:alpha:agent:alpha";
        let beta = json!({"metadata": {"name": "beta", "namespace": "c1"}, "spec": {},
                          "status": {"conditions": []}});
        let mut write = review(
            "managedclusteraddons",
            "addon.open-cluster-management.io",
            beta.clone(),
            Some(beta),
        );
        write.subresource = "status".into();
        write.user = alpha.into();
        let allow = |_: &Access| true;
        let Verdict::Deny(denial) = admit_both(&write, &facts(), &allow) else {
            panic!("denial expected")
        };
        assert_eq!(denial.code, 403);
        let mut delete = write.clone();
        delete.subresource = String::new();
        delete.operation = Some(Operation::Delete);
        delete.object = None;
        assert!(matches!(
            admit(Phase::Validating, &delete, &facts(), &allow),
            Verdict::Deny(_)
        ));
        // The hub admin is RBAC's business.
        write.user = "admin".into();
        assert_eq!(admit_both(&write, &facts(), &allow), Verdict::Allow);
    }

    #[test]
    fn accepting_needs_the_namespace_fact() {
        let r = review(
            "managedclusters",
            "cluster.open-cluster-management.io",
            cluster(json!({"hubAcceptsClient": true})),
            Some(cluster(json!({"hubAcceptsClient": false}))),
        );
        assert_eq!(namespace_to_check(&r), Some("c1"));
        let r = review(
            "managedclusters",
            "cluster.open-cluster-management.io",
            cluster(json!({"hubAcceptsClient": true})),
            Some(cluster(json!({"hubAcceptsClient": true}))),
        );
        assert_eq!(namespace_to_check(&r), None);
    }
}

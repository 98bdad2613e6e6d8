//! The hub's admission policies as the embedded API server's in-process hooks: one hook per
//! resource (and per subresource it lists) of [`ocm_webhook::policy::WEBHOOKS`], each running the mutating and then the
//! validating phase of [`ocm_webhook::policy::admit`] — the same dispatcher the HTTPS webhook
//! server answers with, so a rule holds the same on the embedded hub and on a real one.

use std::collections::BTreeSet;
use std::sync::Arc;

use ocm_apiserver::{
    AdmissionDenial, AdmissionHook, AdmissionOperation, AdmissionResult, ApiServer,
};
use ocm_apiserver_rbac::ResourceAttributes;
use ocm_apiserver_storage::{Bucket, ObjectKey};
use ocm_webhook::policy::{Access, Facts, Operation, Review, Verdict, WEBHOOKS, admit_both};
use ocm_work::gates::HubWorkGates;
use serde_json::Value;

/// Registers the hub's admission policies on `server`; `work_gates` are the hub's work
/// feature gates (`NilExecutorValidating` changes the ManifestWork check).
pub fn register(server: &ApiServer, default_cluster_set: bool, work_gates: HubWorkGates) {
    let resources: BTreeSet<(&str, &str)> =
        WEBHOOKS.iter().map(|w| (w.group, w.resource)).collect();
    for (group, resource) in resources {
        server.register_admission(
            group,
            resource,
            hook(server.clone(), default_cluster_set, work_gates),
        );
    }
    let subresources: BTreeSet<(&str, &str, &str)> = WEBHOOKS
        .iter()
        .flat_map(|w| w.subresources.iter().map(|s| (w.group, w.resource, *s)))
        .collect();
    for (group, resource, subresource) in subresources {
        server.register_subresource_admission(
            group,
            resource,
            subresource,
            hook(server.clone(), default_cluster_set, work_gates),
        );
    }
}

/// Whether namespace `name` of logical cluster `cluster` is terminating.
fn namespace_terminating(server: &ApiServer, cluster: &str, name: &str) -> bool {
    let key = ObjectKey::new(Bucket::new(cluster, "/namespaces"), "", name);
    server
        .store()
        .get(&key)
        .and_then(|stored| serde_json::from_slice::<Value>(&stored.value).ok())
        .is_some_and(|ns| {
            ns.pointer("/metadata/deletionTimestamp").is_some()
                || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        })
}

fn hook(server: ApiServer, default_cluster_set: bool, work_gates: HubWorkGates) -> AdmissionHook {
    Arc::new(move |req| {
        let review = Review {
            operation: Some(match req.operation {
                AdmissionOperation::Create => Operation::Create,
                AdmissionOperation::Update => Operation::Update,
                AdmissionOperation::Delete => Operation::Delete,
            }),
            group: req.group.to_owned(),
            resource: req.resource.to_owned(),
            subresource: req.subresource.unwrap_or("").to_owned(),
            namespace: req.namespace.to_owned(),
            name: req.name.to_owned(),
            object: req.object.cloned(),
            old_object: req.old_object.cloned(),
            user: req.user.user.clone(),
            groups: req.user.groups.clone(),
        };
        let terminating = ocm_webhook::policy::namespace_to_check(&review)
            .is_some_and(|ns| namespace_terminating(&server, req.cluster, ns));
        let facts = Facts {
            now: jiff::Timestamp::now(),
            default_cluster_set,
            cluster_namespace_terminating: terminating,
            nil_executor_validating: work_gates.nil_executor_validating,
        };
        let authorize = |access: &Access| {
            req.is_allowed(
                &access.verb,
                ResourceAttributes {
                    group: access.group.clone(),
                    resource: access.resource.clone(),
                    subresource: access.subresource.clone(),
                    namespace: access.namespace.clone(),
                    name: access.name.clone(),
                    ..ResourceAttributes::default()
                },
            )
        };
        match admit_both(&review, &facts, &authorize) {
            Verdict::Allow => AdmissionResult::Allow,
            Verdict::Mutate(object) => AdmissionResult::Mutate(object),
            Verdict::Deny(denial) => AdmissionResult::Deny(AdmissionDenial {
                code: denial.code,
                message: denial.message,
                field: None,
                resource: denial.resource,
                name: denial.name,
            }),
        }
    })
}

//! Glue between the embedded API server's generic admission hooks and registration's
//! admission policies (what upstream OCM runs as webhooks): ManagedCluster defaults, taint
//! times, acceptance/join permissions, and ManagedClusterSetBinding checks.

use std::sync::Arc;

use ocm_apiserver::rbac::ResourceAttributes;
use ocm_apiserver::storage::{Bucket, ObjectKey};
use ocm_apiserver::{
    AdmissionDenial, AdmissionHook, AdmissionOperation, AdmissionResult, ApiServer,
};
use ocm_registration::hub::admission::{
    AccessCheck, AdmissionInput, Operation, admit_managed_cluster,
    admit_managed_cluster_set_binding,
};
use serde_json::Value;

type Policy = fn(
    &AdmissionInput<'_>,
) -> Result<Option<Value>, ocm_registration::hub::admission::AdmissionDenial>;

/// Registers the registration and work admission policies on `server`.
pub fn register(server: &ApiServer, default_cluster_set: bool) {
    server.register_admission(
        ocm_api::work::GROUP,
        "manifestworks",
        Arc::new(admit_manifest_work),
    );
    let group = ocm_api::cluster::GROUP;
    server.register_admission(
        group,
        "managedclusters",
        hook(server.clone(), admit_managed_cluster, default_cluster_set),
    );
    server.register_admission(
        group,
        "managedclustersetbindings",
        hook(
            server.clone(),
            admit_managed_cluster_set_binding,
            default_cluster_set,
        ),
    );
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

fn hook(server: ApiServer, policy: Policy, default_cluster_set: bool) -> AdmissionHook {
    Arc::new(move |req| {
        let authorize = |check: &AccessCheck<'_>| {
            req.is_allowed(
                check.verb,
                ResourceAttributes {
                    group: check.group.to_owned(),
                    resource: check.resource.to_owned(),
                    subresource: check.subresource.to_owned(),
                    name: check.name.to_owned(),
                    ..ResourceAttributes::default()
                },
            )
        };
        let terminating = match (req.operation, req.name) {
            (AdmissionOperation::Delete, _) | (_, "") => false,
            (_, name) => namespace_terminating(&server, req.cluster, name),
        };
        let input = AdmissionInput {
            operation: match req.operation {
                AdmissionOperation::Create => Operation::Create,
                AdmissionOperation::Update => Operation::Update,
                AdmissionOperation::Delete => Operation::Delete,
            },
            object: req.object,
            old_object: req.old_object,
            user: &req.user.user,
            now: jiff::Timestamp::now(),
            default_cluster_set,
            cluster_namespace_terminating: terminating,
            authorize: &authorize,
        };
        match policy(&input) {
            Ok(None) => AdmissionResult::Allow,
            Ok(Some(object)) => AdmissionResult::Mutate(object),
            Err(denial) => AdmissionResult::Deny(AdmissionDenial {
                code: denial.code,
                message: denial.message,
                field: None,
                resource: denial.resource,
                name: denial.name,
            }),
        }
    })
}

/// What upstream's work webhook checks: the manifests, and that whoever sets or changes an
/// executor may `execute-as` it.
fn admit_manifest_work(req: &ocm_apiserver::AdmissionRequest<'_>) -> AdmissionResult {
    let Some(object) = req.object else {
        return AdmissionResult::Allow;
    };
    if req.subresource.is_some() || req.operation == AdmissionOperation::Delete {
        return AdmissionResult::Allow;
    }
    // Status writes and metadata-only changes (finalizers) leave the spec alone.
    if req
        .old_object
        .is_some_and(|old| old.get("spec") == object.get("spec"))
    {
        return AdmissionResult::Allow;
    }
    let deny = |message: String| {
        AdmissionResult::Deny(AdmissionDenial {
            code: 400,
            message,
            field: None,
            resource: None,
            name: None,
        })
    };
    if let Err(invalid) = ocm_work::validation::validate_manifest_work(object) {
        return deny(invalid.0);
    }
    let executor_changed = req
        .old_object
        .is_none_or(|old| old.pointer("/spec/executor") != object.pointer("/spec/executor"));
    if executor_changed && let Some(subject) = ocm_work::validation::executor_subject(object) {
        let allowed = req.is_allowed(
            "execute-as",
            ResourceAttributes {
                group: ocm_api::work::GROUP.to_owned(),
                resource: "manifestworks".to_owned(),
                namespace: req.namespace.to_owned(),
                name: subject.clone(),
                ..ResourceAttributes::default()
            },
        );
        if !allowed {
            let sa = subject
                .trim_start_matches("system:serviceaccount:")
                .replacen(':', "/", 1);
            return deny(format!(
                "user {} cannot manipulate the Manifestwork with executor {sa} in namespace {}",
                req.user.user, req.namespace
            ));
        }
    }
    AdmissionResult::Allow
}

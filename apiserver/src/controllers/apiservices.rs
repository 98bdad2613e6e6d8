//! APIServices, as kube-aggregator's controllers keep them: the local APIService of every
//! served group-version (kube's own ones labelled `automanaged: onstart` and written once,
//! custom resource groups' labelled `automanaged: true` and removed with their last CRD
//! version), and the `Available` condition of every APIService — always true for local ones;
//! for one backed by a Service, why it is not (this server proxies to no aggregated API
//! server).
//!
//! kube-apiserver registers them when it starts. A process here may host thousands of
//! logical clusters, so a cluster's local APIServices are written the first time something
//! looks at them there (an `apiservices` request or a health check), and kept from then on;
//! the default cluster's are written when the server starts.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::control::ServerAccess;
use crate::kinds::AUTOMANAGED;
use crate::ops::{DeleteOptions, Managed};
use ocm_apiserver_storage::{Bucket, EventKind, ObjectKey};

/// The storage resource of APIServices.
pub(crate) const APISERVICES: &str = "apiregistration.k8s.io/apiservices";
const CRDS: &str = "apiextensions.k8s.io/customresourcedefinitions";
const SERVICES: &str = "/services";
/// The field manager of the writes (kube's aggregator runs inside kube-apiserver).
const MANAGER: &str = "kube-apiserver";

fn stored_objects(server: &ServerAccess, cluster: &str, resource: &str) -> Vec<Value> {
    let (_, items) = server.list(&Bucket::new(cluster, resource), None, None);
    items
        .into_iter()
        .filter_map(|(_, _, o)| serde_json::from_slice(&o.value).ok())
        .collect()
}

/// The local APIServices `cluster` should have, by name (see [`crate::kinds::desired_local`]).
pub(crate) fn desired(server: &ServerAccess, cluster: &str) -> BTreeMap<String, Value> {
    crate::kinds::desired_local(&stored_objects(server, cluster, CRDS))
}

/// Whether `cluster` has had its local APIServices written.
fn registered(server: &ServerAccess, cluster: &str) -> bool {
    stored_objects(server, cluster, APISERVICES)
        .iter()
        .any(|a| automanaged(a).is_some())
}

fn automanaged(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(AUTOMANAGED))
        .and_then(Value::as_str)
}

/// Writes the local APIServices `cluster` lacks and removes the custom resource ones no CRD
/// serves any more. Returns whether everything is done.
pub(crate) async fn register(server: &ServerAccess, cluster: &str) -> bool {
    let bucket = Bucket::new(cluster, APISERVICES);
    let Some(mut ctx) = server.writer(&bucket, MANAGER) else {
        return true;
    };
    let want = desired(server, cluster);
    let have: BTreeMap<String, Value> = stored_objects(server, cluster, APISERVICES)
        .into_iter()
        .map(|a| (crate::meta::meta_str(&a, "name").to_owned(), a))
        .collect();
    let mut done = true;
    for (name, obj) in &want {
        if have.contains_key(name) {
            continue;
        }
        match ctx.create("", obj.clone(), Managed::RecordUpdate).await {
            Ok(_) => {}
            Err(err) if err.code == 409 => {}
            Err(err) => {
                tracing::debug!(%err, cluster, name, "registering a local APIService failed");
                done = false;
            }
        }
    }
    for (name, obj) in &have {
        if automanaged(obj) == Some("true") && !want.contains_key(name) {
            match ctx.delete("", name, &DeleteOptions::default()).await {
                Err(err) if err.code != 404 => {
                    tracing::debug!(%err, cluster, name, "removing a local APIService failed");
                    done = false;
                }
                _ => {}
            }
        }
    }
    done
}

/// Registers `cluster`'s local APIServices if that was never done (see the module's text).
pub(crate) async fn register_once(server: &ServerAccess, cluster: &str) {
    if !registered(server, cluster) {
        register(server, cluster).await;
    }
}

/// Puts the `Available` condition of every APIService of `cluster` right. Returns whether
/// everything is done.
async fn sync_availability(server: &ServerAccess, cluster: &str) -> bool {
    let bucket = Bucket::new(cluster, APISERVICES);
    let mut done = true;
    for apiservice in stored_objects(server, cluster, APISERVICES) {
        let name = crate::meta::meta_str(&apiservice, "name").to_owned();
        let service = |a: &Value| {
            let ns = a
                .pointer("/spec/service/namespace")
                .and_then(Value::as_str)?;
            let svc = a.pointer("/spec/service/name").and_then(Value::as_str)?;
            let key = ObjectKey::new(Bucket::new(cluster, SERVICES), ns, svc);
            serde_json::from_slice::<Value>(&server.get(&key)?.value).ok()
        };
        let verdict = |a: &Value| crate::kinds::availability(a, service(a).as_ref());
        if crate::kinds::with_availability(&apiservice, verdict(&apiservice)).is_none() {
            continue;
        }
        let Some(mut ctx) = server.writer(&bucket, MANAGER) else {
            return true;
        };
        let conditions =
            |current: &Value| crate::kinds::with_availability(current, verdict(current));
        if let Err(err) = super::set_conditions(&mut ctx, &name, conditions).await {
            tracing::debug!(%err, cluster, name, "setting an APIService's availability failed");
            done = false;
        }
    }
    done
}

pub(crate) async fn run(server: ServerAccess) {
    let access = server.clone();
    super::run_per_cluster(
        server,
        super::PerCluster {
            keeps: |resource| resource == APISERVICES,
            relevant: |event: &ocm_apiserver_storage::Event| {
                let resource = &*event.key.bucket.resource;
                resource == APISERVICES
                    || (resource == CRDS && event.kind != EventKind::Added)
                    || resource == SERVICES
            },
            // After start-up only clusters whose APIServices were once written are kept.
            sync: |cluster: String, first: bool| {
                let server = access.clone();
                async move {
                    if !first && !registered(&server, &cluster) {
                        return true;
                    }
                    register(&server, &cluster).await && sync_availability(&server, &cluster).await
                }
            },
            concurrency: 1,
        },
    )
    .await;
}

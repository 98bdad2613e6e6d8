//! The workload simulator: for logical clusters flagged with
//! [`ApiServer::simulate_workloads`](crate::ApiServer::simulate_workloads), plays the part of
//! kubelet and the workload controllers so that workloads reach the status a real cluster
//! would give them, after a delay.
//!
//! Status only for the long-running kinds: no ReplicaSets or Pods are created for
//! Deployments (memory matters when one process hosts thousands of simulated clusters), but
//! each kind's status says what a real cluster would say once its pods are ready. Jobs are
//! the exception: their Pods are what a user looks at to see a Job ran, and they are few.
//!
//! - Deployment / ReplicaSet / StatefulSet: every replica ready, available and updated,
//!   `observedGeneration` current; Deployments get `Available` (MinimumReplicasAvailable) and
//!   `Progressing` (NewReplicaSetAvailable) conditions. A Deployment whose pod template's
//!   `nodeSelector` matches no Node of the cluster stays unavailable, as its pods would stay
//!   Pending: every replica unavailable, `Available` False (MinimumReplicasUnavailable).
//! - DaemonSet: one pod per Node of the cluster, all ready.
//! - Job: its Pods, as the Job controller would make them (one per completion, owned by the
//!   Job, labelled from the template plus the `job-name` / `controller-uid` labels unless the
//!   selector is manual), each `Succeeded` with its containers terminated (exit code 0,
//!   `Completed`); then succeeded = completions (default 1), `SuccessCriteriaMet` and
//!   `Complete` conditions, start and completion times. A suspended Job is left alone.
//! - A Job whose containers' images a Node lists in `status.images` (that Node's kubelet runs
//!   them: the process kubelet of `ocm_hub`) is not completed at once: its pods are made on
//!   that Node without a status, for the kubelet to run, and the Job's status follows them as
//!   kube's Job controller would have it ([`super::jobs`]); a change to one of its pods
//!   brings the Job back.
//! - Pod: `Running`, every condition True, a pod IP; a Job's pod `Succeeded`. A Pod whose
//!   images a Node lists is that Node's kubelet's, and left alone.
//!
//! Driven by the store's change feed; one timer queue for the whole server. An object deleted
//! before its delay is simply skipped; the status is written once per generation.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use serde_json::{Value, json};
use tokio::time::Instant;

use super::jobs;
use crate::control::ServerAccess;
use crate::meta;
use crate::ops::{DeleteOptions, Managed, Target};
use ocm_apiserver_storage::{Bucket, EventKind, ObjectKey};

/// Storage resources the simulator looks after.
const WORKLOADS: [&str; 6] = [
    "apps/deployments",
    "apps/replicasets",
    "apps/statefulsets",
    "apps/daemonsets",
    "batch/jobs",
    "/pods",
];

type Due = Reverse<(Instant, ObjectKey)>;

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let mut queue: BinaryHeap<Due> = BinaryHeap::new();
    let mut queued: HashSet<ObjectKey> = HashSet::new();
    loop {
        let next = queue.peek().map(|Reverse((at, _))| *at);
        tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                if !WORKLOADS.contains(&&*event.key.bucket.resource) {
                    continue;
                }
                let Some(delay) = server.simulated_delay(&event.key.bucket.cluster) else {
                    continue;
                };
                let Ok(object) = serde_json::from_slice::<Value>(&event.object) else {
                    continue;
                };
                // A Job's status follows its pods.
                if &*event.key.bucket.resource == "/pods"
                    && let Some(job) = owning_job(&event.key, &object)
                    && queued.insert(job.clone())
                {
                    queue.push(Reverse((Instant::now() + delay, job)));
                }
                if event.kind != EventKind::Deleted
                    && needs_status(&server, &event.key, &object)
                    && queued.insert(event.key.clone())
                {
                    queue.push(Reverse((Instant::now() + delay, event.key.clone())));
                }
            }
            () = sleep_until(next) => {
                while let Some(Reverse((at, _))) = queue.peek() {
                    if *at > Instant::now() {
                        break;
                    }
                    let Some(Reverse((_, key))) = queue.pop() else { break };
                    queued.remove(&key);
                    write_status(&server, &key).await;
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The Nodes of `cluster`.
fn nodes(server: &ServerAccess, cluster: &str) -> Vec<Value> {
    let (_, items) = server.list(&Bucket::new(cluster, "/nodes"), None, None);
    items
        .iter()
        .filter_map(|(_, _, stored)| serde_json::from_slice::<Value>(&stored.value).ok())
        .collect()
}

/// The object stored under `key`.
fn stored(server: &ServerAccess, key: &ObjectKey) -> Option<Value> {
    server
        .get(key)
        .and_then(|stored| serde_json::from_slice::<Value>(&stored.value).ok())
}

/// Whether some node carries every label of the pod template's `nodeSelector`.
fn schedulable(object: &Value, nodes: &[Value]) -> bool {
    let Some(selector) = object
        .pointer("/spec/template/spec/nodeSelector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
    else {
        return true;
    };
    nodes.iter().any(|node| {
        selector
            .iter()
            .all(|(k, v)| node.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v))
    })
}

/// Annotation of Deployments and Pods whose pods run as real processes (the process kubelet
/// of `ocm_hub::process_kubelet` reports their status; the simulator leaves them alone).
const PROCESS_ANNOTATION: &str = "simulation.open-cluster-management.io/runs-as-process";

/// Whether `object` is a Pod a Node's kubelet runs (every image listed on the Node): its
/// status is that kubelet's.
fn kubelet_pod(resource: &str, object: &Value, nodes: &[Value]) -> bool {
    resource == "/pods" && jobs::kubelet_node(&object["spec"], nodes).is_some()
}

/// The Node whose kubelet runs the pods of Job `job`, if one does.
fn kubelet_job<'a>(resource: &str, job: &Value, nodes: &'a [Value]) -> Option<&'a str> {
    if resource != "batch/jobs" {
        return None;
    }
    job.pointer("/spec/template/spec")
        .and_then(|spec| jobs::kubelet_node(spec, nodes))
}

fn needs_status(server: &ServerAccess, key: &ObjectKey, object: &Value) -> bool {
    if meta::is_deleting(object) || object["metadata"]["annotations"][PROCESS_ANNOTATION] == "true"
    {
        return false;
    }
    let resource = &*key.bucket.resource;
    let nodes = nodes(server, &key.bucket.cluster);
    if kubelet_pod(resource, object, &nodes) {
        return false;
    }
    if kubelet_job(resource, object, &nodes).is_some() {
        let pods = job_pods(server, key, object);
        return jobs::sync(object, &pods, "").is_some_and(|sync| {
            sync.create > 0
                || !sync.delete.is_empty()
                || !jobs::same_status(object.get("status"), &sync.status)
        });
    }
    match desired_status(resource, object, &nodes, "") {
        Some(want) => !status_matches(object.get("status"), &want),
        None => false,
    }
}

/// The Job that controls Pod `object` (stored under `key`), as a key.
fn owning_job(key: &ObjectKey, object: &Value) -> Option<ObjectKey> {
    let name = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|o| o["kind"] == "Job" && o["controller"] == true)?
        .get("name")
        .and_then(Value::as_str)?;
    let bucket = Bucket::new(&key.bucket.cluster, "batch/jobs");
    Some(ObjectKey::new(bucket, &key.namespace, name))
}

/// The Pods of Job `job` (stored under `key`): those its uid controls.
fn job_pods(server: &ServerAccess, key: &ObjectKey, job: &Value) -> Vec<Value> {
    let uid = meta::meta_str(job, "uid");
    let pods = Bucket::new(&key.bucket.cluster, "/pods");
    let (_, items) = server.list(&pods, Some(&key.namespace), None);
    items
        .iter()
        .filter_map(|(_, _, stored)| serde_json::from_slice::<Value>(&stored.value).ok())
        .filter(|pod| controller_uid(pod, "Job") == Some(uid))
        .collect()
}

/// Whether `have` already holds every field of `want` except times.
fn status_matches(have: Option<&Value>, want: &Value) -> bool {
    let Some(have) = have else { return false };
    let Some(want) = want.as_object() else {
        return true;
    };
    want.iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "conditions" | "startTime" | "completionTime" | "containerStatuses"
            )
        })
        .all(|(k, v)| have.get(k) == Some(v))
        && want.get("conditions").is_none_or(|wc| {
            wc.as_array().is_none_or(|wc| {
                wc.iter().all(|c| {
                    have.get("conditions")
                        .and_then(Value::as_array)
                        .is_some_and(|hc| {
                            hc.iter().any(|h| {
                                h.get("type") == c.get("type") && h.get("status") == c.get("status")
                            })
                        })
                })
            })
        })
}

fn replicas(object: &Value) -> i64 {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn condition(type_: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": reason, "message": message,
           "lastTransitionTime": now, "lastUpdateTime": now})
}

/// The status a real cluster would report for `object` once it settled; `None` for
/// resources the simulator leaves alone.
pub(crate) fn desired_status(
    resource: &str,
    object: &Value,
    nodes: &[Value],
    now: &str,
) -> Option<Value> {
    let node_count = nodes.len() as i64;
    let generation = object
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    let name = meta::meta_str(object, "name");
    match resource {
        "apps/deployments" if !schedulable(object, nodes) => {
            let n = replicas(object);
            Some(json!({
                "observedGeneration": generation,
                "replicas": n, "updatedReplicas": n, "unavailableReplicas": n,
                "conditions": [
                    {"type": "Available", "status": "False",
                     "reason": "MinimumReplicasUnavailable",
                     "message": "Deployment does not have minimum availability.",
                     "lastTransitionTime": now, "lastUpdateTime": now},
                    condition("Progressing", "ReplicaSetUpdated",
                              &format!("ReplicaSet \"{name}\" is progressing."), now),
                ],
            }))
        }
        "apps/deployments" => {
            let n = replicas(object);
            Some(json!({
                "observedGeneration": generation,
                "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
                "conditions": [
                    condition("Available", "MinimumReplicasAvailable",
                              "Deployment has minimum availability.", now),
                    condition("Progressing", "NewReplicaSetAvailable",
                              &format!("ReplicaSet \"{name}\" has successfully progressed."), now),
                ],
            }))
        }
        "apps/replicasets" => {
            let n = replicas(object);
            Some(
                json!({"observedGeneration": generation, "replicas": n, "fullyLabeledReplicas": n,
                        "readyReplicas": n, "availableReplicas": n}),
            )
        }
        "apps/statefulsets" => {
            let n = replicas(object);
            Some(
                json!({"observedGeneration": generation, "replicas": n, "readyReplicas": n,
                        "currentReplicas": n, "updatedReplicas": n, "availableReplicas": n}),
            )
        }
        "apps/daemonsets" => Some(json!({
            "observedGeneration": generation,
            "desiredNumberScheduled": node_count, "currentNumberScheduled": node_count,
            "numberReady": node_count, "numberAvailable": node_count,
            "updatedNumberScheduled": node_count,
            "numberMisscheduled": 0,
        })),
        "batch/jobs" if suspended(object) => None,
        "batch/jobs" => {
            let job_condition = |type_: &str| {
                json!({"type": type_, "status": "True", "reason": "CompletionsReached",
                       "message": "Reached expected number of succeeded pods",
                       "lastProbeTime": now, "lastTransitionTime": now})
            };
            Some(json!({
                "succeeded": completions(object), "ready": 0, "terminating": 0,
                "uncountedTerminatedPods": {},
                "startTime": now, "completionTime": now,
                "conditions": [job_condition("SuccessCriteriaMet"), job_condition("Complete")],
            }))
        }
        "/pods" if job_controlled(object) => Some(completed_pod_status(object, now)),
        "/pods" => {
            let conditions: Vec<Value> =
                ["PodScheduled", "Initialized", "ContainersReady", "Ready"]
                    .iter()
                    .map(|t| json!({"type": t, "status": "True", "lastTransitionTime": now}))
                    .collect();
            Some(
                json!({"phase": "Running", "podIP": "10.0.0.10", "startTime": now,
                        "conditions": conditions}),
            )
        }
        _ => None,
    }
}

/// Completions a Job needs (`spec.completions`, default 1).
fn completions(job: &Value) -> i64 {
    job.pointer("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// Whether a Job is suspended (its pods are not made).
fn suspended(job: &Value) -> bool {
    job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
}

/// Whether a Pod's controller is a Job.
fn job_controlled(pod: &Value) -> bool {
    controller_uid(pod, "Job").is_some()
}

/// The uid of `pod`'s controller of kind `kind`.
fn controller_uid<'a>(pod: &'a Value, kind: &str) -> Option<&'a str> {
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|o| {
            o.get("kind").and_then(Value::as_str) == Some(kind)
                && o.get("controller").and_then(Value::as_bool) == Some(true)
        })
        .and_then(|o| o.get("uid").and_then(Value::as_str))
}

/// The status of a Job's pod that ran to completion: `Succeeded`, every container terminated
/// with exit code 0 (`Completed`), not ready.
fn completed_pod_status(pod: &Value, now: &str) -> Value {
    let containers: Vec<Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            let id = format!("simulated://{}/{name}", meta::meta_str(pod, "uid"));
            json!({"name": name, "image": c.get("image").cloned().unwrap_or(json!("")),
                   "imageID": "", "containerID": id, "ready": false, "restartCount": 0,
                   "started": false,
                   "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                            "startedAt": now, "finishedAt": now,
                                            "containerID": id}}})
        })
        .collect();
    let condition = |type_: &str, status: &str, reason: Option<&str>| {
        let mut c = json!({"type": type_, "status": status, "lastProbeTime": null,
                           "lastTransitionTime": now});
        if let Some(reason) = reason {
            c["reason"] = json!(reason);
        }
        c
    };
    json!({
        "phase": "Succeeded", "podIP": "10.0.0.10", "podIPs": [{"ip": "10.0.0.10"}],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "qosClass": "BestEffort",
        "startTime": now,
        "conditions": [
            condition("PodReadyToStartContainers", "False", None),
            condition("Initialized", "True", Some("PodCompleted")),
            condition("Ready", "False", Some("PodCompleted")),
            condition("ContainersReady", "False", Some("PodCompleted")),
            condition("PodScheduled", "True", None),
        ],
        "containerStatuses": containers,
    })
}

/// The label a Pod of Job `name` (uid `uid`) gets besides its template's when the Job's
/// selector is generated (not `manualSelector`), as kube-apiserver adds them to the template.
fn job_pod_labels(job: &Value) -> serde_json::Map<String, Value> {
    let mut labels = job
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let manual = job.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true);
    let name = meta::meta_str(job, "name");
    let uid = meta::meta_str(job, "uid");
    if !manual {
        for (key, value) in [
            ("batch.kubernetes.io/controller-uid", uid),
            ("batch.kubernetes.io/job-name", name),
            ("controller-uid", uid),
            ("job-name", name),
        ] {
            if value.len() <= 63 {
                labels.entry(key.to_owned()).or_insert_with(|| json!(value));
            }
        }
    }
    labels
}

/// A Pod of `job` as its controller makes it: named `<job>-<random>`, owned by the Job,
/// the template's metadata and spec, scheduled on `node`.
pub(crate) fn job_pod(job: &Value, node: Option<&str>) -> Value {
    let name = meta::meta_str(job, "name");
    let mut spec = job
        .pointer("/spec/template/spec")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let (Some(node), Some(map)) = (node, spec.as_object_mut()) {
        map.entry("nodeName").or_insert_with(|| json!(node));
    }
    let mut metadata = json!({
        "generateName": format!("{name}-"),
        "labels": job_pod_labels(job),
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                             "uid": meta::meta_str(job, "uid"),
                             "controller": true, "blockOwnerDeletion": true}],
    });
    if let Some(annotations) = job.pointer("/spec/template/metadata/annotations") {
        metadata["annotations"] = annotations.clone();
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// Makes the Pods Job `key` still lacks (one per completion), each completed at once.
async fn ensure_job_pods(server: &ServerAccess, key: &ObjectKey) {
    let Some(job) = stored(server, key) else {
        return;
    };
    if meta::is_deleting(&job) || suspended(&job) {
        return;
    }
    let pods = Bucket::new(&key.bucket.cluster, "/pods");
    let have = job_pods(server, key, &job).len() as i64;
    if have >= completions(&job) {
        return;
    }
    let Some(mut ctx) = server.writer(&pods, "kube-controller-manager") else {
        return;
    };
    let (_, nodes) = server.list(&Bucket::new(&key.bucket.cluster, "/nodes"), None, None);
    let node = nodes.first().map(|(_, name, _)| name.clone());
    for _ in have..completions(&job) {
        match ctx
            .create(
                &key.namespace,
                job_pod(&job, node.as_deref()),
                Managed::RecordUpdate,
            )
            .await
        {
            Ok(created) => {
                let name = meta::meta_str(&created, "name");
                set_status(server, &ObjectKey::new(pods.clone(), &key.namespace, name)).await;
            }
            Err(err) => {
                tracing::debug!(%err, job = %key.name, "simulated job pod");
                return;
            }
        }
    }
}

async fn write_status(server: &ServerAccess, key: &ObjectKey) {
    if &*key.bucket.resource == "batch/jobs" {
        if sync_kubelet_job(server, key).await {
            return;
        }
        ensure_job_pods(server, key).await;
    }
    set_status(server, key).await;
}

/// Plays kube's Job controller for Job `key` when a Node's kubelet runs its pods
/// ([`jobs::sync`]): makes its pods (Pending, on that Node), deletes the ones it no longer
/// wants, and writes the status they add up to. False when no Node runs its pods.
async fn sync_kubelet_job(server: &ServerAccess, key: &ObjectKey) -> bool {
    let Some(job) = stored(server, key) else {
        return true;
    };
    let nodes = nodes(server, &key.bucket.cluster);
    let Some(node) = kubelet_job(&key.bucket.resource, &job, &nodes) else {
        return false;
    };
    let Some(sync) = jobs::sync(&job, &job_pods(server, key, &job), &meta::now()) else {
        return true;
    };
    let pods = Bucket::new(&key.bucket.cluster, "/pods");
    let Some(mut ctx) = server.writer(&pods, "kube-controller-manager") else {
        return true;
    };
    for _ in 0..sync.create {
        let pod = job_pod(&job, Some(node));
        if let Err(err) = ctx.create(&key.namespace, pod, Managed::RecordUpdate).await {
            tracing::debug!(%err, job = %key.name, "job pod");
        }
    }
    for name in &sync.delete {
        if let Err(err) = ctx
            .delete(&key.namespace, name, &DeleteOptions::default())
            .await
        {
            tracing::debug!(%err, job = %key.name, pod = %name, "deleting a job pod");
        }
    }
    // The status of the pods there are now.
    let now = meta::now();
    let Some(sync) = jobs::sync(&job, &job_pods(server, key, &job), &now) else {
        return true;
    };
    let uid = meta::meta_str(&job, "uid");
    update_status(server, key, "kube-controller-manager", &|old| {
        (meta::meta_str(old, "uid") == uid
            && !jobs::finished(old)
            && !jobs::same_status(old.get("status"), &sync.status))
        .then(|| sync.status.clone())
    })
    .await;
    true
}

async fn set_status(server: &ServerAccess, key: &ObjectKey) {
    let nodes = nodes(server, &key.bucket.cluster);
    let resource = key.bucket.resource.clone();
    update_status(server, key, "simulated-kubelet", &|old| {
        // Taken by the process kubelet since it was queued, or a pod a Node's kubelet runs:
        // its status is the kubelet's.
        if meta::is_deleting(old)
            || old["metadata"]["annotations"][PROCESS_ANNOTATION] == "true"
            || kubelet_pod(&resource, old, &nodes)
        {
            return None;
        }
        desired_status(&resource, old, &nodes, &meta::now())
            .filter(|status| !status_matches(old.get("status"), status))
    })
    .await;
}

/// Writes, as `manager`, the status `status` makes of the object under `key` as it is then
/// (`None`: left as it is).
async fn update_status(
    server: &ServerAccess,
    key: &ObjectKey,
    manager: &str,
    status: &(dyn Fn(&Value) -> Option<Value> + Sync),
) {
    let Some(mut ctx) = server.writer(&key.bucket, manager) else {
        return;
    };
    let mut set = |_: &mut crate::ops::Ctx, old: &Value| {
        let mut new = old.clone();
        if let Some(status) = status(old) {
            new["status"] = status;
        }
        Ok(new)
    };
    if let Err(err) = ctx
        .update(
            &key.namespace,
            &key.name,
            &Target::Sub("status".into()),
            Managed::RecordUpdate,
            false,
            &mut set,
        )
        .await
    {
        tracing::debug!(%err, name = %key.name, manager, "simulated status");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_pods_are_made_as_its_controller_makes_them_and_complete() {
        let job = json!({"metadata": {"name": "pi", "namespace": "default", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"app": "pi"}},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "perl"}]}}}});
        let pod = job_pod(&job, Some("node-1"));
        assert_eq!(pod["metadata"]["generateName"], "pi-");
        assert_eq!(pod["metadata"]["labels"]["app"], "pi");
        assert_eq!(
            pod["metadata"]["labels"]["batch.kubernetes.io/job-name"],
            "pi"
        );
        assert_eq!(pod["metadata"]["labels"]["controller-uid"], "u1");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "Job");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(pod["spec"]["nodeName"], "node-1");
        assert!(job_controlled(&pod));
        // A manual selector: the template's labels only.
        let mut manual = job.clone();
        manual["spec"]["manualSelector"] = json!(true);
        let labels = job_pod(&manual, None)["metadata"]["labels"].clone();
        assert_eq!(labels, json!({"app": "pi"}));

        let status = desired_status("/pods", &pod, &[], "t").unwrap();
        assert_eq!(status["phase"], "Succeeded");
        let terminated = &status["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(terminated["exitCode"], 0);
        assert_eq!(terminated["reason"], "Completed");
        // Written once: later times do not make it differ.
        let later = desired_status("/pods", &pod, &[], "later").unwrap();
        assert!(status_matches(Some(&status), &later));
        // A pod of no Job runs.
        let plain = json!({"metadata": {"name": "p"}, "spec": {}});
        assert_eq!(
            desired_status("/pods", &plain, &[], "t").unwrap()["phase"],
            "Running"
        );
    }

    #[test]
    fn deployments_report_every_replica_ready() {
        let d = json!({"metadata": {"name": "web", "generation": 3}, "spec": {"replicas": 2}});
        let s = desired_status("apps/deployments", &d, &two_nodes(), "t").unwrap();
        assert_eq!(s["readyReplicas"], 2);
        assert_eq!(s["observedGeneration"], 3);
        assert!(status_matches(Some(&s), &s));
        let scaled = json!({"metadata": {"name": "web", "generation": 4}, "spec": {"replicas": 0}});
        let s0 = desired_status("apps/deployments", &scaled, &two_nodes(), "t").unwrap();
        assert!(!status_matches(Some(&s), &s0));
        assert_eq!(s0["availableReplicas"], 0);
    }

    fn two_nodes() -> Vec<Value> {
        vec![
            json!({"metadata": {"labels": {"zone": "a"}}}),
            json!({"metadata": {"labels": {"zone": "b", "disk": "ssd"}}}),
        ]
    }

    #[test]
    fn a_deployment_no_node_can_run_stays_unavailable() {
        let pinned = |selector: Value| {
            json!({"metadata": {"name": "web", "generation": 1},
                   "spec": {"replicas": 2, "template": {"spec": {"nodeSelector": selector}}}})
        };
        let fits = desired_status(
            "apps/deployments",
            &pinned(json!({"disk": "ssd"})),
            &two_nodes(),
            "t",
        )
        .unwrap();
        assert_eq!(fits["availableReplicas"], 2);
        let stuck = desired_status(
            "apps/deployments",
            &pinned(json!({"disk": "nvme"})),
            &two_nodes(),
            "t",
        )
        .unwrap();
        assert_eq!(stuck["unavailableReplicas"], 2);
        assert!(stuck.get("availableReplicas").is_none());
        assert_eq!(stuck["conditions"][0]["status"], "False");
        assert_eq!(
            stuck["conditions"][0]["reason"],
            "MinimumReplicasUnavailable"
        );
        // A status written for the schedulable spec does not satisfy the stuck one.
        assert!(!status_matches(Some(&fits), &stuck));
    }

    #[test]
    fn daemonsets_follow_nodes_and_jobs_complete() {
        let s = desired_status(
            "apps/daemonsets",
            &json!({}),
            &[json!({}), json!({}), json!({})],
            "t",
        )
        .unwrap();
        assert_eq!(s["numberReady"], 3);
        let j =
            desired_status("batch/jobs", &json!({"spec": {"completions": 4}}), &[], "t").unwrap();
        assert_eq!(j["succeeded"], 4);
        assert_eq!(j["conditions"][0]["type"], "SuccessCriteriaMet");
        assert_eq!(j["conditions"][1]["type"], "Complete");
        assert!(j.get("active").is_none(), "kube omits a zero `active`");
        let suspended = json!({"spec": {"suspend": true}});
        assert!(desired_status("batch/jobs", &suspended, &[], "t").is_none());
        assert!(desired_status("/configmaps", &json!({}), &[], "t").is_none());
    }
}

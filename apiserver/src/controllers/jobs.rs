//! The Job controller for Jobs whose pods really run, as the workload simulator plays it.
//!
//! A Node that lists an image in `status.images` has a kubelet that runs it (the process
//! kubelet of `ocm_hub` lists the images it runs as executables of its machine). A Job whose
//! pod template uses only such images gets what kube's Job controller does, not a completion
//! at once: its pods are made without a status (Pending, for that kubelet to run), and the
//! Job's status is derived from them — pure functions here, the writes in the simulator:
//!
//! - `active` (pods neither finished nor being deleted), `ready`, `terminating`, `succeeded`,
//!   `failed` (kube omits the zero counts it stores as plain integers), `startTime` from the
//!   first sync;
//! - wanted active pods: `parallelism` (default 1), no more than the completions still
//!   missing (`completions` unset: until one pod succeeded);
//! - done once `succeeded` reaches `completions` (unset: one succeeded and none active):
//!   `SuccessCriteriaMet` and `Complete` (reason `CompletionsReached`) and `completionTime`;
//! - a failed pod is replaced while `failed` ≤ `backoffLimit` (default 6); beyond it (or, for
//!   `restartPolicy: OnFailure`, once the active pods' container restarts reach it) the
//!   active pods are deleted and the Job gets `FailureTarget` and `Failed` (reason
//!   `BackoffLimitExceeded`);
//! - a finished Job (`Complete` or `Failed` True) is left as it is.
//!
//! Deliberate differences: failed pods are replaced at once (kube waits an exponential
//! back-off of 10 s doubling); counts come from the pods that exist (kube's pod finalizers
//! keep counting deleted ones — here the counts never go below the ones recorded);
//! `activeDeadlineSeconds`, indexed completions and pod failure policies are not followed.

use crate::meta::condition_true;
use serde_json::{Value, json};

use crate::meta;

/// Reason and message of a Job that reached its completions.
const COMPLETE: (&str, &str) = (
    "CompletionsReached",
    "Reached expected number of succeeded pods",
);

/// Reason and message of a Job whose pods failed too often.
const BACKOFF: (&str, &str) = (
    "BackoffLimitExceeded",
    "Job has reached the specified backoff limit",
);

/// `backoffLimit` when the Job does not say.
const DEFAULT_BACKOFF_LIMIT: i64 = 6;

/// The repositories of the images `node` lists in `status.images`.
fn node_repositories(node: &Value) -> Vec<&str> {
    node.pointer("/status/images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|image| image.get("names").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(meta::image_repository)
        .collect()
}

/// The images of a pod spec's containers and init containers.
fn spec_images(spec: &Value) -> Vec<&str> {
    ["containers", "initContainers"]
        .iter()
        .filter_map(|field| spec.get(*field).and_then(Value::as_array))
        .flatten()
        .map(|c| c.get("image").and_then(Value::as_str).unwrap_or_default())
        .collect()
}

/// The name of the Node (among `nodes`) whose kubelet runs pods of `spec`: it lists every
/// image of the spec's containers, and is the spec's `nodeName` when that is set.
pub(crate) fn kubelet_node<'a>(spec: &Value, nodes: &'a [Value]) -> Option<&'a str> {
    let images = spec_images(spec);
    if images.is_empty() {
        return None;
    }
    let bound = spec
        .get("nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    nodes
        .iter()
        .filter(|node| bound.is_none_or(|b| meta::meta_str(node, "name") == b))
        .find(|node| {
            let known = node_repositories(node);
            images
                .iter()
                .all(|image| known.contains(&meta::image_repository(image)))
        })
        .map(|node| meta::meta_str(node, "name"))
}

/// Whether a Job finished: `Complete` or `Failed` True.
pub(crate) fn finished(job: &Value) -> bool {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| matches!(c["type"].as_str(), Some("Complete" | "Failed")) && c["status"] == "True")
}

/// How a Job's pods stand.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Names of the pods neither finished nor being deleted.
    pub(crate) active: Vec<String>,
    /// Active pods whose `Ready` condition is True.
    pub(crate) ready: i64,
    /// Pods being deleted that have not finished.
    pub(crate) terminating: i64,
    /// Pods `Succeeded`.
    pub(crate) succeeded: i64,
    /// Pods `Failed`.
    pub(crate) failed: i64,
    /// Container restarts of the active pods.
    pub(crate) restarts: i64,
}

/// Counts `pods` (the Job's).
pub(crate) fn tally(pods: &[Value]) -> Tally {
    let mut out = Tally::default();
    for pod in pods {
        match pod.pointer("/status/phase").and_then(Value::as_str) {
            Some("Succeeded") => out.succeeded += 1,
            Some("Failed") => out.failed += 1,
            _ if meta::is_deleting(pod) => out.terminating += 1,
            _ => {
                out.active.push(meta::meta_str(pod, "name").to_owned());
                out.ready += i64::from(condition_true(pod, "Ready"));
                out.restarts += restarts(pod);
            }
        }
    }
    out
}

/// The restarts of a pod's containers and init containers.
fn restarts(pod: &Value) -> i64 {
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .filter_map(|field| pod["status"].get(*field).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
        .sum()
}

/// What the Job controller does for a Job.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JobSync {
    /// The Job's status.
    pub(crate) status: Value,
    /// How many pods to make.
    pub(crate) create: i64,
    /// Active pods to delete.
    pub(crate) delete: Vec<String>,
}

/// An integer of the Job's spec.
fn spec_int(job: &Value, field: &str) -> Option<i64> {
    job.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_i64)
}

/// Whether the pods failed too often for `job`: more failed pods than `backoffLimit`, or for
/// `restartPolicy: OnFailure`, as many container restarts of active pods (any, for a limit
/// of 0).
fn past_backoff_limit(job: &Value, pods: &Tally, failed: i64) -> bool {
    let limit = spec_int(job, "backoffLimit").unwrap_or(DEFAULT_BACKOFF_LIMIT);
    let on_failure = job.pointer("/spec/template/spec/restartPolicy") == Some(&json!("OnFailure"));
    let restarts_past = match limit {
        0 => pods.restarts > 0,
        _ => pods.restarts >= limit,
    };
    failed > limit || (on_failure && restarts_past)
}

/// A Job condition, True.
fn condition(type_: &str, (reason, message): (&str, &str), now: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": reason, "message": message,
           "lastProbeTime": now, "lastTransitionTime": now})
}

/// What kube's Job controller does for `job` given its `pods`, at `now`; `None` for a Job it
/// leaves alone (suspended, being deleted or finished).
pub(crate) fn sync(job: &Value, pods: &[Value], now: &str) -> Option<JobSync> {
    if finished(job)
        || meta::is_deleting(job)
        || job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let pods = tally(pods);
    let recorded = |field: &str| {
        job.pointer(&format!("/status/{field}"))
            .and_then(Value::as_i64)
    };
    let succeeded = pods.succeeded.max(recorded("succeeded").unwrap_or(0));
    let failed = pods.failed.max(recorded("failed").unwrap_or(0));
    let active = pods.active.len() as i64;
    let start = job
        .pointer("/status/startTime")
        .cloned()
        .unwrap_or_else(|| json!(now));
    let completions = spec_int(job, "completions");
    let parallelism = spec_int(job, "parallelism").unwrap_or(1).max(0);
    let (conditions, want) = if past_backoff_limit(job, &pods, failed) {
        (
            vec![
                condition("FailureTarget", BACKOFF, now),
                condition("Failed", BACKOFF, now),
            ],
            0,
        )
    } else if match completions {
        Some(c) => succeeded >= c,
        None => succeeded > 0 && active == 0,
    } {
        (
            vec![
                condition("SuccessCriteriaMet", COMPLETE, now),
                condition("Complete", COMPLETE, now),
            ],
            0,
        )
    } else {
        let want = match completions {
            Some(c) => parallelism.min(c - succeeded).max(0),
            // A work queue: once one succeeded, the others finish on their own.
            None if succeeded > 0 => active,
            None => parallelism,
        };
        (Vec::new(), want)
    };
    let keep = usize::try_from(want.min(active)).unwrap_or(0);
    let delete = pods.active[keep..].to_vec();
    let remaining = active.min(want);
    let mut status = json!({
        "startTime": start,
        "ready": pods.ready.min(remaining),
        "terminating": pods.terminating,
        "uncountedTerminatedPods": {},
    });
    for (field, count) in [
        ("active", remaining),
        ("succeeded", succeeded),
        ("failed", failed),
    ] {
        if count > 0 {
            status[field] = json!(count);
        }
    }
    let complete = conditions.iter().any(|c| c["type"] == "Complete");
    if !conditions.is_empty() {
        status["conditions"] = Value::Array(conditions);
    }
    if complete {
        status["completionTime"] = json!(now);
    }
    Some(JobSync {
        status,
        create: (want - active).max(0),
        delete,
    })
}

/// A status with its times taken out, to compare two.
fn timeless(status: &Value) -> Value {
    let mut out = status.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("startTime");
        map.remove("completionTime");
    }
    if let Some(conditions) = out.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
            c.remove("lastProbeTime");
            c.remove("lastTransitionTime");
        }
    }
    out
}

/// Whether `have` says what `want` says, times aside.
pub(crate) fn same_status(have: Option<&Value>, want: &Value) -> bool {
    have.is_some_and(|have| timeless(have) == timeless(want))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(spec: Value) -> Value {
        let mut spec = spec;
        spec["template"] = json!({"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "example.com/tools:1"}]}});
        json!({"metadata": {"name": "j", "uid": "u"}, "spec": spec})
    }

    fn pod(name: &str, phase: Option<&str>) -> Value {
        let mut pod = json!({"metadata": {"name": name}, "spec": {}});
        if let Some(phase) = phase {
            pod["status"] = json!({"phase": phase});
        }
        pod
    }

    /// `job` with `status` recorded.
    fn with_status(job: &Value, status: &Value) -> Value {
        let mut job = job.clone();
        job["status"] = status.clone();
        job
    }

    #[test]
    fn a_node_runs_the_pods_whose_every_image_it_lists() {
        let node = |name: &str, images: Value| json!({"metadata": {"name": name}, "status": {"images": images}});
        let nodes = [
            node("node-1", json!([])),
            node(
                "node-2",
                json!([{"names": ["example.com/tools:2", "ocm:1"], "sizeBytes": 1}]),
            ),
        ];
        let spec = |images: &[&str]| {
            json!({"containers": images.iter().map(|i| json!({"name": "c", "image": i}))
                                       .collect::<Vec<_>>()})
        };
        // Another tag (or a digest) of a listed repository counts.
        assert_eq!(
            kubelet_node(&spec(&["example.com/tools:1"]), &nodes),
            Some("node-2")
        );
        assert_eq!(
            kubelet_node(&spec(&["example.com/tools@sha256:ab", "ocm:2"]), &nodes),
            Some("node-2")
        );
        assert_eq!(
            kubelet_node(&spec(&["example.com/tools:1", "busybox"]), &nodes),
            None
        );
        assert_eq!(kubelet_node(&spec(&[]), &nodes), None);
        // Bound elsewhere: not this node's.
        let mut bound = spec(&["ocm:1"]);
        bound["nodeName"] = json!("node-1");
        assert_eq!(kubelet_node(&bound, &nodes), None);
    }

    #[test]
    fn a_job_makes_its_pod_pending_then_completes_when_it_succeeded() {
        let j = job(json!({}));
        let first = sync(&j, &[], "t0").unwrap();
        assert_eq!(first.create, 1);
        assert!(first.delete.is_empty());
        assert_eq!(first.status["startTime"], "t0");
        assert!(first.status.get("active").is_none());
        assert!(first.status.get("conditions").is_none());

        let j = with_status(&j, &first.status);
        let running = sync(&j, &[pod("j-1", None)], "t1").unwrap();
        assert_eq!(running.create, 0);
        assert_eq!(running.status["active"], 1);
        assert_eq!(
            running.status["startTime"], "t0",
            "kept from the first sync"
        );
        assert!(!same_status(Some(&first.status), &running.status));

        let j = with_status(&j, &running.status);
        let done = sync(&j, &[pod("j-1", Some("Succeeded"))], "t2").unwrap();
        assert_eq!(done.create, 0);
        assert_eq!(done.status["succeeded"], 1);
        assert!(done.status.get("active").is_none());
        assert_eq!(done.status["completionTime"], "t2");
        let types: Vec<&str> = done.status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
        assert_eq!(done.status["conditions"][1]["reason"], "CompletionsReached");
        // Finished: left alone.
        assert!(sync(&with_status(&j, &done.status), &[], "t3").is_none());
        // The same status later is the same.
        let again = sync(&j, &[pod("j-1", Some("Succeeded"))], "t9").unwrap();
        assert!(same_status(Some(&done.status), &again.status));
    }

    #[test]
    fn failed_pods_are_replaced_up_to_the_backoff_limit_then_the_job_fails() {
        let j = job(json!({"backoffLimit": 1}));
        let one = sync(&j, &[pod("j-1", Some("Failed"))], "t").unwrap();
        assert_eq!(one.create, 1, "a replacement");
        assert_eq!(one.status["failed"], 1);
        assert!(one.status.get("conditions").is_none());
        let pods = [
            pod("j-1", Some("Failed")),
            pod("j-2", Some("Failed")),
            pod("j-3", None),
        ];
        let failed = sync(&j, &pods, "t").unwrap();
        assert_eq!(failed.create, 0);
        assert_eq!(failed.delete, ["j-3"], "the active pod goes");
        assert_eq!(failed.status["failed"], 2);
        assert!(failed.status.get("active").is_none());
        assert!(failed.status.get("completionTime").is_none());
        assert_eq!(failed.status["conditions"][0]["type"], "FailureTarget");
        assert_eq!(failed.status["conditions"][1]["type"], "Failed");
        assert_eq!(
            failed.status["conditions"][1]["reason"],
            "BackoffLimitExceeded"
        );
        // A limit of 0: the first failure fails the Job.
        let strict = job(json!({"backoffLimit": 0}));
        let s = sync(&strict, &[pod("j-1", Some("Failed"))], "t").unwrap();
        assert_eq!(s.status["conditions"][1]["type"], "Failed");
        assert_eq!(s.create, 0);
        // The default limit is 6.
        let many: Vec<Value> = (0..6)
            .map(|i| pod(&format!("p{i}"), Some("Failed")))
            .collect();
        assert_eq!(sync(&job(json!({})), &many, "t").unwrap().create, 1);
    }

    #[test]
    fn on_failure_restarts_count_against_the_backoff_limit() {
        let mut j = job(json!({"backoffLimit": 2}));
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        let restarting = |n: i64| {
            let mut p = pod("j-1", Some("Running"));
            p["status"]["containerStatuses"] = json!([{"name": "c", "restartCount": n}]);
            p
        };
        assert!(
            sync(&j, &[restarting(1)], "t")
                .unwrap()
                .status
                .get("conditions")
                .is_none()
        );
        let s = sync(&j, &[restarting(2)], "t").unwrap();
        assert_eq!(s.status["conditions"][1]["type"], "Failed");
        assert_eq!(s.delete, ["j-1"]);
    }

    #[test]
    fn parallel_pods_and_completions_add_up() {
        let j = job(json!({"completions": 3, "parallelism": 2}));
        assert_eq!(sync(&j, &[], "t").unwrap().create, 2);
        let mut ready = pod("a", Some("Running"));
        ready["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        let s = sync(&j, &[pod("x", Some("Succeeded")), ready.clone()], "t").unwrap();
        assert_eq!(s.create, 1);
        assert_eq!(s.status["ready"], 1);
        assert_eq!(s.status["active"], 1);
        // Two succeeded, one missing: only one pod more, none beyond it.
        let s = sync(
            &j,
            &[
                pod("x", Some("Succeeded")),
                pod("y", Some("Succeeded")),
                ready,
            ],
            "t",
        )
        .unwrap();
        assert_eq!(s.create, 0);
        // A pod being deleted is terminating, not active.
        let mut going = pod("z", None);
        going["metadata"]["deletionTimestamp"] = json!("t");
        let s = sync(&j, &[going], "t").unwrap();
        assert_eq!(s.status["terminating"], 1);
        assert_eq!(s.create, 2);
        // Counts never drop below the recorded ones (a finished pod deleted meanwhile).
        let recorded = with_status(&j, &json!({"succeeded": 2, "startTime": "t0"}));
        assert_eq!(sync(&recorded, &[], "t").unwrap().create, 1);
        // Without completions: done once one succeeded and none is active.
        let queue = job(json!({"parallelism": 2}));
        let s = sync(&queue, &[pod("a", Some("Succeeded")), pod("b", None)], "t").unwrap();
        assert_eq!(s.create, 0);
        assert!(s.status.get("conditions").is_none());
        let s = sync(
            &queue,
            &[pod("a", Some("Succeeded")), pod("b", Some("Succeeded"))],
            "t",
        )
        .unwrap();
        assert_eq!(s.status["conditions"][1]["type"], "Complete");
        // Suspended: left alone.
        assert!(sync(&job(json!({"suspend": true})), &[], "t").is_none());
    }
}

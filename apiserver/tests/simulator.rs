//! The workload simulator through a real kube client: workloads in a simulated cluster reach
//! settled status; other clusters are left alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap()
}

async fn wait<K>(api: &Api<K>, name: &str, cond: impl Fn(&K) -> bool)
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), name, move |o: Option<&K>| o.is_some_and(&cond)),
    )
    .await
    .expect("condition within the timeout")
    .unwrap();
}

#[tokio::test]
async fn workloads_in_a_simulated_cluster_settle_and_others_are_left_alone() {
    let (server, client) = common::server().await;
    server.ensure_cluster("plain").await.unwrap();
    let plain = kube::Client::new(server.service_for_cluster("plain"), "default");
    server.simulate_workloads("", Duration::from_millis(50));

    // Created first in the plain cluster, so the simulator has seen (and skipped) it before
    // it handles the simulated cluster's objects.
    let plain_deployments: Api<Deployment> = Api::namespaced(plain.clone(), "default");
    plain_deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();
    wait(&deployments, "web", |d: &Deployment| {
        d.status.as_ref().is_some_and(|s| {
            s.ready_replicas == Some(2)
                && s.available_replicas == Some(2)
                && s.observed_generation == Some(1)
                && s.conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Available" && c.status == "True")
        })
    })
    .await;
    assert!(
        plain_deployments
            .get("web")
            .await
            .unwrap()
            .status
            .is_none_or(|s| s.ready_replicas.is_none())
    );

    // Scaling is followed.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    wait(&deployments, "web", |d: &Deployment| {
        d.status
            .as_ref()
            .is_some_and(|s| s.ready_replicas == Some(3) && s.observed_generation == Some(2))
    })
    .await;

    // A Job completes; a Pod runs; a DaemonSet has one pod per Node.
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"completions": 2, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    wait(&jobs, "once", |j: &Job| {
        j.status.as_ref().is_some_and(|s| {
            s.succeeded == Some(2)
                && s.conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Complete" && c.status == "True")
        })
    })
    .await;
    // Its pods are there, as the Job controller makes them, each run to completion; they go
    // with the Job.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let job_pods = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=once"))
        .await
        .unwrap()
        .items;
    assert_eq!(job_pods.len(), 2);
    let job_uid = jobs.get("once").await.unwrap().metadata.uid.unwrap();
    for pod in &job_pods {
        assert!(pod.metadata.name.as_deref().unwrap().starts_with("once-"));
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("Job", job_uid.as_str())
        );
        assert_eq!(owner.controller, Some(true));
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Succeeded"));
        let terminated = status.container_statuses.as_ref().unwrap()[0]
            .state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (0, Some("Completed"))
        );
    }
    jobs.delete("once", &DeleteParams::background())
        .await
        .unwrap();
    common::eventually("the job's pods deleted with it", || async {
        pods.list(&ListParams::default().labels("batch.kubernetes.io/job-name=once"))
            .await
            .unwrap()
            .items
            .is_empty()
            .then_some(())
    })
    .await;
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait(&pods, "p", |p: &Pod| {
        p.status
            .as_ref()
            .is_some_and(|s| s.phase.as_deref() == Some("Running"))
    })
    .await;
    let nodes: Api<Node> = Api::all(client.clone());
    for n in ["n1", "n2"] {
        let node: Node = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}}),
        )
        .unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
    }
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let ds: DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    daemonsets
        .create(&PostParams::default(), &ds)
        .await
        .unwrap();
    wait(&daemonsets, "agent", |d: &DaemonSet| {
        d.status
            .as_ref()
            .is_some_and(|s| s.number_ready == 2 && s.desired_number_scheduled == 2)
    })
    .await;
}

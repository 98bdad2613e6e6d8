//! The process kubelet keeps a running pod's files current, as a kubelet does: its
//! ServiceAccount token (read from a file the kubeconfig names) is renewed before it expires,
//! and a changed ConfigMap reaches the pod's volume — without restarting the process. A curl
//! pod runs as the machine's curl, reaches a Service through the pods' published ports, and
//! its output is its log through the API server's `pods/log`. An image the machine runs as a
//! local executable (`ocm demo --local-image`) runs it in place of the image's program, and its
//! Node lists it: a Job of that image really runs its pods there, and is Complete only once
//! its pod succeeded, or Failed once its pods failed more than its backoff limit allows.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use ocm_e2e::operator::{IMAGE, wait_deployment_available};
use ocm_e2e::process::start_apiserver;
use serde_json::json;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// Waits until `path` holds something `accept`s; returns it.
async fn file_until(path: &Path, what: &str, accept: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    tokio::time::timeout(ocm_e2e::WAIT, async {
        loop {
            if let Ok(bytes) = std::fs::read(path)
                && accept(&bytes)
            {
                return bytes;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: {} not as expected", path.display()))
}

/// Who the pod's kubeconfig authenticates as (a SelfSubjectReview with it).
async fn user_of(kubeconfig: &Path) -> String {
    let client = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap();
    let review = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_pod_gets_renewed_tokens_and_current_volumes() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    let kubelet = ocm_e2e::start_process_kubelet_with(
        OCM,
        &kubeconfig,
        IMAGE,
        home,
        Duration::from_millis(300),
        Duration::from_secs(1),
        Vec::new(),
    )
    .await
    .unwrap();

    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "runner"}})).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    // What the operator needs to keep running (it installs its CRD first).
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "runner"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "runner", "namespace": "default"}]}))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let settings: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "settings"}, "data": {"mode": "one"}}))
            .unwrap();
    configmaps
        .create(&PostParams::default(), &settings)
        .await
        .unwrap();
    // A long-running `ocm` process: the klusterlet operator (it only needs to keep running).
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "runner"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "runner"}},
                 "template": {"metadata": {"labels": {"app": "runner"}},
                              "spec": {"serviceAccountName": "runner",
                                       "containers": [{"name": "main", "image": IMAGE,
                                           "args": ["operator", "klusterlet", "--image", IMAGE],
                                           "volumeMounts": [{"name": "settings",
                                                             "mountPath": "/etc/settings"}]}],
                                       "volumes": [{"name": "settings",
                                                    "configMap": {"name": "settings"}}]}}}}))
    .unwrap();
    Api::<Deployment>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    wait_deployment_available(&admin, "default", "runner", 1)
        .await
        .unwrap();
    let pods = Api::<Pod>::namespaced(admin.clone(), "default")
        .list(&ListParams::default().labels("app=runner"))
        .await
        .unwrap();
    let pod = pods.items[0].metadata.name.clone().unwrap();
    let pod_dir = home.join("pods").join("default").join(&pod);
    let pod_kubeconfig = pod_dir.join("kubeconfig");
    let text = std::fs::read_to_string(&pod_kubeconfig).unwrap();
    assert!(text.contains("tokenFile"), "{text}");
    let token = pod_dir.join("token");
    let first = std::fs::read(&token).unwrap();
    assert_eq!(
        user_of(&pod_kubeconfig).await,
        "system:serviceaccount:default:runner"
    );

    // The token is renewed while the process runs, and the new one works.
    file_until(&token, "a renewed token", |t| !t.is_empty() && t != first).await;
    assert_eq!(
        user_of(&pod_kubeconfig).await,
        "system:serviceaccount:default:runner"
    );

    // A changed ConfigMap reaches the volume.
    let mode = pod_dir.join("volumes/etc/settings/mode");
    file_until(&mode, "the first ConfigMap", |m| m == b"one").await;
    configmaps
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"mode": "two"}})),
        )
        .await
        .unwrap();
    file_until(&mode, "the changed ConfigMap", |m| m == b"two").await;

    // Through all of it, the same process: no restart.
    let pod = Api::<Pod>::namespaced(admin.clone(), "default")
        .get(&pod)
        .await
        .unwrap();
    let status = pod.status.unwrap();
    assert_eq!(status.container_statuses.unwrap()[0].restart_count, 0);
    kubelet.cancel();
    apiserver.stop();
}

/// Creates `crds` and waits until they are established.
async fn install_crds(
    client: &kube::Client,
    crds: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::ResourceExt;
    use kube::runtime::wait::{await_condition, conditions};
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in &crds {
        api.create(&PostParams::default(), crd).await.unwrap();
    }
    for crd in &crds {
        tokio::time::timeout(
            ocm_e2e::WAIT,
            await_condition(
                api.clone(),
                &crd.name_any(),
                conditions::is_crd_established(),
            ),
        )
        .await
        .unwrap()
        .unwrap();
    }
}

/// Runs a curl pod and returns its log once it finished (and whether it succeeded).
async fn curl_pod(admin: &kube::Client, name: &str, command: Vec<String>) -> (String, String) {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "curl", "image": "curlimages/curl:latest",
                                 "command": command}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let done = ocm_e2e::wait_for(&pods, name, "the curl pod finished", |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|phase| matches!(phase, "Succeeded" | "Failed"))
    })
    .await
    .unwrap();
    let phase = done.status.unwrap().phase.unwrap();
    assert_eq!(done.spec.unwrap().node_name.as_deref(), Some("node-1"));
    let log = pods.logs(name, &Default::default()).await.unwrap();
    (phase, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curl_pod_reaches_the_placement_debugger_through_its_service_and_logs_the_answer() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("no curl on this machine: curl pods stay simulated; nothing to test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    install_crds(&admin, ocm_api::crds::hub()).await;
    let kubelet = ocm_e2e::start_process_kubelet(OCM, &kubeconfig, IMAGE, home)
        .await
        .unwrap();
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "placement"}})).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "placement"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "placement", "namespace": "default"}]}))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    // The placement controller with its debugger, as the operator runs it, behind a Service.
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "placement"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "placement"}},
                 "template": {"metadata": {"labels": {"app": "placement"}},
                              "spec": {"serviceAccountName": "placement",
                                       "containers": [{"name": "main", "image": IMAGE,
                                           "args": ["hub", "controllers", "--only=placement",
                                                    "--metrics-addr=0.0.0.0:8080",
                                                    "--placement-debug-listen=0.0.0.0:9443"],
                                           "ports": [{"name": "https", "containerPort": 9443},
                                                     {"name": "metrics", "containerPort": 8080}]}]}}}}))
    .unwrap();
    Api::<Deployment>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let service: k8s_openapi::api::core::v1::Service = serde_json::from_value(json!({
        "metadata": {"name": "placement-debug"},
        "spec": {"selector": {"app": "placement"},
                 "ports": [{"name": "https", "port": 9443, "targetPort": "https"}]}}))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Service>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let placement: ocm_api::cluster::v1beta1::Placement = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "p1", "namespace": "default"}, "spec": {}}))
    .unwrap();
    Api::<ocm_api::cluster::v1beta1::Placement>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &placement)
        .await
        .unwrap();
    wait_deployment_available(&admin, "default", "placement", 1)
        .await
        .unwrap();
    let token = Api::<ServiceAccount>::namespaced(admin.clone(), "default")
        .create_token_request("placement", &PostParams::default(), &Default::default())
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let url = "https://placement-debug.default.svc.cluster.local:9443/debug/placements/default/p1";
    let curl =
        |auth: &str| -> Vec<String> { ["curl", "-sk", "-H", auth, url].map(String::from).to_vec() };

    let (phase, log) = curl_pod(
        &admin,
        "curl-ok",
        curl(&format!("Authorization: Bearer {token}")),
    )
    .await;
    assert_eq!(phase, "Succeeded", "{log}");
    let answer: serde_json::Value =
        serde_json::from_str(&log).unwrap_or_else(|e| panic!("{e}: {log}"));
    assert_eq!(answer["placement"]["metadata"]["name"], "p1", "{log}");
    assert_eq!(
        answer["filteredPipelineResults"][1]["name"], "Predicate,TaintToleration",
        "{log}"
    );
    assert!(answer.get("error").is_none(), "{log}");

    // A token the API server does not know: the debugger refuses it.
    let (phase, log) = curl_pod(&admin, "curl-bad", curl("Authorization: Bearer nope")).await;
    assert_eq!(phase, "Succeeded");
    assert_eq!(log, "Unauthorized");

    // A Service nobody serves: curl fails to resolve it, and the pod fails with it.
    let (phase, _) = curl_pod(
        &admin,
        "curl-nowhere",
        ["curl", "-sS", "https://nobody.default.svc:443/"]
            .map(String::from)
            .to_vec(),
    )
    .await;
    assert_eq!(phase, "Failed");
    kubelet.cancel();
    apiserver.stop();
}

/// Starts the process kubelet of the cluster behind `kubeconfig`, running `image` as
/// `executable` besides the `ocm` image.
async fn start_kubelet_with_local(
    kubeconfig: &Path,
    home: &Path,
    image: &str,
    executable: &str,
) -> ocm_runtime::shutdown::Shutdown {
    let local = ocm::process_kubelet::LocalImage {
        image: image.into(),
        executable: executable.into(),
    };
    ocm_e2e::start_process_kubelet_with_local(OCM, kubeconfig, IMAGE, home, vec![local])
        .await
        .unwrap()
}

/// A Deployment of an image given as a local executable (another tag of it, here) runs as
/// that executable, which stands for the image's program: the first word of `args` (the
/// image has no entrypoint) is dropped, the rest are the executable's arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_image_runs_as_its_executable_in_place_of_the_images_program() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    let kubelet =
        start_kubelet_with_local(&kubeconfig, home, "registry.example.com/tools:1", OCM).await;
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "tools"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "tools"}},
                 "template": {"metadata": {"labels": {"app": "tools"}},
                              "spec": {"containers": [{"name": "main",
                                  "image": "registry.example.com/tools:2",
                                  "args": ["/usr/local/bin/tools", "--version"]}]}}}}))
    .unwrap();
    Api::<Deployment>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    // `ocm --version` ran and exited 0 (given the program's path, `ocm` would refuse it).
    let exited_zero = |pod: &Pod| {
        let status = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref());
        status.and_then(|s| s.first()).is_some_and(|c| {
            [c.state.as_ref(), c.last_state.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|state| state.terminated.as_ref())
                .any(|t| t.exit_code == 0)
        })
    };
    let watch = kube::runtime::watcher(
        pods.clone(),
        kube::runtime::watcher::Config::default().labels("app=tools"),
    );
    let mut events = std::pin::pin!(kube::runtime::WatchStreamExt::applied_objects(watch));
    let ran = tokio::time::timeout(ocm_e2e::WAIT, async {
        while let Some(pod) = futures::TryStreamExt::try_next(&mut events).await.unwrap() {
            if exited_zero(&pod) {
                return pod;
            }
        }
        panic!("the pod watch ended");
    })
    .await
    .expect("the tools pod ran its executable");
    let log = pods
        .logs(ran.metadata.name.as_deref().unwrap(), &Default::default())
        .await
        .unwrap();
    assert!(log.lines().any(|l| l.starts_with("ocm ")), "{log}");
    kubelet.cancel();
    apiserver.stop();
}

/// The program of the image the Job tests run: checks it got a kubeconfig, waits until the
/// file its argument names exists, then exits with the code written in it.
const JOB_PROGRAM: &str = r#"#!/bin/sh
test -f "$KUBECONFIG" || { echo "no kubeconfig"; exit 9; }
while [ ! -e "$1" ]; do sleep 0.05; done
echo "exiting with $(cat "$1")"
exit "$(cat "$1")"
"#;

/// A simulated cluster whose process kubelet runs `registry.example.com/job` as
/// [`JOB_PROGRAM`], once its Node lists the image; with the cluster's admin client.
async fn job_cluster(
    home: &Path,
) -> (
    ocm::simulated::SimulatedCluster,
    ocm_runtime::shutdown::Shutdown,
    kube::Client,
) {
    use std::os::unix::fs::PermissionsExt;
    let program = home.join("job-program");
    std::fs::write(&program, JOB_PROGRAM).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster =
        ocm::simulated::SimulatedCluster::start(&home.join("spoke"), ([127, 0, 0, 1], 0).into())
            .await
            .unwrap();
    let kubelet = start_kubelet_with_local(
        &cluster.kubeconfig,
        home,
        "registry.example.com/job:1",
        program.to_str().unwrap(),
    )
    .await;
    let admin = cluster.client();
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(admin.clone());
    ocm_e2e::wait_for(&nodes, "node-1", "the job image listed", |node| {
        node.status
            .as_ref()
            .and_then(|s| s.images.as_ref())
            .is_some_and(|images| {
                images
                    .iter()
                    .flat_map(|i| i.names.iter().flatten())
                    .any(|n| n == "registry.example.com/job:1")
            })
    })
    .await
    .unwrap();
    (cluster, kubelet, admin)
}

/// Creates Job `name` of the job image (another tag of it), its program waiting for `go`.
async fn create_job(admin: &kube::Client, name: &str, go: &Path, backoff_limit: i32) {
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"backoffLimit": backoff_limit, "manualSelector": true,
                 "selector": {"matchLabels": {"job": name}},
                 "template": {"metadata": {"labels": {"job": name}},
                              "spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "main",
                                           "image": "registry.example.com/job:latest",
                                           "args": ["/job", go.to_str().unwrap()]}]}}}}))
    .unwrap();
    Api::<Job>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
}

/// Job condition `type_` is True.
fn job_condition(job: &Job, type_: &str) -> Option<k8s_openapi::api::batch::v1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_ && c.status == "True")
        .cloned()
}

/// The pods of Job `name` (labelled `job=<name>`).
async fn job_pods(admin: &kube::Client, name: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(admin.clone(), "default")
        .list(&ListParams::default().labels(&format!("job={name}")))
        .await
        .unwrap()
        .items
}

/// Exit code of a pod's terminated container.
fn exit_code(pod: &Pod) -> Option<i32> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

/// Writes `text` to `path` whole (a reader never sees it half written).
fn write_whole(path: &Path, text: &str) {
    let partial = path.with_extension("writing");
    std::fs::write(&partial, text).unwrap();
    std::fs::rename(&partial, path).unwrap();
}

/// A Job of an image the node runs as a local executable is not completed at once: its pod
/// is made Pending, runs as the executable (with its ServiceAccount's kubeconfig), and the
/// Job is active while it runs, Complete only once the pod Succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_a_local_image_runs_its_pod_and_completes_once_the_pod_succeeded() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (cluster, kubelet, admin) = job_cluster(home).await;
    let go = home.join("go-ok");
    create_job(&admin, "cleanup", &go, 0).await;
    let jobs: Api<Job> = Api::namespaced(admin.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");

    let active = ocm_e2e::wait_for(&jobs, "cleanup", "one pod active", |j| {
        j.status.as_ref().and_then(|s| s.active) == Some(1)
    })
    .await
    .unwrap();
    assert!(active.status.as_ref().unwrap().start_time.is_some());
    let [pod] = job_pods(&admin, "cleanup").await.try_into().unwrap();
    let pod_name = pod.metadata.name.clone().unwrap();
    let running = ocm_e2e::wait_for(&pods, &pod_name, "the process runs", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await
    .unwrap();
    assert_eq!(running.spec.unwrap().node_name.as_deref(), Some("node-1"));
    let annotations = running.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get(ocm::process_kubelet::pod::PROCESS_ANNOTATION)
            .map(String::as_str),
        Some("true")
    );
    // Still running: the Job is not complete.
    let job = jobs.get("cleanup").await.unwrap();
    assert!(job_condition(&job, "Complete").is_none(), "{job:?}");
    assert!(job.status.unwrap().succeeded.is_none());

    write_whole(&go, "0");
    let done = ocm_e2e::wait_for(&jobs, "cleanup", "Complete", |j| {
        job_condition(j, "Complete").is_some()
    })
    .await
    .unwrap();
    let status = done.status.clone().unwrap();
    assert_eq!(status.succeeded, Some(1));
    assert_eq!(status.active, None);
    assert!(status.completion_time.is_some());
    assert!(job_condition(&done, "SuccessCriteriaMet").is_some());
    let pod = pods.get(&pod_name).await.unwrap();
    assert_eq!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded")
    );
    assert_eq!(exit_code(&pod), Some(0));
    let log = pods.logs(&pod_name, &Default::default()).await.unwrap();
    assert_eq!(log, "exiting with 0\n");
    assert_eq!(job_pods(&admin, "cleanup").await.len(), 1, "no other pod");

    // Deleting the Job takes its pod with it.
    jobs.delete("cleanup", &Default::default()).await.unwrap();
    ocm_e2e::wait_gone(&pods, &pod_name).await.unwrap();
    kubelet.cancel();
    cluster.stop().await;
}

/// A Job whose pods fail is given a replacement pod while its failures stay within
/// `backoffLimit`, then fails with BackoffLimitExceeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_process_fails_fails_after_its_backoff_limit() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (cluster, kubelet, admin) = job_cluster(home).await;
    let go = home.join("go-fail");
    write_whole(&go, "3");
    create_job(&admin, "broken", &go, 1).await;
    let jobs: Api<Job> = Api::namespaced(admin.clone(), "default");
    let failed = ocm_e2e::wait_for(&jobs, "broken", "Failed", |j| {
        job_condition(j, "Failed").is_some()
    })
    .await
    .unwrap();
    let condition = job_condition(&failed, "Failed").unwrap();
    assert_eq!(condition.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert!(job_condition(&failed, "FailureTarget").is_some());
    assert!(job_condition(&failed, "Complete").is_none());
    let status = failed.status.unwrap();
    assert_eq!(
        status.failed,
        Some(2),
        "the first pod and its one replacement"
    );
    assert_eq!(status.active, None);
    let pods = job_pods(&admin, "broken").await;
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Failed")
        );
        assert_eq!(exit_code(pod), Some(3));
    }
    kubelet.cancel();
    cluster.stop().await;
}

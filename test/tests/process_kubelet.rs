//! The process kubelet keeps a running pod's files current, as a kubelet does: its
//! ServiceAccount token (read from a file the kubeconfig names) is renewed before it expires,
//! and a changed ConfigMap reaches the pod's volume — without restarting the process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
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

//! One Pod's process: prepares what the container would see (volumes, a ServiceAccount
//! token), runs the executable of its image (`ocm`, or a local image's), reports it in the
//! Pod's status and restarts it per `restartPolicy` until the Pod is stopped. A pod that ran
//! to its end (`Succeeded` or `Failed`) keeps its folder, and so its log, until it is stopped.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, ServiceAccount};
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_runtime::kubeconfig::{self, KubeconfigAuth, KubeconfigSpec};
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::ProcessKubeletOptions;
use super::pod;

/// Longest wait between two restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// `terminationGracePeriodSeconds` when the Pod does not say.
const DEFAULT_GRACE_SECONDS: u64 = 30;

/// Lifetime asked for the ServiceAccount token the process gets (a kubelet asks an hour and
/// renews it while the container runs; see [`keep_fresh`]).
const TOKEN_SECONDS: i64 = 3600;

/// What one Pod's supervisor needs.
pub(super) struct PodRun {
    pub(super) client: kube::Client,
    pub(super) options: Arc<ProcessKubeletOptions>,
    pub(super) pod: Pod,
    pub(super) ready: Arc<AtomicBool>,
    /// Told when readiness changes (a Deployment's pods: its status counts them).
    pub(super) changed: Option<mpsc::UnboundedSender<()>>,
    /// Where the process's stdin is kept when its container asks for one.
    pub(super) stdins: super::stdin::Stdins,
    pub(super) stop: Shutdown,
}

/// Why a container could not start yet.
type NotReady = String;

/// Writes the Pod's Secret and ConfigMap volumes under `pod_dir`.
async fn materialize(
    client: &kube::Client,
    namespace: &str,
    spec: &Value,
    pod_dir: &Path,
) -> Result<(), NotReady> {
    for mount in pod::mounts(spec) {
        let data: Vec<(String, Vec<u8>)> = if mount.secret {
            let secret = Api::<Secret>::namespaced(client.clone(), namespace)
                .get_opt(&mount.source)
                .await
                .map_err(|e| e.to_string())?;
            match secret {
                Some(s) => s
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect(),
                None if mount.optional => Vec::new(),
                None => return Err(format!("secret \"{}\" not found", mount.source)),
            }
        } else {
            let map = Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get_opt(&mount.source)
                .await
                .map_err(|e| e.to_string())?;
            match map {
                Some(m) => m
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect(),
                None if mount.optional => Vec::new(),
                None => return Err(format!("configmap \"{}\" not found", mount.source)),
            }
        };
        let dir = pod::local_path(pod_dir, &mount.mount_path);
        private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (key, bytes) in data {
            let file = dir.join(&key);
            write_private(&file, &bytes).map_err(|e| format!("{}: {e}", file.display()))?;
        }
    }
    Ok(())
}

/// The Pod's ServiceAccount.
fn account_of(run: &PodRun) -> String {
    run.pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".to_owned())
}

/// Writes a new token of ServiceAccount `account` to `pod_dir/token` (the file is replaced
/// whole); returns the file's path.
async fn write_token(
    client: &kube::Client,
    namespace: &str,
    account: &str,
    pod_dir: &Path,
) -> Result<std::path::PathBuf, NotReady> {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(TOKEN_SECONDS),
            ..Default::default()
        },
        ..Default::default()
    };
    let token = Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .map_err(|e| format!("a token for service account {account}: {e}"))?
        .status
        .map(|s| s.token)
        .unwrap_or_default();
    let path = pod_dir.join("token");
    write_private(&path, token.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Writes a kubeconfig that reads a token of the Pod's ServiceAccount from a file (which
/// [`keep_fresh`] renews); returns its path.
async fn service_account_kubeconfig(
    run: &PodRun,
    namespace: &str,
    pod_dir: &Path,
) -> Result<std::path::PathBuf, NotReady> {
    let account = account_of(run);
    let token = write_token(&run.client, namespace, &account, pod_dir).await?;
    let yaml = kubeconfig::render(&KubeconfigSpec {
        server: run.options.server.clone(),
        auth: KubeconfigAuth::TokenFile(token.display().to_string()),
        context: "in-cluster".into(),
        user: account,
        namespace: Some(namespace.to_owned()),
    });
    let path = pod_dir.join("kubeconfig");
    write_private(&path, yaml.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// A free loopback port for each container port (the process binds it right after).
fn local_ports(container_ports: &[i64]) -> std::io::Result<std::collections::BTreeMap<i64, u16>> {
    let mut out = std::collections::BTreeMap::new();
    for port in container_ports {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        out.insert(*port, listener.local_addr()?.port());
    }
    Ok(out)
}

/// Records where the Pod's container ports listen ([`pod::PORTS_ANNOTATION`]).
async fn publish_ports(run: &PodRun, ports: &std::collections::BTreeMap<i64, u16>) {
    if ports.is_empty() {
        return;
    }
    let Some(name) = run.pod.metadata.name.as_deref() else {
        return;
    };
    let namespace = run.pod.metadata.namespace.as_deref().unwrap_or_default();
    let map: serde_json::Map<String, Value> = ports
        .iter()
        .map(|(port, local)| (port.to_string(), json!(local)))
        .collect();
    let patch = json!({"metadata": {"annotations": {
        pod::PORTS_ANNOTATION: Value::Object(map).to_string()}}});
    if let Err(err) = Api::<Pod>::namespaced(run.client.clone(), namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(pod = name, %err, "publishing the pod's ports");
    }
}

/// Merges `status` into the Pod's status (a Pod already gone is fine).
async fn report(run: &PodRun, status: Value) {
    let Some(name) = run.pod.metadata.name.as_deref() else {
        return;
    };
    let namespace = run.pod.metadata.namespace.as_deref().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(run.client.clone(), namespace);
    if let Err(err) = pods
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        && !matches!(&err, kube::Error::Api(s) if s.code == 404)
    {
        tracing::debug!(pod = name, %err, "reporting pod status");
    }
}

/// The container status part of a Pod status.
fn container_status(
    name: &str,
    image: &str,
    restarts: i64,
    state: Value,
    last: &Value,
    ready: bool,
) -> Value {
    json!([{"name": name, "image": image, "imageID": "", "ready": ready, "started": ready,
            "restartCount": restarts, "state": state, "lastState": last}])
}

fn pod_conditions(ready: bool, now: &str) -> Value {
    let status = if ready { "True" } else { "False" };
    json!([
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastTransitionTime": now},
        {"type": "ContainersReady", "status": status, "lastTransitionTime": now},
        {"type": "Ready", "status": status, "lastTransitionTime": now},
    ])
}

/// Returns once something accepts connections on every loopback port of `ports` (at once
/// for none).
async fn listening(ports: &[u16]) {
    for port in ports {
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", *port))
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Writes a file only its owner may read (credentials, keys, tokens). The content is written
/// beside it and renamed into place, so a process reading it never sees half a file.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.writing"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(bytes)?;
    std::fs::rename(&partial, path)
}

/// Stops a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a running pod's files are renewed from.
struct Fresh {
    client: kube::Client,
    options: Arc<ProcessKubeletOptions>,
    namespace: String,
    account: String,
    spec: Value,
    pod_dir: std::path::PathBuf,
}

/// While the process runs, as a kubelet does: its Secret and ConfigMap volumes are written
/// again every `sync_period` (so a changed Secret reaches it), and its ServiceAccount token
/// is replaced once older than `token_refresh` (the kubeconfig names the token file, which
/// the process's client reads again).
async fn keep_fresh(fresh: Fresh) {
    let options = &fresh.options;
    let tick = options
        .sync_period
        .min(options.token_refresh)
        .max(Duration::from_millis(100));
    let mut synced = std::time::Instant::now();
    let mut token_written = std::time::Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        if synced.elapsed() >= options.sync_period {
            synced = std::time::Instant::now();
            if let Err(err) =
                materialize(&fresh.client, &fresh.namespace, &fresh.spec, &fresh.pod_dir).await
            {
                tracing::debug!(%err, "cannot refresh the pod's volumes");
            }
        }
        if token_written.elapsed() >= options.token_refresh {
            match write_token(
                &fresh.client,
                &fresh.namespace,
                &fresh.account,
                &fresh.pod_dir,
            )
            .await
            {
                Ok(_) => token_written = std::time::Instant::now(),
                Err(err) => tracing::warn!(%err, "cannot renew the pod's token"),
            }
        }
    }
}

/// Makes a folder (and its parents) only its owner may enter.
fn private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

/// Stops a container as a kubelet does: SIGTERM, then SIGKILL once `grace` has passed.
async fn terminate(child: &mut tokio::process::Child, grace: Duration) {
    if let Some(pid) = child.id() {
        // `kill(1)`: this workspace forbids unsafe code, so no direct signal call.
        let signalled = tokio::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .is_ok_and(|s| s.success());
        if signalled && tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.kill().await;
}

/// Tells whoever counts the pod's readiness that it changed.
fn notify(run: &PodRun) {
    if let Some(changed) = &run.changed {
        let _ = changed.send(());
    }
}

/// Waits `wait`, or less when the Pod is stopped; `true` when stopped.
async fn pause(stop: &Shutdown, wait: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(wait) => stop.is_cancelled(),
        () = stop.cancelled() => true,
    }
}

/// Runs the Pod's process until the Pod is stopped (or, per `restartPolicy`, done).
pub(super) async fn supervise(run: PodRun) {
    let namespace = run.pod.metadata.namespace.clone().unwrap_or_default();
    let name = run.pod.metadata.name.clone().unwrap_or_default();
    let spec = serde_json::to_value(run.pod.spec.clone().unwrap_or_default()).unwrap_or_default();
    let container = spec["containers"][0]["name"]
        .as_str()
        .unwrap_or("main")
        .to_owned();
    let image = spec["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let policy = spec["restartPolicy"]
        .as_str()
        .unwrap_or("Always")
        .to_owned();
    let grace = Duration::from_secs(
        spec["terminationGracePeriodSeconds"]
            .as_u64()
            .unwrap_or(DEFAULT_GRACE_SECONDS),
    );
    let pod_dir = run.options.work_dir.join(&namespace).join(&name);
    let mut restarts = 0;
    let mut last = json!({});
    let mut backoff = Duration::from_secs(1);
    let node = run.options.node_name.clone();
    let fields = |path: &str| match path {
        "metadata.name" => Some(name.clone()),
        "metadata.namespace" => Some(namespace.clone()),
        "spec.nodeName" => Some(node.clone()),
        "spec.serviceAccountName" => spec["serviceAccountName"].as_str().map(str::to_owned),
        _ => None,
    };
    loop {
        let now = jiff::Timestamp::now().to_string();
        let prepared = match private_dir(&pod_dir) {
            Err(e) => Err(format!("{}: {e}", pod_dir.display())),
            Ok(()) => match materialize(&run.client, &namespace, &spec, &pod_dir).await {
                Err(e) => Err(e),
                Ok(()) => service_account_kubeconfig(&run, &namespace, &pod_dir).await,
            },
        };
        let kubeconfig = match prepared {
            Ok(path) => path,
            Err(message) => {
                let waiting =
                    json!({"waiting": {"reason": "ContainerCreating", "message": message}});
                report(&run, json!({"phase": "Pending", "conditions": pod_conditions(false, &now),
                    "containerStatuses": container_status(&container, &image, restarts, waiting, &last, false)})).await;
                if pause(&run.stop, Duration::from_secs(1)).await {
                    break;
                }
                continue;
            }
        };
        let host_network = pod::host_network(&spec);
        let chosen = if host_network {
            Ok(pod::host_ports(&pod::container_ports(&spec)))
        } else {
            local_ports(&pod::container_ports(&spec))
        };
        let ports = match chosen {
            Ok(ports) => ports,
            Err(err) => {
                tracing::warn!(pod = %name, %err, "no free local port");
                if pause(&run.stop, backoff).await {
                    break;
                }
                continue;
            }
        };
        publish_ports(&run, &ports).await;
        let program = spec["containers"][0]["command"][0].as_str();
        let (executable, entrypoint) = run
            .options
            .program(&image, program)
            .unwrap_or((run.options.binary.as_path(), pod::Entrypoint::Image));
        // In the host's network the process listens where its arguments say.
        let moved = if host_network {
            std::collections::BTreeMap::new()
        } else {
            ports.clone()
        };
        let (args, mut env) = pod::command_line(&spec, entrypoint, &pod_dir, &fields, &moved);
        env.push(("KUBECONFIG".into(), kubeconfig.display().to_string()));
        env.push((
            "OCM_HOME".into(),
            pod_dir.join("home").display().to_string(),
        ));
        let label = run.options.echo_logs.then(|| format!("{namespace}/{name}"));
        let spawned = super::container_io::start(
            executable,
            &args,
            &env,
            &spec["containers"][0],
            &pod_dir,
            &run.stdins,
            label,
        );
        // `_stdin_slot`: the process's stdin, for attach sessions, while this run of it lives.
        let (mut child, copies, _stdin_slot) = match spawned {
            Ok(started) => {
                if let Err(err) = super::record::record(&pod_dir, executable, &env, &ports) {
                    tracing::warn!(pod = %name, %err, "cannot record the process for exec");
                }
                (started.child, started.copies, started.stdin)
            }
            Err(err) => {
                let waiting =
                    json!({"waiting": {"reason": "RunContainerError", "message": err.to_string()}});
                report(&run, json!({"phase": "Pending",
                    "containerStatuses": container_status(&container, &image, restarts, waiting, &last, false)})).await;
                if pause(&run.stop, backoff).await {
                    break;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        let fresh = AbortOnDrop(tokio::spawn(keep_fresh(Fresh {
            client: run.client.clone(),
            options: run.options.clone(),
            namespace: namespace.clone(),
            account: account_of(&run),
            spec: spec.clone(),
            pod_dir: pod_dir.clone(),
        })));
        let started = jiff::Timestamp::now().to_string();
        let running = json!({"running": {"startedAt": started}});
        report(
            &run,
            json!({"phase": "Running", "hostIP": "127.0.0.1", "podIP": "127.0.0.1",
            "startTime": started, "conditions": pod_conditions(false, &started),
            "containerStatuses": container_status(&container, &image, restarts,
                running.clone(), &last, false)}),
        )
        .await;
        tracing::info!(pod = %name, namespace = %namespace, "pod process started");
        // Ready once it listens on every port it declares (a readiness check), or at once
        // without ports; the exit or the stop may come first.
        let local: Vec<u16> = ports.values().copied().collect();
        let exit = tokio::select! {
            status = child.wait() => Some(status.ok().and_then(|s| s.code()).unwrap_or(-1)),
            () = run.stop.cancelled() => {
                terminate(&mut child, grace).await;
                break;
            }
            () = listening(&local) => None,
        };
        let exit = match exit {
            Some(code) => code,
            None => {
                run.ready.store(true, Ordering::SeqCst);
                notify(&run);
                report(
                    &run,
                    json!({"conditions": pod_conditions(true, &started),
                    "containerStatuses": container_status(&container, &image, restarts,
                        running, &last, true)}),
                )
                .await;
                tokio::select! {
                    status = child.wait() => status.ok().and_then(|s| s.code()).unwrap_or(-1),
                    () = run.stop.cancelled() => {
                        terminate(&mut child, grace).await;
                        run.ready.store(false, Ordering::SeqCst);
                        break;
                    }
                }
            }
        };
        // The last output reaches the log before followers (logs -f, attach) learn the
        // process ended; a descendant still holding its pipes is not waited for long.
        let _ =
            tokio::time::timeout(Duration::from_secs(2), futures::future::join_all(copies)).await;
        super::record::forget(&pod_dir);
        run.ready.store(false, Ordering::SeqCst);
        notify(&run);
        let finished = jiff::Timestamp::now().to_string();
        let reason = if exit == 0 { "Completed" } else { "Error" };
        last = json!({"terminated": {"exitCode": exit, "reason": reason,
                                     "startedAt": started, "finishedAt": finished}});
        tracing::info!(pod = %name, namespace = %namespace, exit, "pod process ended");
        let done = match policy.as_str() {
            "Never" => true,
            "OnFailure" => exit == 0,
            _ => false,
        };
        if done {
            let phase = if exit == 0 { "Succeeded" } else { "Failed" };
            report(&run, json!({"phase": phase, "conditions": pod_conditions(false, &finished),
                "containerStatuses": container_status(&container, &image, restarts, last.clone(), &json!({}), false)})).await;
            // The log stays until the pod is deleted.
            drop(fresh);
            run.stop.cancelled().await;
            break;
        }
        restarts += 1;
        let waiting = json!({"waiting": {"reason": "CrashLoopBackOff",
            "message": format!("back-off {}s restarting failed container", backoff.as_secs())}});
        report(&run, json!({"phase": "Running", "conditions": pod_conditions(false, &finished),
            "containerStatuses": container_status(&container, &image, restarts, waiting, &last, false)})).await;
        if pause(&run.stop, backoff).await {
            break;
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    let _ = std::fs::remove_dir_all(&pod_dir);
}

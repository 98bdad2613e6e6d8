//! Standalone pods — any pod but this kubelet's own Deployment pods: a Job's, or one created
//! alone — whose one container (no init containers) this machine runs, the way a kubelet
//! would run the container ([`runner_of`] decides which and how):
//!
//! - an image this kubelet runs (the `ocm` image or a local image,
//!   [`ProcessKubeletOptions::executable`]) runs as that executable through the same
//!   supervisor as Deployment pods: a kubeconfig of the pod's ServiceAccount in `KUBECONFIG`,
//!   its Secret and ConfigMap volumes, `restartPolicy`, the exit code in its status;
//! - a command this machine has — today `curl` (a `command` or entrypoint of `curl`, as the
//!   `curlimages/curl` image's) — runs as that command, a URL naming a Service by its cluster
//!   DNS name (`https://<service>.<namespace>.svc[.cluster.local][:port]/…`) sent to a ready
//!   pod behind the Service that publishes where its target port listens on this machine (the
//!   ports annotation of the process kubelet's pods), with `--connect-to`, so the name, TLS
//!   server name and `Host` stay those the pod asked for; a Service nobody here serves is
//!   left as it is (curl then fails to resolve it, as it would on a cluster without it).
//!
//! Either way the pod (not finished, not being deleted, unbound or bound to this kubelet's
//! node) is first bound to the node (`pods/binding`, as a scheduler does) and annotated so
//! that the workload simulator leaves its status alone; its output (stdout and stderr) is the
//! container's log (`pods/log`, through [`super::logs`]); it is `Running`, then `Succeeded` or
//! `Failed` with the exit code, restarted per `restartPolicy`; a deleted pod's process is
//! stopped and its log removed.
//!
//! Other images and commands stay with the workload simulator (status only).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use super::ProcessKubeletOptions;
use super::pod::{PORTS_ANNOTATION, PROCESS_ANNOTATION, PROCESS_LABEL, repository};
use super::supervisor;

/// Commands a pod may run here.
const TOOLS: [&str; 1] = ["curl"];

/// Longest wait between two runs of a restarted command.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The one container of `pod`, when it has one and no init containers.
fn single_container(pod: &Value) -> Option<&Value> {
    let spec = &pod["spec"];
    let containers = spec["containers"].as_array()?;
    let [container] = containers.as_slice() else {
        return None;
    };
    let init = spec["initContainers"]
        .as_array()
        .is_some_and(|c| !c.is_empty());
    (!init).then_some(container)
}

/// The command line of `pod`'s container when this kubelet runs it: `command` then `args`, or
/// for an image whose entrypoint is a known tool (`curlimages/curl`), the tool then `args`.
pub fn command_of(pod: &Value) -> Option<Vec<String>> {
    let container = single_container(pod)?;
    let words = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_owned))
            .collect()
    };
    let mut argv = words(&container["command"]);
    if argv.is_empty() {
        let image = container["image"].as_str().unwrap_or_default();
        let name = repository(image).rsplit('/').next().unwrap_or_default();
        if !TOOLS.contains(&name) {
            return None;
        }
        argv.push(name.to_owned());
    }
    argv.extend(words(&container["args"]));
    let tool = argv.first()?.rsplit('/').next().unwrap_or_default();
    TOOLS.contains(&tool).then_some(argv)
}

/// Whether this kubelet (on `node`) may take `pod`: not one of its own Deployment pods, not
/// being deleted, not finished, unbound or bound to `node`.
pub fn runnable(pod: &Value, node: &str) -> bool {
    let own = pod["metadata"]["labels"][PROCESS_LABEL].as_str() == Some("true");
    let bound = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    let phase = pod["status"]["phase"].as_str().unwrap_or_default();
    !own && pod["metadata"]["deletionTimestamp"].is_null()
        && (bound.is_empty() || bound == node)
        && !matches!(phase, "Succeeded" | "Failed")
}

/// How this kubelet runs a standalone pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runner {
    /// Its image runs as an executable of this machine
    /// ([`ProcessKubeletOptions::executable`]), as Deployment pods do.
    Image,
    /// Its command is a tool of this machine (`binary`), run with `argv` (the tool first).
    Command {
        /// The tool's executable.
        binary: PathBuf,
        /// The command line.
        argv: Vec<String>,
    },
}

/// How this kubelet (per `options`, with the machine's `tools`) runs `pod`, if it does: a pod
/// it may take ([`runnable`]) whose one container (no init containers) has an image it runs,
/// or else a command it has.
pub fn runner_of(
    pod: &Value,
    options: &ProcessKubeletOptions,
    tools: &HashMap<&str, PathBuf>,
) -> Option<Runner> {
    if !runnable(pod, &options.node_name) {
        return None;
    }
    let image = single_container(pod)?["image"].as_str().unwrap_or_default();
    if options.executable(image).is_some() {
        return Some(Runner::Image);
    }
    let argv = command_of(pod)?;
    let tool = argv.first()?.rsplit('/').next().unwrap_or_default();
    let binary = tools.get(tool)?.clone();
    Some(Runner::Command { binary, argv })
}

/// A URL argument naming a Service by its cluster DNS name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceUrl {
    /// The host as written.
    pub host: String,
    /// The port (the scheme's default when not written).
    pub port: u16,
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub service: String,
}

/// The Service `arg` names, when it is an `http(s)://<service>.<namespace>.svc[.cluster.local]`
/// URL.
pub fn service_url(arg: &str) -> Option<ServiceUrl> {
    let (scheme, rest) = arg.split_once("://")?;
    let default_port = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().ok()?),
        None => (authority, default_port),
    };
    let name = host
        .strip_suffix(".svc.cluster.local")
        .or_else(|| host.strip_suffix(".svc"))?;
    let (service, namespace) = name.split_once('.')?;
    if service.is_empty() || namespace.is_empty() || namespace.contains('.') {
        return None;
    }
    Some(ServiceUrl {
        host: host.to_owned(),
        port,
        namespace: namespace.to_owned(),
        service: service.to_owned(),
    })
}

/// The loopback port of a ready pod behind `service` (among `pods`, of its namespace) that
/// serves the Service's `port`.
pub fn local_port(service: &Value, pods: &[Value], port: u16) -> Option<u16> {
    let selector = service["spec"]["selector"].as_object()?;
    if selector.is_empty() {
        return None;
    }
    let entry = service["spec"]["ports"]
        .as_array()?
        .iter()
        .find(|p| p["port"].as_u64() == Some(u64::from(port)))?;
    let target = entry.get("targetPort").unwrap_or(&entry["port"]);
    pods.iter().find_map(|pod| {
        let labels = &pod["metadata"]["labels"];
        if !selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            return None;
        }
        let ready = pod["status"]["phase"] == "Running"
            && pod["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
        if !ready {
            return None;
        }
        let container_port = match target.as_i64() {
            Some(n) => n,
            None => {
                let name = target.as_str()?;
                pod["spec"]["containers"]
                    .as_array()?
                    .iter()
                    .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
                    .find(|p| p["name"] == name)
                    .and_then(|p| p["containerPort"].as_i64())?
            }
        };
        let published: BTreeMap<String, u16> =
            serde_json::from_str(pod["metadata"]["annotations"][PORTS_ANNOTATION].as_str()?)
                .ok()?;
        published.get(&container_port.to_string()).copied()
    })
}

/// `argv` with a `--connect-to <host>:<port>:127.0.0.1:<local>` per route (after the tool).
pub fn with_routes(argv: &[String], routes: &[(ServiceUrl, u16)]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len() + 2 * routes.len());
    out.extend(argv.first().cloned());
    for (url, local) in routes {
        out.push("--connect-to".into());
        out.push(format!("{}:{}:127.0.0.1:{local}", url.host, url.port));
    }
    out.extend(argv.iter().skip(1).cloned());
    out
}

/// Runs the standalone pods of a cluster (see the module) until `shutdown`.
pub(super) async fn run(
    client: kube::Client,
    options: Arc<ProcessKubeletOptions>,
    stdins: super::stdin::Stdins,
    shutdown: Shutdown,
) {
    let tools: HashMap<&str, PathBuf> = TOOLS
        .iter()
        .filter_map(|t| find_in_path(t).map(|p| (*t, p)))
        .collect();
    if tools.is_empty() {
        tracing::info!("no curl on this machine: curl pods stay simulated");
    }
    let mut events = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .backoff_on_errors()
        .boxed();
    let mut running: HashMap<(String, String), (String, Shutdown)> = HashMap::new();
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => break,
            event = events.next() => event,
        };
        let pod = match event {
            None => break,
            Some(Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod))) => pod,
            Some(Ok(watcher::Event::Delete(pod))) => {
                let key = key_of(&pod);
                if let Some((uid, stop)) = running.remove(&key) {
                    if Some(&uid) == pod.metadata.uid.as_ref() {
                        stop.cancel();
                    } else {
                        running.insert(key, (uid, stop));
                    }
                }
                continue;
            }
            Some(_) => continue,
        };
        let key = key_of(&pod);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if running.get(&key).is_some_and(|(u, _)| *u == uid) {
            continue;
        }
        let Ok(value) = serde_json::to_value(&pod) else {
            continue;
        };
        let Some(runner) = runner_of(&value, &options, &tools) else {
            continue;
        };
        if let Some((_, old)) = running.remove(&key) {
            old.cancel();
        }
        let stop = shutdown.child();
        running.insert(key.clone(), (uid, stop.clone()));
        let taken = Taken {
            client: client.clone(),
            options: options.clone(),
            stdins: stdins.clone(),
            pod,
            value,
            stop,
        };
        tokio::spawn(taken.run(runner));
    }
    for (_, (_, stop)) in running {
        stop.cancel();
    }
}

/// A standalone pod this kubelet takes.
struct Taken {
    client: kube::Client,
    options: Arc<ProcessKubeletOptions>,
    stdins: super::stdin::Stdins,
    pod: Pod,
    value: Value,
    stop: Shutdown,
}

impl Taken {
    /// Claims the pod, then runs it with `runner` until it is stopped.
    async fn run(self, runner: Runner) {
        let name = self.pod.metadata.name.clone().unwrap_or_default();
        match claim(&self.client, &self.value, &self.options.node_name).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(err) => {
                tracing::warn!(pod = %name, %err, "cannot take the pod");
                return;
            }
        }
        let namespace = self.pod.metadata.namespace.clone().unwrap_or_default();
        match runner {
            Runner::Image => {
                supervisor::supervise(supervisor::PodRun {
                    client: self.client,
                    options: self.options,
                    pod: self.pod,
                    ready: Arc::new(AtomicBool::new(false)),
                    changed: None,
                    stdins: self.stdins,
                    stop: self.stop,
                })
                .await;
            }
            Runner::Command { binary, argv } => {
                let run = CommandRun {
                    client: self.client,
                    pod: self.value,
                    argv,
                    binary,
                    pod_dir: self.options.work_dir.join(&namespace).join(&name),
                    stop: self.stop,
                };
                run.supervise().await;
            }
        }
    }
}

/// Binds `pod` to `node` (unless it is bound) and marks it as run here; false when another
/// node has it.
async fn claim(client: &kube::Client, pod: &Value, node: &str) -> Result<bool, kube::Error> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    if pod["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        let binding = json!({"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
        match pods
            .create_subresource::<Value, Value>("binding", name, &PostParams::default(), &binding)
            .await
        {
            Ok(_) => {}
            // Bound meanwhile: ours only if bound here.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let now = pods.get(name).await?;
                let bound = now.spec.and_then(|s| s.node_name).unwrap_or_default();
                if bound != node {
                    return Ok(false);
                }
            }
            Err(err) => return Err(err),
        }
    }
    let patch = json!({"metadata": {"annotations": {PROCESS_ANNOTATION: "true"}}});
    pods.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

fn key_of(pod: &Pod) -> (String, String) {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

/// The executable `name` on `$PATH`.
fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// One command pod.
struct CommandRun {
    client: kube::Client,
    pod: Value,
    argv: Vec<String>,
    binary: PathBuf,
    pod_dir: PathBuf,
    stop: Shutdown,
}

impl CommandRun {
    fn name(&self) -> &str {
        self.pod["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn namespace(&self) -> &str {
        self.pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), self.namespace())
    }

    /// Where each Service URL of the command goes on this machine.
    async fn routes(&self) -> Vec<(ServiceUrl, u16)> {
        let mut out = Vec::new();
        for url in self.argv.iter().skip(1).filter_map(|a| service_url(a)) {
            let services: Api<Service> = Api::namespaced(self.client.clone(), &url.namespace);
            let Ok(Some(service)) = services.get_opt(&url.service).await else {
                continue;
            };
            let Ok(pods) = Api::<Pod>::namespaced(self.client.clone(), &url.namespace)
                .list(&ListParams::default())
                .await
            else {
                continue;
            };
            let pods: Vec<Value> = pods
                .items
                .iter()
                .filter_map(|p| serde_json::to_value(p).ok())
                .collect();
            let Ok(service) = serde_json::to_value(&service) else {
                continue;
            };
            if let Some(local) = local_port(&service, &pods, url.port) {
                out.push((url, local));
            }
        }
        out
    }

    async fn report(&self, status: Value) {
        if let Err(err) = self
            .pods()
            .patch_status(
                self.name(),
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            && !matches!(&err, kube::Error::Api(s) if s.code == 404)
        {
            tracing::debug!(pod = self.name(), %err, "reporting command pod status");
        }
    }

    fn container_status(&self, restarts: i64, state: Value, last: &Value) -> Value {
        let container = &self.pod["spec"]["containers"][0];
        json!([{"name": container["name"], "image": container["image"], "imageID": "",
                "ready": state.get("running").is_some(),
                "started": state.get("running").is_some(),
                "restartCount": restarts, "state": state, "lastState": last}])
    }

    async fn supervise(self) {
        let policy = self.pod["spec"]["restartPolicy"]
            .as_str()
            .unwrap_or("Always")
            .to_owned();
        if let Err(err) = std::fs::create_dir_all(&self.pod_dir) {
            tracing::warn!(pod = self.name(), %err, "no folder for the command pod");
            return;
        }
        let log = self.pod_dir.join("container.log");
        let mut restarts = 0;
        let mut last = json!({});
        let mut backoff = Duration::from_secs(1);
        loop {
            let routes = self.routes().await;
            let args = with_routes(&self.argv, &routes);
            let started = jiff::Timestamp::now().to_string();
            let output = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log);
            let (stdout, stderr) = match output.and_then(|f| Ok((f.try_clone()?, f))) {
                Ok((out, err)) => (Stdio::from(out), Stdio::from(err)),
                Err(err) => {
                    tracing::warn!(pod = self.name(), %err, "cannot open the command pod's log");
                    (Stdio::null(), Stdio::null())
                }
            };
            let spawned = super::default_signals::command(&self.binary)
                .args(args.iter().skip(1))
                .current_dir(&self.pod_dir)
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(stderr)
                .kill_on_drop(true)
                .spawn();
            let mut child = match spawned {
                Ok(child) => child,
                Err(err) => {
                    let waiting = json!({"waiting": {"reason": "RunContainerError",
                                                     "message": err.to_string()}});
                    self.report(json!({"phase": "Pending",
                        "containerStatuses": self.container_status(restarts, waiting, &last)}))
                        .await;
                    if pause(&self.stop, backoff).await {
                        break;
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            let running = json!({"running": {"startedAt": started}});
            self.report(
                json!({"phase": "Running", "hostIP": "127.0.0.1", "podIP": "127.0.0.1",
                "startTime": started, "conditions": conditions(true, &started),
                "containerStatuses": self.container_status(restarts, running, &last)}),
            )
            .await;
            let exit = tokio::select! {
                status = child.wait() => status.ok().and_then(|s| s.code()).unwrap_or(-1),
                () = self.stop.cancelled() => {
                    let _ = child.kill().await;
                    break;
                }
            };
            let finished = jiff::Timestamp::now().to_string();
            let reason = if exit == 0 { "Completed" } else { "Error" };
            last = json!({"terminated": {"exitCode": exit, "reason": reason,
                                         "startedAt": started, "finishedAt": finished}});
            tracing::info!(
                pod = self.name(),
                namespace = self.namespace(),
                exit,
                "command pod ended"
            );
            let done = match policy.as_str() {
                "Never" => true,
                "OnFailure" => exit == 0,
                _ => false,
            };
            if done {
                let phase = if exit == 0 { "Succeeded" } else { "Failed" };
                self.report(json!({"phase": phase, "conditions": conditions(false, &finished),
                    "containerStatuses": self.container_status(restarts, last.clone(), &json!({}))}))
                    .await;
                // The log stays until the pod is deleted.
                self.stop.cancelled().await;
                break;
            }
            restarts += 1;
            if pause(&self.stop, backoff).await {
                break;
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        let _ = std::fs::remove_dir_all(&self.pod_dir);
    }
}

fn conditions(ready: bool, now: &str) -> Value {
    let status = if ready { "True" } else { "False" };
    json!([
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastTransitionTime": now},
        {"type": "ContainersReady", "status": status, "lastTransitionTime": now},
        {"type": "Ready", "status": status, "lastTransitionTime": now},
    ])
}

/// Waits `wait`, or less when stopped; `true` when stopped.
async fn pause(stop: &Shutdown, wait: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(wait) => stop.is_cancelled(),
        () = stop.cancelled() => true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pod(container: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"},
               "spec": {"restartPolicy": "Never", "containers": [container]}})
    }

    #[test]
    fn curl_pods_are_recognised_by_command_or_image() {
        let by_command = pod(json!({"name": "curl", "image": "curlimages/curl:latest",
            "command": ["curl", "-sk", "https://x.y.svc:9443/a"]}));
        assert_eq!(
            command_of(&by_command).unwrap(),
            ["curl", "-sk", "https://x.y.svc:9443/a"]
        );
        let by_image = pod(
            json!({"name": "c", "image": "docker.io/curlimages/curl:8.1",
            "args": ["-s", "http://x"]}),
        );
        assert_eq!(command_of(&by_image).unwrap(), ["curl", "-s", "http://x"]);
        let other =
            pod(json!({"name": "c", "image": "busybox", "command": ["sh", "-c", "curl x"]}));
        assert_eq!(command_of(&other), None);
        assert!(runnable(&by_command, "node-1"));
        let mut done = by_command.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert!(!runnable(&done, "node-1"));
        let mut elsewhere = by_command.clone();
        elsewhere["spec"]["nodeName"] = json!("node-2");
        assert!(!runnable(&elsewhere, "node-1"));
        let mut own = by_command;
        own["metadata"]["labels"] = json!({PROCESS_LABEL: "true"});
        assert!(!runnable(&own, "node-1"));
    }

    #[test]
    fn images_run_here_come_before_tools_and_other_pods_stay_simulated() {
        let options = ProcessKubeletOptions {
            binary: "/bin/ocm".into(),
            agent_binary: Some("/bin/ocm-agent".into()),
            images: vec!["ocm:1".into()],
            local_images: vec!["example.com/tools:1=/bin/tools".parse().unwrap()],
            work_dir: "/tmp/pods".into(),
            server: ocm_runtime::kubeconfig::ServerInfo {
                server: "https://127.0.0.1:1".into(),
                ca_pem: None,
                proxy_url: None,
            },
            node_name: "node-1".into(),
            echo_logs: false,
            sync_period: super::super::DEFAULT_SYNC_PERIOD,
            token_refresh: super::super::DEFAULT_TOKEN_REFRESH,
        };
        let tools = HashMap::from([("curl", PathBuf::from("/usr/bin/curl"))]);
        let local = pod(json!({"name": "c", "image": "example.com/tools:latest",
                               "args": ["/tools", "cleanup"]}));
        assert_eq!(runner_of(&local, &options, &tools), Some(Runner::Image));
        let ocm = pod(json!({"name": "c", "image": "ocm:2", "args": ["--version"]}));
        assert_eq!(runner_of(&ocm, &options, &tools), Some(Runner::Image));
        let curl = pod(json!({"name": "c", "image": "curlimages/curl", "args": ["-s", "x"]}));
        assert_eq!(
            runner_of(&curl, &options, &tools),
            Some(Runner::Command {
                binary: "/usr/bin/curl".into(),
                argv: vec!["curl".into(), "-s".into(), "x".into()]
            })
        );
        assert_eq!(runner_of(&curl, &options, &HashMap::new()), None);
        let other = pod(json!({"name": "c", "image": "busybox", "args": ["true"]}));
        assert_eq!(runner_of(&other, &options, &tools), None);
        // Bound to another node, or with a second container: not run here.
        let mut elsewhere = local.clone();
        elsewhere["spec"]["nodeName"] = json!("node-2");
        assert_eq!(runner_of(&elsewhere, &options, &tools), None);
        let mut two = local;
        two["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "d", "image": "ocm:1"}));
        assert_eq!(runner_of(&two, &options, &tools), None);
        // The Node lists both images, sized as their executables (none here).
        let images = options.node_images();
        assert_eq!(images[0]["names"], json!(["ocm:1"]));
        assert_eq!(images[1]["names"], json!(["example.com/tools:1"]));
        assert_eq!(images[1]["sizeBytes"], 0);
        // The `ocm` image's `ocm-agent` command runs its own executable; `ocm` runs otherwise,
        // and without an `ocm-agent` executable too (it serves the same commands).
        let program = |options: &ProcessKubeletOptions, image: &str, command: Option<&str>| {
            options
                .program(image, command)
                .map(|(path, entry)| (path.to_path_buf(), entry))
        };
        let image = Some((
            PathBuf::from("/bin/ocm"),
            super::super::pod::Entrypoint::Image,
        ));
        let agent = Some((
            PathBuf::from("/bin/ocm-agent"),
            super::super::pod::Entrypoint::Image,
        ));
        assert_eq!(program(&options, "ocm:2", Some("ocm-agent")), agent);
        assert_eq!(
            program(&options, "ocm:2", Some("/usr/local/bin/ocm-agent")),
            agent
        );
        assert_eq!(program(&options, "ocm:2", Some("ocm")), image);
        assert_eq!(program(&options, "ocm:2", None), image);
        let alone = ProcessKubeletOptions {
            agent_binary: None,
            ..options.clone()
        };
        assert_eq!(program(&alone, "ocm:2", Some("ocm-agent")), image);
        // A local image's command is its own business.
        assert_eq!(
            program(&options, "example.com/tools:1", Some("ocm-agent")),
            Some((
                PathBuf::from("/bin/tools"),
                super::super::pod::Entrypoint::None
            ))
        );
    }

    #[test]
    fn service_urls_are_found_and_routed() {
        let url = service_url(
            "https://cluster-manager-placement.open-cluster-management-hub.svc.cluster.local:9443/debug/placements/a/b",
        )
        .unwrap();
        assert_eq!(
            (url.service.as_str(), url.namespace.as_str(), url.port),
            (
                "cluster-manager-placement",
                "open-cluster-management-hub",
                9443
            )
        );
        assert_eq!(service_url("http://web.apps.svc/x").unwrap().port, 80);
        assert_eq!(service_url("https://example.com/x"), None);
        assert_eq!(service_url("-sk"), None);
        let argv: Vec<String> = ["curl", "-sk", "https://a.b.svc/x"]
            .map(String::from)
            .to_vec();
        let routed = with_routes(&argv, &[(service_url("https://a.b.svc/x").unwrap(), 40001)]);
        assert_eq!(
            routed,
            [
                "curl",
                "--connect-to",
                "a.b.svc:443:127.0.0.1:40001",
                "-sk",
                "https://a.b.svc/x"
            ]
        );
    }

    #[test]
    fn a_service_leads_to_a_ready_pod_that_publishes_its_port() {
        let service = json!({"spec": {"selector": {"app": "p"},
            "ports": [{"name": "https", "port": 9443, "targetPort": 9443}]}});
        let ready = |labels: Value, ports: &str| {
            json!({"metadata": {"labels": labels, "annotations": {PORTS_ANNOTATION: ports}},
                   "spec": {"containers": [{"ports": [{"name": "https", "containerPort": 9443}]}]},
                   "status": {"phase": "Running",
                              "conditions": [{"type": "Ready", "status": "True"}]}})
        };
        let pods = vec![
            ready(json!({"app": "other"}), r#"{"9443": 1}"#),
            ready(json!({"app": "p"}), r#"{"8080": 2, "9443": 40001}"#),
        ];
        assert_eq!(local_port(&service, &pods, 9443), Some(40001));
        assert_eq!(local_port(&service, &pods, 443), None);
        let mut not_ready = pods[1].clone();
        not_ready["status"]["conditions"][0]["status"] = json!("False");
        assert_eq!(local_port(&service, &[not_ready], 9443), None);
        let named = json!({"spec": {"selector": {"app": "p"},
            "ports": [{"port": 9443, "targetPort": "https"}]}});
        assert_eq!(local_port(&named, &pods, 9443), Some(40001));
    }
}

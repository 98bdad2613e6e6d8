//! Pods whose one container runs a command this machine has — today `curl` (a `command` or
//! entrypoint of `curl`, as the `curlimages/curl` image's) — run as that command here, the
//! way a kubelet would run the container:
//!
//! 1. the pod (not one of this kubelet's Deployment pods, not finished, unbound or bound to
//!    this kubelet's node) is bound to the node (`pods/binding`, as a scheduler does) and
//!    annotated so that the workload simulator leaves its status alone;
//! 2. a URL naming a Service by its cluster DNS name (`https://<service>.<namespace>.svc
//!    [.cluster.local][:port]/…`) is sent to a ready pod behind the Service that publishes
//!    where its target port listens on this machine (the ports annotation of the process
//!    kubelet's pods), with `--connect-to`, so the name, TLS server name and `Host` stay
//!    those the pod asked for; a Service nobody here serves is left as it is (curl then
//!    fails to resolve it, as it would on a cluster without it);
//! 3. the command's output (stdout and stderr) is the container's log (`pods/log`, through
//!    [`super::logs`]); the pod is `Running`, then `Succeeded` or `Failed` with the exit code,
//!    restarted per `restartPolicy`; a deleted pod's command is stopped and its log removed.
//!
//! Other images and commands stay with the workload simulator (status only).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use super::pod::{PORTS_ANNOTATION, PROCESS_ANNOTATION, PROCESS_LABEL, repository};

/// Commands a pod may run here.
const TOOLS: [&str; 1] = ["curl"];

/// Longest wait between two runs of a restarted command.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The command line of `pod`'s container when this kubelet runs it: `command` then `args`, or
/// for an image whose entrypoint is a known tool (`curlimages/curl`), the tool then `args`.
pub fn command_of(pod: &Value) -> Option<Vec<String>> {
    let spec = &pod["spec"];
    let containers = spec["containers"].as_array()?;
    let [container] = containers.as_slice() else {
        return None;
    };
    if spec["initContainers"]
        .as_array()
        .is_some_and(|c| !c.is_empty())
    {
        return None;
    }
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

/// Whether this kubelet (on `node`) should run `pod`: a command it knows, not one of its own
/// Deployment pods, not being deleted, not finished, unbound or bound to `node`.
pub fn runnable(pod: &Value, node: &str) -> bool {
    let own = pod["metadata"]["labels"][PROCESS_LABEL].as_str() == Some("true");
    let bound = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    let phase = pod["status"]["phase"].as_str().unwrap_or_default();
    !own && pod["metadata"]["deletionTimestamp"].is_null()
        && (bound.is_empty() || bound == node)
        && !matches!(phase, "Succeeded" | "Failed")
        && command_of(pod).is_some()
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

/// Runs the command pods of a cluster until `shutdown`.
pub(super) async fn run(client: kube::Client, node: String, work_dir: PathBuf, shutdown: Shutdown) {
    let tools: HashMap<&str, PathBuf> = TOOLS
        .iter()
        .filter_map(|t| find_in_path(t).map(|p| (*t, p)))
        .collect();
    if tools.is_empty() {
        tracing::info!("no curl on this machine: curl pods stay simulated");
        return;
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
        let pods = match event {
            None => break,
            Some(Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod))) => vec![pod],
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
        for pod in pods {
            let key = key_of(&pod);
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            if running.get(&key).is_some_and(|(u, _)| *u == uid) {
                continue;
            }
            let Ok(value) = serde_json::to_value(&pod) else {
                continue;
            };
            if !runnable(&value, &node) {
                continue;
            }
            let Some(argv) = command_of(&value) else {
                continue;
            };
            let tool = argv[0].rsplit('/').next().unwrap_or_default().to_owned();
            let Some(binary) = tools.get(tool.as_str()).cloned() else {
                continue;
            };
            if let Some((_, old)) = running.remove(&key) {
                old.cancel();
            }
            let stop = shutdown.child();
            running.insert(key.clone(), (uid, stop.clone()));
            let run = CommandRun {
                client: client.clone(),
                node: node.clone(),
                pod: value,
                argv,
                binary,
                pod_dir: work_dir.join(&key.0).join(&key.1),
                stop,
            };
            tokio::spawn(run.supervise());
        }
    }
    for (_, (_, stop)) in running {
        stop.cancel();
    }
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
    node: String,
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

    /// Binds the pod to this node (unless it is) and marks it as run here.
    async fn claim(&self) -> Result<bool, kube::Error> {
        if self.pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            let binding = json!({"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": self.name()},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.node}});
            match self
                .pods()
                .create_subresource::<Value, Value>(
                    "binding",
                    self.name(),
                    &PostParams::default(),
                    &binding,
                )
                .await
            {
                Ok(_) => {}
                // Bound meanwhile: ours only if bound here.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    let now = self.pods().get(self.name()).await?;
                    let bound = now.spec.and_then(|s| s.node_name).unwrap_or_default();
                    if bound != self.node {
                        return Ok(false);
                    }
                }
                Err(err) => return Err(err),
            }
        }
        let patch = json!({"metadata": {"annotations": {PROCESS_ANNOTATION: "true"}}});
        self.pods()
            .patch(self.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(true)
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
        match self.claim().await {
            Ok(true) => {}
            Ok(false) => return,
            Err(err) => {
                tracing::warn!(pod = self.name(), %err, "cannot take the command pod");
                return;
            }
        }
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
            let spawned = tokio::process::Command::new(&self.binary)
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

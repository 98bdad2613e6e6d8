//! The process kubelet: on a simulated cluster (or the embedded hub), Deployments whose
//! image is the `ocm` image run for real — each replica a Pod object whose container is an
//! `ocm` process of this machine.
//!
//! For such a Deployment it creates the Pods (owned by the Deployment, so they go with it),
//! starts one process per Pod ([`supervisor`]) with the container's command, args and env,
//! a kubeconfig reading a token of the Pod's ServiceAccount from a file (`KUBECONFIG`, which
//! `ocm` reads where a real pod would use its in-cluster configuration; the token is renewed
//! while the process runs), and its Secret and ConfigMap volumes written under the Pod's
//! folder and kept in sync with the API (paths in args and env rebased there;
//! listen addresses on the container's ports moved to free loopback ports, since all pods
//! share this machine's network — except a pod with `hostNetwork: true`, which listens where
//! its arguments say, as on a node). Processes restart per `restartPolicy`; exits show in the
//! Pod's status; a changed template replaces the Pods (one at a time would need surge
//! accounting: all at once, like the Recreate strategy); fewer replicas stop Pods. The
//! Deployment's status counts the processes that run. Images other than `ocm` run the same
//! way as executables of this machine ([`LocalImage`]). Standalone pods — a Job's pods, or
//! pods made alone — of one container run here too ([`command`]): those of an `ocm` or local
//! image through the same machinery, those whose container runs `curl` as the machine's
//! `curl`, reaching Services through the pods' published ports. The Node lists the images it
//! runs (`status.images`), which is how the workload simulator knows to leave a Job's pods to
//! this kubelet and derive the Job's status from them. The pods' output is served as their
//! logs ([`logs`]: the Node names the endpoint, the API server's `pods/log` reads it, following
//! it too), a running pod's process environment runs `kubectl exec`'s commands ([`exec`]), and
//! `kubectl port-forward` reaches the ports its process listens on ([`portforward`]). Other
//! images stay simulated (the workload simulator leaves annotated Deployments and Pods to
//! this kubelet).

pub mod command;
mod container_io;
mod default_signals;
pub mod endpoint;
pub mod exec;
mod inflate;
pub mod logs;
pub mod pod;
pub mod portforward;
mod record;
mod spdy;
pub mod stdin;
mod supervisor;
pub mod terminal;
pub mod websocket;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::kubeconfig::ServerInfo;
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use pod::{PROCESS_ANNOTATION, PROCESS_LABEL, PodCounts};

use ocm_api::operator::names::klusterlet::AGENT_EXECUTABLE;

/// The `ocm-agent` executable beside `ocm` (`binary`), when it was built or installed there.
pub fn agent_beside(binary: &std::path::Path) -> Option<PathBuf> {
    let agent = binary.parent()?.join(AGENT_EXECUTABLE);
    agent.is_file().then_some(agent)
}

/// How the process kubelet runs.
#[derive(Clone, Debug)]
pub struct ProcessKubeletOptions {
    /// The `ocm` executable the pods run.
    pub binary: PathBuf,
    /// The `ocm-agent` executable, which the `ocm` image holds beside `ocm`: a container of
    /// that image whose `command` is `ocm-agent` (the klusterlet's agents) runs it. Without
    /// it such a container runs `binary`, which serves the same commands.
    pub agent_binary: Option<PathBuf>,
    /// Images that are the `ocm` image (other tags of their repositories count too).
    pub images: Vec<String>,
    /// Other images this machine runs, each as one of its executables.
    pub local_images: Vec<LocalImage>,
    /// Folder of the pods' volumes, kubeconfigs and logs.
    pub work_dir: PathBuf,
    /// How the processes reach the cluster's API server.
    pub server: ServerInfo,
    /// The node the pods are reported on.
    pub node_name: String,
    /// Echo the processes' output to stderr, each line prefixed `[pod <namespace>/<name>]`
    /// (it always goes to `container.log` in the pod's folder).
    pub echo_logs: bool,
    /// How often a running pod's Secret and ConfigMap volumes are written again
    /// ([`DEFAULT_SYNC_PERIOD`], about a kubelet's).
    pub sync_period: Duration,
    /// Age at which a running pod's ServiceAccount token (an hour's) is replaced
    /// ([`DEFAULT_TOKEN_REFRESH`]: at 80% of its life, as a kubelet does).
    pub token_refresh: Duration,
}

impl ProcessKubeletOptions {
    /// The executable that runs `image` here, and how the image starts its container; `None`
    /// for an image this kubelet leaves to the workload simulator.
    pub fn executable(&self, image: &str) -> Option<(&std::path::Path, pod::Entrypoint)> {
        if pod::is_ocm_image(image, &self.images) {
            return Some((&self.binary, pod::Entrypoint::Image));
        }
        self.local_images
            .iter()
            .find(|local| pod::repository(&local.image) == pod::repository(image))
            .map(|local| (local.executable.as_path(), pod::Entrypoint::None))
    }

    /// The executable a container of `image` whose command's first word is `program` runs,
    /// and how the image starts it ([`executable`](Self::executable), with `ocm-agent` of the
    /// `ocm` image as [`agent_binary`](Self::agent_binary) when there is one).
    pub fn program(
        &self,
        image: &str,
        program: Option<&str>,
    ) -> Option<(&std::path::Path, pod::Entrypoint)> {
        let (executable, entrypoint) = self.executable(image)?;
        let named = program.and_then(|p| p.rsplit('/').next());
        match &self.agent_binary {
            Some(agent)
                if entrypoint == pod::Entrypoint::Image && named == Some(AGENT_EXECUTABLE) =>
            {
                Some((agent.as_path(), entrypoint))
            }
            _ => Some((executable, entrypoint)),
        }
    }

    /// The images this kubelet runs, as its Node lists them in `status.images`: the `ocm`
    /// images, then each local image, each sized as its executable.
    pub fn node_images(&self) -> Value {
        let size = |path: &std::path::Path| std::fs::metadata(path).map_or(0, |m| m.len());
        let mut images = vec![json!({"names": self.images, "sizeBytes": size(&self.binary)})];
        images.extend(
            self.local_images
                .iter()
                .map(|local| json!({"names": [local.image], "sizeBytes": size(&local.executable)})),
        );
        Value::Array(images)
    }
}

/// An image other than `ocm` that runs here as an executable of this machine, as a node runs
/// an image it has pulled: its pods (a Deployment's, a Job's, or made alone) are processes of
/// `executable`, which stands for the image's program (the first word of the container's
/// `command`, else of its `args`; the words after it are its arguments). Other tags of the
/// image's repository count too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalImage {
    /// The image (`registry/repository[:tag]`).
    pub image: String,
    /// The executable that runs it.
    pub executable: PathBuf,
}

impl std::str::FromStr for LocalImage {
    type Err = String;

    /// Reads `IMAGE=EXECUTABLE`.
    fn from_str(text: &str) -> Result<LocalImage, String> {
        match text.split_once('=') {
            Some((image, executable)) if !image.is_empty() && !executable.is_empty() => {
                Ok(LocalImage {
                    image: image.to_owned(),
                    executable: PathBuf::from(executable),
                })
            }
            _ => Err(format!("{text:?} is not IMAGE=EXECUTABLE")),
        }
    }
}

/// Default [`ProcessKubeletOptions::sync_period`].
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(60);
/// Default [`ProcessKubeletOptions::token_refresh`].
pub const DEFAULT_TOKEN_REFRESH: Duration = Duration::from_secs(48 * 60);

/// One Pod this kubelet runs.
struct RunningPod {
    name: String,
    hash: String,
    stop: Shutdown,
    ready: Arc<AtomicBool>,
    supervisor: tokio::task::JoinHandle<()>,
}

/// A Deployment this kubelet runs the pods of.
struct Managed {
    uid: String,
    pods: Vec<RunningPod>,
    last_status: Value,
}

struct Kubelet {
    client: kube::Client,
    options: Arc<ProcessKubeletOptions>,
    managed: HashMap<(String, String), Managed>,
    changed: mpsc::UnboundedSender<()>,
    counter: AtomicU64,
    stdins: stdin::Stdins,
    shutdown: Shutdown,
}

/// Runs the process kubelet until `shutdown`; then its processes are stopped.
#[inline(never)]
pub fn run(
    client: kube::Client,
    options: ProcessKubeletOptions,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(client, options, shutdown))
}

async fn run_body(client: kube::Client, options: ProcessKubeletOptions, shutdown: Shutdown) {
    default_signals::probe().await;
    // Pods a previous run left (their processes ended with it) would hold names and, for
    // Services, dead ports: they go first.
    let selector = format!("{PROCESS_LABEL}=true");
    let leftovers: Api<Pod> = Api::all(client.clone());
    if let Ok(list) = leftovers
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
    {
        for pod in list.items {
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            let _ = Api::<Pod>::namespaced(client.clone(), &namespace)
                .delete(&name, &DeleteParams::default())
                .await;
        }
    }
    let stdins = stdin::Stdins::default();
    let port =
        match endpoint::serve(options.work_dir.clone(), stdins.clone(), shutdown.child()).await {
            Ok(port) => Some(port),
            Err(err) => {
                tracing::warn!(%err, "cannot serve the pods' logs");
                None
            }
        };
    if let Err(err) =
        endpoint::register_node(&client, &options.node_name, port, options.node_images()).await
    {
        tracing::warn!(%err, node = %options.node_name, "cannot register the node's log endpoint and images");
    }
    let options = Arc::new(options);
    tokio::spawn(command::run(
        client.clone(),
        options.clone(),
        stdins.clone(),
        shutdown.child(),
    ));
    let (reader, writer) = reflector::store::<Deployment>();
    let deployments = reflector::reflector(
        writer,
        watcher(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .backoff_on_errors(),
    )
    .boxed();
    let pods = watcher(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default().labels(&selector),
    )
    .backoff_on_errors()
    .boxed();
    let (changed, mut changes) = mpsc::unbounded_channel();
    let mut kubelet = Kubelet {
        client,
        options,
        managed: HashMap::new(),
        changed,
        counter: AtomicU64::new(0),
        stdins,
        shutdown: shutdown.child(),
    };
    let mut deployments = deployments;
    let mut pods = pods;
    loop {
        tokio::select! {
            event = deployments.next() => {
                if event.is_none() { break; }
            }
            event = pods.next() => {
                match event {
                    Some(Ok(watcher::Event::Delete(pod))) => kubelet.forget_pod(&pod),
                    Some(_) => continue,
                    None => break,
                }
            }
            change = changes.recv() => {
                if change.is_none() { break; }
                while changes.try_recv().is_ok() {}
            }
            () = shutdown.cancelled() => break,
        }
        kubelet.reconcile(&reader).await;
    }
    kubelet.shutdown.cancel();
}

impl Kubelet {
    /// A Pod deleted by someone else: its process stops, and the next pass replaces it.
    fn forget_pod(&mut self, deleted: &Pod) {
        let name = deleted.metadata.name.as_deref().unwrap_or_default();
        for managed in self.managed.values_mut() {
            if let Some(at) = managed.pods.iter().position(|p| p.name == name) {
                let pod = managed.pods.remove(at);
                pod.stop.cancel();
            }
        }
    }

    async fn reconcile(&mut self, store: &Store<Deployment>) {
        let mut seen = HashSet::new();
        for deployment in store.state() {
            let Ok(value) = serde_json::to_value(&*deployment) else {
                continue;
            };
            let image = value
                .pointer("/spec/template/spec/containers/0/image")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if deployment.metadata.deletion_timestamp.is_some()
                || self.options.executable(image).is_none()
            {
                continue;
            }
            let key = (
                deployment.metadata.namespace.clone().unwrap_or_default(),
                deployment.metadata.name.clone().unwrap_or_default(),
            );
            seen.insert(key.clone());
            if let Err(err) = self.reconcile_one(&key, &value).await {
                tracing::warn!(namespace = %key.0, deployment = %key.1, %err, "running its pods");
            }
        }
        let gone: Vec<_> = self
            .managed
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(managed) = self.managed.remove(&key) {
                for pod in managed.pods {
                    self.stop_pod(&key.0, pod);
                }
            }
        }
    }

    async fn reconcile_one(
        &mut self,
        key: &(String, String),
        value: &Value,
    ) -> Result<(), kube::Error> {
        let (namespace, name) = key;
        let uid = value["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), namespace);
        if value["metadata"]["annotations"][PROCESS_ANNOTATION] != "true" {
            let patch = json!({"metadata": {"annotations": {PROCESS_ANNOTATION: "true"}}});
            deployments
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        let mut managed = match self.managed.remove(key) {
            Some(m) if m.uid == uid => m,
            Some(m) => {
                for pod in m.pods {
                    self.stop_pod(namespace, pod);
                }
                Managed {
                    uid,
                    pods: Vec::new(),
                    last_status: Value::Null,
                }
            }
            None => Managed {
                uid,
                pods: Vec::new(),
                last_status: Value::Null,
            },
        };
        let wanted = value["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
        let hash = pod::template_hash(&value["spec"]["template"]);
        let (current, outdated): (Vec<RunningPod>, Vec<RunningPod>) =
            std::mem::take(&mut managed.pods)
                .into_iter()
                .partition(|p| p.hash == hash);
        for pod in outdated {
            self.stop_pod(namespace, pod);
        }
        let mut current = current;
        while current.len() as i64 > wanted {
            if let Some(pod) = current.pop() {
                self.stop_pod(namespace, pod);
            }
        }
        let mut started = Ok(());
        while (current.len() as i64) < wanted {
            match self.start_pod(value, &hash).await {
                Ok(pod) => current.push(pod),
                Err(err) => {
                    started = Err(err);
                    break;
                }
            }
        }
        let counts = PodCounts {
            replicas: current.len() as i64,
            updated: current.len() as i64,
            ready: current
                .iter()
                .filter(|p| p.ready.load(Ordering::SeqCst))
                .count() as i64,
        };
        managed.pods = current;
        let generation = value["metadata"]["generation"].as_i64().unwrap_or_default();
        let now = jiff::Timestamp::now().to_string();
        let status = pod::deployment_status(generation, wanted, counts, &now);
        let comparable = |s: &Value| {
            let mut s = s.clone();
            if let Some(conditions) = s["conditions"].as_array_mut() {
                for c in conditions {
                    c["lastUpdateTime"] = Value::Null;
                    c["lastTransitionTime"] = Value::Null;
                }
            }
            s
        };
        let mut written = Ok(());
        if comparable(&status) != comparable(&managed.last_status)
            || comparable(&status) != comparable(&value["status"])
        {
            written = deployments
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": status.clone()})),
                )
                .await
                .map(|_| ());
            if written.is_ok() {
                managed.last_status = status;
            }
        }
        // Kept whatever failed: the pods it runs must stay tracked.
        self.managed.insert(key.clone(), managed);
        started.and(written)
    }

    /// Creates a Pod of `deployment` and starts its process.
    async fn start_pod(&self, deployment: &Value, hash: &str) -> Result<RunningPod, kube::Error> {
        let namespace = deployment["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let owner = deployment["metadata"]["name"].as_str().unwrap_or_default();
        // Unique across runs of this kubelet too: the start time and a counter.
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let started = jiff::Timestamp::now().as_millisecond() % 0x10_0000;
        let name = format!("{owner}-{hash}-{started:05x}{n:x}");
        let object = pod::pod_object(deployment, &name, hash, &self.options.node_name);
        let pod: Pod = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
        let created = Api::<Pod>::namespaced(self.client.clone(), namespace)
            .create(&PostParams::default(), &pod)
            .await?;
        let stop = self.shutdown.child();
        let ready = Arc::new(AtomicBool::new(false));
        let supervisor = tokio::spawn(supervisor::supervise(supervisor::PodRun {
            client: self.client.clone(),
            options: self.options.clone(),
            pod: created,
            ready: ready.clone(),
            changed: Some(self.changed.clone()),
            stdins: self.stdins.clone(),
            stop: stop.clone(),
        }));
        Ok(RunningPod {
            name,
            hash: hash.to_owned(),
            stop,
            ready,
            supervisor,
        })
    }

    /// Stops a Pod's process and, once it has ended, deletes the Pod (as a kubelet confirms
    /// a pod's deletion only when its containers are gone).
    fn stop_pod(&self, namespace: &str, pod: RunningPod) {
        pod.stop.cancel();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        tokio::spawn(async move {
            let _ = pod.supervisor.await;
            if let Err(err) = pods.delete(&pod.name, &DeleteParams::default()).await
                && !matches!(&err, kube::Error::Api(s) if s.code == 404)
            {
                tracing::warn!(pod = %pod.name, %err, "deleting a stopped pod");
            }
        });
    }
}

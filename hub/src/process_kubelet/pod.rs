//! What the process kubelet derives from a Deployment — pure: whether its image is the
//! `ocm` image, the template's hash, the Pod object, the command line of its container
//! (mount paths rebased under the pod's folder, listen addresses moved off shared ports unless
//! the pod is in the host's network),
//! and the Deployment status its pods add up to.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

/// Annotation the process kubelet puts on Deployments and Pods it runs: the workload
/// simulator leaves their status to it.
pub const PROCESS_ANNOTATION: &str = "simulation.open-cluster-management.io/runs-as-process";

/// Pod annotation: where each container port listens on this machine
/// (`{"<containerPort>": <local port>}`), for the API server to reach the pod behind a Service
/// (`ocm_apiserver::webhook::service`).
pub const PORTS_ANNOTATION: &str = "simulation.open-cluster-management.io/ports";

/// Label on the Pods the process kubelet creates.
pub const PROCESS_LABEL: &str = "simulation.open-cluster-management.io/process-pod";

/// The repository part of an image reference (no tag, no digest).
pub use ocm_apiserver::meta::image_repository as repository;

/// Whether `image` is one of `images` or another tag of one of their repositories.
pub fn is_ocm_image(image: &str, images: &[String]) -> bool {
    images
        .iter()
        .any(|known| known == image || repository(known) == repository(image))
}

/// A stable hash of a pod template (FNV-1a over its JSON), as the `pod-template-hash` label.
pub fn template_hash(template: &Value) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in template.to_string().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:010x}", hash & 0xff_ffff_ffff)
}

/// The Pod of Deployment `deployment` (as JSON) named `name`, from its template.
pub fn pod_object(deployment: &Value, name: &str, hash: &str, node: &str) -> Value {
    let template = &deployment["spec"]["template"];
    let mut labels = template["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels["pod-template-hash"] = json!(hash);
    labels[PROCESS_LABEL] = json!("true");
    let mut spec = template["spec"].clone();
    spec["nodeName"] = json!(node);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": deployment["metadata"]["namespace"],
            "labels": labels,
            "annotations": {PROCESS_ANNOTATION: "true"},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "Deployment",
                "name": deployment["metadata"]["name"], "uid": deployment["metadata"]["uid"],
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": spec,
    })
}

/// A volume mounted into the container: where the container sees it, and what fills it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// `mountPath` in the container.
    pub mount_path: String,
    /// Secret (`true`) or ConfigMap (`false`).
    pub secret: bool,
    /// Name of the Secret or ConfigMap.
    pub source: String,
    /// Whether the pod may start without it.
    pub optional: bool,
}

/// The Secret and ConfigMap volumes the first container mounts.
pub fn mounts(pod_spec: &Value) -> Vec<Mount> {
    let volumes = pod_spec["volumes"].as_array().cloned().unwrap_or_default();
    let container = &pod_spec["containers"][0];
    let mut out = Vec::new();
    for mount in container["volumeMounts"].as_array().into_iter().flatten() {
        let Some(volume) = volumes.iter().find(|v| v["name"] == mount["name"]) else {
            continue;
        };
        let (secret, source, optional) = if volume["secret"].is_object() {
            (
                true,
                &volume["secret"]["secretName"],
                &volume["secret"]["optional"],
            )
        } else if volume["configMap"].is_object() {
            (
                false,
                &volume["configMap"]["name"],
                &volume["configMap"]["optional"],
            )
        } else {
            continue;
        };
        out.push(Mount {
            mount_path: mount["mountPath"].as_str().unwrap_or_default().to_owned(),
            secret,
            source: source.as_str().unwrap_or_default().to_owned(),
            optional: optional.as_bool().unwrap_or(false),
        });
    }
    out
}

/// Where a mount lives on this machine: its path under the pod's folder.
pub fn local_path(pod_dir: &Path, mount_path: &str) -> std::path::PathBuf {
    pod_dir
        .join("volumes")
        .join(mount_path.trim_start_matches('/'))
}

/// The first container's ports.
pub fn container_ports(pod_spec: &Value) -> Vec<i64> {
    pod_spec["containers"][0]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["containerPort"].as_i64())
        .collect()
}

/// Whether the pod runs in the host's network (`hostNetwork: true`): its process then listens
/// on the ports its arguments name, as it would on a node.
pub fn host_network(pod_spec: &Value) -> bool {
    pod_spec["hostNetwork"].as_bool().unwrap_or(false)
}

/// Where the container ports of a pod in the host's network listen: on themselves (the ports
/// that are not valid port numbers left out).
pub fn host_ports(container_ports: &[i64]) -> BTreeMap<i64, u16> {
    container_ports
        .iter()
        .filter_map(|p| u16::try_from(*p).ok().map(|local| (*p, local)))
        .collect()
}

/// One argument or env value as the process gets it: a path inside a mount is rebased under
/// the pod's folder; a listen address on one of the container's ports (`0.0.0.0:<port>`,
/// `[::]:<port>`) becomes the loopback port `ports` gives it, since every pod shares this
/// machine's network.
pub fn rewrite(
    value: &str,
    pod_dir: &Path,
    mounts: &[Mount],
    ports: &BTreeMap<i64, u16>,
) -> String {
    for mount in mounts {
        let prefix = mount.mount_path.trim_end_matches('/');
        if prefix.is_empty() {
            continue;
        }
        if let Some(pos) = value.find(prefix) {
            let rest = &value[pos + prefix.len()..];
            if rest.is_empty() || rest.starts_with('/') {
                let local = local_path(pod_dir, prefix);
                return format!("{}{}{rest}", &value[..pos], local.display());
            }
        }
    }
    for (port, local) in ports {
        for listen in [format!("0.0.0.0:{port}"), format!("[::]:{port}")] {
            if let Some(stripped) = value.strip_suffix(listen.as_str()) {
                return format!("{stripped}127.0.0.1:{local}");
            }
        }
    }
    value.to_owned()
}

/// How an image starts its container, which decides the first word the executable stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entrypoint {
    /// The image has an entrypoint (the `ocm` image's is `ocm`): `args` are its arguments; a
    /// `command` replaces it, its first word being the program.
    Image,
    /// The image has none: the first word of `command`, else of `args`, is the program.
    None,
}

/// The container's arguments (the words after the program the executable stands for, see
/// [`Entrypoint`]) and plain environment, rewritten with [`rewrite`]; `fields` answers
/// `fieldRef` paths.
pub fn command_line(
    pod_spec: &Value,
    entrypoint: Entrypoint,
    pod_dir: &Path,
    fields: &dyn Fn(&str) -> Option<String>,
    ports: &BTreeMap<i64, u16>,
) -> (Vec<String>, Vec<(String, String)>) {
    let container = &pod_spec["containers"][0];
    let mounts = mounts(pod_spec);
    let text = |v: &Value| v.as_str().map(|s| rewrite(s, pod_dir, &mounts, ports));
    let words = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(text)
            .collect()
    };
    let mut command = words(&container["command"]);
    let mut args = words(&container["args"]);
    if !command.is_empty() {
        command.remove(0);
    } else if entrypoint == Entrypoint::None && !args.is_empty() {
        args.remove(0);
    }
    let mut env = Vec::new();
    for var in container["env"].as_array().into_iter().flatten() {
        let Some(name) = var["name"].as_str() else {
            continue;
        };
        let value = if let Some(value) = var["value"].as_str() {
            Some(rewrite(value, pod_dir, &mounts, ports))
        } else {
            var["valueFrom"]["fieldRef"]["fieldPath"]
                .as_str()
                .and_then(fields)
        };
        if let Some(value) = value {
            env.push((name.to_owned(), value));
        }
    }
    (command.into_iter().chain(args).collect(), env)
}

/// How a Deployment's pods stand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodCounts {
    /// Pods running.
    pub replicas: i64,
    /// Pods of the current template.
    pub updated: i64,
    /// Pods of the current template whose process runs.
    pub ready: i64,
}

/// The Deployment status its pods add up to.
pub fn deployment_status(generation: i64, wanted: i64, counts: PodCounts, now: &str) -> Value {
    let available = counts.ready >= wanted;
    let (status, reason, message) = if available {
        (
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    json!({
        "observedGeneration": generation,
        "replicas": counts.replicas,
        "updatedReplicas": counts.updated,
        "readyReplicas": counts.ready,
        "availableReplicas": counts.ready,
        "unavailableReplicas": (wanted - counts.ready).max(0),
        "conditions": [
            {"type": "Available", "status": status, "reason": reason, "message": message,
             "lastUpdateTime": now, "lastTransitionTime": now},
            {"type": "Progressing", "status": "True",
             "reason": if counts.updated >= wanted { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
             "message": "Pods run as processes of the ocm binary.",
             "lastUpdateTime": now, "lastTransitionTime": now},
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_tags_of_the_ocm_repository_are_ocm_images() {
        let images = vec!["registry.local:5000/ocm:1".to_owned()];
        assert_eq!(
            repository("registry.local:5000/ocm:1"),
            "registry.local:5000/ocm"
        );
        assert_eq!(
            repository("registry.local:5000/ocm"),
            "registry.local:5000/ocm"
        );
        assert_eq!(repository("ocm@sha256:abc"), "ocm");
        assert!(is_ocm_image("registry.local:5000/ocm:2", &images));
        assert!(!is_ocm_image("registry.local:5000/nginx:1", &images));
        assert_ne!(
            template_hash(&json!({"a": 1})),
            template_hash(&json!({"a": 2}))
        );
        assert_eq!(
            template_hash(&json!({"a": 1})),
            template_hash(&json!({"a": 1}))
        );
    }

    #[test]
    fn pods_in_the_host_network_keep_their_ports() {
        let spec = json!({"hostNetwork": true, "containers": [{"ports": [
            {"containerPort": 30443}, {"containerPort": 70000}]}]});
        assert!(host_network(&spec));
        assert!(!host_network(&json!({"containers": []})));
        let ports = host_ports(&container_ports(&spec));
        assert_eq!(ports.into_iter().collect::<Vec<_>>(), [(30443, 30443)]);
    }

    #[test]
    fn mounts_are_rebased_and_listen_ports_freed() {
        let spec = json!({
            "containers": [{
                "command": ["ocm", "hub"],
                "args": ["webhook", "--webhook-cert-dir=/var/run/cert", "--webhook-listen=0.0.0.0:9443",
                         "--metrics-addr=0.0.0.0:8080", "--name=x"],
                "ports": [{"containerPort": 9443}, {"containerPort": 8080}],
                "volumeMounts": [{"name": "cert", "mountPath": "/var/run/cert"}],
                "env": [{"name": "A", "value": "/var/run/cert/tls.crt"},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            }],
            "volumes": [{"name": "cert", "secret": {"secretName": "serving"}}],
        });
        let dir = Path::new("/tmp/pod");
        let fields = |path: &str| (path == "metadata.name").then(|| "p-1".to_owned());
        let ports = BTreeMap::from([(9443, 40001), (8080, 40002)]);
        let (args, env) = command_line(&spec, Entrypoint::Image, dir, &fields, &ports);
        assert_eq!(
            args,
            [
                "hub",
                "webhook",
                "--webhook-cert-dir=/tmp/pod/volumes/var/run/cert",
                "--webhook-listen=127.0.0.1:40001",
                "--metrics-addr=127.0.0.1:40002",
                "--name=x"
            ]
        );
        assert_eq!(env[0].1, "/tmp/pod/volumes/var/run/cert/tls.crt");
        assert_eq!(env[1], ("POD".to_owned(), "p-1".to_owned()));
        let found = mounts(&spec);
        assert_eq!(found[0].source, "serving");
        assert!(found[0].secret);
    }

    #[test]
    fn an_image_without_entrypoint_runs_its_first_word_as_the_program() {
        let spec = json!({
            "containers": [{
                "image": "example.com/addons:latest",
                "args": ["/hello", "agent", "--hub-kubeconfig=/managed/hub/kubeconfig"],
                "volumeMounts": [{"name": "hub", "mountPath": "/managed/hub"}],
            }],
            "volumes": [{"name": "hub", "secret": {"secretName": "hub-kubeconfig"}}],
        });
        let dir = Path::new("/tmp/pod");
        let ports = BTreeMap::new();
        let none = |_: &str| None;
        let (args, _) = command_line(&spec, Entrypoint::None, dir, &none, &ports);
        assert_eq!(
            args,
            [
                "agent",
                "--hub-kubeconfig=/tmp/pod/volumes/managed/hub/kubeconfig"
            ]
        );
        // With an entrypoint the same args are all arguments.
        let (args, _) = command_line(&spec, Entrypoint::Image, dir, &none, &ports);
        assert_eq!(args[0], "/hello");
        // A command names the program either way.
        let mut with_command = spec.clone();
        with_command["containers"][0]["command"] = json!(["/bin/hello", "serve"]);
        for entrypoint in [Entrypoint::Image, Entrypoint::None] {
            let (args, _) = command_line(&with_command, entrypoint, dir, &none, &ports);
            assert_eq!(args[..2], ["serve", "/hello"]);
        }
    }
    #[test]
    fn pods_belong_to_their_deployment() {
        let deployment = json!({"metadata": {"name": "d", "namespace": "ns", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "c", "image": "ocm:1"}]}}}});
        let pod = pod_object(&deployment, "d-abc-1", "abc", "node-1");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(pod["metadata"]["labels"]["app"], "d");
        assert_eq!(pod["metadata"]["labels"]["pod-template-hash"], "abc");
        assert_eq!(pod["spec"]["nodeName"], "node-1");
        let status = deployment_status(
            2,
            1,
            PodCounts {
                replicas: 1,
                updated: 1,
                ready: 1,
            },
            "t",
        );
        assert_eq!(status["availableReplicas"], 1);
        assert_eq!(status["conditions"][0]["status"], "True");
        let status = deployment_status(2, 1, PodCounts::default(), "t");
        assert_eq!(status["conditions"][0]["status"], "False");
    }
}

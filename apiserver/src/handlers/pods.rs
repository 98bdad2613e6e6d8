//! Two Pod subresources a kubelet-less server still needs when something plays the kubelet
//! (the process kubelet of simulated clusters):
//!
//! - `POST .../pods/{name}/binding` (a `v1 Binding` naming a Node): sets `spec.nodeName`, as
//!   the scheduler does; a pod already bound answers 409 as kube-apiserver does.
//! - `GET .../pods/{name}/log`: as kube-apiserver, asks the kubelet of the pod's node —
//!   `status.daemonEndpoints.kubeletEndpoint.Port` at the node's `InternalIP` (else
//!   `Hostname`) address — for `/containerLogs/{namespace}/{pod}/{container}` (query passed on)
//!   and answers its text — streamed as it comes with `follow=true`. The kubelet is called
//!   over plain HTTP (the process kubelet serves its endpoint on loopback without TLS; kube's
//!   kubelets serve HTTPS).
//!
//! The connect subresources (`exec`, `attach`, `portforward`) go to the kubelet too
//! ([`super::connect`]).

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use super::{Reply, ResourceRequest, decode_json};
use crate::meta;
use crate::ops::{Ctx, Managed, Target};
use ocm_apiserver_status::{ApiError, Gr};
use ocm_apiserver_storage::{Bucket, ObjectKey};

/// The log options passed on to the kubelet.
const LOG_OPTIONS: [&str; 7] = [
    "follow",
    "tailLines",
    "limitBytes",
    "sinceSeconds",
    "sinceTime",
    "timestamps",
    "previous",
];

/// Largest log answer passed on.
const MAX_LOG_BYTES: usize = 16 * 1024 * 1024;

const PODS: Gr<'static> = Gr {
    group: "",
    resource: "pods",
};

fn stored(req: &ResourceRequest, resource: &str, ns: &str, name: &str) -> Option<Value> {
    let key = ObjectKey::new(Bucket::new(&req.cluster, resource), ns, name);
    let object = req.inner.store.get(&key)?;
    serde_json::from_slice(&object.value).ok()
}

/// The node a Binding names, or why it names none.
pub(crate) fn binding_target(binding: &Value) -> Result<String, ApiError> {
    let target = &binding["target"];
    let kind = target["kind"].as_str().unwrap_or("Node");
    if !kind.is_empty() && kind != "Node" {
        return Err(ApiError::bad_request(format!(
            "binding target kind must be Node, not {kind:?}"
        )));
    }
    match target["name"].as_str() {
        Some(name) if !name.is_empty() => Ok(name.to_owned()),
        _ => Err(ApiError::bad_request("binding target name is required")),
    }
}

/// Binds the pod to the Binding's node.
pub(crate) async fn bind(req: &ResourceRequest, body: &[u8]) -> Result<Reply, ApiError> {
    let name = req.path.name.clone().unwrap_or_default();
    let binding = decode_json(req, body)?;
    let node = binding_target(&binding)?;
    let mut ctx: Ctx = req.ctx()?;
    let mut mutate = |_: &mut Ctx, old: &Value| {
        let bound = old
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !bound.is_empty() {
            return Err(ApiError::conflict_because(
                PODS,
                &name,
                &format!("pod {name} is already assigned to node \"{bound}\""),
            ));
        }
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            return Err(ApiError::conflict_because(
                PODS,
                &name,
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        let mut new = old.clone();
        new["spec"]["nodeName"] = json!(node);
        meta::set_meta(&mut new, "resourceVersion", None);
        Ok(new)
    };
    ctx.update(
        req.namespace(),
        &name,
        &Target::Main,
        Managed::RecordUpdate,
        false,
        &mut mutate,
    )
    .await?;
    Ok(Reply::json(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "code": 201}),
    ))
}

/// The container whose log is asked for: `container` when given (it must be one of the
/// pod's), else the only container.
pub(crate) fn log_container(pod: &Value, asked: Option<&str>) -> Result<String, ApiError> {
    let name = meta::meta_str(pod, "name");
    let containers: Vec<&str> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    match asked.filter(|c| !c.is_empty()) {
        Some(c) if containers.contains(&c) => Ok(c.to_owned()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => match containers.as_slice() {
            [only] => Ok((*only).to_owned()),
            [] => Err(ApiError::bad_request(format!(
                "pod {name} does not have a container"
            ))),
            many => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                many.join(" ")
            ))),
        },
    }
}

/// `host:port` of the kubelet of `node`, from its status.
pub(crate) fn kubelet_address(node: &Value) -> Option<String> {
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)?;
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)?;
    let of = |kind: &str| {
        addresses
            .iter()
            .find(|a| a["type"] == kind)
            .and_then(|a| a["address"].as_str())
            .map(str::to_owned)
    };
    let host = of("InternalIP").or_else(|| of("Hostname"))?;
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    Some(format!("{host}:{port}"))
}

/// A pod's container and where the kubelet running it listens.
pub(crate) struct PodKubelet {
    /// The pod as stored.
    pub pod: Value,
    /// The pod's namespace and name.
    pub namespace: String,
    /// See `namespace`.
    pub name: String,
    /// The container asked for (or the only one; empty when not asked for).
    pub container: String,
    /// `host:port` of the kubelet's endpoint.
    pub address: String,
}

/// The pod a subresource request names, its container (when `with_container`: asked for, or
/// the only one) and its kubelet; a clear error when the pod is missing, not scheduled or its
/// node serves no kubelet endpoint.
pub(crate) fn pod_kubelet(
    req: &ResourceRequest,
    with_container: bool,
) -> Result<PodKubelet, ApiError> {
    let name = req.path.name.clone().unwrap_or_default();
    let namespace = req.namespace().to_owned();
    let pod =
        stored(req, "/pods", &namespace, &name).ok_or_else(|| ApiError::not_found(PODS, &name))?;
    let container = if with_container {
        log_container(&pod, req.query.get("container"))?
    } else {
        String::new()
    };
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let address = stored(req, "/nodes", "", &node)
        .as_ref()
        .and_then(kubelet_address)
        .ok_or_else(|| {
            let what = if container.is_empty() {
                format!("pod \"{name}\"")
            } else {
                format!("container \"{container}\" in pod \"{name}\"")
            };
            ApiError::bad_request(format!(
                "{what} is waiting to start: no kubelet serves node \"{node}\""
            ))
        })?;
    Ok(PodKubelet {
        pod,
        namespace,
        name,
        container,
        address,
    })
}

/// Answers a pod log request from the pod's kubelet.
pub(crate) async fn log(req: &ResourceRequest) -> Result<Reply, ApiError> {
    let PodKubelet {
        namespace,
        name,
        container,
        address,
        ..
    } = pod_kubelet(req, true)?;
    let mut uri = format!("http://{address}/containerLogs/{namespace}/{name}/{container}");
    let options: Vec<String> = LOG_OPTIONS
        .iter()
        .filter_map(|k| {
            let value = req.query.non_empty(k)?;
            value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-:.".contains(&b))
                .then(|| format!("{k}={value}"))
        })
        .collect();
    if !options.is_empty() {
        uri.push('?');
        uri.push_str(&options.join("&"));
    }
    let follow = req
        .query
        .non_empty("follow")
        .is_some_and(|v| v == "true" || v == "1");
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let request = http::Request::get(&uri)
        .body(Empty::new())
        .map_err(ApiError::internal)?;
    let fail = |e: &dyn std::fmt::Display| {
        ApiError::new(500, "InternalError", format!("Get \"{uri}\": {e}"))
    };
    let response = client.request(request).await.map_err(|e| fail(&e))?;
    let status = response.status();
    if status.is_success() && follow {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let mut body = response.into_body();
        tokio::spawn(async move {
            while let Some(Ok(frame)) = body.frame().await {
                if let Ok(data) = frame.into_data()
                    && tx.send(data).await.is_err()
                {
                    return;
                }
            }
        });
        let mut reply = Reply::bytes(StatusCode::OK, Bytes::new());
        reply.body = crate::reply::ReplyBody::Stream(rx);
        reply.content_type = "text/plain".into();
        return Ok(reply);
    }
    let body = http_body_util::Limited::new(response.into_body(), MAX_LOG_BYTES)
        .collect()
        .await
        .map_err(|e| fail(&e))?
        .to_bytes();
    if !status.is_success() {
        return Err(ApiError::new(
            status.as_u16(),
            "BadRequest",
            String::from_utf8_lossy(&body).into_owned(),
        ));
    }
    let mut reply = Reply::bytes(StatusCode::OK, body);
    reply.content_type = "text/plain".into();
    Ok(reply)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bindings_name_a_node() {
        assert_eq!(
            binding_target(&json!({"target": {"kind": "Node", "name": "n1"}})).unwrap(),
            "n1"
        );
        assert!(binding_target(&json!({"target": {"kind": "Pod", "name": "n1"}})).is_err());
        assert!(binding_target(&json!({"target": {}})).is_err());
    }

    #[test]
    fn the_log_container_is_named_or_the_only_one() {
        let one = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(log_container(&one, None).unwrap(), "c");
        assert!(log_container(&one, Some("x")).is_err());
        let two = json!({"metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let err = log_container(&two, None).unwrap_err();
        assert!(err.to_string().contains("choose one of: [a b]"), "{err}");
        assert_eq!(log_container(&two, Some("b")).unwrap(), "b");
    }

    #[test]
    fn the_kubelet_is_found_from_the_node_status() {
        let node = json!({"status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "addresses": [{"type": "Hostname", "address": "n1"},
                          {"type": "InternalIP", "address": "127.0.0.1"}]}});
        assert_eq!(kubelet_address(&node).unwrap(), "127.0.0.1:10250");
        assert_eq!(kubelet_address(&json!({"status": {}})), None);
    }
}

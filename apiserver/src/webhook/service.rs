//! Reaching a webhook named by `clientConfig.service`. kube-apiserver dials the Service; this
//! server has no cluster network, but pods run as local processes (the process kubelet of
//! simulated clusters) publish where each container port listens, in the Pod annotation
//! [`PORTS_ANNOTATION`] (`{"<containerPort>": <local port>}`). A Service reference is sent to
//! the first ready, selected pod that publishes the Service's target port; with none, the
//! call fails as an unreachable Service does. Only Ready pods count, as with endpoints.

use serde_json::Value;

use super::config::ClientConfig;
use ocm_apiserver_storage::{Bucket, ObjectKey, Store};

/// Pod annotation: where its container ports listen on this machine.
pub const PORTS_ANNOTATION: &str = "simulation.open-cluster-management.io/ports";

fn parse(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes).ok()
}

/// Whether every `selector` label is on `labels`.
fn selects(selector: &serde_json::Map<String, Value>, labels: &Value) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The container port a Service `target` (number or port name) means on `pod`.
fn container_port(pod: &Value, target: &Value) -> Option<i64> {
    if let Some(number) = target.as_i64() {
        return Some(number);
    }
    let name = target.as_str()?;
    pod.pointer("/spec/containers")?
        .as_array()?
        .iter()
        .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_i64())
}

/// `client` with a Service reference replaced by the URL of a pod behind it, when one can be
/// reached; otherwise `client` unchanged.
pub fn resolve(store: &Store, cluster: &str, client: &ClientConfig) -> ClientConfig {
    let ClientConfig::Service {
        namespace,
        name,
        port,
        path,
        ca_bundle,
    } = client
    else {
        return client.clone();
    };
    let key = ObjectKey::new(Bucket::new(cluster, "/services"), namespace, name);
    let Some(service) = store.get(&key).and_then(|o| parse(&o.value)) else {
        return client.clone();
    };
    let Some(selector) = service.pointer("/spec/selector").and_then(Value::as_object) else {
        return client.clone();
    };
    let target = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .and_then(|ports| ports.iter().find(|p| p["port"].as_i64() == Some(*port)))
        .map(|p| {
            p.get("targetPort")
                .cloned()
                .unwrap_or_else(|| p["port"].clone())
        });
    let Some(target) = target else {
        return client.clone();
    };
    let (_, pods) = store.list(&Bucket::new(cluster, "/pods"), Some(namespace), None);
    for (_, _, stored) in pods {
        let Some(pod) = parse(&stored.value) else {
            continue;
        };
        let ready = pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
            && pod
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                });
        if !ready
            || pod.pointer("/metadata/deletionTimestamp").is_some()
            || !selects(selector, &pod["metadata"]["labels"])
        {
            continue;
        }
        let Some(container) = container_port(&pod, &target) else {
            continue;
        };
        let published = pod["metadata"]["annotations"][PORTS_ANNOTATION]
            .as_str()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .and_then(|ports| ports[container.to_string()].as_u64());
        if let Some(local) = published {
            return ClientConfig::Url {
                url: format!("https://127.0.0.1:{local}{path}"),
                ca_bundle: ca_bundle.clone(),
            };
        }
    }
    client.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn named_and_numbered_target_ports_map_to_container_ports() {
        let pod = json!({"spec": {"containers": [{"ports": [{"name": "webhook", "containerPort": 9443}]}]}});
        assert_eq!(container_port(&pod, &json!("webhook")), Some(9443));
        assert_eq!(container_port(&pod, &json!(8443)), Some(8443));
        assert_eq!(container_port(&pod, &json!("other")), None);
        let selector = json!({"app": "w"});
        let selector = selector.as_object().unwrap();
        assert!(selects(selector, &json!({"app": "w", "x": "y"})));
        assert!(!selects(selector, &json!({"app": "v"})));
        assert!(!selects(&serde_json::Map::new(), &json!({"app": "w"})));
    }
}

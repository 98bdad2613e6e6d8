//! What points an API server at the webhook server: a MutatingWebhookConfiguration and a
//! ValidatingWebhookConfiguration built from [`WEBHOOKS`], the `spec.conversion` stanza of the
//! addon CRDs, and a check that the API server really calls them.
//!
//! The configurations use `clientConfig.url` (the hub process is reached at an address, not a
//! Service; [`routed`] sends each API group's webhooks to a [`WebhookEndpoint`] of its own —
//! a Service, as the operator registers a hub whose webhook servers run beside it, or another
//! URL, as it registers a Hosted hub's) with the serving CA as `caBundle`, `failurePolicy: Fail` (a policy that is not
//! asked must not let a request through), `sideEffects: None` and `timeoutSeconds: 10`.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::policy::{Phase, WEBHOOKS};
use crate::serve::{CONVERT_PATH, MUTATE_PATH, VALIDATE_PATH};

/// Name of the MutatingWebhookConfiguration the hub installs.
pub const MUTATING_CONFIGURATION: &str = "ocm-hub-mutating-webhooks";
/// Name of the ValidatingWebhookConfiguration the hub installs.
pub const VALIDATING_CONFIGURATION: &str = "ocm-hub-validating-webhooks";
/// The CRDs whose versions are converted by the webhook.
pub const CONVERTED_CRDS: [&str; 2] = [
    "clustermanagementaddons.addon.open-cluster-management.io",
    "managedclusteraddons.addon.open-cluster-management.io",
];

/// Why installing or checking the webhooks failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The API server refused a write or a read.
    #[error("{what}")]
    Api {
        /// What was being done.
        what: String,
        /// The cause.
        source: kube::Error,
    },
    /// The webhooks did not answer in time.
    #[error("the API server did not reach the webhooks within {0:?}: {1}")]
    NotAnswering(Duration, String),
}

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

fn webhooks(phase: Phase, base_url: &str, ca_bundle: &str) -> Vec<Value> {
    let path = match phase {
        Phase::Mutating => MUTATE_PATH,
        Phase::Validating => VALIDATE_PATH,
    };
    WEBHOOKS
        .iter()
        .filter(|w| w.phase == phase)
        .map(|w| {
            let resources: Vec<String> = std::iter::once(w.resource.to_owned())
                .chain(w.subresources.iter().map(|s| format!("{}/{s}", w.resource)))
                .collect();
            let mut hook = json!({
                "name": w.name,
                "clientConfig": {
                    "url": format!("{}{path}", base_url.trim_end_matches('/')),
                    "caBundle": base64(ca_bundle),
                },
                "rules": [{
                    "operations": w.operations,
                    "apiGroups": [w.group],
                    "apiVersions": w.versions,
                    "resources": resources,
                    "scope": "*",
                }],
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "matchPolicy": "Equivalent",
                "timeoutSeconds": 10,
            });
            if phase == Phase::Mutating {
                hook["reinvocationPolicy"] = json!("Never");
            }
            hook
        })
        .collect()
}

/// The MutatingWebhookConfiguration for a webhook server at `base_url` (`https://host:port`).
pub fn mutating_configuration(base_url: &str, ca_bundle: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_CONFIGURATION, "labels": {"app": "ocm-hub"}},
        "webhooks": webhooks(Phase::Mutating, base_url, ca_bundle),
    })
}

/// The ValidatingWebhookConfiguration for a webhook server at `base_url`.
pub fn validating_configuration(base_url: &str, ca_bundle: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_CONFIGURATION, "labels": {"app": "ocm-hub"}},
        "webhooks": webhooks(Phase::Validating, base_url, ca_bundle),
    })
}

/// Where an API server reaches a webhook server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookEndpoint {
    /// Service `namespace/name` of the API server's own cluster, port 443 — how an
    /// operator-installed hub, whose webhook servers are Deployments beside it, is reached.
    Service {
        /// Namespace of the Service.
        namespace: String,
        /// Name of the Service.
        name: String,
    },
    /// A base URL `https://host:port`, the webhook's path appended — how a hub reaches a
    /// webhook server that runs elsewhere (a Hosted hub's, on the management cluster).
    Url(String),
}

impl WebhookEndpoint {
    /// The `clientConfig` (without `caBundle`) that reaches `path` at this endpoint.
    pub fn client_config(&self, path: &str) -> Value {
        match self {
            WebhookEndpoint::Service { namespace, name } => {
                json!({"service": {"namespace": namespace, "name": name, "port": 443, "path": path}})
            }
            WebhookEndpoint::Url(base) => {
                json!({"url": format!("{}{path}", base.trim_end_matches('/'))})
            }
        }
    }
}

/// `configuration` (from [`mutating_configuration`] or [`validating_configuration`]) with every
/// webhook reached at `endpoint(group)` (the same paths, the same `caBundle`), `group` being
/// the API group the webhook's rule names.
pub fn routed(mut configuration: Value, endpoint: impl Fn(&str) -> WebhookEndpoint) -> Value {
    if let Some(hooks) = configuration["webhooks"].as_array_mut() {
        for hook in hooks {
            let target = endpoint(
                hook.pointer("/rules/0/apiGroups/0")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            );
            let config = &mut hook["clientConfig"];
            let url = config["url"].as_str().unwrap_or_default().to_owned();
            // The path after `https://host[:port]`.
            let path = url
                .split_once("://")
                .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
                .unwrap_or_else(|| "/".to_owned());
            let mut replaced = target.client_config(&path);
            if let (Some(object), Some(ca)) = (replaced.as_object_mut(), config.get("caBundle")) {
                object.insert("caBundle".into(), ca.clone());
            }
            *config = replaced;
        }
    }
    configuration
}

/// `configuration` with every webhook reached through Service `namespace/<service(group)>`
/// ([`routed`] to [`WebhookEndpoint::Service`]).
pub fn through_service(
    configuration: Value,
    namespace: &str,
    service: impl Fn(&str) -> String,
) -> Value {
    routed(configuration, |group| WebhookEndpoint::Service {
        namespace: namespace.to_owned(),
        name: service(group),
    })
}

/// A CRD's `spec.conversion` that sends reviews to the webhook at `client_config`.
fn webhook_conversion(client_config: Value) -> Value {
    json!({
        "strategy": "Webhook",
        "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1", "v1beta1"]},
    })
}

/// Sets `spec.conversion` of the addon CRDs among `crds` to the conversion webhook at
/// `base_url`; other CRDs are left alone.
pub fn with_conversion_webhook(
    crds: &mut [CustomResourceDefinition],
    base_url: &str,
    ca_bundle: &str,
) {
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if !CONVERTED_CRDS.contains(&name.as_str()) {
            continue;
        }
        let conversion = webhook_conversion(json!({
            "url": format!("{}{CONVERT_PATH}", base_url.trim_end_matches('/')),
            "caBundle": base64(ca_bundle),
        }));
        if let Ok(conversion) = serde_json::from_value(conversion) {
            crd.spec.conversion = Some(conversion);
        }
    }
}

/// For each addon CRD, the part of it that sets `spec.conversion` (for a server-side apply
/// of its own): with `Some((endpoint, ca_bundle))`, the conversion webhook at `endpoint`
/// (the conversion path) trusting `ca_bundle`; with `None`, strategy `None` (what a hub whose
/// webhook server is gone must go back to, or every read in another version fails).
pub fn conversion_objects(target: Option<(&WebhookEndpoint, &str)>) -> Vec<Value> {
    let conversion = match target {
        Some((endpoint, ca)) => {
            let mut config = endpoint.client_config(CONVERT_PATH);
            config["caBundle"] = json!(base64(ca));
            webhook_conversion(config)
        }
        None => json!({"strategy": "None"}),
    };
    CONVERTED_CRDS
        .iter()
        .map(|crd| {
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": crd},
                "spec": {"conversion": conversion},
            })
        })
        .collect()
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
        plural,
    )
}

/// Applies both webhook configurations (server-side apply, field manager `manager`).
pub async fn apply_configurations(
    client: &kube::Client,
    base_url: &str,
    ca_bundle: &str,
    manager: &str,
) -> Result<(), InstallError> {
    let params = PatchParams::apply(manager).force();
    for (object, kind, plural) in [
        (
            mutating_configuration(base_url, ca_bundle),
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        ),
        (
            validating_configuration(base_url, ca_bundle),
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
    ] {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource(kind, plural));
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        api.patch(&name, &params, &Patch::Apply(&object))
            .await
            .map_err(|source| InstallError::Api {
                what: format!("applying {kind} {name}"),
                source,
            })?;
    }
    Ok(())
}

/// One probe through the API server: a dry-run ManagedCluster create must come back with its
/// taint's `timeAdded` stamped (the mutating webhook ran), and a dry-run binding whose name
/// differs from its set must be refused by the validating webhook.
pub async fn probe(client: &kube::Client) -> Result<(), String> {
    let clusters = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.open-cluster-management.io", "v1", "ManagedCluster"),
        "managedclusters",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &clusters);
    let probe: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "ocm-webhook-probe"},
        "spec": {"hubAcceptsClient": false,
                 "taints": [{"key": "ocm.io/webhook-probe", "effect": "NoSelect"}]},
    }))
    .map_err(|e| e.to_string())?;
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let created = api
        .create(&dry_run, &probe)
        .await
        .map_err(|e| format!("dry-run ManagedCluster: {e}"))?;
    let stamped = created
        .data
        .pointer("/spec/taints/0/timeAdded")
        .is_some_and(|t| !t.is_null());
    if !stamped {
        return Err("the mutating webhook did not stamp the probe's taint".into());
    }
    let bindings = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "cluster.open-cluster-management.io",
            "v1beta2",
            "ManagedClusterSetBinding",
        ),
        "managedclustersetbindings",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &bindings);
    let binding: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "ocm-webhook-probe", "namespace": "default"},
        "spec": {"clusterSet": "ocm-webhook-probe-other"},
    }))
    .map_err(|e| e.to_string())?;
    match api.create(&dry_run, &binding).await {
        Err(kube::Error::Api(status)) if status.code == 400 => Ok(()),
        Err(err) => Err(format!("dry-run ManagedClusterSetBinding: {err}")),
        Ok(_) => Err("the validating webhook let a mismatched binding through".into()),
    }
}

/// Probes until the API server reaches both webhooks, or `timeout` passes.
pub async fn wait_until_answering(
    client: &kube::Client,
    timeout: Duration,
) -> Result<(), InstallError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut delay = Duration::from_millis(50);
    loop {
        let last = match probe(client).await {
            Ok(()) => return Ok(()),
            Err(err) => err,
        };
        if tokio::time::Instant::now() + delay > deadline {
            return Err(InstallError::NotAnswering(timeout, last));
        }
        tracing::debug!(reason = last, "webhooks not answering yet");
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod service_tests {
    use super::*;

    #[test]
    fn webhooks_can_name_a_service_with_the_same_paths() {
        let config = through_service(
            validating_configuration("https://127.0.0.1:9443", "CA"),
            "ns",
            |group| format!("svc-{}", group.split('.').next().unwrap_or_default()),
        );
        let hooks = config["webhooks"].as_array().unwrap();
        for hook in hooks {
            let group = hook["rules"][0]["apiGroups"][0].as_str().unwrap();
            let client = &hook["clientConfig"];
            assert!(client.get("url").is_none());
            assert_eq!(
                client["service"]["name"],
                format!("svc-{}", group.split('.').next().unwrap())
            );
            assert_eq!(client["service"]["port"], 443);
            assert_eq!(client["service"]["path"], VALIDATE_PATH);
            assert!(client["caBundle"].is_string());
        }
        // Each group's webhooks go to that group's service.
        assert!(
            hooks
                .iter()
                .any(|h| h["clientConfig"]["service"]["name"] == "svc-cluster")
        );
        assert!(
            hooks
                .iter()
                .any(|h| h["clientConfig"]["service"]["name"] == "svc-work")
        );
    }
}

#[cfg(test)]
mod url_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn webhooks_and_conversion_can_be_reached_at_a_url_per_group() {
        let config = routed(mutating_configuration("https://h:1", "CA"), |group| {
            if group == "work.open-cluster-management.io" {
                WebhookEndpoint::Url("https://10.0.0.2:8443/".into())
            } else {
                WebhookEndpoint::Url("https://hub-webhooks.example.com:443".into())
            }
        });
        for hook in config["webhooks"].as_array().unwrap() {
            let client = &hook["clientConfig"];
            assert!(client.get("service").is_none());
            assert_eq!(client["caBundle"], "Q0E=");
            let expected = if hook["rules"][0]["apiGroups"][0] == "work.open-cluster-management.io"
            {
                format!("https://10.0.0.2:8443{MUTATE_PATH}")
            } else {
                format!("https://hub-webhooks.example.com:443{MUTATE_PATH}")
            };
            assert_eq!(client["url"], expected);
        }
        let endpoint = WebhookEndpoint::Url("https://10.0.0.1:9443".into());
        let objects = conversion_objects(Some((&endpoint, "CA")));
        assert_eq!(objects.len(), CONVERTED_CRDS.len());
        let webhook = &objects[0]["spec"]["conversion"]["webhook"];
        assert_eq!(
            webhook["clientConfig"]["url"],
            format!("https://10.0.0.1:9443{CONVERT_PATH}")
        );
        assert_eq!(webhook["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(
            conversion_objects(None)[1]["spec"]["conversion"]["strategy"],
            "None"
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn configurations_cover_every_webhook_once() {
        let mutating = mutating_configuration("https://h:9443/", "CA");
        let validating = validating_configuration("https://h:9443", "CA");
        let total = mutating["webhooks"].as_array().unwrap().len()
            + validating["webhooks"].as_array().unwrap().len();
        assert_eq!(total, WEBHOOKS.len());
        assert_eq!(
            mutating["webhooks"][0]["clientConfig"]["url"],
            "https://h:9443/mutate"
        );
        assert_eq!(
            validating["webhooks"][0]["clientConfig"]["url"],
            "https://h:9443/validate"
        );
        assert_eq!(validating["webhooks"][0]["failurePolicy"], "Fail");
        assert_eq!(
            validating["webhooks"][0]["clientConfig"]["caBundle"],
            "Q0E="
        );
    }

    #[test]
    fn the_addon_webhook_sees_status_writes_and_deletes() {
        let validating = validating_configuration("https://h:9443", "CA");
        let hook = validating["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["rules"][0]["resources"][0] == "managedclusteraddons")
            .unwrap();
        assert_eq!(
            hook["rules"][0]["resources"],
            json!(["managedclusteraddons", "managedclusteraddons/status"])
        );
        assert_eq!(
            hook["rules"][0]["operations"],
            json!(["CREATE", "UPDATE", "DELETE"])
        );
    }

    #[test]
    fn only_the_addon_crds_get_a_conversion_webhook() {
        let mut crds = ocm_api::crds::hub();
        with_conversion_webhook(&mut crds, "https://h:9443", "CA");
        let converted: Vec<String> = crds
            .iter()
            .filter(|c| {
                c.spec
                    .conversion
                    .as_ref()
                    .is_some_and(|c| c.strategy == "Webhook")
            })
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(converted, CONVERTED_CRDS.map(str::to_owned).to_vec());
    }
}

//! The addon's hub side: what the framework installs on each cluster where cluster-proxy is
//! enabled — the agent's ServiceAccount, its permission to impersonate (and nothing else), the
//! proxy server's CA and the agent Deployment — and how the agent registers (a hub client
//! certificate with upstream's default subject, which is what the proxy server admits tunnels
//! for; no hub permissions).

use std::sync::Arc;

use ocm_addon_framework::agent::Registration;
use ocm_addon_framework::registration::{default_approve, default_kube_client};
use ocm_addon_framework::{AddonConfigs, AddonError, AddonOptions, AgentAddon, HealthProber};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::{Value, json};

use crate::ADDON_NAME;
use crate::pki::Endpoint;

/// Where the agent's hub credentials are mounted in its pod.
pub const HUB_KUBECONFIG_DIR: &str = "/var/run/hub";
/// Where the proxy server's CA is mounted in the agent's pod.
pub const PROXY_CA_DIR: &str = "/var/run/cluster-proxy-ca";
/// The ClusterRole that lets the agent impersonate users and groups.
pub const IMPERSONATOR_ROLE: &str = "open-cluster-management:cluster-proxy:impersonator";

/// The cluster-proxy addon.
#[derive(Debug)]
pub struct ClusterProxy {
    options: AddonOptions,
    image: String,
    endpoint: Endpoint,
}

fn name_of(cluster: &ManagedCluster) -> String {
    cluster.metadata.name.clone().unwrap_or_default()
}

impl ClusterProxy {
    /// The addon, deploying agents from `image` (the `ocm` image; they run `ocm proxy agent`)
    /// that open their tunnels to the server at `endpoint`.
    pub fn new(image: impl Into<String>, endpoint: Endpoint) -> ClusterProxy {
        let registration = Registration {
            configurations: Arc::new(|cluster, _| {
                Ok(vec![default_kube_client(&name_of(cluster), ADDON_NAME)])
            }),
            approve: Arc::new(|cluster, _, csr| {
                default_approve(&name_of(cluster), ADDON_NAME, csr)
            }),
            permissions: None,
            sign: None,
        };
        ClusterProxy {
            options: AddonOptions {
                registration: Some(registration),
                health: HealthProber::Lease,
                ..AddonOptions::new(ADDON_NAME)
            },
            image: image.into(),
            endpoint,
        }
    }
}

/// The objects on cluster `cluster` for an agent in `namespace`.
pub fn agent_manifests(
    cluster: &str,
    namespace: &str,
    image: &str,
    endpoint: &Endpoint,
    configs: &AddonConfigs,
) -> Vec<Value> {
    let pod = configs.pod_settings("cluster-proxy-agent", "agent");
    let binding = format!("{IMPERSONATOR_ROLE}:{namespace}");
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "cluster-proxy-agent", "namespace": namespace}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": IMPERSONATOR_ROLE},
               "rules": [{"apiGroups": [""], "resources": ["users", "groups"],
                          "verbs": ["impersonate"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": binding},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": IMPERSONATOR_ROLE},
               "subjects": [{"kind": "ServiceAccount", "name": "cluster-proxy-agent",
                             "namespace": namespace}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "cluster-proxy-agent", "namespace": namespace},
               "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                          "verbs": ["get", "create", "update", "patch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "cluster-proxy-agent", "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "cluster-proxy-agent"},
               "subjects": [{"kind": "ServiceAccount", "name": "cluster-proxy-agent",
                             "namespace": namespace}]}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cluster-proxy-server-ca", "namespace": namespace},
               "data": {"ca.crt": endpoint.ca_pem}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cluster-proxy-agent", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "cluster-proxy-agent"}},
            "template": {
                "metadata": {"labels": {"app": "cluster-proxy-agent"}},
                "spec": {
                    "serviceAccountName": "cluster-proxy-agent",
                    "nodeSelector": pod.node_selector,
                    "tolerations": pod.tolerations,
                    "containers": [{
                        "name": "agent",
                        "image": configs.image(image),
                        "resources": pod.resources,
                        "args": ["proxy", "agent", "--cluster-name", cluster,
                                 "--namespace", namespace,
                                 "--proxy-server", endpoint.url,
                                 "--proxy-ca-file", format!("{PROXY_CA_DIR}/ca.crt"),
                                 "--hub-kubeconfig-dir", HUB_KUBECONFIG_DIR],
                        "volumeMounts": [
                            {"name": "hub-kubeconfig", "mountPath": HUB_KUBECONFIG_DIR,
                             "readOnly": true},
                            {"name": "proxy-ca", "mountPath": PROXY_CA_DIR, "readOnly": true}],
                    }],
                    "volumes": [
                        {"name": "hub-kubeconfig",
                         "secret": {"secretName": format!("{ADDON_NAME}-hub-kubeconfig")}},
                        {"name": "proxy-ca",
                         "configMap": {"name": "cluster-proxy-server-ca"}}],
                },
            },
        }}),
    ]
}

#[async_trait::async_trait]
impl AgentAddon for ClusterProxy {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        let namespace = ocm_addon_framework::agent::decided_namespace(addon)?;
        Ok(agent_manifests(
            &name_of(cluster),
            &namespace,
            &self.image,
            &self.endpoint,
            configs,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_may_only_impersonate_and_renew_its_lease() {
        let endpoint = Endpoint {
            url: "https://proxy:8443".into(),
            ca_pem: "CA".into(),
        };
        let objects = agent_manifests("c1", "ns", "ocm:v1", &endpoint, &AddonConfigs::default());
        let role = objects
            .iter()
            .find(|o| o["kind"] == "ClusterRole")
            .cloned()
            .unwrap_or_default();
        assert_eq!(role["rules"][0]["verbs"], json!(["impersonate"]));
        let deployment = objects
            .iter()
            .find(|o| o["kind"] == "Deployment")
            .cloned()
            .unwrap_or_default();
        let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].clone();
        assert_eq!(args[0], "proxy");
        assert!(
            args.as_array()
                .is_some_and(|a| a.contains(&json!("https://proxy:8443")))
        );
        let ca = objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap")
            .cloned()
            .unwrap_or_default();
        assert_eq!(ca["data"]["ca.crt"], "CA");
    }
}

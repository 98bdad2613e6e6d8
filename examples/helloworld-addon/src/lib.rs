//! `helloworld`: the smallest complete addon, doing what upstream's helloworld addon does.
//!
//! Its agent, on every managed cluster where the addon is enabled, copies the ConfigMaps of
//! that cluster's namespace on the hub into the addon's install namespace on the cluster.
//! It shows each part of the framework an addon usually needs:
//! - [`HelloWorld`] implements [`AgentAddon`]: the agent's Deployment, ServiceAccount and RBAC
//!   on the cluster, with an AddOnDeploymentConfig variable (`LOG_LEVEL`) passed to it;
//! - registration: a hub client certificate with upstream's default subject, approved by the
//!   default check, and read access to ConfigMaps in the cluster's namespace on the hub;
//! - Lease health: the agent renews Lease `helloworld` in its namespace;
//! - [`agent::run`]: the agent itself, from its mounted hub credentials.

pub mod agent;

use std::sync::Arc;

use ocm_addon_framework::agent::Registration;
use ocm_addon_framework::registration::{
    agent_role_in_cluster_namespace, default_approve, default_kube_client,
};
use ocm_addon_framework::{AddonConfigs, AddonError, AddonOptions, AgentAddon, HealthProber};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::{Value, json};

/// The addon's name (and its ClusterManagementAddOn's).
pub const ADDON_NAME: &str = "helloworld";

/// Where the agent's hub credentials are mounted in its pod.
pub const HUB_KUBECONFIG_DIR: &str = "/var/run/hub";

/// The helloworld addon.
#[derive(Debug)]
pub struct HelloWorld {
    options: AddonOptions,
    image: String,
}

impl HelloWorld {
    /// The addon, deploying its agent from `image`.
    pub fn new(image: impl Into<String>) -> HelloWorld {
        let registration = Registration {
            configurations: Arc::new(|cluster, _| {
                Ok(vec![default_kube_client(&name_of(cluster), ADDON_NAME)])
            }),
            approve: Arc::new(|cluster, _, csr| {
                default_approve(&name_of(cluster), ADDON_NAME, csr)
            }),
            permissions: Some(Arc::new(|cluster, _| {
                Ok(agent_role_in_cluster_namespace(
                    &name_of(cluster),
                    ADDON_NAME,
                    json!([{"apiGroups": [""], "resources": ["configmaps"],
                            "verbs": ["get", "list", "watch"]}]),
                ))
            })),
            sign: None,
        };
        HelloWorld {
            options: AddonOptions {
                registration: Some(registration),
                health: HealthProber::Lease,
                ..AddonOptions::new(ADDON_NAME)
            },
            image: image.into(),
        }
    }
}

fn name_of(cluster: &ManagedCluster) -> String {
    cluster.metadata.name.clone().unwrap_or_default()
}

#[async_trait::async_trait]
impl AgentAddon for HelloWorld {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        let cluster = name_of(cluster);
        let namespace = ocm_addon_framework::agent::decided_namespace(addon)?;
        let log_level = configs.variable("LOG_LEVEL").unwrap_or("info");
        // Where the AddOnDeploymentConfig says: image mirrors, nodes, resources.
        let image = configs.image(&self.image);
        let pod = configs.pod_settings("helloworld-agent", "agent");
        Ok(vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "helloworld-agent-sa", "namespace": namespace}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "helloworld-agent", "namespace": namespace},
                   "rules": [
                       {"apiGroups": [""], "resources": ["configmaps"],
                        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                       {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                        "verbs": ["get", "create", "update", "patch"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "helloworld-agent", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                               "name": "helloworld-agent"},
                   "subjects": [{"kind": "ServiceAccount", "name": "helloworld-agent-sa",
                                 "namespace": namespace}]}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "helloworld-agent", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "helloworld-agent"}},
                "template": {
                    "metadata": {"labels": {"app": "helloworld-agent"}},
                    "spec": {
                        "serviceAccountName": "helloworld-agent-sa",
                        "nodeSelector": pod.node_selector,
                        "tolerations": pod.tolerations,
                        "containers": [{
                            "name": "agent",
                            "image": image,
                            "resources": pod.resources,
                            "args": ["agent", "--cluster-name", cluster,
                                     "--namespace", namespace,
                                     "--hub-kubeconfig-dir", HUB_KUBECONFIG_DIR],
                            "env": [{"name": "RUST_LOG", "value": log_level}],
                            "volumeMounts": [{"name": "hub-kubeconfig",
                                              "mountPath": HUB_KUBECONFIG_DIR,
                                              "readOnly": true}],
                        }],
                        "volumes": [{"name": "hub-kubeconfig",
                                     "secret": {"secretName": "helloworld-hub-kubeconfig"}}],
                    },
                },
            }}),
        ])
    }
}

//! The addons of `ocm bench addons`: each installs a namespace, a ConfigMap and a Deployment
//! on every cluster and is judged by the Deployment's availability.

use ocm_addon_framework::{AddonConfigs, AddonError, AddonOptions, AgentAddon, HealthProber};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::{Value, json};

/// The bench addons' names: `bench-addon-1` … `bench-addon-<count>`.
pub(crate) fn addon_names(count: usize) -> Vec<String> {
    (1..=count).map(|i| format!("bench-addon-{i}")).collect()
}

/// A benchmark addon: a namespace, a ConfigMap and a Deployment.
pub(crate) struct BenchAddon {
    options: AddonOptions,
}

impl BenchAddon {
    /// Addon `name`, judged by Deployment availability, installed in `<name>-agent`.
    pub(crate) fn new(name: String) -> BenchAddon {
        BenchAddon {
            options: AddonOptions {
                health: HealthProber::DeploymentAvailability,
                install_namespace: Some(format!("{name}-agent")),
                ..AddonOptions::new(name)
            },
        }
    }
}

#[async_trait::async_trait]
impl AgentAddon for BenchAddon {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        _configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        let ns = format!("{}-agent", self.options.name);
        let cluster = cluster.metadata.name.clone().unwrap_or_default();
        Ok(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "settings", "namespace": ns}, "data": {"cluster": cluster}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "agent", "namespace": ns},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "agent"}},
                            "template": {"metadata": {"labels": {"app": "agent"}},
                                         "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}}}}),
        ])
    }
}

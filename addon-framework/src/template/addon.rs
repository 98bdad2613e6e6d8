//! [`TemplateAddon`]: an addon whose agent is an AddOnTemplate, as an [`AgentAddon`] the
//! framework's [`crate::manager::AddonManager`] runs like any other.
//!
//! The template of an addon on a cluster is the one its `status.configReferences` name, at the
//! spec hash named there: while a rollout has not reached a cluster, that cluster keeps the
//! template as it was. [`TemplateHistory`] remembers every version this process saw, by hash.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::Api;
use ocm_api::addon::names::DEFAULT_INSTALL_NAMESPACE;
use ocm_api::addon::v1alpha1::AddOnTemplateSpec;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::names::annotations::IMAGE_REGISTRIES;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::conditions::condition;
use serde_json::Value;

use super::registration;
use super::render::{RenderInput, RenderedTemplate, agent_namespace, render};
use super::signer::{SigningCa, SigningCas};
use crate::agent::{
    AddonConfigs, AddonError, AddonOptions, AgentAddon, HealthProber, PermissionError,
    Registration, Rendered,
};

pub use crate::configs::TEMPLATE_RESOURCE;

/// How many template versions [`TemplateHistory`] keeps.
const HISTORY: usize = 256;

/// Every AddOnTemplate version seen, by spec hash (the last [`HISTORY`] of them).
#[derive(Debug, Default)]
pub struct TemplateHistory {
    inner: Mutex<History>,
}

#[derive(Debug, Default)]
struct History {
    by_hash: HashMap<String, Arc<AddOnTemplateSpec>>,
    order: VecDeque<String>,
}

impl TemplateHistory {
    /// Remembers the AddOnTemplate `object` (as JSON); `Err` when its spec is not a template.
    pub fn record(&self, object: &Value) -> Result<String, serde_json::Error> {
        let spec: AddOnTemplateSpec =
            serde_json::from_value(object.get("spec").cloned().unwrap_or(Value::Null))?;
        let hash = crate::configs::spec_hash(object);
        let mut history = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if history
            .by_hash
            .insert(hash.clone(), Arc::new(spec))
            .is_none()
        {
            history.order.push_back(hash.clone());
            while history.order.len() > HISTORY {
                if let Some(old) = history.order.pop_front() {
                    history.by_hash.remove(&old);
                }
            }
        }
        Ok(hash)
    }

    /// The template version with spec hash `hash`, if seen.
    pub fn get(&self, hash: &str) -> Option<Arc<AddOnTemplateSpec>> {
        let history = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        history.by_hash.get(hash).cloned()
    }
}

/// The AddOnTemplate `addon`'s status names: (name, spec hash).
fn template_reference(addon: &ManagedClusterAddOn) -> Option<(String, String)> {
    addon
        .status
        .as_ref()?
        .config_references
        .iter()
        .find(|r| {
            r.group.as_deref() == Some(ocm_api::addon::GROUP) && r.resource == TEMPLATE_RESOURCE
        })
        .and_then(|r| r.desired_config.as_ref())
        .map(|d| (d.name.clone(), d.spec_hash.clone().unwrap_or_default()))
}

/// An addon defined by AddOnTemplates.
pub struct TemplateAddon {
    options: AddonOptions,
    client: kube::Client,
    history: Arc<TemplateHistory>,
    cas: SigningCas,
    manager_namespace: String,
}

/// What a template addon's closures share.
#[derive(Clone)]
struct Lookup {
    addon: String,
    history: Arc<TemplateHistory>,
}

impl Lookup {
    /// The template `mca` runs on its cluster, or why there is none.
    fn template(&self, mca: &ManagedClusterAddOn) -> Result<Arc<AddOnTemplateSpec>, AddonError> {
        let Some((name, hash)) = template_reference(mca) else {
            return Err(AddonError::new(format!(
                "no AddOnTemplate is configured for addon {} on this cluster (the \
                 ClusterManagementAddOn's defaultConfigs or the addon's configs name one)",
                self.addon
            )));
        };
        if hash.is_empty() {
            return Err(AddonError::new(format!(
                "AddOnTemplate {name} does not exist"
            )));
        }
        let template = self.history.get(&hash).ok_or_else(|| {
            AddonError::new(format!(
                "AddOnTemplate {name} at spec hash {hash} is not known to this addon manager \
                 (it changed before the rollout reached this cluster)"
            ))
        })?;
        if template.addon_name != self.addon {
            return Err(AddonError::new(format!(
                "AddOnTemplate {name} is for addon {}, not {}",
                template.addon_name, self.addon
            )));
        }
        Ok(template)
    }
}

impl TemplateAddon {
    /// The template addon `name`: templates from `history`, signing CAs without a namespace
    /// read from `manager_namespace` on the hub through `client`.
    pub fn new(
        name: &str,
        client: kube::Client,
        history: Arc<TemplateHistory>,
        manager_namespace: &str,
    ) -> TemplateAddon {
        let lookup = Lookup {
            addon: name.to_owned(),
            history: history.clone(),
        };
        let cas = SigningCas::default();
        let registration = registration_for(&lookup, &cas, manager_namespace);
        let options = AddonOptions {
            registration: Some(registration),
            health: HealthProber::WorkloadAvailability,
            hosted_mode: true,
            supported_configs: vec![
                (ocm_api::addon::GROUP.into(), TEMPLATE_RESOURCE.into()),
                (
                    ocm_api::addon::GROUP.into(),
                    "addondeploymentconfigs".into(),
                ),
            ],
            redeploy_on_cluster_change: Some(Arc::new(|old, new| {
                let registries = |c: &ManagedCluster| {
                    c.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(IMAGE_REGISTRIES))
                        .cloned()
                };
                registries(old) != registries(new)
            })),
            ..AddonOptions::new(name)
        };
        TemplateAddon {
            options,
            client,
            history,
            cas,
            manager_namespace: manager_namespace.to_owned(),
        }
    }

    fn lookup(&self) -> Lookup {
        Lookup {
            addon: self.options.name.clone(),
            history: self.history.clone(),
        }
    }

    /// Reads the signing CAs of `template`'s custom signers into the cache the signer uses;
    /// `Err` names a secret that is missing or unusable.
    async fn refresh_signing_cas(&self, template: &AddOnTemplateSpec) -> Result<(), AddonError> {
        for registration in &template.registration {
            let Some(signer) = &registration.custom_signer else {
                continue;
            };
            let namespace =
                signing_ca_namespace(&signer.signing_ca.namespace, &self.manager_namespace);
            let name = &signer.signing_ca.name;
            let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
            let described = format!(
                "the signing CA secret {namespace}/{name} of custom signer {}",
                signer.signer_name
            );
            let secret = secrets
                .get_opt(name)
                .await
                .map_err(|e| AddonError::new(format!("{described} cannot be read: {e}")))?;
            let Some(secret) = secret else {
                self.cas.remove(namespace, name);
                return Err(AddonError::new(format!("{described} does not exist")));
            };
            match SigningCa::from_secret_data(&secret.data.unwrap_or_default()) {
                Ok(ca) => self.cas.insert(namespace, name, ca),
                Err(why) => {
                    self.cas.remove(namespace, name);
                    return Err(AddonError::new(format!(
                        "{described} cannot be used: {why}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The template of `addon` rendered for `cluster`.
    async fn render_template(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<RenderedTemplate, AddonError> {
        let template = self.lookup().template(addon)?;
        self.refresh_signing_cas(&template).await?;
        let install_namespace = TemplateAddon::install_namespace(&template, configs);
        let cluster_registries = cluster
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(IMAGE_REGISTRIES))
            .map(String::as_str);
        render(&RenderInput {
            addon: &self.options.name,
            cluster: cluster.metadata.name.as_deref().unwrap_or_default(),
            cluster_registries,
            template: &template,
            configs,
            install_namespace: &install_namespace,
        })
    }

    /// The install namespace of the agent on a cluster, with its template and configs.
    fn install_namespace(template: &AddOnTemplateSpec, configs: &AddonConfigs) -> String {
        configs
            .install_namespace()
            .map(str::to_owned)
            .or_else(|| agent_namespace(template))
            .unwrap_or_else(|| DEFAULT_INSTALL_NAMESPACE.to_owned())
    }
}

/// The [`super::VARIABLES_DEFINED`] condition of a rendering.
fn variables_condition(rendered: &RenderedTemplate) -> Condition {
    match rendered.undefined_message() {
        None => condition(
            super::VARIABLES_DEFINED,
            "True",
            super::ALL_VARIABLES_DEFINED,
            "every variable the AddOnTemplate uses is defined",
            None,
        ),
        Some(message) => condition(
            super::VARIABLES_DEFINED,
            "False",
            super::UNDEFINED_VARIABLES,
            &message,
            None,
        ),
    }
}

/// A signing CA secret's namespace: its own, else the addon manager's.
fn signing_ca_namespace<'a>(namespace: &'a str, manager_namespace: &'a str) -> &'a str {
    if namespace.is_empty() {
        manager_namespace
    } else {
        namespace
    }
}

/// The registration closures of a template addon.
fn registration_for(lookup: &Lookup, cas: &SigningCas, manager_namespace: &str) -> Registration {
    let configurations = {
        let lookup = lookup.clone();
        Arc::new(move |cluster: &ManagedCluster, mca: &ManagedClusterAddOn| {
            let template = lookup.template(mca)?;
            let cluster = cluster.metadata.name.as_deref().unwrap_or_default();
            Ok(registration::configurations(
                &template,
                cluster,
                &lookup.addon,
            ))
        })
    };
    let approve = {
        let lookup = lookup.clone();
        Arc::new(
            move |cluster: &ManagedCluster,
                  mca: &ManagedClusterAddOn,
                  csr: &crate::agent::CsrInfo| {
                let cluster = cluster.metadata.name.as_deref().unwrap_or_default();
                lookup
                    .template(mca)
                    .is_ok_and(|t| registration::approve(&t, cluster, &lookup.addon, csr))
            },
        )
    };
    let permissions = {
        let lookup = lookup.clone();
        Arc::new(move |cluster: &ManagedCluster, mca: &ManagedClusterAddOn| {
            let template = lookup
                .template(mca)
                .map_err(|e| PermissionError::Pending(e.0))?;
            let cluster = cluster.metadata.name.as_deref().unwrap_or_default();
            let uid = mca.metadata.uid.as_deref().unwrap_or_default();
            let token_user = crate::token_infra::uses_token(mca)
                .then(|| {
                    mca.status
                        .as_ref()?
                        .registrations
                        .iter()
                        .find_map(|r| r.kube_client.as_ref()?.subject.as_ref()?.user.clone())
                })
                .flatten();
            registration::permissions(
                &template,
                cluster,
                &lookup.addon,
                uid,
                token_user.as_deref(),
            )
        })
    };
    let sign = {
        let lookup = lookup.clone();
        let cas = cas.clone();
        let manager_namespace = manager_namespace.to_owned();
        Arc::new(
            move |_: &ManagedCluster, mca: &ManagedClusterAddOn, csr: &crate::agent::CsrInfo| {
                let template = lookup.template(mca)?;
                let signer =
                    registration::custom_signer(&template, &csr.signer_name).ok_or_else(|| {
                        AddonError::new(format!("the template has no signer {}", csr.signer_name))
                    })?;
                let namespace =
                    signing_ca_namespace(&signer.signing_ca.namespace, &manager_namespace);
                let ca = cas.get(namespace, &signer.signing_ca.name).ok_or_else(|| {
                    AddonError::new(format!(
                        "the signing CA secret {namespace}/{} is not read yet",
                        signer.signing_ca.name
                    ))
                })?;
                ca.sign(&csr.request_pem)
            },
        )
    };
    Registration {
        configurations,
        approve,
        permissions: Some(permissions),
        sign: Some(sign),
    }
}

#[async_trait::async_trait]
impl AgentAddon for TemplateAddon {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        Ok(self
            .render_template(cluster, addon, configs)
            .await?
            .manifests)
    }

    async fn render(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Rendered, AddonError> {
        let rendered = self.render_template(cluster, addon, configs).await?;
        Ok(Rendered {
            conditions: vec![variables_condition(&rendered)],
            manifests: rendered.manifests,
        })
    }

    fn default_install_namespace(
        &self,
        addon: &ManagedClusterAddOn,
        _configs: &AddonConfigs,
    ) -> Option<String> {
        let template = self.lookup().template(addon).ok()?;
        agent_namespace(&template)
    }

    fn manifest_configs(&self, addon: &ManagedClusterAddOn, _configs: &AddonConfigs) -> Vec<Value> {
        self.lookup()
            .template(addon)
            .map(|t| {
                t.agent_spec
                    .manifest_configs
                    .iter()
                    .filter_map(|c| serde_json::to_value(c).ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mca_with(reference: Value) -> ManagedClusterAddOn {
        serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello", "namespace": "c1"},
            "spec": {},
            "status": {"configReferences": [reference]}
        }))
        .unwrap()
    }

    #[test]
    fn the_template_is_the_version_the_status_names() {
        let history = Arc::new(TemplateHistory::default());
        let v1 =
            json!({"metadata": {"name": "t"}, "spec": {"addonName": "hello", "agentSpec": {}}});
        let v2 = json!({"metadata": {"name": "t"}, "spec": {"addonName": "hello",
            "agentSpec": {"workload": {"manifests": [{"kind": "ConfigMap"}]}}}});
        let h1 = history.record(&v1).unwrap();
        let h2 = history.record(&v2).unwrap();
        assert_ne!(h1, h2);
        let lookup = Lookup {
            addon: "hello".into(),
            history,
        };
        let reference = |hash: &str| {
            json!({"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                   "desiredConfig": {"name": "t", "specHash": hash}})
        };
        let old = lookup.template(&mca_with(reference(&h1))).unwrap();
        assert!(old.agent_spec.workload.manifests.is_empty());
        let new = lookup.template(&mca_with(reference(&h2))).unwrap();
        assert_eq!(new.agent_spec.workload.manifests.len(), 1);
        let missing = lookup.template(&mca_with(reference(""))).unwrap_err();
        assert_eq!(missing.0, "AddOnTemplate t does not exist");
        let unknown = lookup.template(&mca_with(reference("abc"))).unwrap_err();
        assert!(unknown.0.contains("spec hash abc is not known"));
        let other = Lookup {
            addon: "other".into(),
            history: lookup.history.clone(),
        };
        assert_eq!(
            other.template(&mca_with(reference(&h1))).unwrap_err().0,
            "AddOnTemplate t is for addon hello, not other"
        );
        let none = mca_with(json!({"group": "addon.open-cluster-management.io",
            "resource": "addondeploymentconfigs", "desiredConfig": {"name": "x"}}));
        assert!(
            lookup
                .template(&none)
                .unwrap_err()
                .0
                .contains("no AddOnTemplate")
        );
    }
}

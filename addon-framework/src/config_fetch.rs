//! Reading an addon's config objects from the hub: the addon API's own config kinds directly,
//! any other kind through discovery.

use kube::Api;
use serde_json::Value;

use crate::configs::ConfigRef;

/// The addon API's own config kinds, read without a discovery request on every reconcile:
/// AddOnDeploymentConfig and AddOnTemplate, both served as v1alpha1 only.
fn known_config_resource(group: &str, resource: &str) -> Option<kube::core::ApiResource> {
    let kind = match (group, resource) {
        (ocm_api::addon::GROUP, "addondeploymentconfigs") => "AddOnDeploymentConfig",
        (ocm_api::addon::GROUP, "addontemplates") => "AddOnTemplate",
        _ => return None,
    };
    Some(kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(group, "v1alpha1", kind),
        resource,
    ))
}

/// Reads a config object, finding its API through discovery (AddOnDeploymentConfig
/// directly). Kinds that cannot be configs (see [`crate::configs::may_be_config`]) are not
/// read: anyone who may write an addon's `spec.configs` names what the hub reads.
pub(crate) async fn fetch_config(client: &kube::Client, config: &ConfigRef) -> Option<Value> {
    if !crate::configs::may_be_config(&config.group, &config.resource) {
        tracing::debug!(
            group = config.group,
            resource = config.resource,
            "not reading a config of a kind that cannot be one"
        );
        return None;
    }
    let resource = match known_config_resource(&config.group, &config.resource) {
        Some(resource) => resource,
        None => {
            // Each resource at its most stable version: a kind may be served only in a version
            // the group does not prefer.
            let group = kube::discovery::group(client, &config.group).await.ok()?;
            group
                .resources_by_stability()
                .into_iter()
                .find(|(r, _)| r.plural == config.resource)
                .map(|(r, _)| r)?
        }
    };
    let api: Api<kube::api::DynamicObject> = if config.namespace.is_empty() {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), &config.namespace, &resource)
    };
    let object = api.get_opt(&config.name).await.ok()??;
    serde_json::to_value(object).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_addon_apis_config_kinds_need_no_discovery() {
        let template = known_config_resource(ocm_api::addon::GROUP, "addontemplates").unwrap();
        assert_eq!(
            (template.kind.as_str(), template.version.as_str()),
            ("AddOnTemplate", "v1alpha1")
        );
        let adc = known_config_resource(ocm_api::addon::GROUP, "addondeploymentconfigs").unwrap();
        assert_eq!(adc.kind, "AddOnDeploymentConfig");
        assert!(known_config_resource("example.io", "addontemplates").is_none());
        assert!(known_config_resource(ocm_api::addon::GROUP, "widgets").is_none());
    }
}

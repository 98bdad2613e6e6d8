//! An AddOnTemplate as the hub stores it, for the install controller's cache: its metadata and
//! its spec as plain JSON, so that the spec hash handed out is that of the stored spec (as a
//! read of the object gives it), not of a typed copy that could drop or add fields.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::ClusterResourceScope;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The resource of AddOnTemplates.
pub(crate) const RESOURCE: &str = "addontemplates";

/// An AddOnTemplate: metadata and the spec as stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredTemplate {
    /// The object's metadata.
    pub(crate) metadata: ObjectMeta,
    /// The spec, as stored.
    #[serde(default)]
    pub(crate) spec: Value,
}

impl kube::Resource for StoredTemplate {
    type DynamicType = ();
    type Scope = ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("AddOnTemplate")
    }

    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(ocm_api::addon::GROUP)
    }

    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("v1alpha1")
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(RESOURCE)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn the_spec_hash_is_that_of_the_stored_object() {
        let stored = json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
            "metadata": {"name": "t", "resourceVersion": "7"},
            "spec": {"addonName": "hello", "agentSpec": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                 "data": {"unknownToTypes": "kept"}}]}},
                     "somethingNewer": {"a": 1}}});
        let cached: StoredTemplate = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(
            crate::configs::spec_hash(&serde_json::to_value(&cached).unwrap()),
            crate::configs::spec_hash(&stored)
        );
        assert_eq!(
            <StoredTemplate as kube::Resource>::url_path(&(), None),
            "/apis/addon.open-cluster-management.io/v1alpha1/addontemplates"
        );
    }
}

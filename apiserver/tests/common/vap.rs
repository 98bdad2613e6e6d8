//! ValidatingAdmissionPolicies and their bindings for the tests that need one in force.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// A policy on ConfigMap creates and updates with these spec fields (a `matchConstraints`
/// among them replaces that default).
pub fn policy(name: &str, spec: Value) -> ValidatingAdmissionPolicy {
    let mut full = json!({"matchConstraints": {"resourceRules": [{
        "operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
        "resources": ["configmaps"]}]}});
    for (k, v) in spec.as_object().unwrap() {
        full[k] = v.clone();
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": full})).unwrap()
}

/// A binding with this spec.
pub fn binding(name: &str, spec: Value) -> ValidatingAdmissionPolicyBinding {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

/// Creates the policy and the binding.
pub async fn install(
    client: &kube::Client,
    policy: ValidatingAdmissionPolicy,
    binding: ValidatingAdmissionPolicyBinding,
) {
    Api::<ValidatingAdmissionPolicy>::all(client.clone())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// Installs policy and binding `name`, the binding denying what the policy refuses.
pub async fn install_denying(client: &kube::Client, name: &str, spec: Value) {
    install(
        client,
        policy(name, spec),
        binding(
            name,
            json!({"policyName": name, "validationActions": ["Deny"]}),
        ),
    )
    .await;
}

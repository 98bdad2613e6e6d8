//! An AddOnTemplate's agent manifests for one cluster — pure.
//!
//! Every string (and map key) of every manifest may name variables as `{{NAME}}`: the built-in
//! `CLUSTER_NAME` and `INSTALL_NAMESPACE`, `HUB_KUBECONFIG` (the mounted hub kubeconfig, when
//! the template has registrations) and the AddOnDeploymentConfig's customized variables (which
//! may replace `HUB_KUBECONFIG` but never a built-in). A name that is none of these renders as
//! an empty string, as upstream renders it (templates written for upstream work unchanged); the
//! rendering names every such variable ([`RenderedTemplate::undefined`]) so that the addon's
//! status can say so. An unterminated `{{` is an error.
//!
//! Deployments and DaemonSets are then completed as upstream's template addons are: the
//! preset variables as environment of every container, the registration secrets as volumes,
//! the AddOnDeploymentConfig's node placement, image registries (else the cluster's
//! `open-cluster-management.io/image-registries` annotation), proxy settings (with a CA bundle
//! ConfigMap) and resource requirements. An AddOnDeploymentConfig `agentInstallNamespace`
//! moves every namespaced object, Namespace and ServiceAccount subject there.

use std::collections::{BTreeMap, BTreeSet};

use ocm_api::addon::v1alpha1::{AddOnTemplateSpec, ImageMirror, RegistrationType};
use serde_json::{Value, json};

use crate::agent::{AddonConfigs, AddonError, override_image};

/// Where the hub kubeconfig secret is mounted in the agent's containers.
pub const HUB_KUBECONFIG_MOUNT: &str = "/managed/hub-kubeconfig";
/// `HUB_KUBECONFIG`: the kubeconfig file inside [`HUB_KUBECONFIG_MOUNT`].
pub const HUB_KUBECONFIG_PATH: &str = "/managed/hub-kubeconfig/kubeconfig";
/// Where the proxy CA bundle ConfigMap is mounted.
const PROXY_CA_MOUNT: &str = "/managed/proxy-ca";
/// The CA bundle's key in that ConfigMap.
const PROXY_CA_KEY: &str = "ca-bundle.crt";

/// What one rendering needs.
#[derive(Clone, Copy, Debug)]
pub struct RenderInput<'a> {
    /// The addon's name.
    pub addon: &'a str,
    /// The cluster's name.
    pub cluster: &'a str,
    /// The cluster's `open-cluster-management.io/image-registries` annotation, if any.
    pub cluster_registries: Option<&'a str>,
    /// The template.
    pub template: &'a AddOnTemplateSpec,
    /// The addon's configs on this cluster (its AddOnDeploymentConfig among them).
    pub configs: &'a AddonConfigs,
    /// The install namespace decided for the agent.
    pub install_namespace: &'a str,
}

/// `<addon>-hub-kubeconfig`: the secret the registration agent writes for a kube-client
/// registration.
pub fn hub_kubeconfig_secret(addon: &str) -> String {
    format!("{addon}-hub-kubeconfig")
}

/// `<addon>-<signer, "/" → "-">-client-cert`: the secret of a custom-signer registration.
pub fn custom_signer_secret(addon: &str, signer: &str) -> String {
    format!("{addon}-{}-client-cert", signer.replace('/', "-"))
}

/// The namespace the template's agent runs in: that of its first Deployment, else of its first
/// DaemonSet, else `None`.
pub fn agent_namespace(template: &AddOnTemplateSpec) -> Option<String> {
    let namespace_of = |kind: &str| {
        template
            .agent_spec
            .workload
            .manifests
            .iter()
            .map(|m| &m.0)
            .find(|m| m["kind"] == kind)
            .and_then(|m| m.pointer("/metadata/namespace"))
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .map(str::to_owned)
    };
    namespace_of("Deployment").or_else(|| namespace_of("DaemonSet"))
}

/// The variables of one rendering, and the preset ones (in order) that become environment
/// variables of the agent's containers.
fn variables(input: &RenderInput<'_>) -> (BTreeMap<String, String>, Vec<(String, String)>) {
    let mut vars = BTreeMap::new();
    let mut preset = Vec::new();
    if !input.template.registration.is_empty() {
        vars.insert("HUB_KUBECONFIG".to_owned(), HUB_KUBECONFIG_PATH.to_owned());
        preset.push("HUB_KUBECONFIG");
    }
    for variable in input
        .configs
        .deployment
        .iter()
        .flat_map(|d| &d.customized_variables)
    {
        vars.insert(
            variable.name.clone(),
            variable.value.clone().unwrap_or_default(),
        );
    }
    vars.insert("CLUSTER_NAME".to_owned(), input.cluster.to_owned());
    preset.push("CLUSTER_NAME");
    vars.insert(
        "INSTALL_NAMESPACE".to_owned(),
        input.install_namespace.to_owned(),
    );
    if input.configs.install_namespace().is_some() {
        preset.push("INSTALL_NAMESPACE");
    }
    let preset = preset
        .into_iter()
        .map(|k| (k.to_owned(), vars.get(k).cloned().unwrap_or_default()))
        .collect();
    (vars, preset)
}

/// `text` with every `{{NAME}}` replaced by its variable (an undefined one by nothing, its
/// name added to `undefined`).
fn substitute(
    text: &str,
    vars: &BTreeMap<String, String>,
    undefined: &mut BTreeSet<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(format!("unterminated \"{{{{\" in {text:?}"));
        };
        let name = &after[..end];
        match vars.get(name) {
            Some(value) => out.push_str(value),
            None => {
                undefined.insert(name.to_owned());
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `value` with variables substituted in every string and map key (undefined ones named in
/// `undefined`).
fn substitute_value(
    value: &Value,
    vars: &BTreeMap<String, String>,
    undefined: &mut BTreeSet<String>,
) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => Value::String(substitute(s, vars, undefined)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute_value(v, vars, undefined))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(
                    substitute(k, vars, undefined)?,
                    substitute_value(v, vars, undefined)?,
                );
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// A template rendered for one cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RenderedTemplate {
    /// The agent's manifests.
    pub manifests: Vec<Value>,
    /// Each variable the template uses that nothing defines (rendered as an empty string), with
    /// the manifests using it (`Kind namespace/name`).
    pub undefined: BTreeMap<String, Vec<String>>,
}

impl RenderedTemplate {
    /// What the addon's status says about the variables: `None` when every one is defined,
    /// else a message naming each undefined variable and where it is used.
    pub fn undefined_message(&self) -> Option<String> {
        if self.undefined.is_empty() {
            return None;
        }
        let named: Vec<String> = self
            .undefined
            .iter()
            .map(|(name, used)| format!("{{{{{name}}}}} (in {})", used.join(", ")))
            .collect();
        Some(format!(
            "no config defines the variable(s) {}: rendered as empty strings (an \
             AddOnDeploymentConfig's customizedVariables can define them)",
            named.join(", ")
        ))
    }
}

/// A short name of a manifest for messages: `Kind namespace/name`.
fn describe(manifest: &Value) -> String {
    let text = |p: &str| manifest.pointer(p).and_then(Value::as_str).unwrap_or("");
    match text("/metadata/namespace") {
        "" => format!("{} {}", text("/kind"), text("/metadata/name")),
        ns => format!("{} {ns}/{}", text("/kind"), text("/metadata/name")),
    }
}

/// The registries the agent's images are rewritten with: the AddOnDeploymentConfig's, else the
/// cluster annotation's.
fn registries(input: &RenderInput<'_>) -> Result<Vec<ImageMirror>, AddonError> {
    if let Some(deployment) = &input.configs.deployment
        && !deployment.registries.is_empty()
    {
        return Ok(deployment.registries.clone());
    }
    let Some(annotation) = input.cluster_registries.filter(|a| !a.is_empty()) else {
        return Ok(Vec::new());
    };
    #[derive(serde::Deserialize)]
    struct Annotation {
        #[serde(default)]
        registries: Vec<ImageMirror>,
    }
    serde_json::from_str::<Annotation>(annotation)
        .map(|a| a.registries)
        .map_err(|err| {
            AddonError::new(format!(
                "the cluster's {} annotation is not valid: {err}",
                ocm_api::cluster::names::annotations::IMAGE_REGISTRIES
            ))
        })
}

/// The agent's manifests for this cluster.
pub fn render(input: &RenderInput<'_>) -> Result<RenderedTemplate, AddonError> {
    let (vars, preset) = variables(input);
    let registries = registries(input)?;
    let mut out = Vec::new();
    let mut undefined_by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, manifest) in input
        .template
        .agent_spec
        .workload
        .manifests
        .iter()
        .enumerate()
    {
        let mut undefined = BTreeSet::new();
        let mut object = substitute_value(&manifest.0, &vars, &mut undefined).map_err(|err| {
            AddonError::new(format!(
                "manifest {i} ({}) of the AddOnTemplate: {err}",
                describe(&manifest.0)
            ))
        })?;
        for name in undefined {
            undefined_by_name
                .entry(name)
                .or_default()
                .push(describe(&manifest.0));
        }
        if !object.is_object() {
            return Err(AddonError::new(format!(
                "manifest {i} of the AddOnTemplate is not an object"
            )));
        }
        let resource = match object["kind"].as_str() {
            Some("Deployment") => Some("deployments"),
            Some("DaemonSet") => Some("daemonsets"),
            _ => None,
        };
        if let Some(resource) = resource {
            decorate_workload(input, resource, &preset, &registries, &mut object);
        }
        out.push(object);
    }
    if let Some(bundle) = proxy_ca_bundle(input.configs) {
        out.push(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": proxy_ca_config_map(input.addon),
                         "namespace": input.install_namespace},
            "data": {PROXY_CA_KEY: bundle},
        }));
    }
    if let Some(namespace) = input.configs.install_namespace() {
        for object in &mut out {
            move_to_namespace(object, namespace);
        }
    }
    Ok(RenderedTemplate {
        manifests: out,
        undefined: undefined_by_name,
    })
}

fn proxy_ca_config_map(addon: &str) -> String {
    format!("{addon}-proxy-ca")
}

fn proxy_ca_bundle(configs: &AddonConfigs) -> Option<String> {
    let bundle = configs.proxy()?.ca_bundle.as_ref()?;
    (!bundle.0.is_empty()).then(|| String::from_utf8_lossy(&bundle.0).into_owned())
}

/// Completes a Deployment's or DaemonSet's pod template (`resource` is its plural).
fn decorate_workload(
    input: &RenderInput<'_>,
    resource: &str,
    preset: &[(String, String)],
    registries: &[ImageMirror],
    object: &mut Value,
) {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(pod) = object.pointer_mut("/spec/template/spec") else {
        return;
    };
    let mut env: Vec<Value> = preset
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    let mut mounts = Vec::new();
    let mut volumes = Vec::new();
    for registration in &input.template.registration {
        match registration.type_ {
            RegistrationType::KubeClient => {
                mounts.push(json!({"name": "hub-kubeconfig", "mountPath": HUB_KUBECONFIG_MOUNT}));
                volumes.push(json!({"name": "hub-kubeconfig",
                    "secret": {"secretName": hub_kubeconfig_secret(input.addon)}}));
            }
            RegistrationType::CustomSigner => {
                let Some(signer) = &registration.custom_signer else {
                    continue;
                };
                let signer = &signer.signer_name;
                let volume = format!("cert-{}", signer.replace(['/', '.'], "-"));
                mounts.push(json!({"name": volume,
                    "mountPath": format!("/managed/{}", signer.replace('/', "-"))}));
                volumes.push(json!({"name": volume,
                    "secret": {"secretName": custom_signer_secret(input.addon, signer)}}));
            }
        }
    }
    if let Some(proxy) = input.configs.proxy() {
        for (names, value) in [
            (["HTTP_PROXY", "http_proxy"], &proxy.http_proxy),
            (["HTTPS_PROXY", "https_proxy"], &proxy.https_proxy),
            (["NO_PROXY", "no_proxy"], &proxy.no_proxy),
        ] {
            if !value.is_empty() {
                env.extend(names.map(|n| json!({"name": n, "value": value})));
            }
        }
        if proxy_ca_bundle(input.configs).is_some() {
            env.push(json!({"name": "CA_BUNDLE_FILE_PATH",
                "value": format!("{PROXY_CA_MOUNT}/{PROXY_CA_KEY}")}));
            mounts.push(json!({"name": "proxy-ca-bundle", "mountPath": PROXY_CA_MOUNT}));
            volumes.push(json!({"name": "proxy-ca-bundle",
                "configMap": {"name": proxy_ca_config_map(input.addon)}}));
        }
    }
    if let Some(placement) = input.configs.node_placement() {
        if !placement.node_selector.is_empty() {
            pod["nodeSelector"] = json!(placement.node_selector);
        }
        if !placement.tolerations.is_empty() {
            pod["tolerations"] = json!(placement.tolerations);
        }
    }
    if !volumes.is_empty() {
        append(pod, "volumes", &volumes);
    }
    let Some(containers) = pod.get_mut("containers").and_then(Value::as_array_mut) else {
        return;
    };
    for container in containers {
        append(container, "env", &env);
        append(container, "volumeMounts", &mounts);
        if let Some(image) = container.get("image").and_then(Value::as_str) {
            container["image"] = json!(override_image(registries, image));
        }
        let container_name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(resources) = input
            .configs
            .resources_for(resource, &name, &container_name)
        {
            container["resources"] = json!(resources);
        }
    }
}

/// Appends `items` to the array `object[key]` (created when absent).
fn append(object: &mut Value, key: &str, items: &[Value]) {
    if items.is_empty() {
        return;
    }
    match object.get_mut(key).and_then(Value::as_array_mut) {
        Some(existing) => existing.extend(items.iter().cloned()),
        None => object[key] = Value::Array(items.to_vec()),
    }
}

/// Moves `object` into `namespace`: its own namespace (when it has one), a Namespace's name,
/// and a binding's ServiceAccount subjects.
fn move_to_namespace(object: &mut Value, namespace: &str) {
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta
            .get("namespace")
            .and_then(Value::as_str)
            .is_some_and(|ns| !ns.is_empty())
        {
            meta.insert("namespace".into(), json!(namespace));
        }
        if kind == "Namespace" {
            meta.insert("name".into(), json!(namespace));
        }
    }
    if matches!(kind.as_str(), "RoleBinding" | "ClusterRoleBinding")
        && let Some(subjects) = object.get_mut("subjects").and_then(Value::as_array_mut)
    {
        for subject in subjects {
            if subject["kind"] == "ServiceAccount" {
                subject["namespace"] = json!(namespace);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(spec: Value) -> AddOnTemplateSpec {
        serde_json::from_value(spec).unwrap()
    }

    fn agent_template() -> AddOnTemplateSpec {
        template(json!({
            "addonName": "hello",
            "agentSpec": {"workload": {"manifests": [
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "hello-agent", "namespace": "hello-ns"},
                 "spec": {"template": {"spec": {"containers": [
                    {"name": "agent", "image": "quay.io/ocm/hello:v1",
                     "args": ["--cluster={{CLUSTER_NAME}}", "--kubeconfig={{HUB_KUBECONFIG}}"],
                     "env": [{"name": "LOG", "value": "{{LOG_LEVEL}}"}]}]}}}},
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "hello-{{CLUSTER_NAME}}", "namespace": "hello-ns"},
                 "data": {"cluster": "{{CLUSTER_NAME}}", "ns": "{{INSTALL_NAMESPACE}}"}},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": "hello"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
                 "subjects": [{"kind": "ServiceAccount", "name": "hello", "namespace": "hello-ns"},
                              {"kind": "User", "name": "someone"}]},
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hello-ns"}}
            ]}},
            "registration": [
                {"type": "KubeClient", "kubeClient": {"hubPermissions": []}},
                {"type": "CustomSigner", "customSigner": {"signerName": "example.com/signer",
                    "signingCA": {"name": "ca"}}}
            ]
        }))
    }

    fn configs(spec: Value) -> AddonConfigs {
        AddonConfigs {
            deployment: Some(serde_json::from_value(spec).unwrap()),
            objects: Vec::new(),
        }
    }

    fn input<'a>(t: &'a AddOnTemplateSpec, c: &'a AddonConfigs, ns: &'a str) -> RenderInput<'a> {
        RenderInput {
            addon: "hello",
            cluster: "cluster1",
            cluster_registries: None,
            template: t,
            configs: c,
            install_namespace: ns,
        }
    }

    #[test]
    fn variables_take_cluster_values_and_unknown_ones_are_named() {
        let t = agent_template();
        let c = configs(
            json!({"customizedVariables": [{"name": "LOG_LEVEL", "value": "4"},
            {"name": "CLUSTER_NAME", "value": "not-this"}]}),
        );
        let rendered = render(&input(&t, &c, "hello-ns")).unwrap();
        assert!(rendered.undefined.is_empty());
        assert_eq!(rendered.undefined_message(), None);
        let out = rendered.manifests;
        let container = &out[0]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["args"][0], "--cluster=cluster1");
        assert_eq!(
            container["args"][1],
            format!("--kubeconfig={HUB_KUBECONFIG_PATH}")
        );
        assert_eq!(container["env"][0], json!({"name": "LOG", "value": "4"}));
        assert_eq!(out[1]["metadata"]["name"], "hello-cluster1");
        assert_eq!(out[1]["data"]["ns"], "hello-ns");
        // As upstream: a variable nothing defines renders empty, and is named.
        let rendered = render(&input(&t, &AddonConfigs::default(), "hello-ns")).unwrap();
        let container = &rendered.manifests[0]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["env"][0], json!({"name": "LOG", "value": ""}));
        assert_eq!(container["args"][0], "--cluster=cluster1");
        assert_eq!(
            rendered.undefined,
            BTreeMap::from([(
                "LOG_LEVEL".to_owned(),
                vec!["Deployment hello-ns/hello-agent".to_owned()]
            )])
        );
        assert_eq!(
            rendered.undefined_message().unwrap(),
            "no config defines the variable(s) {{LOG_LEVEL}} (in Deployment hello-ns/hello-agent): \
             rendered as empty strings (an AddOnDeploymentConfig's customizedVariables can define \
             them)"
        );
    }

    #[test]
    fn unterminated_variables_are_errors() {
        let mut vars = BTreeMap::new();
        vars.insert("A".to_owned(), "1".to_owned());
        let mut undefined = BTreeSet::new();
        assert_eq!(
            substitute("x{{A}}y{{A}}", &vars, &mut undefined).unwrap(),
            "x1y1"
        );
        assert!(
            substitute("x{{A", &vars, &mut undefined)
                .unwrap_err()
                .contains("unterminated")
        );
        assert_eq!(
            substitute("plain {A}", &vars, &mut undefined).unwrap(),
            "plain {A}"
        );
        assert!(undefined.is_empty());
        assert_eq!(
            substitute("a{{B}}b{{ A }}c", &vars, &mut undefined).unwrap(),
            "abc"
        );
        assert_eq!(
            undefined,
            BTreeSet::from(["B".to_owned(), " A ".to_owned()])
        );
    }

    #[test]
    fn workloads_get_preset_env_and_registration_volumes() {
        let t = agent_template();
        let c = configs(json!({"customizedVariables": [{"name": "LOG_LEVEL", "value": "4"}]}));
        let out = render(&input(&t, &c, "hello-ns")).unwrap().manifests;
        let pod = &out[0]["spec"]["template"]["spec"];
        let env = &pod["containers"][0]["env"];
        assert_eq!(
            env[1],
            json!({"name": "HUB_KUBECONFIG", "value": HUB_KUBECONFIG_PATH})
        );
        assert_eq!(env[2], json!({"name": "CLUSTER_NAME", "value": "cluster1"}));
        assert_eq!(env.as_array().unwrap().len(), 3);
        assert_eq!(
            pod["volumes"],
            json!([
                {"name": "hub-kubeconfig", "secret": {"secretName": "hello-hub-kubeconfig"}},
                {"name": "cert-example-com-signer",
                 "secret": {"secretName": "hello-example.com-signer-client-cert"}}
            ])
        );
        assert_eq!(
            pod["containers"][0]["volumeMounts"][1]["mountPath"],
            "/managed/example.com-signer"
        );
        // Nothing else is touched.
        assert_eq!(out[2]["subjects"][0]["namespace"], "hello-ns");
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn deployment_config_places_moves_and_proxies_the_agent() {
        let t = agent_template();
        let c = configs(json!({
            "customizedVariables": [{"name": "LOG_LEVEL", "value": "4"}],
            "agentInstallNamespace": "elsewhere",
            "nodePlacement": {"nodeSelector": {"disk": "ssd"},
                              "tolerations": [{"key": "k", "operator": "Exists"}]},
            "registries": [{"source": "quay.io/ocm", "mirror": "mirror.example/ocm"}],
            "proxyConfig": {"httpsProxy": "https://proxy:3128", "noProxy": "10.0.0.0/8",
                            "caBundle": "LS0tLS1CRUdJTg=="},
            "resourceRequirements": [{"containerID": "deployments:hello-agent:agent",
                                      "resources": {"requests": {"cpu": "50m"}}}]
        }));
        let out = render(&input(&t, &c, "elsewhere")).unwrap().manifests;
        let pod = &out[0]["spec"]["template"]["spec"];
        assert_eq!(out[0]["metadata"]["namespace"], "elsewhere");
        assert_eq!(pod["nodeSelector"], json!({"disk": "ssd"}));
        assert_eq!(pod["tolerations"][0]["key"], "k");
        let container = &pod["containers"][0];
        assert_eq!(container["image"], "mirror.example/ocm/hello:v1");
        assert_eq!(container["resources"]["requests"]["cpu"], "50m");
        let env: Vec<&str> = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            env,
            [
                "LOG",
                "HUB_KUBECONFIG",
                "CLUSTER_NAME",
                "INSTALL_NAMESPACE",
                "HTTPS_PROXY",
                "https_proxy",
                "NO_PROXY",
                "no_proxy",
                "CA_BUNDLE_FILE_PATH"
            ]
        );
        assert_eq!(out[1]["data"]["ns"], "elsewhere");
        assert_eq!(out[2]["subjects"][0]["namespace"], "elsewhere");
        assert!(out[2]["subjects"][1].get("namespace").is_none());
        assert_eq!(out[3]["metadata"]["name"], "elsewhere");
        let bundle = &out[4];
        assert_eq!(
            bundle["metadata"],
            json!({"name": "hello-proxy-ca", "namespace": "elsewhere"})
        );
        assert_eq!(bundle["data"]["ca-bundle.crt"], "-----BEGIN");
    }

    #[test]
    fn cluster_annotation_registries_apply_without_a_config_and_are_checked() {
        let t = agent_template();
        let c = configs(json!({"customizedVariables": [{"name": "LOG_LEVEL", "value": "4"}]}));
        let annotation = r#"{"registries":[{"source":"quay.io","mirror":"local.registry"}]}"#;
        let mut i = input(&t, &c, "hello-ns");
        i.cluster_registries = Some(annotation);
        let out = render(&i).unwrap().manifests;
        assert_eq!(
            out[0]["spec"]["template"]["spec"]["containers"][0]["image"],
            "local.registry/ocm/hello:v1"
        );
        i.cluster_registries = Some("{not json");
        assert!(render(&i).unwrap_err().0.contains("image-registries"));
    }

    #[test]
    fn the_agent_namespace_is_the_first_deployments() {
        assert_eq!(
            agent_namespace(&agent_template()).as_deref(),
            Some("hello-ns")
        );
        let only_ds = template(
            json!({"addonName": "a", "agentSpec": {"workload": {"manifests": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "ds-ns"}}]}}}),
        );
        assert_eq!(agent_namespace(&only_ds).as_deref(), Some("ds-ns"));
        let none = template(json!({"addonName": "a", "agentSpec": {}}));
        assert_eq!(agent_namespace(&none), None);
    }
}

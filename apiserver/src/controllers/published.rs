//! The objects every Kubernetes cluster has because its control plane keeps them there, as pure
//! functions of the server's settings: what each looks like, where it lives, and how a drifted
//! copy is put right.
//!
//! - `default` ServiceAccount in every namespace (kube-controller-manager's serviceaccounts
//!   controller): created when missing, never changed.
//! - `kube-root-ca.crt` ConfigMap in every namespace (root-ca-cert-publisher): key `ca.crt` holds
//!   the CA bundle that verifies the server, plus kube's `kubernetes.io/description`
//!   annotation; other data is put back.
//! - `default/kubernetes` Service (kube-apiserver's kubernetes-service controller): ClusterIP
//!   [`KUBERNETES_SERVICE_IP`], port 443 named `https` to the server's port; changed ports or
//!   type are put back.
//! - `kube-system/extension-apiserver-authentication` ConfigMap (kube-apiserver's
//!   cluster-authentication-trust controller): `client-ca-file` holds the client CA. As in kube,
//!   certificates others added to it stay; missing ones are appended.
//!
//! Deliberate differences: the Service gets no Endpoints or EndpointSlice (this server does not
//! serve them), and no `requestheader-*` keys are published (there is no front proxy).

use serde_json::{Map, Value, json};

use crate::pki::cert::{pem, pem_blocks};

/// The ClusterIP of `default/kubernetes`: the first address of kubeadm's default service range
/// (`10.96.0.0/12`), which most clusters show.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";
const DESCRIPTION_KEY: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// What the published objects are made of.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// PEM bundle that verifies the serving certificate (`ca.crt` of `kube-root-ca.crt`).
    pub root_ca: String,
    /// PEM bundle of the client CA (`client-ca-file`), if client certificates are trusted.
    pub client_ca: Option<String>,
    /// The port the server serves on (the target port of `default/kubernetes`).
    pub port: u16,
}

/// One kind of published object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Published {
    /// `default` ServiceAccount, every namespace.
    DefaultServiceAccount,
    /// `kube-root-ca.crt` ConfigMap, every namespace.
    RootCaConfigMap,
    /// `default/kubernetes` Service.
    KubernetesService,
    /// `kube-system/extension-apiserver-authentication` ConfigMap.
    AuthenticationConfigMap,
}

impl Published {
    /// Every published object, in the order they are made.
    pub const ALL: [Published; 4] = [
        Published::DefaultServiceAccount,
        Published::RootCaConfigMap,
        Published::KubernetesService,
        Published::AuthenticationConfigMap,
    ];

    /// The storage resource (`group/plural`) of the object.
    pub fn resource(self) -> &'static str {
        match self {
            Published::DefaultServiceAccount => "/serviceaccounts",
            Published::RootCaConfigMap | Published::AuthenticationConfigMap => "/configmaps",
            Published::KubernetesService => "/services",
        }
    }

    /// The object's name.
    pub fn name(self) -> &'static str {
        match self {
            Published::DefaultServiceAccount => "default",
            Published::RootCaConfigMap => "kube-root-ca.crt",
            Published::KubernetesService => "kubernetes",
            Published::AuthenticationConfigMap => "extension-apiserver-authentication",
        }
    }

    /// Whether the object belongs in `namespace`.
    pub fn belongs_in(self, namespace: &str) -> bool {
        match self {
            Published::DefaultServiceAccount | Published::RootCaConfigMap => true,
            Published::KubernetesService => namespace == "default",
            Published::AuthenticationConfigMap => namespace == "kube-system",
        }
    }

    /// The field manager of the component that writes it in Kubernetes.
    pub fn manager(self) -> &'static str {
        match self {
            Published::DefaultServiceAccount | Published::RootCaConfigMap => {
                "kube-controller-manager"
            }
            Published::KubernetesService | Published::AuthenticationConfigMap => "kube-apiserver",
        }
    }

    /// The object to create when it is missing (without namespace).
    pub fn desired(self, settings: &Settings) -> Value {
        let name = self.name();
        match self {
            Published::DefaultServiceAccount => json!({
                "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name},
            }),
            Published::RootCaConfigMap => json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "annotations": {DESCRIPTION_KEY: DESCRIPTION}},
                "data": {"ca.crt": settings.root_ca},
            }),
            Published::KubernetesService => json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {
                    "name": name,
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "clusterIP": KUBERNETES_SERVICE_IP,
                    "clusterIPs": [KUBERNETES_SERVICE_IP],
                    "internalTrafficPolicy": "Cluster",
                    "ipFamilies": ["IPv4"],
                    "ipFamilyPolicy": "SingleStack",
                    "ports": service_ports(settings.port),
                    "sessionAffinity": "None",
                    "type": "ClusterIP",
                },
            }),
            Published::AuthenticationConfigMap => {
                let mut data = Map::new();
                if let Some(bundle) = settings
                    .client_ca
                    .as_deref()
                    .and_then(|ca| combined(None, ca))
                    .filter(|b| !b.is_empty())
                {
                    data.insert("client-ca-file".into(), json!(bundle));
                }
                json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name},
                    "data": data,
                })
            }
        }
    }

    /// `current` put right, or `None` when it is as it should be.
    pub fn repair(self, current: &Value, settings: &Settings) -> Option<Value> {
        match self {
            Published::DefaultServiceAccount => None,
            Published::RootCaConfigMap => {
                let data = json!({"ca.crt": settings.root_ca});
                let described = current
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(DESCRIPTION_KEY))
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.is_empty());
                if current.get("data") == Some(&data) && described {
                    return None;
                }
                let mut next = current.clone();
                next["data"] = data;
                let metadata = next.as_object_mut()?.entry("metadata").or_insert(json!({}));
                let annotations = metadata
                    .as_object_mut()?
                    .entry("annotations")
                    .or_insert(json!({}));
                if !annotations.is_object() {
                    *annotations = json!({});
                }
                annotations[DESCRIPTION_KEY] = json!(DESCRIPTION);
                Some(next)
            }
            Published::KubernetesService => {
                let ports = service_ports(settings.port);
                let spec = current.get("spec");
                if spec.and_then(|s| s.get("type")) == Some(&json!("ClusterIP"))
                    && spec.and_then(|s| s.get("ports")) == Some(&ports)
                {
                    return None;
                }
                let mut next = current.clone();
                let spec = next.as_object_mut()?.entry("spec").or_insert(json!({}));
                if !spec.is_object() {
                    *spec = json!({});
                }
                spec["ports"] = ports;
                spec["type"] = json!("ClusterIP");
                Some(next)
            }
            Published::AuthenticationConfigMap => {
                let required = settings.client_ca.as_deref()?;
                let existing = current
                    .pointer("/data/client-ca-file")
                    .and_then(Value::as_str);
                let bundle = combined(existing, required)?;
                let mut next = current.clone();
                let data = next.as_object_mut()?.entry("data").or_insert(json!({}));
                if !data.is_object() {
                    *data = json!({});
                }
                data["client-ca-file"] = json!(bundle);
                Some(next)
            }
        }
    }
}

/// The ports of `default/kubernetes`.
fn service_ports(port: u16) -> Value {
    json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}])
}

/// The certificates of `existing` followed by those of `required` it lacks, as PEM; `None` when
/// `existing` already has them all.
fn combined(existing: Option<&str>, required: &str) -> Option<String> {
    let mut all = existing
        .map(|e| pem_blocks(e.as_bytes(), "CERTIFICATE"))
        .unwrap_or_default();
    let missing: Vec<Vec<u8>> = pem_blocks(required.as_bytes(), "CERTIFICATE")
        .into_iter()
        .filter(|c| !all.contains(c))
        .collect();
    if missing.is_empty() && existing.is_some() {
        return None;
    }
    all.extend(missing);
    Some(all.iter().map(|der| pem("CERTIFICATE", der)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            root_ca: "ROOT".into(),
            client_ca: Some(pem("CERTIFICATE", b"client")),
            port: 6443,
        }
    }

    #[test]
    fn placement() {
        assert!(Published::DefaultServiceAccount.belongs_in("anything"));
        assert!(Published::KubernetesService.belongs_in("default"));
        assert!(!Published::KubernetesService.belongs_in("kube-system"));
        assert!(Published::AuthenticationConfigMap.belongs_in("kube-system"));
        assert!(!Published::AuthenticationConfigMap.belongs_in("default"));
    }

    #[test]
    fn desired_objects_need_no_repair() {
        let s = settings();
        for item in Published::ALL {
            assert_eq!(item.repair(&item.desired(&s), &s), None, "{item:?}");
        }
    }

    #[test]
    fn root_ca_is_put_back() {
        let s = settings();
        let drifted = json!({"metadata": {"name": "kube-root-ca.crt", "labels": {"a": "b"}},
                             "data": {"ca.crt": "OTHER", "extra": "x"}});
        let fixed = Published::RootCaConfigMap.repair(&drifted, &s).unwrap();
        assert_eq!(fixed["data"], json!({"ca.crt": "ROOT"}));
        assert_eq!(fixed["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(
            fixed["metadata"]["annotations"][DESCRIPTION_KEY],
            json!(DESCRIPTION)
        );
    }

    #[test]
    fn service_ports_and_type_are_put_back() {
        let s = settings();
        let mut drifted = Published::KubernetesService.desired(&s);
        drifted["spec"]["ports"][0]["targetPort"] = json!(1);
        drifted["spec"]["type"] = json!("NodePort");
        drifted["metadata"]["labels"]["extra"] = json!("kept");
        let fixed = Published::KubernetesService.repair(&drifted, &s).unwrap();
        assert_eq!(fixed["spec"]["ports"], service_ports(6443));
        assert_eq!(fixed["spec"]["type"], "ClusterIP");
        assert_eq!(fixed["metadata"]["labels"]["extra"], "kept");
    }

    #[test]
    fn client_ca_is_added_to_what_is_there() {
        let s = settings();
        let other = pem("CERTIFICATE", b"other");
        let current = json!({"data": {"client-ca-file": other.clone(), "keep": "1"}});
        let fixed = Published::AuthenticationConfigMap
            .repair(&current, &s)
            .unwrap();
        assert_eq!(
            fixed["data"],
            json!({"client-ca-file": format!("{other}{}", pem("CERTIFICATE", b"client")),
                   "keep": "1"})
        );
        assert_eq!(Published::AuthenticationConfigMap.repair(&fixed, &s), None);
        let none = Settings {
            client_ca: None,
            ..settings()
        };
        assert_eq!(
            Published::AuthenticationConfigMap.desired(&none)["data"],
            json!({})
        );
        assert_eq!(
            Published::AuthenticationConfigMap.repair(&current, &none),
            None
        );
    }
}

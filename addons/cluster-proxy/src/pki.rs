//! The proxy server's own certificate authority (kept in a hub Secret, so every replica and
//! every restart serves under the same CA) and where users and agents learn the server's
//! address and CA (a hub ConfigMap every authenticated user may read).

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use serde_json::json;

use crate::error::ProxyError;

/// Hub namespace of the proxy server's Secret and endpoint ConfigMap.
pub const PROXY_NAMESPACE: &str = "open-cluster-management-cluster-proxy";
/// Secret (keys `ca.crt`, `ca.key`) with the proxy server's CA.
pub const CA_SECRET: &str = "cluster-proxy-ca";
/// ConfigMap (keys `url`, `ca.crt`) telling users and agents where the proxy server is.
pub const ENDPOINT_CONFIGMAP: &str = "cluster-proxy-endpoint";
/// Field manager of what the proxy server writes on the hub.
const MANAGER: &str = "cluster-proxy-server";

/// A CA's certificate and key, PEM.
#[derive(Clone)]
pub struct CaPair {
    /// Certificate.
    pub cert_pem: String,
    /// Private key.
    pub key_pem: String,
}

impl std::fmt::Debug for CaPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaPair").finish_non_exhaustive()
    }
}

fn validity(params: &mut CertificateParams, years: i32) {
    let year = i32::from(jiff::Zoned::now().year());
    params.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
    params.not_after = rcgen::date_time_ymd(year + years, 1, 1);
}

fn common_name(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

/// A new self-signed CA for the proxy server.
pub fn new_ca() -> Result<CaPair, ProxyError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name("ocm-cluster-proxy-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, 10);
    let cert = params.self_signed(&key)?;
    Ok(CaPair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A serving certificate (and key) signed by `ca` for `localhost`, the loopback addresses and
/// `hostnames` (names or IP addresses).
pub fn serving_certificate(ca: &CaPair, hostnames: &[String]) -> Result<CaPair, ProxyError> {
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, KeyPair::from_pem(&ca.key_pem)?)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name("ocm-cluster-proxy");
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    for name in hostnames {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    params.subject_alt_names = names
        .into_iter()
        .filter_map(|n| match n.parse::<IpAddr>() {
            Ok(ip) => Some(SanType::IpAddress(ip)),
            Err(_) => n.try_into().ok().map(SanType::DnsName),
        })
        .collect();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    validity(&mut params, 2);
    let cert = params.signed_by(&key, &issuer)?;
    Ok(CaPair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn secret_text(secret: &Secret, key: &str) -> Option<String> {
    let data = secret.data.as_ref()?.get(key)?;
    String::from_utf8(data.0.clone()).ok()
}

/// Creates namespace `namespace` on the hub unless it exists.
async fn ensure_namespace(hub: &kube::Client, namespace: &str) -> Result<(), ProxyError> {
    let namespaces: Api<Namespace> = Api::all(hub.clone());
    if namespaces.get_opt(namespace).await?.is_some() {
        return Ok(());
    }
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))
        .map_err(|e| ProxyError::Config(e.to_string()))?;
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// The proxy server's CA from Secret [`CA_SECRET`] in `namespace` on the hub, created there
/// (with the namespace) by whichever server starts first.
pub async fn load_or_create_ca(hub: &kube::Client, namespace: &str) -> Result<CaPair, ProxyError> {
    ensure_namespace(hub, namespace).await?;
    let secrets: Api<Secret> = Api::namespaced(hub.clone(), namespace);
    let stored = |secret: &Secret| {
        Some(CaPair {
            cert_pem: secret_text(secret, "ca.crt")?,
            key_pem: secret_text(secret, "ca.key")?,
        })
    };
    if let Some(secret) = secrets.get_opt(CA_SECRET).await? {
        return stored(&secret).ok_or_else(|| {
            ProxyError::Config(format!(
                "Secret {namespace}/{CA_SECRET} lacks ca.crt or ca.key; delete it to make a new CA"
            ))
        });
    }
    let ca = new_ca()?;
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(CA_SECRET.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            (
                "ca.crt".to_owned(),
                ByteString(ca.cert_pem.clone().into_bytes()),
            ),
            (
                "ca.key".to_owned(),
                ByteString(ca.key_pem.clone().into_bytes()),
            ),
        ])),
        ..Default::default()
    };
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(ca),
        // Another replica made it first: use theirs.
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let secret = secrets.get(CA_SECRET).await?;
            stored(&secret).ok_or_else(|| ProxyError::Config("racing CA secret is empty".into()))
        }
        Err(err) => Err(err.into()),
    }
}

/// Where the proxy server is: its URL and the CA its serving certificate chains to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `https://host:port`.
    pub url: String,
    /// PEM CA bundle.
    pub ca_pem: String,
}

/// Publishes `endpoint` in ConfigMap [`ENDPOINT_CONFIGMAP`] of `namespace`, readable by every
/// authenticated hub user (as kube-public's `cluster-info` is), so `ocm proxy kubeconfig`
/// finds the server with the user's own credentials.
pub async fn publish_endpoint(
    hub: &kube::Client,
    namespace: &str,
    endpoint: &Endpoint,
) -> Result<(), ProxyError> {
    let params = PatchParams::apply(MANAGER).force();
    let configmaps: Api<ConfigMap> = Api::namespaced(hub.clone(), namespace);
    configmaps
        .patch(
            ENDPOINT_CONFIGMAP,
            &params,
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ENDPOINT_CONFIGMAP, "namespace": namespace},
                "data": {"url": endpoint.url, "ca.crt": endpoint.ca_pem},
            })),
        )
        .await?;
    let reader = "cluster-proxy-endpoint-reader";
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(hub.clone(), namespace);
    roles
        .patch(
            reader,
            &params,
            &Patch::Apply(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": reader, "namespace": namespace},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                           "resourceNames": [ENDPOINT_CONFIGMAP], "verbs": ["get"]}],
            })),
        )
        .await?;
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(hub.clone(), namespace);
    bindings
        .patch(
            reader,
            &params,
            &Patch::Apply(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": reader, "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                            "name": reader},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                              "name": "system:authenticated"}],
            })),
        )
        .await?;
    Ok(())
}

/// The endpoint published by [`publish_endpoint`].
pub async fn read_endpoint(hub: &kube::Client, namespace: &str) -> Result<Endpoint, ProxyError> {
    let configmaps: Api<ConfigMap> = Api::namespaced(hub.clone(), namespace);
    let cm = configmaps.get_opt(ENDPOINT_CONFIGMAP).await?.ok_or_else(|| {
        ProxyError::Config(format!(
            "no ConfigMap {namespace}/{ENDPOINT_CONFIGMAP} on the hub: is `ocm proxy server` running?"
        ))
    })?;
    let data = cm.data.unwrap_or_default();
    match (data.get("url"), data.get("ca.crt")) {
        (Some(url), Some(ca)) => Ok(Endpoint {
            url: url.clone(),
            ca_pem: ca.clone(),
        }),
        _ => Err(ProxyError::Config(format!(
            "ConfigMap {namespace}/{ENDPOINT_CONFIGMAP} lacks url or ca.crt"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serving_certificates_chain_to_the_ca_and_name_the_hosts() {
        let ca = new_ca().unwrap();
        let serving = serving_certificate(&ca, &["proxy.example.com".into()]).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(serving.cert_pem.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        let sans = cert.subject_alternative_name().unwrap().unwrap();
        let text = format!("{:?}", sans.value.general_names);
        assert!(text.contains("proxy.example.com"), "{text}");
        assert!(text.contains("localhost"), "{text}");
        let (_, ca_pem) = x509_parser::pem::parse_x509_pem(ca.cert_pem.as_bytes()).unwrap();
        let ca_cert = ca_pem.parse_x509().unwrap();
        assert_eq!(cert.issuer(), ca_cert.subject());
    }
}

//! The webhook servers' serving certificates: a CA kept in Secret `signer-secret` (`tls.crt`,
//! `tls.key`) and, for each webhook Service, a serving certificate for its names in Secret
//! `<kind>-webhook-serving-cert` (`tls.crt`, `tls.key`, `ca.crt`; in Hosted mode also for the
//! address the hub reaches it at), which that webhook Deployment mounts — upstream's names; the CA bundle is also published in ConfigMap
//! `ca-bundle-configmap` (key `ca-bundle.crt`). A serving certificate is re-issued by the same
//! CA once less than a fifth of its lifetime is left (the server reloads changed files); the
//! CA bundle is what webhook configurations trust.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams};
use ocm_webhook::certs::{SERVING_LIFETIME, covers, expires_at, issue_serving};

use super::render::WebhookKind;
use crate::OperatorError;

/// Name of the Secret holding the webhook CA (upstream's).
pub const SIGNER_SECRET: &str = "signer-secret";

/// Name of the ConfigMap publishing the CA bundle (key [`CA_BUNDLE_KEY`], upstream's).
pub const CA_BUNDLE_CONFIGMAP: &str = "ca-bundle-configmap";

/// Key of the CA bundle in [`CA_BUNDLE_CONFIGMAP`].
pub const CA_BUNDLE_KEY: &str = "ca-bundle.crt";

/// Field manager of the certificate Secrets and the CA bundle ConfigMap.
const MANAGER: &str = "cluster-manager-operator";

/// The names the webhook Service answers to inside the cluster.
pub fn service_hosts(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
        format!("{service}.{namespace}"),
        service.to_owned(),
    ]
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()?
        .get(key)
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
}

/// Whether a serving certificate signed by `ca` should be replaced now: missing, of another
/// CA, due, unreadable, or not naming every one of `hosts` (a Hosted hub's webhook address
/// changed).
pub fn needs_reissue(serving: Option<(&str, &str)>, ca: &str, hosts: &[String], now: i64) -> bool {
    let Some((cert, bundle)) = serving else {
        return true;
    };
    let lifetime = i64::try_from(SERVING_LIFETIME.as_secs()).unwrap_or(i64::MAX);
    bundle != ca
        || !hosts.iter().all(|host| covers(cert, host))
        || expires_at(cert).is_ok_and(|end| (end - now) * 5 < lifetime)
        || expires_at(cert).is_err()
}

async fn write(
    api: &Api<Secret>,
    namespace: &str,
    name: &str,
    data: &[(&str, &str)],
) -> Result<(), kube::Error> {
    let data: BTreeMap<String, ByteString> = data
        .iter()
        .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
        .collect();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data),
        ..Default::default()
    };
    let mut value = serde_json::to_value(&secret).unwrap_or_default();
    value["apiVersion"] = "v1".into();
    value["kind"] = "Secret".into();
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&value),
    )
    .await?;
    Ok(())
}

/// Makes sure the CA and the serving certificate of each of `kinds` (in the components'
/// `namespace`) are valid — for its Service's names and `extra_hosts(kind)` — and the CA
/// bundle is published; returns the CA bundle.
pub async fn ensure(
    client: &kube::Client,
    namespace: &str,
    cm_name: &str,
    kinds: &[WebhookKind],
    extra_hosts: &(dyn Fn(WebhookKind) -> Vec<String> + Sync),
) -> Result<String, OperatorError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let signer = api.get_opt(SIGNER_SECRET).await?;
    let existing = signer
        .as_ref()
        .and_then(|s| Some((text(s, "tls.crt")?, text(s, "tls.key")?)));
    let (ca_cert, ca_key) = match existing {
        Some(ca) => ca,
        None => {
            let issued = issue_serving(None, &[])?;
            write(
                &api,
                namespace,
                SIGNER_SECRET,
                &[("tls.crt", &issued.ca_cert), ("tls.key", &issued.ca_key)],
            )
            .await?;
            (issued.ca_cert, issued.ca_key)
        }
    };
    let now = jiff::Timestamp::now().as_second();
    for &kind in kinds {
        let mut hosts = service_hosts(&kind.service(cm_name), namespace);
        hosts.extend(extra_hosts(kind));
        let serving = api.get_opt(&kind.serving_secret()).await?;
        let serving = serving
            .as_ref()
            .and_then(|s| Some((text(s, "tls.crt")?, text(s, "ca.crt")?)));
        if !needs_reissue(
            serving.as_ref().map(|(c, b)| (c.as_str(), b.as_str())),
            &ca_cert,
            &hosts,
            now,
        ) {
            continue;
        }
        tracing::info!(secret = %kind.serving_secret(), ?hosts, "issuing a webhook serving certificate");
        let issued = issue_serving(Some((&ca_cert, &ca_key)), &hosts)?;
        write(
            &api,
            namespace,
            &kind.serving_secret(),
            &[
                ("tls.crt", &issued.cert),
                ("tls.key", &issued.key),
                ("ca.crt", &issued.ca_cert),
            ],
        )
        .await?;
    }
    publish_ca_bundle(client, namespace, &ca_cert).await?;
    Ok(ca_cert)
}

/// Writes the CA bundle into [`CA_BUNDLE_CONFIGMAP`] unless it is there already.
async fn publish_ca_bundle(
    client: &kube::Client,
    namespace: &str,
    ca: &str,
) -> Result<(), kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let current = api.get_opt(CA_BUNDLE_CONFIGMAP).await?;
    if current
        .as_ref()
        .and_then(|c| c.data.as_ref())
        .and_then(|d| d.get(CA_BUNDLE_KEY))
        .is_some_and(|bundle| bundle == ca)
    {
        return Ok(());
    }
    let configmap = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": CA_BUNDLE_CONFIGMAP, "namespace": namespace},
        "data": {CA_BUNDLE_KEY: ca},
    });
    api.patch(
        CA_BUNDLE_CONFIGMAP,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&configmap),
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serving_certificates_are_reissued_when_missing_foreign_or_due() {
        let hosts = service_hosts("cm-webhook", "ns");
        let issued = issue_serving(None, &hosts).unwrap();
        let now = jiff::Timestamp::now().as_second();
        let current = Some((issued.cert.as_str(), issued.ca_cert.as_str()));
        assert!(!needs_reissue(current, &issued.ca_cert, &hosts, now));
        assert!(needs_reissue(None, &issued.ca_cert, &hosts, now));
        let other = issue_serving(None, &[]).unwrap();
        assert!(needs_reissue(current, &other.ca_cert, &hosts, now));
        let lifetime = i64::try_from(SERVING_LIFETIME.as_secs()).unwrap();
        assert!(needs_reissue(
            current,
            &issued.ca_cert,
            &hosts,
            now + lifetime * 9 / 10
        ));
        assert!(needs_reissue(
            Some(("not a cert", &issued.ca_cert)),
            &issued.ca_cert,
            &hosts,
            now
        ));
        // A Hosted hub's address the certificate does not name yet.
        let mut hosted = hosts.clone();
        hosted.push("10.0.0.5".into());
        assert!(needs_reissue(current, &issued.ca_cert, &hosted, now));
    }
}

//! The webhook server's serving certificate: a CA kept in Secret `<cm>-webhook-signer`
//! (`tls.crt`, `tls.key`) and a serving certificate for the webhook Service's names in
//! Secret `<cm>-webhook-serving-cert` (`tls.crt`, `tls.key`, `ca.crt`), which the webhook
//! Deployment mounts. The serving certificate is re-issued by the same CA once less than a
//! fifth of its lifetime is left (the server reloads changed files); the CA bundle is what
//! webhook configurations trust.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use ocm_webhook::certs::{SERVING_LIFETIME, expires_at, issue_serving};

use super::render::webhook_secret;
use crate::OperatorError;

/// Name of the Secret holding the webhook CA.
pub fn signer_secret(cm_name: &str) -> String {
    format!("{cm_name}-webhook-signer")
}

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

/// Whether a serving certificate signed by `ca` should be replaced now.
pub fn needs_reissue(serving: Option<(&str, &str)>, ca: &str, now: i64) -> bool {
    let Some((cert, bundle)) = serving else {
        return true;
    };
    let lifetime = i64::try_from(SERVING_LIFETIME.as_secs()).unwrap_or(i64::MAX);
    bundle != ca
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
        &PatchParams::apply("cluster-manager-operator").force(),
        &Patch::Apply(&value),
    )
    .await?;
    Ok(())
}

/// Makes sure both Secrets (in the components' `namespace`) hold valid certificates; returns
/// the CA bundle.
pub async fn ensure(
    client: &kube::Client,
    namespace: &str,
    cm_name: &str,
) -> Result<String, OperatorError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let signer = api.get_opt(&signer_secret(cm_name)).await?;
    let ca = signer
        .as_ref()
        .and_then(|s| Some((text(s, "tls.crt")?, text(s, "tls.key")?)));
    let serving = api.get_opt(&webhook_secret(cm_name)).await?;
    let serving = serving
        .as_ref()
        .and_then(|s| Some((text(s, "tls.crt")?, text(s, "ca.crt")?)));
    let now = jiff::Timestamp::now().as_second();
    if let Some((ca_cert, _)) = &ca
        && !needs_reissue(
            serving.as_ref().map(|(c, b)| (c.as_str(), b.as_str())),
            ca_cert,
            now,
        )
    {
        return Ok(ca_cert.clone());
    }
    let service = format!("{cm_name}-webhook");
    let issued = issue_serving(
        ca.as_ref().map(|(c, k)| (c.as_str(), k.as_str())),
        &service_hosts(&service, namespace),
    )?;
    if ca.is_none() {
        write(
            &api,
            namespace,
            &signer_secret(cm_name),
            &[("tls.crt", &issued.ca_cert), ("tls.key", &issued.ca_key)],
        )
        .await?;
    }
    write(
        &api,
        namespace,
        &webhook_secret(cm_name),
        &[
            ("tls.crt", &issued.cert),
            ("tls.key", &issued.key),
            ("ca.crt", &issued.ca_cert),
        ],
    )
    .await?;
    Ok(issued.ca_cert)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serving_certificates_are_reissued_when_missing_foreign_or_due() {
        let issued = issue_serving(None, &service_hosts("cm-webhook", "ns")).unwrap();
        let now = jiff::Timestamp::now().as_second();
        let current = Some((issued.cert.as_str(), issued.ca_cert.as_str()));
        assert!(!needs_reissue(current, &issued.ca_cert, now));
        assert!(needs_reissue(None, &issued.ca_cert, now));
        let other = issue_serving(None, &[]).unwrap();
        assert!(needs_reissue(current, &other.ca_cert, now));
        let lifetime = i64::try_from(SERVING_LIFETIME.as_secs()).unwrap();
        assert!(needs_reissue(
            current,
            &issued.ca_cert,
            now + lifetime * 9 / 10
        ));
        assert!(needs_reissue(
            Some(("not a cert", &issued.ca_cert)),
            &issued.ca_cert,
            now
        ));
    }
}

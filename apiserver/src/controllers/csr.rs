//! The built-in `kubernetes.io/kube-apiserver-client` signer (kube-controller-manager's
//! csrsigning controller for that signer name): approved CSRs get a certificate from the client
//! CA, refused ones a `Failed` condition. Plus the CSR cleaner: decided (approved, denied,
//! failed) requests go after [`crate::ApiServerConfig::csr_decided_ttl`], pending ones after
//! [`crate::ApiServerConfig::csr_pending_ttl`], and, as kube's csrcleaner, issued ones as soon
//! as their certificate has expired (so agents renewing short certificates often never reach
//! their limit of CSRs per cluster).

use base64::Engine;
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::control::ServerAccess;
use crate::meta;
use crate::ops::{DeleteOptions, Managed, Target};
use crate::pki::{KUBE_APISERVER_CLIENT_SIGNER, SignError};
use ocm_apiserver_storage::{Bucket, EventKind};

const CSR_RESOURCE: &str = "certificates.k8s.io/certificatesigningrequests";

fn has_condition(csr: &Value, ty: &str) -> bool {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str).unwrap_or("True") == "True"
            })
        })
}

fn has_certificate(csr: &Value) -> bool {
    csr.pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
}

/// What the signer writes into a CSR's status: a certificate (base64 PEM) or a Failed
/// condition. `None`: nothing to do now.
fn sign(
    server: &ServerAccess,
    csr: &Value,
    now: Timestamp,
) -> Option<Result<String, (String, String)>> {
    if csr.pointer("/spec/signerName").and_then(Value::as_str) != Some(KUBE_APISERVER_CLIENT_SIGNER)
        || !has_condition(csr, "Approved")
        || has_condition(csr, "Failed")
        || has_certificate(csr)
    {
        return None;
    }
    let ca = server.client_signer()?;
    let request = csr
        .pointer("/spec/request")
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .unwrap_or_default();
    let usages: Vec<String> = csr
        .pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|u| {
            u.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let expiration = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64);
    match crate::pki::sign_kube_apiserver_client(
        ca,
        &request,
        &usages,
        expiration,
        jiff::SignedDuration::try_from(server.config().csr_signing_duration)
            .unwrap_or(crate::pki::DEFAULT_MAX_DURATION),
        now,
    ) {
        Ok(pem) => Some(Ok(base64::engine::general_purpose::STANDARD.encode(pem))),
        Err(SignError::Rejected { reason, message }) => Some(Err((reason, message))),
        Err(SignError::Transient(message)) if message.starts_with("unable to parse csr") => {
            Some(Err(("SignerValidationFailure".to_owned(), message)))
        }
        Err(SignError::Transient(message)) => {
            tracing::warn!(message, "signing a CSR failed; will retry");
            None
        }
    }
}

async fn reconcile(server: &ServerAccess, cluster: &str, name: &str) {
    let bucket = Bucket::new(cluster, CSR_RESOURCE);
    let Some(mut ctx) = server.writer(&bucket, "certificatesigningrequest-signing-controller")
    else {
        return;
    };
    let inner2 = server.clone();
    let mut mutate = move |_: &mut crate::ops::Ctx, current: &Value| {
        let mut next = current.clone();
        let now = Timestamp::now();
        match sign(&inner2, current, now) {
            None => {}
            Some(Ok(cert)) => next["status"]["certificate"] = json!(cert),
            Some(Err((reason, message))) => {
                let stamp = meta::now();
                let condition = json!({
                    "type": "Failed", "status": "True", "reason": reason, "message": message,
                    "lastUpdateTime": stamp, "lastTransitionTime": stamp,
                });
                match next["status"]["conditions"].as_array_mut() {
                    Some(c) => c.push(condition),
                    None => next["status"]["conditions"] = json!([condition]),
                }
            }
        }
        Ok(next)
    };
    if let Err(err) = ctx
        .update(
            "",
            name,
            &Target::Sub("status".into()),
            Managed::RecordUpdate,
            false,
            &mut mutate,
        )
        .await
        && err.code != 404
    {
        tracing::warn!(%err, name, "CSR signer update failed");
    }
}

/// Whether `csr` carries a certificate that has expired at `now` (kube's `isIssuedExpired`).
fn issued_certificate_expired(csr: &Value, now: Timestamp) -> bool {
    let Some(pem) = csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
    else {
        return false;
    };
    crate::pki::cert::pem_blocks(&pem, "CERTIFICATE")
        .first()
        .and_then(|der| {
            <x509_parser::certificate::X509Certificate as x509_parser::prelude::FromDer<_>>::from_der(der)
                .ok()
                .map(|(_, c)| c.validity().not_after.timestamp())
        })
        .is_some_and(|not_after| now.as_second() > not_after)
}

/// Whether the cleaner removes `csr` at `now`.
fn expired(server: &ServerAccess, csr: &Value, now: Timestamp) -> bool {
    if issued_certificate_expired(csr, now) {
        return true;
    }
    let Some(created) = csr
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Timestamp>().ok())
    else {
        return false;
    };
    let decided = ["Approved", "Denied", "Failed"]
        .iter()
        .any(|t| has_condition(csr, t));
    let ttl = if decided {
        server.config().csr_decided_ttl
    } else {
        server.config().csr_pending_ttl
    };
    let age = now.duration_since(created);
    age.as_secs() >= 0 && age.unsigned_abs() >= ttl
}

async fn clean(server: &ServerAccess) {
    let now = Timestamp::now();
    for bucket in server.buckets() {
        if &*bucket.resource != CSR_RESOURCE {
            continue;
        }
        let (_, items) = server.list(&bucket, None, None);
        for (_, name, object) in items {
            let Ok(csr) = serde_json::from_slice::<Value>(&object.value) else {
                continue;
            };
            if !expired(server, &csr, now) {
                continue;
            }
            if let Some(mut ctx) = server.writer(&bucket, "csrcleaner")
                && let Err(err) = ctx.delete("", &name, &DeleteOptions::default()).await
                && err.code != 404
            {
                tracing::debug!(%err, name, "CSR cleaner delete");
            }
        }
    }
}

pub(crate) async fn run(server: ServerAccess) {
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let mut resync = tokio::time::interval(server.config().resync_interval);
    loop {
        tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                if &*event.key.bucket.resource != CSR_RESOURCE || event.kind == EventKind::Deleted {
                    continue;
                }
                let Ok(csr) = serde_json::from_slice::<Value>(&event.object) else { continue };
                if sign(&server, &csr, Timestamp::now()).is_some() {
                    reconcile(&server, &event.key.bucket.cluster, &event.key.name).await;
                }
            }
            _ = resync.tick() => clean(&server).await,
            _ = shutdown.changed() => return,
        }
    }
}

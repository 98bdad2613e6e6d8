//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`): a `ConversionReview`
//! (`apiextensions.k8s.io/v1`) is posted to the CRD's `clientConfig.url` whenever an object
//! must change version, and the answer is checked as kube-apiserver checks it.
//!
//! Design: the server's conversion path is synchronous (`Ctx::present` and `convert_to` are
//! called from list and watch code that is not async). Rather than making every caller async,
//! conversion calls run on one dedicated background thread that owns a current-thread Tokio
//! runtime (started on first use, shared by every server of the process); the calling thread
//! queues the request and waits on a std channel with `recv_timeout` (the webhook's 30 s
//! timeout plus a margin). It never calls a Tokio blocking receive inside async code. The
//! caller's thread is blocked for the length of the call, as a synchronous conversion would
//! block it; a test webhook server must therefore not run on the same current-thread runtime
//! as the client that triggers conversions.

use std::sync::OnceLock;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::config::ClientConfig;

/// kube-apiserver's timeout for conversion webhook calls.
pub const CONVERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a conversion failed (the text after `conversion webhook for <gvk> failed: `, or the
/// whole message for checks of the converted objects).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConversionError {
    /// The call or the review answer failed: `conversion webhook for <gvk> failed: <reason>`.
    #[error("conversion webhook for {gvk} failed: {reason}")]
    Failed {
        /// `group/version, Kind=Kind` of the objects sent.
        gvk: String,
        /// Why.
        reason: String,
    },
    /// The converted objects do not fit the request.
    #[error("{0}")]
    Invalid(String),
}

struct Job {
    client: ClientConfig,
    review: Value,
    reply: std_mpsc::SyncSender<Result<Value, String>>,
}

fn worker() -> Option<&'static mpsc::UnboundedSender<Job>> {
    static WORKER: OnceLock<Option<mpsc::UnboundedSender<Job>>> = OnceLock::new();
    WORKER
        .get_or_init(|| {
            let (tx, mut rx) = mpsc::unbounded_channel::<Job>();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let runtime = match runtime {
                Ok(r) => r,
                Err(err) => {
                    tracing::error!(%err, "cannot start the conversion webhook runtime");
                    return None;
                }
            };
            let spawned = std::thread::Builder::new()
                .name("conversion-webhooks".into())
                .spawn(move || {
                    runtime.block_on(async move {
                        while let Some(job) = rx.recv().await {
                            tokio::spawn(async move {
                                let result = super::client::post(
                                    &job.client,
                                    CONVERSION_TIMEOUT,
                                    &job.review,
                                )
                                .await
                                .map_err(|err| err.to_string());
                                let _ = job.reply.send(result);
                            });
                        }
                    });
                });
            match spawned {
                Ok(_) => Some(tx),
                Err(err) => {
                    tracing::error!(%err, "cannot start the conversion webhook thread");
                    None
                }
            }
        })
        .as_ref()
}

/// Posts a review from synchronous code: queued to the conversion thread, waited for with a
/// timeout.
fn post_blocking(client: &ClientConfig, review: Value) -> Result<Value, String> {
    let Some(tx) = worker() else {
        return Err("the conversion webhook client is not running".to_owned());
    };
    let (reply, wait) = std_mpsc::sync_channel(1);
    tx.send(Job {
        client: client.clone(),
        review,
        reply,
    })
    .map_err(|_| "the conversion webhook client stopped".to_owned())?;
    match wait.recv_timeout(CONVERSION_TIMEOUT + Duration::from_secs(5)) {
        Ok(result) => result,
        Err(_) => Err("context deadline exceeded".to_owned()),
    }
}

fn gvk(obj: &Value) -> String {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    format!("{api_version}, Kind={kind}")
}

/// Converts `objects` (all of one version and kind) to `desired` (`group/version`) through
/// the webhook, with kube-apiserver's checks of the answer. Blocks the calling thread.
pub fn convert(
    client: &ClientConfig,
    objects: Vec<Value>,
    desired: &str,
) -> Result<Vec<Value>, ConversionError> {
    let Some(first) = objects.first() else {
        return Ok(objects);
    };
    let gvk = gvk(first);
    let uid = uuid::Uuid::new_v4().to_string();
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    });
    let failed = |reason: String| ConversionError::Failed {
        gvk: gvk.clone(),
        reason,
    };
    let reply = post_blocking(client, review).map_err(failed)?;
    let converted = check_review(&uid, &reply).map_err(failed)?;
    check_converted(&gvk, &objects, converted, desired)
}

/// The converted objects of a ConversionReview answer, after the checks of the review itself.
pub fn check_review(uid: &str, reply: &Value) -> Result<Vec<Value>, String> {
    let got = gvk(reply);
    if got != "apiextensions.k8s.io/v1, Kind=ConversionReview" {
        return Err(format!(
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}"
        ));
    }
    let Some(response) = reply.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".to_owned());
    };
    let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!(
            "expected response.uid=\"{uid}\", got \"{got_uid}\""
        ));
    }
    let status = response
        .pointer("/result/status")
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = response
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !message.is_empty() {
            return Err(message.to_owned());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// Checks converted objects against the originals (count, apiVersion, kind, unchanged
/// metadata apart from labels and annotations) and restores the original metadata with the
/// converted labels and annotations, as kube-apiserver does.
pub fn check_converted(
    gvk: &str,
    originals: &[Value],
    converted: Vec<Value>,
    desired: &str,
) -> Result<Vec<Value>, ConversionError> {
    if converted.len() != originals.len() {
        return Err(ConversionError::Invalid(format!(
            "conversion webhook for {gvk} returned {} objects, expected {}",
            converted.len(),
            originals.len()
        )));
    }
    let mut out = Vec::with_capacity(converted.len());
    for (i, (original, mut object)) in originals.iter().zip(converted).enumerate() {
        let invalid = |what: String| {
            ConversionError::Invalid(format!(
                "conversion webhook for {gvk} returned invalid converted object at index {i}: {what}"
            ))
        };
        let got = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if got != desired {
            return Err(invalid(format!(
                "invalid groupVersion (expected {desired}, received {got})"
            )));
        }
        let want_kind = original.get("kind").and_then(Value::as_str).unwrap_or("");
        let got_kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        if want_kind != got_kind {
            return Err(invalid(format!(
                "invalid kind (expected {want_kind}, received {got_kind})"
            )));
        }
        let original_meta = original.get("metadata").cloned().unwrap_or(json!({}));
        let converted_meta = object.get("metadata").cloned().unwrap_or(json!({}));
        for field in ["name", "namespace", "uid"] {
            if original_meta.get(field) != converted_meta.get(field) {
                return Err(ConversionError::Invalid(format!(
                    "conversion webhook for {gvk} returned invalid metadata in object at index {i}: must not change metadata.{field}"
                )));
            }
        }
        let mut meta = original_meta;
        if let Some(m) = meta.as_object_mut() {
            for field in ["labels", "annotations"] {
                match converted_meta.get(field) {
                    Some(v) if !v.is_null() => {
                        m.insert(field.into(), v.clone());
                    }
                    _ => {
                        m.remove(field);
                    }
                }
            }
        }
        if let Some(map) = object.as_object_mut() {
            map.insert("metadata".into(), meta);
        }
        out.push(object);
    }
    Ok(out)
}

/// Validates `spec.conversion` of a CRD as kube-apiserver does (field paths of its internal
/// type: `spec.conversion.webhookClientConfig`, `spec.conversion.conversionReviewVersions`).
pub fn validate_crd_conversion(crd: &Value) -> Vec<crate::validation::Cause> {
    use crate::validation::{BadValue, Cause};
    let mut causes = Vec::new();
    let Some(conversion) = crd.pointer("/spec/conversion").filter(|c| c.is_object()) else {
        return causes;
    };
    let path = "spec.conversion";
    let strategy = conversion
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("None");
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let versions: Vec<String> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    match strategy {
        "Webhook" => {
            match client {
                None => causes.push(Cause::required(
                    format!("{path}.webhookClientConfig"),
                    "required when strategy is set to Webhook",
                )),
                Some(client) => super::config::validate_client_config(
                    client,
                    &format!("{path}.webhookClientConfig"),
                    &mut causes,
                ),
            }
            let vpath = format!("{path}.conversionReviewVersions");
            if versions.is_empty() {
                causes.push(Cause::required(vpath, "must specify one of v1"));
            } else if !versions.iter().any(|v| v == "v1") {
                causes.push(Cause::invalid(
                    vpath,
                    BadValue::StringList(versions),
                    "must include at least one of v1",
                ));
            }
        }
        "None" => {
            if client.is_some() {
                causes.push(Cause::forbidden(
                    format!("{path}.webhookClientConfig"),
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !versions.is_empty() {
                causes.push(Cause::forbidden(
                    format!("{path}.conversionReviewVersions"),
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        other => causes.push(Cause::not_supported(
            format!("{path}.strategy"),
            other,
            &["None", "Webhook"],
        )),
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_conversion_is_validated() {
        let crd = |conversion: Value| json!({"spec": {"conversion": conversion}});
        let fields = |v: Vec<crate::validation::Cause>| {
            v.iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
        };
        assert!(validate_crd_conversion(&crd(json!({"strategy": "None"}))).is_empty());
        assert_eq!(
            fields(validate_crd_conversion(&crd(
                json!({"strategy": "Webhook"})
            ))),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value: must specify one of v1"
            ]
        );
        assert_eq!(
            fields(validate_crd_conversion(&crd(json!({"strategy": "None",
                "webhook": {"clientConfig": {"url": "https://a.example.com"}}})))),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"
            ]
        );
        assert!(validate_crd_conversion(&crd(json!({"strategy": "Webhook",
            "webhook": {"clientConfig": {"url": "https://a.example.com"}, "conversionReviewVersions": ["v1"]}})))
        .is_empty());
    }

    #[test]
    fn review_answers_are_checked() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(check_review("u", &ok), Ok(vec![json!({"a": 1})]));
        assert_eq!(
            check_review("x", &ok),
            Err("expected response.uid=\"x\", got \"u\"".to_owned())
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failure", "message": "nope"}}});
        assert_eq!(check_review("u", &failed), Err("nope".to_owned()));
    }

    #[test]
    fn converted_objects_keep_their_identity() {
        let original = json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "uid": "1", "resourceVersion": "5"}});
        let good = json!({"apiVersion": "g/v2", "kind": "K", "metadata": {"name": "a", "uid": "1", "labels": {"x": "y"}}});
        let out = check_converted(
            "g/v1, Kind=K",
            std::slice::from_ref(&original),
            vec![good],
            "g/v2",
        )
        .unwrap_or_default();
        assert_eq!(out[0]["metadata"]["resourceVersion"], "5");
        assert_eq!(out[0]["metadata"]["labels"]["x"], "y");
        let renamed =
            json!({"apiVersion": "g/v2", "kind": "K", "metadata": {"name": "b", "uid": "1"}});
        assert!(
            check_converted(
                "g/v1, Kind=K",
                std::slice::from_ref(&original),
                vec![renamed],
                "g/v2"
            )
            .is_err()
        );
        let wrong_version =
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "uid": "1"}});
        assert!(
            check_converted(
                "g/v1, Kind=K",
                std::slice::from_ref(&original),
                vec![wrong_version],
                "g/v2"
            )
            .is_err()
        );
        assert!(
            check_converted(
                "g/v1, Kind=K",
                std::slice::from_ref(&original),
                vec![],
                "g/v2"
            )
            .is_err()
        );
    }
}

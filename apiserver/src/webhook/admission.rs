//! Calling admission webhooks: the configurations of a logical cluster (cached per bucket
//! revision, so a write takes effect on the next request), the AdmissionReview sent, the
//! checks of the answer, mutating webhooks in order with JSON patches and reinvocation,
//! validating webhooks in parallel.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::config::{FailurePolicy, Webhook, parse_configuration};
use super::matching::{self, Equivalent, RequestAttributes, RuleMatch};
use crate::auth::Identity;
use ocm_apiserver_status::{ApiError, Cause};
use ocm_apiserver_storage::{Bucket, ObjectKey, Revision, Store};

/// Storage resource of MutatingWebhookConfigurations.
const MUTATING: &str = "admissionregistration.k8s.io/mutatingwebhookconfigurations";
/// Storage resource of ValidatingWebhookConfigurations.
const VALIDATING: &str = "admissionregistration.k8s.io/validatingwebhookconfigurations";

/// The webhooks of one logical cluster.
#[derive(Clone, Debug, Default)]
pub struct ClusterWebhooks {
    /// Mutating webhooks: configurations in name order, webhooks in their order.
    pub mutating: Arc<Vec<Webhook>>,
    /// Validating webhooks, same order.
    pub validating: Arc<Vec<Webhook>>,
}

/// Each logical cluster's webhooks, with the bucket revisions they were read at.
#[derive(Default)]
pub struct WebhookCache {
    by_cluster: Mutex<HashMap<String, ([Revision; 2], ClusterWebhooks)>>,
}

impl std::fmt::Debug for WebhookCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookCache").finish_non_exhaustive()
    }
}

fn read(store: &Store, bucket: &Bucket, mutating: bool) -> Vec<Webhook> {
    let (_, items) = store.list(bucket, None, None);
    let mut configs: Vec<(String, Value)> = items
        .into_iter()
        .filter_map(|(_, name, obj)| {
            serde_json::from_slice::<Value>(&obj.value)
                .ok()
                .map(|v| (name, v))
        })
        .collect();
    configs.sort_by(|a, b| a.0.cmp(&b.0));
    configs
        .iter()
        .flat_map(|(_, v)| parse_configuration(v, mutating))
        .collect()
}

impl WebhookCache {
    /// The webhooks of `cluster` as stored now.
    pub fn get(&self, store: &Store, cluster: &str) -> ClusterWebhooks {
        let buckets = [
            Bucket::new(cluster, MUTATING),
            Bucket::new(cluster, VALIDATING),
        ];
        let revisions = [
            store.bucket_revision(&buckets[0]),
            store.bucket_revision(&buckets[1]),
        ];
        if revisions == [0, 0] {
            return ClusterWebhooks::default();
        }
        let mut map = self.by_cluster.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, hooks)) = map.get(cluster)
            && *seen == revisions
        {
            return hooks.clone();
        }
        let hooks = ClusterWebhooks {
            mutating: Arc::new(read(store, &buckets[0], true)),
            validating: Arc::new(read(store, &buckets[1], false)),
        };
        map.insert(cluster.to_owned(), (revisions, hooks.clone()));
        hooks
    }
}

/// Converts an object of the request's resource to another `apiVersion` serving it (for hooks
/// whose rules match the request only through an [`Equivalent`]).
pub type Converter<'a> = &'a (dyn Fn(Value, &str) -> Result<Value, ApiError> + Sync);

/// One admission request, as the webhooks see it.
#[derive(Clone)]
pub struct Invocation<'a> {
    /// Rules' view of the request.
    pub attrs: RequestAttributes<'a>,
    /// Logical cluster.
    pub cluster: &'a str,
    /// Kind of the object.
    pub kind: &'a str,
    /// Object name.
    pub name: &'a str,
    /// The requester.
    pub user: &'a Identity,
    /// Whether the request is a dry run.
    pub dry_run: bool,
    /// `CreateOptions` / `UpdateOptions` / `DeleteOptions` as sent in the review.
    pub options: Value,
    /// The other groups and versions serving the request's objects (`matchPolicy: Equivalent`).
    pub equivalents: &'a [Equivalent],
    /// Converts objects to one of the `equivalents`.
    pub convert: Converter<'a>,
    /// The CEL `authorizer` variable of match conditions.
    pub authorizer: &'a kube_cel::cel::Value,
}

impl std::fmt::Debug for Invocation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("attrs", &self.attrs)
            .field("cluster", &self.cluster)
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("equivalents", &self.equivalents)
            .finish_non_exhaustive()
    }
}

impl Invocation<'_> {
    /// The `request` of the AdmissionReview.
    pub fn review_request(&self, uid: &str, object: Option<&Value>, old: Option<&Value>) -> Value {
        self.review_request_as(uid, None, object, old)
    }

    /// The `request` of the AdmissionReview for a hook that sees the request through
    /// `equivalent` (`kind` and `resource` there; `requestKind` and `requestResource` as sent).
    pub fn review_request_as(
        &self,
        uid: &str,
        equivalent: Option<&Equivalent>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Value {
        let a = &self.attrs;
        let request_kind = json!({"group": a.group, "version": a.version, "kind": self.kind});
        let request_resource =
            json!({"group": a.group, "version": a.version, "resource": a.resource});
        let (kind, resource) = match equivalent {
            Some(e) => (
                json!({"group": e.group, "version": e.version, "kind": e.kind}),
                json!({"group": e.group, "version": e.version, "resource": e.resource}),
            ),
            None => (request_kind.clone(), request_resource.clone()),
        };
        let mut user = json!({"username": self.user.user});
        if !self.user.uid.is_empty() {
            user["uid"] = json!(self.user.uid);
        }
        if !self.user.groups.is_empty() {
            user["groups"] = json!(self.user.groups);
        }
        if !self.user.extra.is_empty() {
            user["extra"] = json!(self.user.extra);
        }
        let mut request = json!({
            "uid": uid,
            "kind": kind,
            "resource": resource,
            "requestKind": request_kind,
            "requestResource": request_resource,
            "name": self.name,
            "namespace": a.namespace,
            "operation": a.operation,
            "userInfo": user,
            "object": object.cloned().unwrap_or(Value::Null),
            "oldObject": old.cloned().unwrap_or(Value::Null),
            "dryRun": self.dry_run,
            "options": self.options,
        });
        if !a.subresource.is_empty() {
            request["subResource"] = json!(a.subresource);
            request["requestSubResource"] = json!(a.subresource);
        }
        if a.namespace.is_empty()
            && let Some(m) = request.as_object_mut()
        {
            m.remove("namespace");
        }
        request
    }
}

/// What a webhook answered.
#[derive(Debug, Default)]
struct Answer {
    allowed: bool,
    status: Option<Value>,
    patch: Option<Value>,
    warnings: Vec<String>,
}

/// Why a call did not produce an answer (subject to the failure policy).
#[derive(Debug)]
enum Failure {
    Call(String),
    Invalid(String),
}

impl Failure {
    fn to_error(&self, hook: &Webhook) -> ApiError {
        let reason = match self {
            Failure::Call(r) => format!("failed to call webhook: {r}"),
            Failure::Invalid(r) => format!("received invalid webhook response: {r}"),
        };
        ApiError::internal(format!(
            "failed calling webhook \"{}\": {reason}",
            hook.name
        ))
    }
}

async fn call(
    store: &Store,
    cluster: &str,
    hook: &Webhook,
    request: Value,
) -> Result<Answer, Failure> {
    let uid = request
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    });
    tracing::debug!(webhook = hook.name, uid, "calling admission webhook");
    let client = super::service::resolve(store, cluster, &hook.client);
    let reply = super::client::post(&client, hook.timeout, &review)
        .await
        .map_err(|err| Failure::Call(err.to_string()))?;
    verify(hook, &uid, &reply).map_err(Failure::Invalid)
}

fn verify(hook: &Webhook, uid: &str, reply: &Value) -> Result<Answer, String> {
    let api_version = reply
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = reply.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(response) = reply.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".to_owned());
    };
    let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid=\"{uid}\", got \"{got}\""));
    }
    let patch_type = response
        .get("patchType")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let patch_b64 = response
        .get("patch")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let mut answer = Answer {
        allowed: response
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        status: response.get("status").filter(|s| !s.is_null()).cloned(),
        patch: None,
        warnings: response
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    };
    if !hook.mutating {
        if patch_b64.is_some() {
            return Err("validating webhooks may not return patches".to_owned());
        }
        if patch_type.is_some() {
            return Err("validating webhooks may not return patch types".to_owned());
        }
        return Ok(answer);
    }
    if let Some(patch) = patch_b64 {
        if patch_type != Some("JSONPatch") {
            return Err(format!(
                "webhook returned invalid patchType: \"{}\"",
                patch_type.unwrap_or("")
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .map_err(|err| format!("patch is not base64: {err}"))?;
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|err| format!("patch is not JSON: {err}"))?;
        answer.patch = Some(value);
    }
    Ok(answer)
}

/// The error a denial becomes: the webhook's Status, with kube-apiserver's message prefix
/// and 403 when it gives no code.
fn denial(hook: &Webhook, status: Option<&Value>) -> ApiError {
    let status = status.cloned().unwrap_or(Value::Null);
    let message = status.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
    let denied_by = format!("admission webhook \"{}\" denied the request", hook.name);
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| *c != 0)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(403);
    let mut err = ApiError::new(code, reason, message);
    if let Some(details) = status.get("details").and_then(Value::as_object) {
        let s = |k: &str| {
            details
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let causes = details
            .get("causes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let f = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                Cause::new(&f("reason"), f("message"), f("field"))
            })
            .collect();
        err.details = Some(Box::new(ocm_apiserver_status::Details {
            name: s("name"),
            group: s("group"),
            kind: s("kind"),
            uid: s("uid"),
            causes,
            retry_after_seconds: details
                .get("retryAfterSeconds")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
        }));
    }
    err
}

pub(crate) fn namespace_labels(
    store: &Store,
    cluster: &str,
    namespace: &str,
) -> Map<String, Value> {
    let key = ObjectKey::new(Bucket::new(cluster, "/namespaces"), "", namespace);
    store
        .get(&key)
        .and_then(|o| serde_json::from_slice::<Value>(&o.value).ok())
        .and_then(|v| {
            v.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
        })
        .unwrap_or_default()
}

/// The request as one webhook sees it: as sent, or converted to the equivalent group and
/// version its rules matched.
struct View<'e, 'o> {
    equivalent: Option<&'e Equivalent>,
    object: Option<Cow<'o, Value>>,
    old: Option<Cow<'o, Value>>,
}

/// What to do with a webhook for this request.
enum Decision<'e, 'o> {
    Skip,
    Call(View<'e, 'o>),
    Fail(ApiError),
}

/// `object` and `old` as `equivalent` serves them.
fn view_as<'e, 'o>(
    inv: &Invocation<'e>,
    equivalent: Option<&'e Equivalent>,
    object: Option<&'o Value>,
    old: Option<&'o Value>,
) -> Result<View<'e, 'o>, ApiError> {
    let Some(e) = equivalent else {
        return Ok(View {
            equivalent,
            object: object.map(Cow::Borrowed),
            old: old.map(Cow::Borrowed),
        });
    };
    let target = e.api_version();
    let convert = |o: Option<&Value>| -> Result<Option<Cow<'o, Value>>, ApiError> {
        o.map(|o| (inv.convert)(o.clone(), &target).map(Cow::Owned))
            .transpose()
    };
    Ok(View {
        equivalent,
        object: convert(object)?,
        old: convert(old)?,
    })
}

fn decide<'e, 'o>(
    store: &Store,
    inv: &Invocation<'e>,
    hook: &Webhook,
    object: Option<&'o Value>,
    old: Option<&'o Value>,
) -> Decision<'e, 'o> {
    let equivalent = match matching::match_rules(
        &hook.rules,
        &inv.attrs,
        hook.match_equivalent,
        inv.equivalents,
    ) {
        RuleMatch::No => return Decision::Skip,
        RuleMatch::Exact => None,
        RuleMatch::Equivalent(e) => Some(e),
    };
    let labels = matching::needs_namespace_labels(&hook.namespace_selector, &inv.attrs)
        .then(|| namespace_labels(store, inv.cluster, inv.attrs.namespace));
    if !matching::namespace_selector_matches(
        &hook.namespace_selector,
        &inv.attrs,
        object,
        old,
        labels.as_ref(),
    ) || !matching::object_selector_matches(&hook.object_selector, object, old)
    {
        return Decision::Skip;
    }
    let view = match view_as(inv, equivalent, object, old) {
        Ok(v) => v,
        Err(err) => return Decision::Fail(err),
    };
    if !hook.match_conditions.is_empty() {
        let (object, old) = (view.object.as_deref(), view.old.as_deref());
        let request = inv.review_request_as("", view.equivalent, object, old);
        match matching::match_conditions(
            &hook.match_conditions,
            object,
            old,
            &request,
            inv.authorizer,
        ) {
            Ok(true) => {}
            Ok(false) => return Decision::Skip,
            Err(err) => {
                return match hook.failure_policy {
                    FailurePolicy::Ignore => {
                        tracing::warn!(webhook = hook.name, %err, "match condition failed; ignored");
                        Decision::Skip
                    }
                    FailurePolicy::Fail => Decision::Fail(ApiError::internal(format!(
                        "failed calling webhook \"{}\": failed to evaluate match condition: {err}",
                        hook.name
                    ))),
                };
            }
        }
    }
    if inv.dry_run && hook.side_effects != "None" && hook.side_effects != "NoneOnDryRun" {
        return Decision::Fail(ApiError::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            hook.name
        )));
    }
    Decision::Call(view)
}

fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Runs the mutating webhooks of the request's cluster on `object` (`None` on delete): in
/// order, each patch applied before the next call; `IfNeeded` webhooks called once more when
/// a later webhook changed the object. Warnings are appended to `warnings`.
pub async fn run_mutating(
    store: &Store,
    hooks: &[Webhook],
    inv: &Invocation<'_>,
    mut object: Option<&mut Value>,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    if hooks.is_empty() {
        return Ok(());
    }
    // Per webhook: the mutation count when it was last called (None: not called).
    let mut called_at: Vec<Option<usize>> = vec![None; hooks.len()];
    let mut mutations = 0usize;
    for pass in 0..2 {
        for (i, hook) in hooks.iter().enumerate() {
            if pass == 1 {
                let due = hook.reinvoke_if_needed && called_at[i].is_some_and(|at| at < mutations);
                if !due {
                    continue;
                }
            }
            let current = object.as_deref().cloned();
            let view = match decide(store, inv, hook, current.as_ref(), old) {
                Decision::Skip => continue,
                Decision::Fail(err) => return Err(err),
                Decision::Call(view) => view,
            };
            let request = inv.review_request_as(
                &new_uid(),
                view.equivalent,
                view.object.as_deref(),
                view.old.as_deref(),
            );
            let answer = match call(store, inv.cluster, hook, request).await {
                Ok(a) => a,
                Err(failure) => match hook.failure_policy {
                    FailurePolicy::Fail => return Err(failure.to_error(hook)),
                    FailurePolicy::Ignore => {
                        tracing::warn!(
                            webhook = hook.name,
                            ?failure,
                            "webhook call failed; ignored"
                        );
                        continue;
                    }
                },
            };
            warnings.extend(answer.warnings.iter().cloned());
            if !answer.allowed {
                return Err(denial(hook, answer.status.as_ref()));
            }
            if let (Some(patch), Some(slot)) = (&answer.patch, object.as_deref_mut()) {
                let seen = view.object.as_deref().unwrap_or(&*slot);
                let mut patched =
                    ocm_apiserver_patch::apply_json_patch(seen, patch).map_err(|err| {
                        ApiError::internal(format!(
                            "failed calling webhook \"{}\": JSON patch from webhook failed: {err}",
                            hook.name
                        ))
                    })?;
                if view.equivalent.is_some() {
                    patched = (inv.convert)(patched, &inv.attrs.api_version())?;
                }
                if patched != *slot {
                    *slot = patched;
                    mutations += 1;
                }
            }
            // A webhook's own change does not make it due for reinvocation.
            if pass == 0 {
                called_at[i] = Some(mutations);
            }
        }
        if pass == 0 && mutations == 0 {
            break;
        }
    }
    Ok(())
}

/// Runs the validating webhooks of the request's cluster, in parallel; every one must allow.
/// The first failure or denial in webhook order is the error.
pub async fn run_validating(
    store: &Store,
    hooks: &[Webhook],
    inv: &Invocation<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let mut calls = Vec::new();
    for hook in hooks {
        match decide(store, inv, hook, object, old) {
            Decision::Skip => {}
            Decision::Fail(err) => return Err(err),
            Decision::Call(view) => {
                let request = inv.review_request_as(
                    &new_uid(),
                    view.equivalent,
                    view.object.as_deref(),
                    view.old.as_deref(),
                );
                calls.push(async move { (hook, call(store, inv.cluster, hook, request).await) });
            }
        }
    }
    if calls.is_empty() {
        return Ok(());
    }
    let results = futures::future::join_all(calls).await;
    let mut first_error = None;
    for (hook, result) in results {
        let err = match result {
            Ok(answer) => {
                warnings.extend(answer.warnings.iter().cloned());
                if answer.allowed {
                    continue;
                }
                denial(hook, answer.status.as_ref())
            }
            Err(failure) => match hook.failure_policy {
                FailurePolicy::Ignore => {
                    tracing::warn!(
                        webhook = hook.name,
                        ?failure,
                        "webhook call failed; ignored"
                    );
                    continue;
                }
                FailurePolicy::Fail => failure.to_error(hook),
            },
        };
        first_error.get_or_insert(err);
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(mutating: bool) -> Webhook {
        parse_configuration(
            &json!({"metadata": {"name": "c"}, "webhooks": [{
                "name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://127.0.0.1:1/"}, "rules": []}]}),
            mutating,
        )
        .remove(0)
    }

    #[test]
    fn answers_are_checked() {
        let h = hook(false);
        let ok = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "u", "allowed": true}});
        assert!(verify(&h, "u", &ok).is_ok_and(|a| a.allowed));
        assert_eq!(
            verify(&h, "x", &ok).err().as_deref(),
            Some("expected response.uid=\"x\", got \"u\"")
        );
        assert!(verify(&h, "u", &json!({"hello": 1})).is_err());
        let patched = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": "W10="}});
        assert_eq!(
            verify(&h, "u", &patched).err().as_deref(),
            Some("validating webhooks may not return patches")
        );
        assert_eq!(
            verify(&hook(true), "u", &patched)
                .ok()
                .and_then(|a| a.patch),
            Some(json!([]))
        );
    }

    #[test]
    fn denials_keep_the_webhook_status() {
        let h = hook(false);
        let e = denial(
            &h,
            Some(&json!({"code": 422, "reason": "Invalid", "message": "no"})),
        );
        assert_eq!(e.code, 422);
        assert_eq!(e.reason, "Invalid");
        assert_eq!(
            e.message,
            "admission webhook \"w.example.com\" denied the request: no"
        );
        let e = denial(&h, None);
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "admission webhook \"w.example.com\" denied the request without explanation"
        );
    }
}

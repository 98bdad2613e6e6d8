//! Request authorization wiring: the RBAC [`Policy`] of each logical cluster kept current from
//! storage, the check every request passes before reaching a handler (403 with kube's
//! message), and impersonation (`Impersonate-User` / `Impersonate-Group`, guarded by the
//! `impersonate` verb).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::HeaderMap;
use serde_json::Value;

use crate::auth::Identity;
use crate::error::ApiError;
use crate::ops::{Ctx, Target as OpsTarget};
use crate::rbac::{Attributes, Forbidden, LivePolicy, Policy, PolicyError, RBAC_GROUP};
use crate::server::Inner;
use crate::storage::{Bucket, Event, EventKind, Revision};

/// The RBAC storage buckets, in the order objects are loaded.
const RBAC_RESOURCES: [&str; 4] = [
    "clusterroles",
    "roles",
    "clusterrolebindings",
    "rolebindings",
];

/// The kind stored in each of [`RBAC_RESOURCES`].
const RBAC_KINDS: [&str; 4] = ["ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"];

/// Each cluster's policy, kept current by applying the RBAC changes made since it was last
/// brought up to date (rebuilt from scratch only when the history window no longer holds them).
#[derive(Default)]
pub(crate) struct PolicyCache {
    by_cluster: Mutex<HashMap<String, CachedPolicy>>,
}

/// One cluster's policy and the state of storage it reflects.
struct CachedPolicy {
    /// The fingerprint when the policy was last brought up to date.
    seen: Fingerprint,
    /// Per bucket: every change up to this revision is applied.
    applied: [Revision; 4],
    live: LivePolicy,
}

/// Identifies a state of a cluster's RBAC objects: per bucket, the revision of its last write.
/// Every create, update and delete is a write at a new, higher revision, so equal
/// fingerprints mean equal states. O(1) per request.
type Fingerprint = [Revision; 4];

fn bucket(cluster: &str, resource: &str) -> Bucket {
    Bucket::new(cluster, &format!("{RBAC_GROUP}/{resource}"))
}

fn fingerprint(inner: &Inner, cluster: &str) -> Fingerprint {
    RBAC_RESOURCES.map(|resource| inner.store.bucket_revision(&bucket(cluster, resource)))
}

/// Builds a cluster's policy from scratch: the stored objects, with aggregated ClusterRoles
/// filled. Only what is stored counts, as in kube-apiserver: the default roles and bindings are
/// stored when a logical cluster is created (and the missing ones again when the server
/// starts), so deleting one takes its permissions away until then.
fn build_policy(inner: &Inner, cluster: &str, seen: Fingerprint) -> CachedPolicy {
    let mut live = LivePolicy::new(Arc::new(Policy::default()));
    let mut applied = [0; 4];
    for (i, resource) in RBAC_RESOURCES.into_iter().enumerate() {
        let (revision, items) = inner.store.list(&bucket(cluster, resource), None, None);
        applied[i] = revision;
        for (_, name, object) in items {
            let Ok(value) = serde_json::from_slice::<Value>(&object.value) else {
                continue;
            };
            if let Err(err) = live.upsert(&value) {
                tracing::warn!(resource, name, %err, "stored RBAC object ignored");
            }
        }
    }
    CachedPolicy {
        seen,
        applied,
        live,
    }
}

/// Applies the changes of `bucket` committed after `entry.applied`, as a full rebuild would
/// see them (an object that does not decode counts as absent). `Err` when the history window
/// no longer holds them.
fn catch_up(
    inner: &Inner,
    cluster: &str,
    entry: &mut CachedPolicy,
    seen: Fingerprint,
) -> Result<(), crate::storage::StorageError> {
    for (i, resource) in RBAC_RESOURCES.into_iter().enumerate() {
        if entry.seen[i] == seen[i] {
            continue;
        }
        let kind = RBAC_KINDS[i];
        for event in inner
            .store
            .changes_since(&bucket(cluster, resource), entry.applied[i])?
        {
            let key = &event.key;
            let applied = match event.kind {
                EventKind::Deleted => Ok(false),
                EventKind::Added | EventKind::Modified => apply_stored(&mut entry.live, &event),
            };
            match applied {
                Ok(true) => {}
                Ok(false) => entry.live.remove(kind, &key.namespace, &key.name),
                Err(err) => {
                    tracing::warn!(resource, name = key.name, %err, "stored RBAC object ignored");
                    entry.live.remove(kind, &key.namespace, &key.name);
                }
            }
            entry.applied[i] = event.rev;
        }
    }
    entry.seen = seen;
    Ok(())
}

/// Upserts the object an event stored: `Ok(false)` when it is not JSON, `Err` when it is not
/// a readable RBAC object (a full rebuild skips both).
fn apply_stored(live: &mut LivePolicy, event: &Event) -> Result<bool, PolicyError> {
    let Ok(value) = serde_json::from_slice::<Value>(&event.object) else {
        return Ok(false);
    };
    live.upsert(&value).map(|()| true)
}

/// The current policy of `cluster`.
pub(crate) fn policy(inner: &Inner, cluster: &str) -> Arc<Policy> {
    // Held throughout: racing requests apply each change once, in order.
    let mut cache = inner
        .policies
        .by_cluster
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let current = fingerprint(inner, cluster);
    if let Some(entry) = cache.get_mut(cluster) {
        if entry.seen == current {
            return entry.live.snapshot();
        }
        match catch_up(inner, cluster, entry, current) {
            Ok(()) => return entry.live.snapshot(),
            Err(err) => tracing::debug!(cluster, %err, "RBAC changes compacted; rebuilding policy"),
        }
    }
    let mut built = build_policy(inner, cluster, current);
    let snapshot = built.live.snapshot();
    cache.insert(cluster.to_owned(), built);
    snapshot
}

/// Checks `attrs` against the cluster's policy: `Err` is the 403.
pub(crate) fn check(inner: &Inner, cluster: &str, attrs: &Attributes) -> Result<(), ApiError> {
    if attrs.user.is_master() {
        return Ok(());
    }
    let decision = policy(inner, cluster).authorize(attrs);
    if decision.allowed {
        Ok(())
    } else {
        Err(Forbidden::for_request(attrs, &decision.reason).to_api_error())
    }
}

/// Authorizes a request whose attributes were read from its path (`attrs.user` is ignored:
/// the request is `identity`'s).
pub(crate) fn authorize(
    inner: &Inner,
    cluster: &str,
    identity: &Identity,
    attrs: &Attributes,
) -> Result<(), ApiError> {
    if identity.is_master() {
        return Ok(());
    }
    let attrs = Attributes {
        user: identity.clone(),
        ..attrs.clone()
    };
    check(inner, cluster, &attrs)
}

fn header_values(headers: &HeaderMap, name: &str) -> Result<Vec<String>, ApiError> {
    headers
        .get_all(name)
        .iter()
        .map(|v| {
            v.to_str()
                .map(str::to_owned)
                .map_err(|_| ApiError::bad_request(format!("invalid {name} header")))
        })
        .collect()
}

/// API group of the `uids` and `userextras` impersonation resources.
const AUTHN_GROUP: &str = "authentication.k8s.io";

/// The `Impersonate-Extra-<key>` headers: keys lowercased and percent-decoded, as
/// kube-apiserver reads them; a key whose escapes do not decode is kept as sent (lowercased),
/// as kube-apiserver keeps it.
fn impersonated_extra(
    headers: &HeaderMap,
) -> Result<std::collections::BTreeMap<String, Vec<String>>, ApiError> {
    const PREFIX: &str = "impersonate-extra-";
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (name, value) in headers {
        let Some(key) = name.as_str().strip_prefix(PREFIX) else {
            continue;
        };
        let key = key.to_ascii_lowercase();
        let key = percent_decode(&key).unwrap_or(key);
        let value = value
            .to_str()
            .map_err(|_| ApiError::bad_request(format!("invalid {name} header")))?;
        out.entry(key).or_default().push(value.to_owned());
    }
    Ok(out)
}

/// `%XX` escapes decoded; `None` for a malformed escape or invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Applies impersonation headers: the requester must be allowed `impersonate` on each
/// requested user (or service account) and group. Returns the identity to act as.
pub(crate) fn impersonate(
    inner: &Inner,
    cluster: &str,
    requester: Identity,
    headers: &HeaderMap,
) -> Result<Identity, ApiError> {
    let users = header_values(headers, "impersonate-user")?;
    let groups = header_values(headers, "impersonate-group")?;
    let uids = header_values(headers, "impersonate-uid")?;
    let extra = impersonated_extra(headers)?;
    if users.is_empty() {
        if groups.is_empty() && uids.is_empty() && extra.is_empty() {
            return Ok(requester);
        }
        return Err(ApiError::bad_request(format!(
            "requested {:?} without impersonating a user",
            groups
                .iter()
                .chain(uids.iter())
                .chain(extra.keys())
                .collect::<Vec<_>>()
        )));
    }
    if uids.len() > 1 {
        return Err(ApiError::bad_request(
            "only one impersonate-uid header is allowed",
        ));
    }
    let user = users[0].clone();
    let user_attrs = match user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        Some((ns, name)) => {
            Attributes::resource(requester.clone(), "impersonate", "", "serviceaccounts", ns)
                .with_name(name)
        }
        None => {
            Attributes::resource(requester.clone(), "impersonate", "", "users", "").with_name(&user)
        }
    };
    check(inner, cluster, &user_attrs)?;
    for group in &groups {
        let attrs = Attributes::resource(requester.clone(), "impersonate", "", "groups", "")
            .with_name(group);
        check(inner, cluster, &attrs)?;
    }
    for uid in &uids {
        let attrs = Attributes::resource(requester.clone(), "impersonate", AUTHN_GROUP, "uids", "")
            .with_name(uid);
        check(inner, cluster, &attrs)?;
    }
    for (key, values) in &extra {
        for value in values {
            let attrs = Attributes::resource(
                requester.clone(),
                "impersonate",
                AUTHN_GROUP,
                "userextras",
                "",
            )
            .with_subresource(key)
            .with_name(value);
            check(inner, cluster, &attrs)?;
        }
    }
    let mut identity = Identity {
        user: user.clone(),
        groups,
        uid: uids.into_iter().next().unwrap_or_default(),
        extra,
    };
    if let Some(rest) = user.strip_prefix("system:serviceaccount:")
        && let Some((ns, _)) = rest.split_once(':')
    {
        for g in [
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{ns}"),
        ] {
            if !identity.groups.contains(&g) {
                identity.groups.push(g);
            }
        }
    }
    Ok(crate::pki::with_authenticated_group(identity))
}

fn condition_types(obj: &Value) -> Vec<String> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter(|c| c.get("status").and_then(Value::as_str).unwrap_or("True") == "True")
                .filter_map(|c| c.get("type").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// How many conditions of `type_` (whatever their status) `obj` has.
fn condition_count(obj: &Value, type_: &str) -> usize {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(0, |cs| cs.iter().filter(|c| c["type"] == type_).count())
}

/// A 422 for a CertificateSigningRequest, worded as kube-apiserver's field errors:
/// `Invalid value: "<value>": <detail>` when `value` is given, else `Forbidden: <detail>`.
fn csr_invalid(name: &str, field: &str, value: Option<&str>, detail: &str) -> ApiError {
    let (reason, text) = match value {
        Some(v) => (
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: {detail}",
                crate::validation::go_quote(v)
            ),
        ),
        None => ("FieldValueForbidden", format!("Forbidden: {detail}")),
    };
    let message = format!(
        "CertificateSigningRequest.certificates.k8s.io {} is invalid: {field}: {text}",
        crate::validation::go_quote(name),
    );
    ApiError::new(422, "Invalid", message)
        .with_causes(vec![crate::error::Cause::new(reason, text, field)])
}

/// Index of the first condition of `type_` in `obj`'s `status.conditions`.
fn condition_index(obj: &Value, type_: &str) -> usize {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().position(|c| c["type"] == type_))
        .unwrap_or(0)
}

/// The CertificateApproval / CertificateSigning admission and the CSR status rules.
fn admit_csr(
    ctx: &Ctx,
    name: &str,
    new: &Value,
    old: &Value,
    target: &OpsTarget,
) -> Result<(), ApiError> {
    let signer = new
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let old_conditions = condition_types(old);
    let new_conditions = condition_types(new);
    let decided = |c: &[String], t: &str| c.iter().any(|x| x == t);
    if decided(&new_conditions, "Approved") && decided(&new_conditions, "Denied") {
        // Reported at the later of the two, as kube does.
        let (approved, denied) = (
            condition_index(new, "Approved"),
            condition_index(new, "Denied"),
        );
        let (index, type_) = if approved > denied {
            (approved, "Approved")
        } else {
            (denied, "Denied")
        };
        return Err(csr_invalid(
            name,
            &format!("status.conditions[{index}].type"),
            Some(type_),
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    for t in ["Approved", "Denied"] {
        if decided(&old_conditions, t) && !decided(&new_conditions, t) {
            return Err(csr_invalid(
                name,
                "status.conditions",
                None,
                &format!("updates may not remove a condition of type {t:?}"),
            ));
        }
    }
    let master = ctx.identity.is_master();
    let policy = || policy(&ctx.inner, &ctx.cluster);
    match target {
        OpsTarget::Sub(sub)
            if sub == "approval"
                && !master
                && old_conditions != new_conditions
                && !crate::rbac::authorized_for_signer(
                    &policy(),
                    &ctx.identity,
                    "approve",
                    &signer,
                ) =>
        {
            return Err(crate::rbac::signer_forbidden(name, "approve", &signer).to_api_error());
        }
        OpsTarget::Sub(sub) if sub == "status" => {
            // Approval and denial go through /approval only.
            for t in ["Approved", "Denied"] {
                if condition_count(new, t) > condition_count(old, t) {
                    return Err(csr_invalid(
                        name,
                        "status.conditions",
                        None,
                        &format!("updates may not add a condition of type {t:?}"),
                    ));
                }
            }
            let old_cert = old
                .pointer("/status/certificate")
                .and_then(Value::as_str)
                .unwrap_or("");
            let new_cert = new
                .pointer("/status/certificate")
                .and_then(Value::as_str)
                .unwrap_or("");
            if old_cert != new_cert {
                if !master
                    && !crate::rbac::authorized_for_signer(
                        &policy(),
                        &ctx.identity,
                        "sign",
                        &signer,
                    )
                {
                    return Err(crate::rbac::signer_forbidden(name, "sign", &signer).to_api_error());
                }
                if !old_cert.is_empty() {
                    return Err(csr_invalid(
                        name,
                        "status.certificate",
                        None,
                        "updates may not modify existing certificate content",
                    ));
                }
                if !decided(&new_conditions, "Approved") {
                    return Err(csr_invalid(
                        name,
                        "status.certificate",
                        None,
                        "certificate can only be set once an Approved condition exists",
                    ));
                }
                if decided(&new_conditions, "Failed") {
                    return Err(csr_invalid(
                        name,
                        "status.certificate",
                        None,
                        "certificate cannot be set on a CSR with a Failed condition",
                    ));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Admission of a write after the pipeline prepared it: RBAC escalation prevention and the
/// CSR approval/signing rules. `old` is `None` on create; `request_name` empty on create.
pub(crate) fn admit(
    ctx: &Ctx,
    namespace: &str,
    request_name: &str,
    new: &Value,
    old: Option<&Value>,
    target: &OpsTarget,
) -> Result<(), ApiError> {
    if ctx.res.group == RBAC_GROUP && *target == OpsTarget::Main && !ctx.identity.is_master() {
        let write = crate::rbac::RbacWrite {
            resource: &ctx.res.plural,
            namespace,
            request_name,
            object: new,
            old_object: old,
        };
        crate::rbac::check_escalation(&policy(&ctx.inner, &ctx.cluster), &ctx.identity, &write)
            .map_err(|f| f.to_api_error())?;
    }
    if ctx.res.builtin() == Some(crate::registry::BuiltinKind::CertificateSigningRequest)
        && let Some(old) = old
    {
        admit_csr(ctx, request_name, new, old, target)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_true_conditions_count() {
        let csr = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "False"},
            {"type": "Failed"},
        ]}});
        assert_eq!(condition_types(&csr), ["Approved", "Failed"]);
        assert!(condition_types(&json!({})).is_empty());
    }

    #[test]
    fn impersonation_headers_must_be_text() {
        let mut h = HeaderMap::new();
        h.append("impersonate-group", "a".parse().unwrap());
        h.append("impersonate-group", "b".parse().unwrap());
        assert_eq!(header_values(&h, "impersonate-group").unwrap(), ["a", "b"]);
        h.insert(
            "impersonate-user",
            http::HeaderValue::from_bytes(b"\xff").unwrap(),
        );
        assert_eq!(header_values(&h, "impersonate-user").unwrap_err().code, 400);
    }

    #[test]
    fn csr_invalid_is_a_422_with_a_cause() {
        let err = csr_invalid("c", "status.conditions[1].type", Some("Denied"), "nope");
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "CertificateSigningRequest.certificates.k8s.io \"c\" is invalid: status.conditions[1].type: Invalid value: \"Denied\": nope"
        );
        let err = csr_invalid(
            "c",
            "status.certificate",
            None,
            "updates may not modify existing certificate content",
        );
        assert_eq!(
            err.message,
            "CertificateSigningRequest.certificates.k8s.io \"c\" is invalid: status.certificate: Forbidden: updates may not modify existing certificate content"
        );
    }
}

//! kube-apiserver's built-in admission of two kinds of writes, after the pipeline prepared
//! them: RBAC writes (escalation prevention) and CertificateSigningRequest status changes
//! (CertificateApproval / CertificateSigning and the CSR status rules).

use serde_json::Value;

use crate::ops::{Ctx, Target as OpsTarget};
use ocm_apiserver_rbac::RBAC_GROUP;
use ocm_apiserver_status::ApiError;

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
        .with_causes(vec![ocm_apiserver_status::Cause::new(reason, text, field)])
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
    let policy = || ctx.inner.policy(&ctx.cluster);
    match target {
        OpsTarget::Sub(sub)
            if sub == "approval"
                && !master
                && old_conditions != new_conditions
                && !ocm_apiserver_rbac::authorized_for_signer(
                    &policy(),
                    &ctx.identity,
                    "approve",
                    &signer,
                ) =>
        {
            return Err(
                ocm_apiserver_rbac::signer_forbidden(name, "approve", &signer).to_api_error(),
            );
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
                    && !ocm_apiserver_rbac::authorized_for_signer(
                        &policy(),
                        &ctx.identity,
                        "sign",
                        &signer,
                    )
                {
                    return Err(
                        ocm_apiserver_rbac::signer_forbidden(name, "sign", &signer).to_api_error()
                    );
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
        let write = ocm_apiserver_rbac::RbacWrite {
            resource: &ctx.res.plural,
            namespace,
            request_name,
            object: new,
            old_object: old,
        };
        ocm_apiserver_rbac::check_escalation(
            &ctx.inner.policy(&ctx.cluster),
            &ctx.identity,
            &write,
        )
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

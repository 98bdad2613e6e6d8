//! kube-apiserver's authorization of params at write time: whoever writes a policy with a
//! `paramKind` must be allowed to `get` every object of that kind, and whoever writes a
//! binding with a `paramRef` must be allowed to `get` the object it refers to; otherwise the
//! write is a 422 with a `Forbidden` cause on `spec.paramKind` / `spec.paramRef`. Members of
//! `system:masters` are not checked. Pure: the caller resolves kinds and answers access checks.

use serde_json::Value;

use super::spec::{ParamKind, str_of};
use crate::auth::Identity;
use crate::validation::Cause;
use ocm_apiserver_rbac::ResourceAttributes;

/// How Go's `%v` prints a `user.Info` (`&{name uid [groups] map[extra]}`), as kube's
/// messages show the user.
pub fn go_user(user: &Identity) -> String {
    let extra: Vec<String> = user
        .extra
        .iter()
        .map(|(k, v)| format!("{k}:[{}]", v.join(" ")))
        .collect();
    format!(
        "&{{{} {} [{}] map[{}]}}",
        user.user,
        user.uid,
        user.groups.join(" "),
        extra.join(" ")
    )
}

/// Group, version and plural resource an access check names for a param kind (`*` for what
/// cannot be resolved).
fn target(kind: Option<&ParamKind>, resolve: &dyn Fn(&ParamKind) -> Option<String>) -> [String; 2] {
    match kind {
        Some(k) if k.api_version.matches('/').count() <= 1 => [
            k.group().to_owned(),
            resolve(k).unwrap_or_else(|| "*".to_owned()),
        ],
        _ => ["*".to_owned(), "*".to_owned()],
    }
}

/// The check of a policy write: `None` when allowed or not needed.
pub fn check_policy(
    obj: &Value,
    old: Option<&Value>,
    user: &Identity,
    resolve: &dyn Fn(&ParamKind) -> Option<String>,
    allowed: &dyn Fn(&ResourceAttributes) -> bool,
) -> Option<Cause> {
    let kind = ParamKind::of_policy(obj)?;
    if user.is_master() || old.and_then(ParamKind::of_policy).as_ref() == Some(&kind) {
        return None;
    }
    let [group, resource] = target(Some(&kind), resolve);
    let attrs = ResourceAttributes {
        namespace: "*".to_owned(),
        group,
        resource,
        subresource: String::new(),
        name: "*".to_owned(),
        ..ResourceAttributes::default()
    };
    (!allowed(&attrs)).then(|| {
        Cause::forbidden(
            "spec.paramKind",
            &format!(
                "user {} must have \"get\" permission on all objects of the referenced paramKind (kind={}, apiVersion={})",
                go_user(user),
                kind.kind,
                kind.api_version
            ),
        )
    })
}

/// The check of a binding write, given the `paramKind` of its policy (if it exists and has
/// one): `None` when allowed or not needed.
pub fn check_binding(
    obj: &Value,
    old: Option<&Value>,
    policy_kind: Option<&ParamKind>,
    user: &Identity,
    resolve: &dyn Fn(&ParamKind) -> Option<String>,
    allowed: &dyn Fn(&ResourceAttributes) -> bool,
) -> Option<Cause> {
    let param_ref = obj.pointer("/spec/paramRef").filter(|p| p.is_object())?;
    if user.is_master() {
        return None;
    }
    if let Some(old) = old
        && old.pointer("/spec/paramRef") == Some(param_ref)
        && old.pointer("/spec/policyName") == obj.pointer("/spec/policyName")
    {
        return None;
    }
    let [group, resource] = target(policy_kind, resolve);
    let attrs = ResourceAttributes {
        namespace: str_of(param_ref, "namespace").to_owned(),
        group,
        resource,
        subresource: String::new(),
        name: str_of(param_ref, "name").to_owned(),
        ..ResourceAttributes::default()
    };
    (!allowed(&attrs)).then(|| {
        Cause::forbidden(
            "spec.paramRef",
            &format!(
                "user {} does not have \"get\" permission on the object referenced by paramRef",
                go_user(user)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bob() -> Identity {
        Identity {
            user: "bob".into(),
            groups: vec!["system:authenticated".into()],
            uid: String::new(),
            extra: Default::default(),
        }
    }

    #[test]
    fn param_kinds_and_refs_need_read_access() {
        let policy = json!({"spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        let resolve = |_: &ParamKind| Some("configmaps".to_owned());
        let deny = |_: &ResourceAttributes| false;
        let cause = check_policy(&policy, None, &bob(), &resolve, &deny).map(|c| c.message);
        assert_eq!(
            cause.as_deref(),
            Some(
                "Forbidden: user &{bob  [system:authenticated] map[]} must have \"get\" permission on all objects of the referenced paramKind (kind=ConfigMap, apiVersion=v1)"
            )
        );
        let only_configmaps = |a: &ResourceAttributes| a.resource == "configmaps" && a.name == "*";
        assert!(check_policy(&policy, None, &bob(), &resolve, &only_configmaps).is_none());
        // An unchanged paramKind is not checked again.
        assert!(check_policy(&policy, Some(&policy), &bob(), &resolve, &deny).is_none());
        assert!(check_policy(&policy, None, &Identity::admin(), &resolve, &deny).is_none());

        let binding =
            json!({"spec": {"policyName": "p", "paramRef": {"name": "limits", "namespace": "a"}}});
        let kind = ParamKind::of_policy(&policy);
        let cause = check_binding(&binding, None, kind.as_ref(), &bob(), &resolve, &deny);
        assert_eq!(cause.map(|c| c.field), Some("spec.paramRef".to_owned()));
        let that_one = |a: &ResourceAttributes| a.name == "limits" && a.namespace == "a";
        assert!(
            check_binding(&binding, None, kind.as_ref(), &bob(), &resolve, &that_one).is_none()
        );
        let no_ref = json!({"spec": {"policyName": "p"}});
        assert!(check_binding(&no_ref, None, None, &bob(), &resolve, &deny).is_none());
    }
}

//! Request authorization wiring: the RBAC [`Policy`] of each logical cluster kept current from
//! storage, the check every request passes before reaching a handler (403 with kube's
//! message), and impersonation (`Impersonate-User` / `Impersonate-Group`, guarded by the
//! `impersonate` verb).

use std::sync::Arc;

use http::HeaderMap;

use crate::auth::Identity;
use ocm_apiserver_rbac::{Attributes, Forbidden, Policy};
use ocm_apiserver_status::ApiError;

/// The current RBAC policy of the request's logical cluster, read only when a check needs it
/// (the cluster's administrators need none).
pub(crate) type PolicyOf<'a> = &'a dyn Fn() -> Arc<Policy>;

/// Checks `attrs` against the cluster's policy: `Err` is the 403.
pub(crate) fn check(policy: PolicyOf<'_>, attrs: &Attributes) -> Result<(), ApiError> {
    if attrs.user.is_master() {
        return Ok(());
    }
    let decision = policy().authorize(attrs);
    if decision.allowed {
        Ok(())
    } else {
        Err(Forbidden::for_request(attrs, &decision.reason).to_api_error())
    }
}

/// Authorizes a request whose attributes were read from its path (`attrs.user` is ignored:
/// the request is `identity`'s).
pub(crate) fn authorize(
    policy: PolicyOf<'_>,
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
    check(policy, &attrs)
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
    policy: PolicyOf<'_>,
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
    check(policy, &user_attrs)?;
    for group in &groups {
        let attrs = Attributes::resource(requester.clone(), "impersonate", "", "groups", "")
            .with_name(group);
        check(policy, &attrs)?;
    }
    for uid in &uids {
        let attrs = Attributes::resource(requester.clone(), "impersonate", AUTHN_GROUP, "uids", "")
            .with_name(uid);
        check(policy, &attrs)?;
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
            check(policy, &attrs)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! 403 Forbidden errors worded exactly as kube-apiserver words them.

use super::attributes::{Attributes, Target};
use ocm_apiserver_status::{ApiError, Details};
use ocm_apiserver_validation::go_quote;

/// A refused request: becomes a 403 `Forbidden` Status.
///
/// `message` is the whole Status message, e.g.
/// `secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "ns"`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Forbidden {
    /// API group of the resource (`details.group`).
    pub group: String,
    /// Plural resource, without subresource (`details.kind`); empty for non-resource paths.
    pub resource: String,
    /// Object name (`details.name`); may be empty.
    pub name: String,
    /// The Status message.
    pub message: String,
}

impl Forbidden {
    /// kube's `errors.NewForbidden(groupResource, name, err)`: `forbidden: <err>` without a
    /// resource, `<resource[.group]> is forbidden: <err>` without a name, else
    /// `<resource[.group]> "<name>" is forbidden: <err>`.
    pub fn new(group: &str, resource: &str, name: &str, err: impl std::fmt::Display) -> Self {
        let qualified = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        let message = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {err}")
        } else if name.is_empty() {
            format!("{qualified} is forbidden: {err}")
        } else {
            format!("{qualified} {} is forbidden: {err}", go_quote(name))
        };
        Forbidden {
            group: group.to_owned(),
            resource: resource.to_owned(),
            name: name.to_owned(),
            message,
        }
    }

    /// The Forbidden error the authorization filter writes for a denied request; `reason` is
    /// the authorizer's reason ([`super::Decision::reason`]), appended after `: ` when not
    /// empty. Examples:
    /// * `pods "p" is forbidden: User "u" cannot get resource "pods/log" in API group "" in the namespace "ns"`
    /// * `nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope`
    /// * `forbidden: User "u" cannot get path "/metrics"`
    pub fn for_request(attrs: &Attributes, reason: &str) -> Self {
        let mut msg = forbidden_message(attrs);
        if !reason.is_empty() {
            msg.push_str(": ");
            msg.push_str(reason);
        }
        match &attrs.target {
            Target::Resource(r) => Forbidden::new(&r.group, &r.resource, &r.name, msg),
            Target::NonResource { .. } => Forbidden::new("", "", "", msg),
        }
    }

    /// The 403 API error (Status with reason `Forbidden` and details group/kind/name).
    pub fn to_api_error(&self) -> ApiError {
        let mut err = ApiError::new(403, "Forbidden", self.message.clone());
        err.details = Some(Box::new(Details {
            name: self.name.clone(),
            group: self.group.clone(),
            kind: self.resource.clone(),
            ..Details::default()
        }));
        err
    }
}

impl From<Forbidden> for ApiError {
    fn from(f: Forbidden) -> Self {
        f.to_api_error()
    }
}

/// kube's `forbiddenMessage`: `User "u" cannot <verb> resource "<res[/sub]>" in API group "<g>"
/// in the namespace "<ns>"` (or `at the cluster scope`), or `User "u" cannot <verb> path "<p>"`.
pub fn forbidden_message(attrs: &Attributes) -> String {
    let user = go_quote(&attrs.user.user);
    match &attrs.target {
        Target::NonResource { path } => {
            format!("User {user} cannot {} path {}", attrs.verb, go_quote(path))
        }
        Target::Resource(r) => {
            let scope = if r.namespace.is_empty() {
                "at the cluster scope".to_owned()
            } else {
                format!("in the namespace {}", go_quote(&r.namespace))
            };
            format!(
                "User {user} cannot {} resource {} in API group {} {scope}",
                attrs.verb,
                go_quote(&r.combined_resource()),
                go_quote(&r.group)
            )
        }
    }
}

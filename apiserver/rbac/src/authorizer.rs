//! The authorization decision: kube-apiserver's privileged-group authorizer (`system:masters`)
//! followed by RBAC.

use super::attributes::Attributes;
use super::policy::{Policy, Visit};
use super::rules::rule_allows;

/// The group whose members may do anything (kube's `user.SystemPrivilegedGroup`).
pub const SYSTEM_MASTERS: &str = "system:masters";

/// The outcome of authorizing one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// kube's reason: on allow, `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to
    /// User "u"` (empty for `system:masters`); on deny, empty or `RBAC: <resolution errors>`
    /// (bindings to missing roles). Appended to the Forbidden message after `: ` when not empty.
    pub reason: String,
}

/// kube's `utilerrors.NewAggregate(errs).Error()`: one message as is, several deduplicated in
/// `[a, b]`.
pub(crate) fn aggregate_errors(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen[0].to_owned(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

impl Policy {
    /// Authorizes one request: `system:masters` first, then RBAC (ClusterRoleBindings, then
    /// RoleBindings in the request's namespace). RBAC only allows; there is no deny rule.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        if attrs.user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
            return Decision {
                allowed: true,
                reason: String::new(),
            };
        }
        let mut allowed_by = None;
        let mut errors = Vec::new();
        self.visit_rules_for(
            &attrs.user,
            attrs.namespace(),
            &mut |source, visit| match visit {
                Visit::Rule(rule) if rule_allows(attrs, rule) => {
                    allowed_by = Some(format!("RBAC: allowed by {source}"));
                    false
                }
                Visit::Rule(_) => true,
                Visit::Error(e) => {
                    errors.push(e);
                    true
                }
            },
        );
        match allowed_by {
            Some(reason) => Decision {
                allowed: true,
                reason,
            },
            None if errors.is_empty() => Decision {
                allowed: false,
                reason: String::new(),
            },
            None => Decision {
                allowed: false,
                reason: format!("RBAC: {}", aggregate_errors(&errors)),
            },
        }
    }

    /// Whether `attrs` is allowed (see [`Policy::authorize`]).
    pub fn allows(&self, attrs: &Attributes) -> bool {
        self.authorize(attrs).allowed
    }
}

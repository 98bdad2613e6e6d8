//! Authorization: RBAC as kube-apiserver evaluates it, for an [`Identity`]. Pure: every function takes the objects
//! it needs and returns a decision; nothing here touches storage or HTTP.
//!
//! * [`Policy`] — the Roles, ClusterRoles and bindings in force; [`Policy::authorize`] decides
//!   one request ([`Attributes`]) the way kube's privileged-group + RBAC authorizers do.
//! * [`Forbidden`] — the 403 with kube's exact message (`User "x" cannot list resource
//!   "secrets" in API group "" in the namespace "ns"`).
//! * [`check_escalation`] — escalation prevention on writes of roles and bindings
//!   (`escalate`, `bind`).
//! * [`aggregated_rules`], [`Policy::pending_aggregations`] — ClusterRole aggregation.
//! * [`authorized_for_signer`], [`signer_forbidden`] — `approve`/`sign` on CSR signer names.
//! * [`LivePolicy`] — a policy kept current change by change.
//! * [`bootstrap`] — the default policy objects kube-apiserver creates on start.
//! * [`subject_access_review`], [`self_subject_access_review`],
//!   [`local_subject_access_review`], [`self_subject_rules_review`] — the access reviews.

mod aggregation;
mod attributes;
mod authorizer;
pub mod bootstrap;
mod escalation;
mod forbidden;
mod live;
mod policy;
mod review;
mod review_selectors;
pub mod rules;
mod signer;
mod user;

pub use aggregation::{Aggregators, aggregated_rules};
pub use attributes::{Attributes, ResourceAttributes, SelectorAttributes, Target};
pub use authorizer::{Decision, SYSTEM_MASTERS};
pub use escalation::{
    RbacWrite, check_escalation, confirm_no_escalation, only_gc_fields_changed, rules_of,
};
pub use forbidden::{Forbidden, forbidden_message};
pub use live::LivePolicy;
pub use policy::{
    Policy, PolicyError, RBAC_GROUP, RuleSource, Visit, applies_to, service_account_username,
};
pub use review::{
    local_subject_access_review, self_subject_access_review, self_subject_rules_review,
    subject_access_review,
};
pub use signer::{authorized_for_signer, signer_forbidden};
pub use user::Identity;

impl Policy {
    /// The default policy ([`bootstrap::default_objects`]) with aggregated roles filled, as a
    /// fresh kube-apiserver + controller-manager would have it.
    pub fn bootstrap() -> Self {
        let mut policy = Policy::new();
        for obj in bootstrap::default_objects() {
            if let Err(e) = policy.upsert(&obj) {
                tracing::error!(error = %e, "bootstrap RBAC object rejected");
            }
        }
        policy.aggregate_to_fixed_point();
        policy
    }
}

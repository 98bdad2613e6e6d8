//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
//! (`admissionregistration.k8s.io/v1`), enforced with CEL as kube-apiserver does.
//!
//! - [`spec`]: kube's v1 defaults and the parsed, compiled policies and bindings (pure).
//! - [`validate`]: write-time validation with kube's field paths and messages (pure).
//! - [`evaluate`]: one policy for one request and param: `matchConditions`, `variables`,
//!   `validations`, messages and `failurePolicy` (pure).
//! - [`admit`](mod@admit): the cached policies of a logical cluster and the run of a write (matching
//!   with [`crate::webhook::matching`], params, validation actions).
//! - [`authz`]: who may name a `paramKind` or `paramRef` (kube's read-access check).
//! - [`status`]: what the server writes in a policy's `status`.
//!
//! A write meets the policies after object validation and before the validating webhooks, as
//! in kube-apiserver's admission chain; dry runs too. With `matchPolicy: Equivalent` a policy
//! whose rules cover the request only through another served version sees the objects and
//! `request.kind`/`resource` in that version, as kube's; `authorizer` asks this server's RBAC
//! ([`crate::admission_cel::authorizer`]); the CEL environment is [`crate::admission_cel`]. Deviations: params are seen in their stored version, and type checking
//! reports no warnings.

pub mod admit;
pub mod authz;
pub mod evaluate;
pub mod spec;
pub mod status;
pub mod typecheck;
pub mod validate;

pub use admit::{ClusterPolicies, Env, PolicyCache, Request, admit};
pub use spec::{Binding, Policy, apply_binding_defaults, apply_policy_defaults};
pub use validate::{validate_binding, validate_policy};

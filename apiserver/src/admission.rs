//! Admission hooks: in-process stand-ins for kube-apiserver's mutating and validating
//! admission webhooks.
//!
//! A hook is registered for one API group and resource (and optionally a subresource) with
//! [`ApiServer::register_admission`](crate::ApiServer::register_admission). It runs on every
//! create, update, patch (including server-side apply) and delete of that resource, in every
//! logical cluster, after the server's own defaulting and before validation and storage — where
//! kube-apiserver runs mutating and then validating admission. A hook may allow the request,
//! replace the object (mutation), or deny it with an HTTP status and message.
//!
//! Hooks registered for the main resource do not see status (or other subresource) writes;
//! register for the subresource explicitly to see those.

use std::sync::Arc;

use serde_json::Value;

use crate::auth::Identity;
use ocm_apiserver_rbac::{Attributes, ResourceAttributes, Target};
use ocm_apiserver_status::{ApiError, Cause, Gr};

/// An admission hook: looks at a request and decides.
pub type AdmissionHook = Arc<dyn Fn(&AdmissionRequest<'_>) -> AdmissionResult + Send + Sync>;

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionOperation {
    /// A create (POST, or a server-side apply that creates).
    Create,
    /// An update (PUT, any PATCH, server-side apply of an existing object).
    Update,
    /// A delete.
    Delete,
}

impl AdmissionOperation {
    /// The upper-case name kube's AdmissionReview uses (`CREATE`, `UPDATE`, `DELETE`).
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionOperation::Create => "CREATE",
            AdmissionOperation::Update => "UPDATE",
            AdmissionOperation::Delete => "DELETE",
        }
    }
}

/// What a hook sees of a request.
pub struct AdmissionRequest<'a> {
    /// The operation.
    pub operation: AdmissionOperation,
    /// Logical cluster the request addresses (empty for the default cluster).
    pub cluster: &'a str,
    /// API group of the resource.
    pub group: &'a str,
    /// API version of `object` / `old_object` (the request's version).
    pub version: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
    /// Subresource written, if any.
    pub subresource: Option<&'a str>,
    /// Namespace (empty for cluster-scoped objects).
    pub namespace: &'a str,
    /// Object name (may be empty on create with `generateName` until the server names it).
    pub name: &'a str,
    /// The object as it would be stored (absent on delete).
    pub object: Option<&'a Value>,
    /// The object before the request (absent on create).
    pub old_object: Option<&'a Value>,
    /// The requester.
    pub user: &'a Identity,
    /// Whether the request is a dry run (hooks must then have no side effects).
    pub dry_run: bool,
    pub(crate) authorizer: &'a (dyn Fn(&Attributes) -> bool + Sync),
}

impl std::fmt::Debug for AdmissionRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionRequest")
            .field("operation", &self.operation)
            .field("group", &self.group)
            .field("resource", &self.resource)
            .field("subresource", &self.subresource)
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl<'a> AdmissionRequest<'a> {
    /// A request for hooks run outside the server (e.g. adapters under test); `authorizer`
    /// answers access checks for the requester.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        operation: AdmissionOperation,
        group: &'a str,
        resource: &'a str,
        name: &'a str,
        object: Option<&'a Value>,
        old_object: Option<&'a Value>,
        user: &'a Identity,
        authorizer: &'a (dyn Fn(&Attributes) -> bool + Sync),
    ) -> AdmissionRequest<'a> {
        AdmissionRequest {
            operation,
            cluster: "",
            group,
            version: "",
            resource,
            subresource: None,
            namespace: "",
            name,
            object,
            old_object,
            user,
            dry_run: false,
            authorizer,
        }
    }

    /// Whether the requester may do `verb` on `target` in this request's cluster, per the
    /// server's authorizer (a SubjectAccessReview for the requester, as webhooks do).
    pub fn is_allowed(&self, verb: &str, target: ResourceAttributes) -> bool {
        (self.authorizer)(&Attributes {
            user: self.user.clone(),
            verb: verb.to_owned(),
            target: Target::Resource(target),
        })
    }
}

/// A hook's decision.
#[derive(Clone, Debug, PartialEq)]
pub enum AdmissionResult {
    /// Let the request through unchanged.
    Allow,
    /// Let the request through with this object instead (mutation). Ignored on delete.
    Mutate(Value),
    /// Refuse the request.
    Deny(AdmissionDenial),
}

/// Why a request was refused; becomes the response `Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionDenial {
    /// HTTP status code: 403 (Forbidden), 422 (Invalid), 400 (BadRequest) or another.
    pub code: u16,
    /// The reason in words.
    pub message: String,
    /// For 422: the offending field path (e.g. `spec.taints[0].timeAdded`), if known.
    pub field: Option<String>,
    /// For 403: the resource the message names (`plural` or `plural/subresource`, in the
    /// request's group) when it is not the one written, e.g. `managedclusters/accept`.
    pub resource: Option<String>,
    /// For 403: the object name the message names when it is not the one written.
    pub name: Option<String>,
}

impl AdmissionResult {
    /// Deny with 403 Forbidden.
    pub fn forbidden(message: impl Into<String>) -> AdmissionResult {
        AdmissionResult::Deny(AdmissionDenial {
            code: 403,
            message: message.into(),
            field: None,
            resource: None,
            name: None,
        })
    }

    /// Deny with 422 Invalid, naming the field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> AdmissionResult {
        AdmissionResult::Deny(AdmissionDenial {
            code: 422,
            message: message.into(),
            field: Some(field.into()),
            resource: None,
            name: None,
        })
    }

    /// Deny with 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> AdmissionResult {
        AdmissionResult::Deny(AdmissionDenial {
            code: 400,
            message: message.into(),
            field: None,
            resource: None,
            name: None,
        })
    }
}

impl AdmissionDenial {
    /// The API error (response `Status`) for this denial, in kube-apiserver's wording.
    pub fn to_api_error(&self, gr: Gr<'_>, kind: &str, name: &str) -> ApiError {
        match self.code {
            403 => {
                let resource = self.resource.as_deref().unwrap_or(gr.resource);
                let name = self.name.as_deref().unwrap_or(name);
                let gr = Gr {
                    group: gr.group,
                    resource,
                };
                ApiError::forbidden(gr, name, &self.message)
            }
            422 => {
                let qualified_kind = if gr.group.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}.{}", gr.group)
                };
                ApiError::invalid(
                    &qualified_kind,
                    gr.group,
                    kind,
                    name,
                    vec![Cause::new(
                        "FieldValueInvalid",
                        self.message.clone(),
                        self.field.clone().unwrap_or_default(),
                    )],
                )
            }
            400 => ApiError::bad_request(self.message.clone()),
            code => ApiError::new(code, "", self.message.clone()),
        }
    }
}

/// Hooks registered for one (group, resource, subresource).
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) group: String,
    pub(crate) resource: String,
    pub(crate) subresource: Option<String>,
    pub(crate) hook: AdmissionHook,
}

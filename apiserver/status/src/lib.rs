//! API errors: every failure leaves the server as a `Status` object with kube-apiserver's code,
//! reason, message and details.

use serde_json::{Value, json};

use ocm_apiserver_storage::StorageError;

/// One cause inside `Status.details.causes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// Machine-readable reason, e.g. `FieldValueInvalid`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
}

impl Cause {
    /// A cause from its parts.
    pub fn new(reason: &str, message: impl Into<String>, field: impl Into<String>) -> Self {
        Cause {
            reason: reason.to_owned(),
            message: message.into(),
            field: field.into(),
        }
    }
}

/// `Status.details`: what object the failure is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Details {
    /// Object name.
    pub name: String,
    /// API group.
    pub group: String,
    /// Resource (plural) or, for `Invalid`, the kind.
    pub kind: String,
    /// Object UID, when known.
    pub uid: String,
    /// Field-level causes.
    pub causes: Vec<Cause>,
    /// Seconds a client should wait before retrying.
    pub retry_after_seconds: Option<u32>,
}

/// A failed API request, rendered as a `metav1.Status`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `StatusReason`, e.g. `NotFound`; may be empty.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// Details, when there are any.
    pub details: Option<Box<Details>>,
    /// `Warning` headers to send with the error: kube-apiserver answers a failed request with
    /// the warnings recorded before it failed (e.g. unknown fields under
    /// `fieldValidation=Warn`). Not part of the Status body.
    pub warnings: Vec<String>,
}

/// What a resource-level error names: group and plural resource, e.g. `("apps", "deployments")`.
#[derive(Clone, Copy, Debug)]
pub struct Gr<'a> {
    /// API group; empty for core.
    pub group: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
}

impl Gr<'_> {
    /// `resource.group`, or just `resource` for the core group.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_owned()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

impl ApiError {
    /// An error from its parts, without details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_owned(),
            message: message.into(),
            details: None,
            warnings: Vec::new(),
        }
    }

    /// Adds `Warning` headers to send with this error.
    pub fn with_warnings(mut self, warnings: &[String]) -> Self {
        self.warnings.extend(warnings.iter().cloned());
        self
    }

    fn with_object(mut self, gr: Gr<'_>, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: name.to_owned(),
            group: gr.group.to_owned(),
            kind: gr.resource.to_owned(),
            ..Details::default()
        }));
        self
    }

    /// Adds causes to the details.
    pub fn with_causes(mut self, causes: Vec<Cause>) -> Self {
        self.details
            .get_or_insert_with(Box::default)
            .causes
            .extend(causes);
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    /// 404 for an unknown route or resource type.
    pub fn route_not_found() -> Self {
        let mut err = ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        err.details = Some(Box::default());
        err
    }

    /// 404 NotFound for a named object.
    pub fn not_found(gr: Gr<'_>, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", gr.qualified(), name),
        )
        .with_object(gr, name)
    }

    /// 409 AlreadyExists.
    pub fn already_exists(gr: Gr<'_>, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", gr.qualified(), name),
        )
        .with_object(gr, name)
    }

    /// 409 Conflict for a failed resourceVersion precondition.
    pub fn conflict(gr: Gr<'_>, name: &str) -> Self {
        ApiError::conflict_because(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a custom explanation.
    pub fn conflict_because(gr: Gr<'_>, name: &str, why: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                gr.qualified(),
                name,
                why
            ),
        )
        .with_object(gr, name)
    }

    /// 403 Forbidden for a named object.
    pub fn forbidden(gr: Gr<'_>, name: &str, why: &str) -> Self {
        let what = if name.is_empty() {
            format!("{} is forbidden: {}", gr.qualified(), why)
        } else {
            format!("{} \"{}\" is forbidden: {}", gr.qualified(), name, why)
        };
        ApiError::new(403, "Forbidden", what).with_object(gr, name)
    }

    /// 422 Invalid; `qualified_kind` is e.g. `Deployment.apps` or `ConfigMap`.
    pub fn invalid(
        qualified_kind: &str,
        group: &str,
        kind: &str,
        name: &str,
        causes: Vec<Cause>,
    ) -> Self {
        let parts: Vec<String> = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect();
        let summary = match parts.len() {
            0 => String::new(),
            1 => parts[0].clone(),
            _ => format!("[{}]", parts.join(", ")),
        };
        ApiError {
            code: 422,
            reason: "Invalid".into(),
            message: format!("{qualified_kind} \"{name}\" is invalid: {summary}"),
            details: Some(Box::new(Details {
                name: name.to_owned(),
                group: group.to_owned(),
                kind: kind.to_owned(),
                causes,
                ..Details::default()
            })),
            warnings: Vec::new(),
        }
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        let mut err = ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        );
        err.details = Some(Box::default());
        err
    }

    /// 406 NotAcceptable.
    pub fn not_acceptable(accepted: &str) -> Self {
        ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: {accepted}"),
        )
    }

    /// 410 Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        ApiError::new(415, "UnsupportedMediaType", message)
    }

    /// 429 TooManyRequests.
    pub fn too_many_requests() -> Self {
        let mut err = ApiError::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        );
        err.details = Some(Box::new(Details {
            retry_after_seconds: Some(1),
            ..Details::default()
        }));
        err
    }

    /// 500 InternalError.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        let mut err = ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        );
        err.details = Some(Box::new(Details {
            causes: vec![Cause::new("", message.to_string(), "")],
            ..Details::default()
        }));
        err
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        ApiError::new(504, "Timeout", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if let Some(details) = &self.details {
            let mut d = serde_json::Map::new();
            if !details.name.is_empty() {
                d.insert("name".into(), json!(details.name));
            }
            if !details.group.is_empty() {
                d.insert("group".into(), json!(details.group));
            }
            if !details.kind.is_empty() {
                d.insert("kind".into(), json!(details.kind));
            }
            if !details.uid.is_empty() {
                d.insert("uid".into(), json!(details.uid));
            }
            if !details.causes.is_empty() {
                let causes: Vec<Value> = details
                    .causes
                    .iter()
                    .map(|c| {
                        let mut cause = serde_json::Map::new();
                        if !c.reason.is_empty() {
                            cause.insert("reason".into(), json!(c.reason));
                        }
                        if !c.message.is_empty() {
                            cause.insert("message".into(), json!(c.message));
                        }
                        if !c.field.is_empty() {
                            cause.insert("field".into(), json!(c.field));
                        }
                        Value::Object(cause)
                    })
                    .collect();
                d.insert("causes".into(), Value::Array(causes));
            }
            if let Some(secs) = details.retry_after_seconds {
                d.insert("retryAfterSeconds".into(), json!(secs));
            }
            status["details"] = Value::Object(d);
        }
        status["code"] = json!(self.code);
        status
    }

    /// Maps a storage failure for object `name` of `gr`.
    pub fn from_storage(err: StorageError, gr: Gr<'_>, name: &str) -> Self {
        match err {
            StorageError::AlreadyExists => ApiError::already_exists(gr, name),
            StorageError::NotFound => ApiError::not_found(gr, name),
            StorageError::Conflict { .. } => ApiError::conflict(gr, name),
            StorageError::Compacted { requested, oldest } => {
                ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
            }
            StorageError::Backend(msg) => ApiError::internal(msg),
            StorageError::Closed => {
                ApiError::new(503, "ServiceUnavailable", "the server is shutting down")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_shape() {
        let err = ApiError::not_found(
            Gr {
                group: "apps",
                resource: "deployments",
            },
            "web",
        );
        let status = err.to_status();
        assert_eq!(status["message"], "deployments.apps \"web\" not found");
        assert_eq!(
            status["details"],
            json!({"name": "web", "group": "apps", "kind": "deployments"})
        );
        assert_eq!(status["code"], 404);
        assert_eq!(status["reason"], "NotFound");
    }

    #[test]
    fn invalid_joins_causes() {
        let causes = vec![
            Cause::new(
                "FieldValueInvalid",
                "Invalid value: \"A\": bad",
                "metadata.name",
            ),
            Cause::new("FieldValueRequired", "Required value", "spec.x"),
        ];
        let err = ApiError::invalid("ConfigMap", "", "ConfigMap", "A", causes);
        assert_eq!(
            err.message,
            "ConfigMap \"A\" is invalid: [metadata.name: Invalid value: \"A\": bad, spec.x: Required value]"
        );
    }
}

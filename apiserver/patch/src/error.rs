//! The one error type of every patch algorithm, and how kube-apiserver reports each case.

use std::fmt;

/// The generic message kube-apiserver puts in a 422 Status it builds with
/// `NewGenericServerResponse` (failed JSON-patch operations, some strategic-merge errors).
pub const GENERIC_UNPROCESSABLE_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// One entry of a Status's `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCause {
    /// `reason` (kube calls it the cause type), e.g. `FieldManagerConflict`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The field the cause refers to, e.g. `.spec.replicas`.
    pub field: String,
}

/// A field owned by another manager that an apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The conflicting manager as kube prints it: `"name"`, `"name" using apps/v1` or
    /// `"name" with subresource "status" using v1` (already quoted).
    pub manager: String,
    /// The field path in kube's notation, e.g. `.spec.containers[name="app"].image`.
    pub field: String,
}

/// An error from a patch algorithm. Each variant maps to the Status kube-apiserver returns;
/// see [`PatchError::status_code`], [`PatchError::reason`], [`PatchError::message`] and
/// [`PatchError::causes`]. `Display` gives the detailed cause (for logs and for the variants
/// whose Status message is that text).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// The patch body is not a valid document of its type, or uses a directive wrongly
    /// (400 BadRequest; the message is the text).
    #[error("{0}")]
    BadRequest(String),
    /// A JSON patch with more than 10,000 operations (413 RequestEntityTooLarge).
    #[error("The allowed maximum operations in a JSON patch is {max}, got {got}")]
    TooManyOperations {
        /// The limit.
        max: usize,
        /// The number of operations in the patch.
        got: usize,
    },
    /// A JSON-patch operation (or a strategic-merge step kube reports the same way) failed.
    /// kube-apiserver answers 422 Invalid with the generic message
    /// [`GENERIC_UNPROCESSABLE_MESSAGE`]; the detail (e.g. `testing value /x failed: test
    /// failed`) is only in `Display`.
    #[error("{0}")]
    Unprocessable(String),
    /// The patched document is not a JSON object (422 Invalid, cause on field `patch`).
    #[error("the patched document is not a JSON object: {document}")]
    NotAnObject {
        /// The patched document, serialized.
        document: String,
    },
    /// The patch type is not supported for this kind, e.g. strategic merge patch on a custom
    /// resource (415 UnsupportedMediaType).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Server-side apply conflicts with other managers (409 Conflict).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
}

impl PatchError {
    /// The 415 kube-apiserver answers to a PATCH whose Content-Type the resource does not
    /// accept (e.g. strategic merge patch on a custom resource), listing the accepted types.
    pub fn unsupported_patch_type(strategic_merge_supported: bool) -> PatchError {
        let accepted = if strategic_merge_supported {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        };
        PatchError::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        ))
    }

    /// The HTTP status code kube-apiserver answers with.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::TooManyOperations { .. } => 413,
            PatchError::Unprocessable(_) | PatchError::NotAnObject { .. } => 422,
            PatchError::UnsupportedMediaType(_) => 415,
            PatchError::Conflicts(_) => 409,
        }
    }

    /// The Status `reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::TooManyOperations { .. } => "RequestEntityTooLarge",
            PatchError::Unprocessable(_) | PatchError::NotAnObject { .. } => "Invalid",
            PatchError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            PatchError::Conflicts(_) => "Conflict",
        }
    }

    /// The Status `message`, worded as kube-apiserver words it.
    pub fn message(&self) -> String {
        match self {
            PatchError::Unprocessable(_) => GENERIC_UNPROCESSABLE_MESSAGE.to_string(),
            PatchError::TooManyOperations { .. } => {
                format!("Request entity too large: {self}")
            }
            PatchError::NotAnObject { .. } => {
                let cause = self.not_an_object_cause();
                format!(" \"\" is invalid: {}: {}", cause.field, cause.message)
            }
            _ => self.to_string(),
        }
    }

    /// The Status `details.causes`.
    pub fn causes(&self) -> Vec<StatusCause> {
        match self {
            PatchError::Conflicts(conflicts) => conflicts
                .iter()
                .map(|c| StatusCause {
                    reason: "FieldManagerConflict".to_string(),
                    message: format!("conflict with {}", c.manager),
                    field: c.field.clone(),
                })
                .collect(),
            PatchError::NotAnObject { .. } => vec![self.not_an_object_cause()],
            _ => Vec::new(),
        }
    }

    fn not_an_object_cause(&self) -> StatusCause {
        let document = match self {
            PatchError::NotAnObject { document } => document.as_str(),
            _ => "",
        };
        StatusCause {
            reason: "FieldValueInvalid".to_string(),
            message: format!(
                "Invalid value: {}: the patched document is not a JSON object",
                serde_json::Value::String(document.to_string())
            ),
            field: "patch".to_string(),
        }
    }
}

/// kube-apiserver's apply-conflict message (`getConflictMessage`).
fn conflict_message(conflicts: &[Conflict]) -> String {
    struct Joined<'a>(&'a [Conflict]);
    impl fmt::Display for Joined<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let conflicts = self.0;
            if let [only] = conflicts {
                return write!(
                    f,
                    "Apply failed with 1 conflict: conflict with {}: {}",
                    only.manager, only.field
                );
            }
            let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
            managers.sort_unstable();
            managers.dedup();
            write!(f, "Apply failed with {} conflicts: ", conflicts.len())?;
            let mut first = true;
            for manager in managers {
                if !first {
                    f.write_str("\n")?;
                }
                first = false;
                write!(f, "conflicts with {manager}:")?;
                for c in conflicts.iter().filter(|c| c.manager == manager) {
                    write!(f, "\n- {}", c.field)?;
                }
            }
            Ok(())
        }
    }
    Joined(conflicts).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_json_patch_is_422_invalid_with_generic_message() {
        let e = PatchError::Unprocessable("testing value /a failed: test failed".into());
        assert_eq!(e.status_code(), 422);
        assert_eq!(e.reason(), "Invalid");
        assert_eq!(e.message(), GENERIC_UNPROCESSABLE_MESSAGE);
        assert_eq!(e.to_string(), "testing value /a failed: test failed");
    }

    #[test]
    fn one_conflict_message_matches_kube() {
        let e = PatchError::Conflicts(vec![Conflict {
            manager: "\"kubectl-client-side-apply\" using v1".into(),
            field: ".spec.replicas".into(),
        }]);
        assert_eq!(e.status_code(), 409);
        assert_eq!(e.reason(), "Conflict");
        assert_eq!(
            e.message(),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .spec.replicas"
        );
        assert_eq!(
            e.causes(),
            vec![StatusCause {
                reason: "FieldManagerConflict".into(),
                message: "conflict with \"kubectl-client-side-apply\" using v1".into(),
                field: ".spec.replicas".into(),
            }]
        );
    }

    #[test]
    fn several_conflicts_are_grouped_by_sorted_manager() {
        let e = PatchError::Conflicts(vec![
            Conflict {
                manager: "\"b\"".into(),
                field: ".x".into(),
            },
            Conflict {
                manager: "\"a\"".into(),
                field: ".y".into(),
            },
            Conflict {
                manager: "\"b\"".into(),
                field: ".z".into(),
            },
        ]);
        assert_eq!(
            e.message(),
            "Apply failed with 3 conflicts: conflicts with \"a\":\n- .y\nconflicts with \"b\":\n- .x\n- .z"
        );
    }

    #[test]
    fn strategic_merge_on_a_custom_resource_is_415() {
        let e = PatchError::unsupported_patch_type(false);
        assert_eq!(e.status_code(), 415);
        assert_eq!(e.reason(), "UnsupportedMediaType");
        assert_eq!(
            e.message(),
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
    }

    #[test]
    fn too_many_operations_is_413() {
        let e = PatchError::TooManyOperations {
            max: 10_000,
            got: 10_001,
        };
        assert_eq!(e.status_code(), 413);
        assert_eq!(
            e.message(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }
}

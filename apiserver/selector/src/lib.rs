//! Label and field selectors: parsing (with kube-apiserver's grammar and error messages) and
//! matching against JSON objects.
//!
//! * [`LabelSelector`] — the `labelSelector=` query grammar (`a=b`, `a==b`, `a!=b`,
//!   `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>5`, `a<5`, comma = AND) and the structured
//!   `metav1.LabelSelector` (`matchLabels` + `matchExpressions`) that objects embed.
//! * [`FieldSelector`] — the `fieldSelector=` grammar (`a=b`, `a==b`, `a!=b`, comma = AND,
//!   backslash escapes) plus [`FieldSet`], the per-resource list of selectable fields and how
//!   to read their values from an object.
//!
//! A parse error or an unsupported field is a [`SelectorError`]; kube-apiserver answers it with
//! 400 BadRequest and the error text as the Status message.

mod field;
mod label;

pub use field::{FieldSelector, FieldSet, FieldTerm};
pub use label::operator_value_causes;
pub use label::{
    LabelSelector, Operator, Requirement, validate_label_requirement,
    validate_structured_label_selector,
};

/// A selector that cannot be parsed or uses an unsupported field: kube-apiserver answers
/// 400 BadRequest with [`SelectorError::message`] as the Status message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    /// The message, worded like kube-apiserver's.
    pub message: String,
}

impl SelectorError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        SelectorError {
            message: message.into(),
        }
    }
}

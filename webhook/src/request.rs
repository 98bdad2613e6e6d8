//! What an admission policy sees of a request ([`Review`], its [`Operation`]) and how it
//! refuses one ([`Denial`]) — the vocabulary [`crate::policy`] and each rule module share.

use ocm_registration::hub::admission::AdmissionDenial as ClusterDenial;
use serde_json::Value;

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update (any write of an existing object).
    Update,
    /// A delete.
    Delete,
}

impl Operation {
    /// kube's AdmissionReview name (`CREATE`, `UPDATE`, `DELETE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// Parses kube's AdmissionReview name; `None` for others (e.g. `CONNECT`).
    pub fn parse(text: &str) -> Option<Operation> {
        match text {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            _ => None,
        }
    }
}

/// What a policy sees of a request.
#[derive(Clone, Debug, Default)]
pub struct Review {
    /// The operation (`None` only for operations no policy handles).
    pub operation: Option<Operation>,
    /// API group of the resource.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource written, empty for the main resource.
    pub subresource: String,
    /// Namespace of the object (empty for cluster-scoped ones).
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// The object as it would be stored (absent on delete).
    pub object: Option<Value>,
    /// The object before the request (absent on create).
    pub old_object: Option<Value>,
    /// The requester's user name.
    pub user: String,
    /// The requester's groups.
    pub groups: Vec<String>,
}

/// Why a request is refused; becomes the response Status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// HTTP status: 400 (malformed object) or 403 (missing permission).
    pub code: u16,
    /// The reason in words.
    pub message: String,
    /// For 403: the resource the refusal names (`plural/subresource`), when not the one
    /// written.
    pub resource: Option<String>,
    /// For 403: the object name the refusal names, when not the one written.
    pub name: Option<String>,
}

impl Denial {
    /// A 400 refusal of a malformed object.
    pub(crate) fn bad_request(message: String) -> Denial {
        Denial {
            code: 400,
            message,
            resource: None,
            name: None,
        }
    }

    /// kube's `reason` for this code.
    pub fn reason(&self) -> &'static str {
        match self.code {
            400 => "BadRequest",
            403 => "Forbidden",
            422 => "Invalid",
            _ => "",
        }
    }
}

impl From<ClusterDenial> for Denial {
    fn from(d: ClusterDenial) -> Denial {
        Denial {
            code: d.code,
            message: d.message,
            resource: d.resource,
            name: d.name,
        }
    }
}

//! Request attributes: who asks to do what, as kube-apiserver's authorizers see a request.

use crate::Identity;
use ocm_apiserver_selector::{FieldSelector, LabelSelector, SelectorError};

/// The object a resource request addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// Namespace; empty for cluster-scoped resources and for requests across all namespaces.
    pub namespace: String,
    /// API group; empty for core.
    pub group: String,
    /// Plural resource, e.g. `pods`.
    pub resource: String,
    /// Subresource, e.g. `status`; empty for none.
    pub subresource: String,
    /// Object name; empty for create, list, watch and deletecollection (unless a list or watch
    /// carries `fieldSelector=metadata.name=<name>`, which kube-apiserver turns into the name).
    pub name: String,
    /// The field and label selectors the check carries (kube's `AuthorizeWithSelectors`).
    pub selectors: SelectorAttributes,
}

/// The field and label selectors of a resource check, as kube-apiserver hands them to its
/// authorizers (`FieldSelectorRequirements` / `FieldSelectorParsingErr` and the label
/// counterparts of its authorization attributes): each selector parsed into requirements, or
/// the error that kept it from parsing (then it has no requirements). RBAC ignores them, as
/// kube's RBAC authorizer does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SelectorAttributes {
    /// The field selector; `None` when the check has none (an empty selector is none).
    pub field: Option<Result<FieldSelector, SelectorError>>,
    /// The label selector; `None` when the check has none (an empty selector is none).
    pub label: Option<Result<LabelSelector, SelectorError>>,
}

impl SelectorAttributes {
    /// Parses the selector strings as kube does (`fields.ParseSelector`,
    /// `labels.ParseToRequirements`), an empty string standing for no selector.
    pub fn parse(field: &str, label: &str) -> Self {
        SelectorAttributes {
            field: (!field.is_empty()).then(|| FieldSelector::parse(field)),
            label: (!label.is_empty()).then(|| LabelSelector::parse(label)),
        }
    }
}

impl ResourceAttributes {
    /// `resource` or `resource/subresource`, the form rules name.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// What a request addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A resource, collection or subresource.
    Resource(ResourceAttributes),
    /// Any other path, e.g. `/version` or `/apis`.
    NonResource {
        /// The URL path.
        path: String,
    },
}

/// A request to authorize: the user, the verb and the target.
///
/// The verb of a resource request is `get`, `list`, `watch`, `create`, `update`, `patch`,
/// `delete` or `deletecollection` (or a special verb such as `bind`, `escalate`, `approve`,
/// `sign`, `impersonate`); of a non-resource request, the lowercase HTTP method (`get`,
/// `post`, `put`, `patch`, `delete`, `head`, `options`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributes {
    /// The requester.
    pub user: Identity,
    /// The verb.
    pub verb: String,
    /// What the request addresses.
    pub target: Target,
}

impl Attributes {
    /// A resource request.
    pub fn resource(
        user: Identity,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Self {
        Attributes {
            user,
            verb: verb.to_owned(),
            target: Target::Resource(ResourceAttributes {
                namespace: namespace.to_owned(),
                group: group.to_owned(),
                resource: resource.to_owned(),
                ..ResourceAttributes::default()
            }),
        }
    }

    /// A non-resource request for `path`.
    pub fn non_resource(user: Identity, verb: &str, path: &str) -> Self {
        Attributes {
            user,
            verb: verb.to_owned(),
            target: Target::NonResource {
                path: path.to_owned(),
            },
        }
    }

    /// The same request for the named object.
    pub fn with_name(mut self, name: &str) -> Self {
        if let Target::Resource(r) = &mut self.target {
            r.name = name.to_owned();
        }
        self
    }

    /// The same request carrying these selectors (a resource request only).
    pub fn with_selectors(mut self, selectors: SelectorAttributes) -> Self {
        if let Target::Resource(r) = &mut self.target {
            r.selectors = selectors;
        }
        self
    }

    /// The same request for a subresource.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        if let Target::Resource(r) = &mut self.target {
            r.subresource = subresource.to_owned();
        }
        self
    }

    /// The namespace of a resource request (empty for cluster scope and non-resource requests).
    pub fn namespace(&self) -> &str {
        match &self.target {
            Target::Resource(r) => &r.namespace,
            Target::NonResource { .. } => "",
        }
    }
}

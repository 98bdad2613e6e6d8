//! Who is making a request: the user an authenticator found (the API server's `authn`), whom
//! the policy authorizes.

/// The authenticated user of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// User name, e.g. `admin` or `system:serviceaccount:ns:sa`.
    pub user: String,
    /// Groups, e.g. `system:masters`.
    pub groups: Vec<String>,
    /// Unique id of the user, when the authenticator knows one (a service account's uid).
    pub uid: String,
    /// Extra attributes of the user, as kube-apiserver's `user.Info.GetExtra()`.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl Identity {
    /// The cluster administrator (member of `system:masters`).
    pub fn admin() -> Self {
        Identity {
            user: "admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..Default::default()
        }
    }

    /// The server itself, for its own controllers.
    pub fn system() -> Self {
        Identity {
            user: "system:apiserver".into(),
            groups: vec!["system:masters".into()],
            ..Default::default()
        }
    }

    /// Whether the user is in `system:masters`.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }
}

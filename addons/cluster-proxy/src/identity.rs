//! Who is asking and what it means, with no I/O: which cluster a tunnel belongs to (from its
//! agent's certificate), which identity a hub user becomes on a managed cluster, the hub
//! permission a request needs, and where a request goes.

use http::Method;

use crate::ADDON_NAME;

/// Prefix of every identity the agent impersonates on its cluster: hub user `alice` becomes
/// `ocm:hub:alice`, hub group `devs` becomes `ocm:hub:devs`.
pub const IDENTITY_PREFIX: &str = "ocm:hub:";

/// The group every authenticated user is in; kube adds it to impersonated users itself.
const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// An authenticated hub user.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HubUser {
    /// The user name.
    pub name: String,
    /// The user's groups.
    pub groups: Vec<String>,
}

/// The identity a hub user acts as on a managed cluster: user and groups prefixed with
/// [`IDENTITY_PREFIX`] (`system:authenticated` is left to the cluster, which adds it).
pub fn cluster_identity(user: &HubUser) -> HubUser {
    HubUser {
        name: format!("{IDENTITY_PREFIX}{}", user.name),
        groups: user
            .groups
            .iter()
            .filter(|g| g.as_str() != AUTHENTICATED_GROUP)
            .map(|g| format!("{IDENTITY_PREFIX}{g}"))
            .collect(),
    }
}

/// The cluster and agent name of a cluster-proxy agent's client certificate: CN
/// `system:open-cluster-management:cluster:<cluster>:addon:cluster-proxy:agent:<agent>` and
/// the per-cluster addon group among the organizations (what the hub approved it for).
pub fn agent_of(common_name: &str, organizations: &[String]) -> Option<(String, String)> {
    let rest = common_name.strip_prefix("system:open-cluster-management:cluster:")?;
    let marker = format!(":addon:{ADDON_NAME}:agent:");
    let (cluster, agent) = rest.split_once(&marker)?;
    if cluster.is_empty() || cluster.contains(':') || agent.is_empty() {
        return None;
    }
    let group = ocm_addon_framework::registration::cluster_addon_group(cluster, ADDON_NAME);
    organizations
        .contains(&group)
        .then(|| (cluster.to_owned(), agent.to_owned()))
}

/// The verb a request needs on `managedclusters/proxy`, as kube maps methods for its own
/// proxy subresources (`nodes/proxy`, `services/proxy`).
pub fn verb_for(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD | Method::OPTIONS => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "get",
    }
}

/// Where a request to the proxy server goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /tunnel`: an agent opening its tunnel.
    Tunnel,
    /// `GET /tunnels`: which clusters have a tunnel.
    Tunnels,
    /// `GET /healthz`: the server is up.
    Healthz,
    /// `/clusters/<cluster>/<rest>`: a request for that cluster's API server.
    Cluster {
        /// The managed cluster.
        cluster: String,
        /// The path (with its query) on the cluster's API server, starting with `/`.
        path: String,
    },
    /// Anything else.
    NotFound,
}

/// The route of a request path (with its query).
pub fn route(path_and_query: &str) -> Route {
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_and_query, None),
    };
    match path {
        "/tunnel" => return Route::Tunnel,
        "/tunnels" => return Route::Tunnels,
        "/healthz" => return Route::Healthz,
        _ => {}
    }
    let Some(rest) = path.strip_prefix("/clusters/") else {
        return Route::NotFound;
    };
    let (cluster, tail) = match rest.split_once('/') {
        Some((c, t)) => (c, format!("/{t}")),
        None => (rest, "/".to_owned()),
    };
    if !valid_cluster_name(cluster) {
        return Route::NotFound;
    }
    let path = match query {
        Some(q) => format!("{tail}?{q}"),
        None => tail,
    };
    Route::Cluster {
        cluster: cluster.to_owned(),
        path,
    }
}

/// A DNS-1123 label or subdomain, as ManagedCluster names are.
fn valid_cluster_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !name.starts_with(['-', '.'])
        && !name.ends_with(['-', '.'])
}

/// Why the agent refuses to forward a request that came through its tunnel.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ForwardRefused(pub String);

/// The identity a tunnelled request asks the agent to impersonate, checked: exactly one
/// `Impersonate-User` and any `Impersonate-Group`s, all under [`IDENTITY_PREFIX`], and no other
/// impersonation header — so the hub can never make the agent act as itself, as a cluster
/// admin or as any identity the cluster's own users have.
pub fn forwarded_identity(headers: &http::HeaderMap) -> Result<HubUser, ForwardRefused> {
    let mut users = headers.get_all("impersonate-user").iter();
    let user = match (users.next(), users.next()) {
        (Some(u), None) => u
            .to_str()
            .map_err(|_| ForwardRefused("Impersonate-User is not text".into()))?,
        (None, _) => return Err(ForwardRefused("no Impersonate-User on the request".into())),
        (Some(_), Some(_)) => return Err(ForwardRefused("more than one Impersonate-User".into())),
    };
    if !user.starts_with(IDENTITY_PREFIX) || user.len() == IDENTITY_PREFIX.len() {
        return Err(ForwardRefused(format!(
            "Impersonate-User {user:?} is not under {IDENTITY_PREFIX:?}"
        )));
    }
    let mut groups = Vec::new();
    for value in headers.get_all("impersonate-group") {
        let group = value
            .to_str()
            .map_err(|_| ForwardRefused("Impersonate-Group is not text".into()))?;
        if !group.starts_with(IDENTITY_PREFIX) {
            return Err(ForwardRefused(format!(
                "Impersonate-Group {group:?} is not under {IDENTITY_PREFIX:?}"
            )));
        }
        groups.push(group.to_owned());
    }
    if let Some(other) = headers.keys().find(|k| {
        let k = k.as_str();
        k.starts_with("impersonate-") && k != "impersonate-user" && k != "impersonate-group"
    }) {
        return Err(ForwardRefused(format!("{other} is not allowed")));
    }
    Ok(HubUser {
        name: user.to_owned(),
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_users_map_under_the_prefix_without_system_authenticated() {
        let user = HubUser {
            name: "alice".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
        };
        assert_eq!(
            cluster_identity(&user),
            HubUser {
                name: "ocm:hub:alice".into(),
                groups: vec!["ocm:hub:devs".into()]
            }
        );
    }

    #[test]
    fn agent_certificates_name_their_cluster_only_with_the_cluster_group() {
        let cn =
            "system:open-cluster-management:cluster:c1:addon:cluster-proxy:agent:cluster-proxy";
        let group = "system:open-cluster-management:cluster:c1:addon:cluster-proxy".to_owned();
        assert_eq!(
            agent_of(cn, std::slice::from_ref(&group)),
            Some(("c1".into(), "cluster-proxy".into()))
        );
        assert_eq!(agent_of(cn, &[]), None);
        let other = "system:open-cluster-management:cluster:c2:addon:cluster-proxy".to_owned();
        assert_eq!(agent_of(cn, &[other]), None);
        let helloworld = "system:open-cluster-management:cluster:c1:addon:helloworld:agent:x";
        assert_eq!(agent_of(helloworld, std::slice::from_ref(&group)), None);
        assert_eq!(agent_of("admin", &[group]), None);
    }

    #[test]
    fn methods_map_to_kube_proxy_verbs() {
        assert_eq!(verb_for(&Method::GET), "get");
        assert_eq!(verb_for(&Method::POST), "create");
        assert_eq!(verb_for(&Method::PUT), "update");
        assert_eq!(verb_for(&Method::PATCH), "patch");
        assert_eq!(verb_for(&Method::DELETE), "delete");
    }

    #[test]
    fn routes_strip_the_cluster_prefix_and_keep_the_query() {
        assert_eq!(
            route("/clusters/c1/api/v1/namespaces?watch=true"),
            Route::Cluster {
                cluster: "c1".into(),
                path: "/api/v1/namespaces?watch=true".into()
            }
        );
        assert_eq!(
            route("/clusters/c1"),
            Route::Cluster {
                cluster: "c1".into(),
                path: "/".into()
            }
        );
        assert_eq!(route("/tunnel"), Route::Tunnel);
        assert_eq!(route("/tunnels"), Route::Tunnels);
        assert_eq!(route("/clusters/C1/api"), Route::NotFound);
        assert_eq!(route("/clusters//api"), Route::NotFound);
        assert_eq!(route("/api/v1"), Route::NotFound);
    }

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            if let (Ok(k), Ok(v)) = (
                http::HeaderName::from_bytes(k.as_bytes()),
                http::HeaderValue::from_str(v),
            ) {
                map.append(k, v);
            }
        }
        map
    }

    #[test]
    fn the_agent_impersonates_only_prefixed_identities() {
        let ok = headers(&[
            ("impersonate-user", "ocm:hub:alice"),
            ("impersonate-group", "ocm:hub:devs"),
        ]);
        assert_eq!(
            forwarded_identity(&ok),
            Ok(HubUser {
                name: "ocm:hub:alice".into(),
                groups: vec!["ocm:hub:devs".into()]
            })
        );
        for bad in [
            headers(&[]),
            headers(&[("impersonate-user", "system:admin")]),
            headers(&[("impersonate-user", "ocm:hub:")]),
            headers(&[
                ("impersonate-user", "ocm:hub:a"),
                ("impersonate-user", "ocm:hub:b"),
            ]),
            headers(&[
                ("impersonate-user", "ocm:hub:a"),
                ("impersonate-group", "system:masters"),
            ]),
            headers(&[("impersonate-user", "ocm:hub:a"), ("impersonate-uid", "1")]),
            headers(&[
                ("impersonate-user", "ocm:hub:a"),
                ("impersonate-extra-scopes", "x"),
            ]),
        ] {
            assert!(forwarded_identity(&bad).is_err(), "{bad:?}");
        }
    }
}

//! Discovery: legacy `/api`, `/apis`, `/apis/{g}`, `/api/v1`, `/apis/{g}/{v}`, and
//! aggregated discovery (`apidiscovery.k8s.io/v2`) with its exact Content-Type.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};

use crate::handlers::{Encoding, Reply, accept_clauses, negotiated_document};
use crate::registry::{ResourceInfo, compare_versions};
use crate::state::Inner;
use ocm_apiserver_status::ApiError;

mod storage_hash;

pub use storage_hash::{resource_storage_hash, storage_version_hash};

/// The encoding of aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`)
/// when `Accept` asks for it. As kube's discovery wrapper, the clauses are tried in goautoneg's
/// order ([`accept_clauses`]) and the first naming that kind in a media type served wins; every
/// other clause (a plain type included) is passed over, and with none the legacy document is
/// answered. kube 1.35 serves no `v2beta1` (its `AggregatedDiscoveryRemoveBetaType` is locked
/// on). A protobuf clause is passed over too: the server has no protobuf form of the list.
fn aggregated(accept: Option<&str>) -> Option<Encoding> {
    let accept = accept.filter(|a| !a.trim().is_empty())?;
    accept_clauses(accept).into_iter().find_map(|clause| {
        let encoding = match (clause.kind.as_str(), clause.subtype.as_str()) {
            ("application", "json" | "*") | ("*", "*") => Encoding::Json,
            ("application", "yaml") => Encoding::Yaml,
            _ => return None,
        };
        let wanted = clause.param("g") == Some("apidiscovery.k8s.io")
            && clause.param("v") == Some("v2")
            && clause.param("as") == Some("APIGroupDiscoveryList");
        // kube's restrictions: no server version; a stream only as a JSON watch.
        let refused = clause.param("sv").is_some_and(|v| !v.is_empty())
            || clause
                .param("stream")
                .is_some_and(|v| !v.is_empty() && (encoding == Encoding::Yaml || v != "watch"));
        (wanted && !refused).then_some(encoding)
    })
}

/// The versions of a group, most preferred first, with their resources.
/// The resources of one version of a group.
type VersionResources = (String, Vec<Arc<ResourceInfo>>);

fn groups(inner: &Inner, cluster: &str) -> Vec<(String, Vec<VersionResources>)> {
    let mut order: Vec<String> = Vec::new();
    let mut map: BTreeMap<String, BTreeMap<String, Vec<Arc<ResourceInfo>>>> = BTreeMap::new();
    for res in inner.registry.all(cluster) {
        if !order.contains(&res.group) {
            order.push(res.group.clone());
        }
        for v in &res.versions {
            map.entry(res.group.clone())
                .or_default()
                .entry(v.name.clone())
                .or_default()
                .push(res.clone());
        }
    }
    let mut groups: Vec<(String, Vec<VersionResources>)> = order
        .into_iter()
        .map(|g| {
            let mut versions: Vec<(String, Vec<Arc<ResourceInfo>>)> =
                map.remove(&g).unwrap_or_default().into_iter().collect();
            versions.sort_by(|a, b| compare_versions(&a.0, &b.0));
            (g, versions)
        })
        .collect();
    // kube lists groups by their APIServices' group priority, highest first, ties by the
    // name of the preferred version's APIService (`<version>.<group>`).
    let sort_key = |(group, versions): &(String, Vec<VersionResources>)| {
        let names: Vec<&str> = versions.iter().map(|(v, _)| v.as_str()).collect();
        let preferred = names.first().copied().unwrap_or_default();
        (
            std::cmp::Reverse(crate::registry::priority::group_order_priority(
                group, &names,
            )),
            format!("{preferred}.{group}"),
        )
    };
    groups.sort_by_cached_key(sort_key);
    groups
}

fn subresource_kind(res: &ResourceInfo, version: &str, sub: &str) -> (String, String, String) {
    match sub {
        "scale" => ("autoscaling".into(), "v1".into(), "Scale".into()),
        "token" => (
            "authentication.k8s.io".into(),
            "v1".into(),
            "TokenRequest".into(),
        ),
        "binding" => (String::new(), "v1".into(), "Binding".into()),
        _ => (res.group.clone(), version.to_owned(), res.kind.clone()),
    }
}

fn subresource_verbs(sub: &str) -> Vec<&'static str> {
    match sub {
        "finalize" => vec!["update"],
        "token" | "binding" => vec!["create"],
        "log" => vec!["get"],
        "attach" | "exec" | "portforward" => vec!["create", "get"],
        _ => vec!["get", "patch", "update"],
    }
}

fn resource_list(group: &str, version: &str, resources: &[Arc<ResourceInfo>]) -> Value {
    let mut out = Vec::new();
    for res in resources {
        let mut entry = json!({
            "name": res.plural,
            "singularName": res.singular,
            "namespaced": res.namespaced,
            "kind": res.kind,
            "verbs": res.verbs,
        });
        if !res.short_names.is_empty() {
            entry["shortNames"] = json!(res.short_names);
        }
        if !res.categories.is_empty() {
            entry["categories"] = json!(res.categories);
        }
        if let Some(hash) = resource_storage_hash(res) {
            entry["storageVersionHash"] = json!(hash);
        }
        out.push(entry);
        for sub in res.subresources(version) {
            let (g, v, kind) = subresource_kind(res, version, &sub);
            let mut e = json!({
                "name": format!("{}/{}", res.plural, sub),
                "singularName": "",
                "namespaced": res.namespaced,
                "kind": kind,
                "verbs": subresource_verbs(&sub),
            });
            if sub == "scale" {
                e["group"] = json!(g);
                e["version"] = json!(v);
            }
            out.push(e);
        }
    }
    let mut list = json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": crate::registry::api_version(group, version),
        "resources": out,
    });
    // kube writes the core group's list without a version (as in release 1.1).
    if group.is_empty()
        && let Some(map) = list.as_object_mut()
    {
        map.remove("apiVersion");
    }
    list
}

fn discovery_item(group: &str, versions: &[(String, Vec<Arc<ResourceInfo>>)]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|(version, resources)| {
            let resources: Vec<Value> = resources
                .iter()
                .map(|res| {
                    let mut r = json!({
                        "resource": res.plural,
                        "responseKind": {"group": res.group, "version": version, "kind": res.kind},
                        "scope": if res.namespaced { "Namespaced" } else { "Cluster" },
                        "singularResource": res.singular,
                        "verbs": res.verbs,
                    });
                    if !res.short_names.is_empty() {
                        r["shortNames"] = json!(res.short_names);
                    }
                    if !res.categories.is_empty() {
                        r["categories"] = json!(res.categories);
                    }
                    let subs: Vec<Value> = res
                        .subresources(version)
                        .iter()
                        .map(|sub| {
                            let (g, v, kind) = subresource_kind(res, version, sub);
                            json!({
                                "subresource": sub,
                                "responseKind": {"group": g, "version": v, "kind": kind},
                                "verbs": subresource_verbs(sub),
                            })
                        })
                        .collect();
                    if !subs.is_empty() {
                        r["subresources"] = Value::Array(subs);
                    }
                    r
                })
                .collect();
            json!({"version": version, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut metadata = json!({"creationTimestamp": null});
    if !group.is_empty() {
        metadata["name"] = json!(group);
    }
    json!({"metadata": metadata, "versions": versions})
}

fn aggregated_reply(encoding: Encoding, items: Vec<Value>) -> Reply {
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    });
    let (reply, media) = match encoding {
        Encoding::Yaml => (
            crate::handlers::encoded(encoding, false, Reply::json(StatusCode::OK, &body)),
            "application/yaml",
        ),
        _ => (Reply::json(StatusCode::OK, &body), "application/json"),
    };
    Reply {
        content_type: format!("{media};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
        ..reply
    }
}

/// `GET /api`.
pub(crate) fn core_root(
    inner: &Inner,
    cluster: &str,
    accept: Option<&str>,
) -> Result<Reply, ApiError> {
    if let Some(encoding) = aggregated(accept) {
        let items = groups(inner, cluster)
            .into_iter()
            .filter(|(g, _)| g.is_empty())
            .map(|(g, versions)| discovery_item(&g, &versions))
            .collect();
        return Ok(aggregated_reply(encoding, items));
    }
    let body = json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": inner.config.advertise_address}],
    });
    negotiated_document(accept, Reply::json(StatusCode::OK, &body))
}

fn group_json(group: &str, versions: &[(String, Vec<Arc<ResourceInfo>>)]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|(v, _)| json!({"groupVersion": crate::registry::api_version(group, v), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or_else(|| json!({}));
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}

/// `GET /apis`.
pub(crate) fn groups_root(
    inner: &Inner,
    cluster: &str,
    accept: Option<&str>,
) -> Result<Reply, ApiError> {
    let all = groups(inner, cluster);
    if let Some(encoding) = aggregated(accept) {
        let items = all
            .into_iter()
            .filter(|(g, _)| !g.is_empty())
            .map(|(g, versions)| discovery_item(&g, &versions))
            .collect();
        return Ok(aggregated_reply(encoding, items));
    }
    let groups: Vec<Value> = all
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_json(g, versions))
        .collect();
    let body = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups});
    negotiated_document(accept, Reply::json(StatusCode::OK, &body))
}

/// `GET /apis/{group}`.
pub(crate) fn group(
    inner: &Inner,
    cluster: &str,
    group: &str,
    accept: Option<&str>,
) -> Result<Reply, ApiError> {
    let all = groups(inner, cluster);
    let Some((g, versions)) = all.iter().find(|(g, _)| g == group && !g.is_empty()) else {
        return Err(ApiError::route_not_found());
    };
    let mut body = group_json(g, versions);
    body["kind"] = json!("APIGroup");
    body["apiVersion"] = json!("v1");
    negotiated_document(accept, Reply::json(StatusCode::OK, &body))
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`.
pub(crate) fn group_version(
    inner: &Inner,
    cluster: &str,
    group: &str,
    version: &str,
    accept: Option<&str>,
) -> Result<Reply, ApiError> {
    let all = groups(inner, cluster);
    let found = all
        .iter()
        .find(|(g, _)| g == group)
        .and_then(|(_, versions)| versions.iter().find(|(v, _)| v == version));
    match found {
        Some((v, resources)) => negotiated_document(
            accept,
            Reply::json(StatusCode::OK, &resource_list(group, v, resources)),
        ),
        None => Err(ApiError::route_not_found()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_accept() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated(Some(kubectl)), Some(Encoding::Json));
        assert_eq!(aggregated(Some("application/json")), None);
        assert_eq!(aggregated(None), None);
        assert_eq!(aggregated(Some("")), None);
    }

    #[test]
    fn aggregated_accept_follows_kubes_clause_order() {
        let v2 = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        // A plain clause is passed over, wherever it is.
        let plain_first = format!("application/json,application/json;{v2}");
        assert_eq!(aggregated(Some(&plain_first)), Some(Encoding::Json));
        // q values first: the YAML clause outranks the JSON one.
        let by_q = format!("application/json;{v2};q=0.5,application/yaml;{v2}");
        assert_eq!(aggregated(Some(&by_q)), Some(Encoding::Yaml));
        // Concrete types before wildcards at equal q.
        let wildcard = format!("*/*;{v2},application/yaml;{v2}");
        assert_eq!(aggregated(Some(&wildcard)), Some(Encoding::Yaml));
        // v2beta1 is no longer served; protobuf has no form here.
        let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert_eq!(aggregated(Some(beta)), None);
        let pb = format!("application/vnd.kubernetes.protobuf;{v2},application/json;{v2};q=0.9");
        assert_eq!(aggregated(Some(&pb)), Some(Encoding::Json));
        let sv = format!("application/json;{v2};sv=v1");
        assert_eq!(aggregated(Some(&sv)), None);
    }

    #[test]
    fn the_core_resource_list_has_no_api_version() {
        assert!(resource_list("", "v1", &[]).get("apiVersion").is_none());
        assert_eq!(resource_list("apps", "v1", &[])["apiVersion"], "v1");
    }
}

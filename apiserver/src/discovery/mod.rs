//! Discovery: `/version`, legacy `/api`, `/apis`, `/apis/{g}`, `/api/v1`, `/apis/{g}/{v}`, and
//! aggregated discovery (`apidiscovery.k8s.io/v2`) with its exact Content-Type.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::handlers::Reply;
use crate::registry::{ResourceInfo, compare_versions};
use crate::server::Inner;

mod storage_hash;
mod version;

pub use storage_hash::{resource_storage_hash, storage_version_hash};
pub use version::{KUBERNETES_MINOR, git_version, version};

/// Which aggregated discovery version the client asked for, if any.
fn aggregated(accept: Option<&str>) -> Option<&'static str> {
    let accept = accept?;
    for clause in accept.split(',') {
        let params: Vec<(String, String)> = clause
            .split(';')
            .skip(1)
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let get = |k: &str| {
            params
                .iter()
                .find(|(pk, _)| pk == k)
                .map(|(_, v)| v.as_str())
        };
        if get("as") == Some("APIGroupDiscoveryList") && get("g") == Some("apidiscovery.k8s.io") {
            match get("v") {
                Some("v2") => return Some("v2"),
                Some("v2beta1") => return Some("v2beta1"),
                _ => {}
            }
        }
        // A plain type earlier in the list wins.
        get("as")?;
    }
    None
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
    order
        .into_iter()
        .map(|g| {
            let mut versions: Vec<(String, Vec<Arc<ResourceInfo>>)> =
                map.remove(&g).unwrap_or_default().into_iter().collect();
            versions.sort_by(|a, b| compare_versions(&a.0, &b.0));
            (g, versions)
        })
        .collect()
}

fn subresource_kind(res: &ResourceInfo, version: &str, sub: &str) -> (String, String, String) {
    match sub {
        "scale" => ("autoscaling".into(), "v1".into(), "Scale".into()),
        "token" => (
            "authentication.k8s.io".into(),
            "v1".into(),
            "TokenRequest".into(),
        ),
        _ => (res.group.clone(), version.to_owned(), res.kind.clone()),
    }
}

fn subresource_verbs(sub: &str) -> Vec<&'static str> {
    match sub {
        "finalize" => vec!["update"],
        "token" => vec!["create"],
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
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": crate::registry::api_version(group, version),
        "resources": out,
    })
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

fn aggregated_reply(version: &str, items: Vec<Value>) -> Reply {
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    });
    let mut reply = Reply::json(StatusCode::OK, &body);
    reply.content_type =
        format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    reply
}

/// `GET /api`.
pub(crate) fn core_root(
    inner: &Inner,
    cluster: &str,
    accept: Option<&str>,
) -> Result<Reply, ApiError> {
    if let Some(v) = aggregated(accept) {
        let items = groups(inner, cluster)
            .into_iter()
            .filter(|(g, _)| g.is_empty())
            .map(|(g, versions)| discovery_item(&g, &versions))
            .collect();
        return Ok(aggregated_reply(v, items));
    }
    Ok(Reply::json(
        StatusCode::OK,
        &json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": inner.config.advertise_address}],
        }),
    ))
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
    if let Some(v) = aggregated(accept) {
        let items = all
            .into_iter()
            .filter(|(g, _)| !g.is_empty())
            .map(|(g, versions)| discovery_item(&g, &versions))
            .collect();
        return Ok(aggregated_reply(v, items));
    }
    let groups: Vec<Value> = all
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_json(g, versions))
        .collect();
    Ok(Reply::json(
        StatusCode::OK,
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
    ))
}

/// `GET /apis/{group}`.
pub(crate) fn group(inner: &Inner, cluster: &str, group: &str) -> Result<Reply, ApiError> {
    let all = groups(inner, cluster);
    let Some((g, versions)) = all.iter().find(|(g, _)| g == group && !g.is_empty()) else {
        return Err(ApiError::route_not_found());
    };
    let mut body = group_json(g, versions);
    body["kind"] = json!("APIGroup");
    body["apiVersion"] = json!("v1");
    Ok(Reply::json(StatusCode::OK, &body))
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`.
pub(crate) fn group_version(
    inner: &Inner,
    cluster: &str,
    group: &str,
    version: &str,
) -> Result<Reply, ApiError> {
    let all = groups(inner, cluster);
    let found = all
        .iter()
        .find(|(g, _)| g == group)
        .and_then(|(_, versions)| versions.iter().find(|(v, _)| v == version));
    match found {
        Some((v, resources)) => Ok(Reply::json(
            StatusCode::OK,
            &resource_list(group, v, resources),
        )),
        None => Err(ApiError::route_not_found()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_accept() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated(Some(kubectl)), Some("v2"));
        assert_eq!(aggregated(Some("application/json")), None);
        assert_eq!(aggregated(None), None);
    }
}

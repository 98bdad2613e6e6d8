//! `/healthz`, `/livez` and `/readyz` as kube-apiserver serves them: each endpoint runs a list
//! of named checks; the endpoint answers `ok`, or with `?verbose` one `[+]<check> ok` line per
//! check and `<endpoint> check passed`; a failed check makes it a 500 that always lists the
//! checks (`[-]<check> failed: reason withheld`) and ends `<endpoint> check failed`.
//! `?exclude=<check>` (repeatable) skips a check (`[+]<check> excluded: ok`), and every check
//! is also served alone at `/<endpoint>/<check>` (`ok`, or a 500 with the reason).
//!
//! The checks carry kube-apiserver 1.35's names, in its order, where this server has the same
//! thing: `etcd` is the store taking writes, the post-start hooks are the bootstrapping of the
//! logical cluster (system namespaces, default RBAC, the flow-control bootstrap configuration,
//! stored CRDs served, the controllers that keep `default/kubernetes` and
//! `extension-apiserver-authentication`, the local APIServices written and available), and
//! `/readyz`'s `shutdown` fails once the server is stopping. `log`, `informer-sync`, the
//! admission initializer, the apiextensions hooks and the aggregator's controllers are always
//! ok here: logging cannot block, and the server answers only once its caches are filled and
//! its controllers run. kube's checks of things this server does not have (KMS, the service
//! CIDR controller, API server identity leases, legacy token tracking, the object count
//! tracker) are not listed.

use std::collections::BTreeSet;

use bytes::Bytes;
use http::StatusCode;

use crate::reply::{Reply, ReplyBody};
use crate::request::{Query, query_values};
use crate::state::Inner;
use ocm_apiserver_status::ApiError;

pub use crate::request::Endpoint;

/// A named check over the server and the logical cluster asked about.
struct Check {
    name: &'static str,
    run: fn(&Inner, &str) -> Result<(), String>,
}

/// `ping` and `log` (kube's fails when klog has not flushed for two minutes; this server's
/// logging does not block).
fn ping(_: &Inner, _: &str) -> Result<(), String> {
    Ok(())
}

fn storage(inner: &Inner, _: &str) -> Result<(), String> {
    inner.store.health()
}

/// The server answers only once it has started (stored CRDs loaded, caches filled,
/// controllers running).
fn started(_: &Inner, _: &str) -> Result<(), String> {
    Ok(())
}

fn cluster_bootstrapped(inner: &Inner, cluster: &str) -> Result<(), String> {
    if inner.cluster_known(cluster) {
        Ok(())
    } else {
        Err("not finished".to_owned())
    }
}

/// The objects of one storage resource of `cluster`.
fn stored(inner: &Inner, cluster: &str, resource: &str) -> Vec<serde_json::Value> {
    let (_, items) = inner.store.list(
        &ocm_apiserver_storage::Bucket::new(cluster, resource),
        None,
        None,
    );
    items
        .into_iter()
        .filter_map(|(_, _, o)| serde_json::from_slice(&o.value).ok())
        .collect()
}

/// `scheduling/bootstrap-system-priority-classes`: kube's system PriorityClasses exist.
fn system_priority_classes(inner: &Inner, cluster: &str) -> Result<(), String> {
    let stored = stored(inner, cluster, "scheduling.k8s.io/priorityclasses");
    let all_there = crate::kinds::system_priority_class_names().all(|name| {
        stored
            .iter()
            .any(|pc| crate::meta::meta_str(pc, "name") == name)
    });
    if all_there {
        Ok(())
    } else {
        Err("not finished".to_owned())
    }
}

/// `kube-apiserver-autoregistration`: the cluster's local APIServices were written.
fn apiservices_registered(inner: &Inner, cluster: &str) -> Result<(), String> {
    let written = stored(inner, cluster, "apiregistration.k8s.io/apiservices")
        .iter()
        .any(|a| {
            a.pointer("/metadata/labels")
                .and_then(|l| l.get(crate::kinds::AUTOMANAGED))
                .is_some()
        });
    if written {
        Ok(())
    } else {
        Err("not finished".to_owned())
    }
}

/// `autoregister-completion`: every local APIService exists and is available.
fn apiservices_complete(inner: &Inner, cluster: &str) -> Result<(), String> {
    let missing = crate::kinds::missing_local(
        &stored(
            inner,
            cluster,
            "apiextensions.k8s.io/customresourcedefinitions",
        ),
        &stored(inner, cluster, "apiregistration.k8s.io/apiservices"),
    );
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing APIService: [{}]", missing.join(" ")))
    }
}

fn not_shutting_down(inner: &Inner, _: &str) -> Result<(), String> {
    if *inner.shutdown.borrow() {
        Err("process is shutting down".to_owned())
    } else {
        Ok(())
    }
}

const fn check(name: &'static str, run: fn(&Inner, &str) -> Result<(), String>) -> Check {
    Check { name, run }
}

/// The checks of an endpoint, in kube's order.
fn checks(endpoint: Endpoint) -> Vec<Check> {
    let mut list = vec![
        check("ping", ping),
        check("log", ping),
        check("etcd", storage),
    ];
    if endpoint == Endpoint::Readyz {
        list.extend([
            check("etcd-readiness", storage),
            check("informer-sync", started),
        ]);
    }
    list.extend([
        // The admission plugins, webhook and policy caches are ready before the server
        // answers.
        check(
            "poststarthook/start-apiserver-admission-initializer",
            started,
        ),
        check("poststarthook/generic-apiserver-start-informers", started),
        // The flow-control controller keeps FlowSchemas' `Dangling` conditions.
        check(
            "poststarthook/priority-and-fairness-config-consumer",
            cluster_bootstrapped,
        ),
        // Requests are classified by the FlowSchemas (see `flowcontrol`).
        check("poststarthook/priority-and-fairness-filter", started),
        check("poststarthook/start-apiextensions-informers", started),
        check("poststarthook/start-apiextensions-controllers", started),
        check("poststarthook/crd-informer-synced", started),
        check(
            "poststarthook/start-system-namespaces-controller",
            cluster_bootstrapped,
        ),
        check(
            "poststarthook/start-cluster-authentication-info-controller",
            started,
        ),
        // Cluster IPs and node ports are allocated from the Services stored, so the
        // allocator never disagrees with them.
        check("poststarthook/start-service-ip-repair-controllers", started),
        check("poststarthook/rbac/bootstrap-roles", cluster_bootstrapped),
        check(
            "poststarthook/scheduling/bootstrap-system-priority-classes",
            system_priority_classes,
        ),
        check(
            "poststarthook/priority-and-fairness-config-producer",
            cluster_bootstrapped,
        ),
        check("poststarthook/bootstrap-controller", started),
        // The APIService controller plays the aggregator's informers, availability
        // controllers, registration and discovery; the OpenAPI documents are built from the
        // served resources on every request.
        check("poststarthook/start-kube-aggregator-informers", started),
        check(
            "poststarthook/apiservice-status-local-available-controller",
            started,
        ),
        check(
            "poststarthook/apiservice-status-remote-available-controller",
            started,
        ),
        check("poststarthook/apiservice-registration-controller", started),
        check("poststarthook/apiservice-discovery-controller", started),
        check(
            "poststarthook/kube-apiserver-autoregistration",
            apiservices_registered,
        ),
        check("autoregister-completion", apiservices_complete),
        check("poststarthook/apiservice-openapi-controller", started),
        check("poststarthook/apiservice-openapiv3-controller", started),
    ]);
    if endpoint == Endpoint::Readyz {
        list.push(check("shutdown", not_shutting_down));
    }
    list
}

/// A plain-text answer. kube marks the endpoint's answers and every failure
/// `X-Content-Type-Options: nosniff`, but not a single check's `ok`.
fn text(status: StatusCode, body: String, nosniff: bool) -> Reply {
    let mut headers = http::HeaderMap::new();
    if nosniff {
        headers.insert(
            http::header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        );
    }
    Reply {
        status,
        content_type: "text/plain; charset=utf-8".into(),
        body: ReplyBody::Full(Bytes::from(body)),
        warnings: Vec::new(),
        headers,
    }
}

/// `GET /<endpoint>` (`check` = `None`) or `GET /<endpoint>/<check>` for logical cluster
/// `cluster`; `raw_query` is the URL's query string.
pub(crate) fn serve(
    inner: &Inner,
    cluster: &str,
    endpoint: Endpoint,
    check: Option<&str>,
    raw_query: Option<&str>,
) -> Result<Reply, ApiError> {
    let list = checks(endpoint);
    if let Some(name) = check {
        let Some(found) = list.iter().find(|c| c.name == name) else {
            return Err(ApiError::route_not_found());
        };
        return Ok(match (found.run)(inner, cluster) {
            Ok(()) => text(StatusCode::OK, "ok".to_owned(), false),
            Err(reason) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {reason}\n"),
                true,
            ),
        });
    }
    let mut excluded: BTreeSet<String> = query_values(raw_query, "exclude").into_iter().collect();
    let mut lines = String::new();
    let mut failed = false;
    for c in &list {
        if excluded.remove(c.name) {
            lines.push_str(&format!("[+]{} excluded: ok\n", c.name));
            continue;
        }
        match (c.run)(inner, cluster) {
            Ok(()) => lines.push_str(&format!("[+]{} ok\n", c.name)),
            Err(reason) => {
                tracing::info!(check = c.name, reason, "{} check failed", endpoint.name());
                lines.push_str(&format!("[-]{} failed: reason withheld\n", c.name));
                failed = true;
            }
        }
    }
    if !excluded.is_empty() {
        let names: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        lines.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            names.join(",")
        ));
    }
    if failed {
        return Ok(text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{lines}{} check failed\n", endpoint.name()),
            true,
        ));
    }
    if Query::parse(raw_query).get("verbose").is_none() {
        return Ok(text(StatusCode::OK, "ok".to_owned(), true));
    }
    Ok(text(
        StatusCode::OK,
        format!("{lines}{} check passed\n", endpoint.name()),
        true,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_unique_and_ordered_like_kube() {
        for endpoint in [Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz] {
            let names: Vec<&str> = checks(endpoint).iter().map(|c| c.name).collect();
            assert_eq!(names[0], "ping");
            let mut unique = names.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), names.len());
            assert_eq!(
                names.last() == Some(&"shutdown"),
                endpoint == Endpoint::Readyz
            );
        }
    }
}

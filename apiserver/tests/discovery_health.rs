//! Discovery and health as kube-apiserver serves them: `storageVersionHash` on every stored
//! resource of legacy discovery (built-in and custom, hashed over the storage version), the
//! named checks of `/healthz`, `/livez` and `/readyz` (verbose listing, exclusion, one check
//! per path, failure), and `/version` reporting the Kubernetes release of the types the server
//! is built on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use common::kubectl;
use common::tls::TlsServer;

fn hash_of<'a>(list: &'a APIResourceList, name: &str) -> Option<&'a str> {
    list.resources
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{name} is in {}", list.group_version))
        .storage_version_hash
        .as_deref()
}

#[tokio::test]
async fn legacy_discovery_carries_storage_version_hashes() {
    let server = TlsServer::start().await;
    let client = server.client().await;

    // The values kube-apiserver publishes for the same kinds.
    let core = client.list_core_api_resources("v1").await.unwrap();
    assert_eq!(hash_of(&core, "pods"), Some("xPOwRZ+Yhw8="));
    assert_eq!(hash_of(&core, "namespaces"), Some("Q3oi5N2YM8M="));
    assert_eq!(hash_of(&core, "configmaps"), Some("qFsyl6wFWjQ="));
    assert_eq!(hash_of(&core, "secrets"), Some("S6u1pOWzb84="));
    assert_eq!(hash_of(&core, "events"), Some("r2yiGXH7wu8="));
    // Subresources carry none.
    assert_eq!(hash_of(&core, "namespaces/status"), None);
    assert_eq!(hash_of(&core, "serviceaccounts/token"), None);
    let apps = client.list_api_group_resources("apps/v1").await.unwrap();
    assert_eq!(hash_of(&apps, "deployments"), Some("8aSe+NMegvE="));
    assert_eq!(hash_of(&apps, "deployments/scale"), None);
    // events.k8s.io Events are stored as core Events: one hash for both.
    let events = client
        .list_api_group_resources("events.k8s.io/v1")
        .await
        .unwrap();
    assert_eq!(hash_of(&events, "events"), Some("r2yiGXH7wu8="));
    // Create-only kinds are never stored and have none.
    let authz = client
        .list_api_group_resources("authorization.k8s.io/v1")
        .await
        .unwrap();
    assert_eq!(hash_of(&authz, "selfsubjectaccessreviews"), None);
    let authn = client
        .list_api_group_resources("authentication.k8s.io/v1")
        .await
        .unwrap();
    assert_eq!(hash_of(&authn, "selfsubjectreviews"), None);

    // A custom resource: every served version lists the hash of the storage version.
    let crd = common::crd::crd_from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.hash.test.io"},
        "spec": {
            "group": "hash.test.io",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object"}},
                 "subresources": {"status": {}}},
                {"name": "v1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object"}},
                 "subresources": {"status": {}}},
            ],
        },
    }));
    common::crd::install(&client, crd).await;
    for version in ["hash.test.io/v1beta1", "hash.test.io/v1"] {
        let list = client.list_api_group_resources(version).await.unwrap();
        assert_eq!(hash_of(&list, "gadgets"), Some("Ew5po3Oc1Kk="), "{version}");
        assert_eq!(hash_of(&list, "gadgets/status"), None, "{version}");
    }
    // Moving the storage version changes the hash, which is what storage migrators watch.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "gadgets.hash.test.io",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([
                {"op": "replace", "path": "/spec/versions/0/storage", "value": false},
                {"op": "replace", "path": "/spec/versions/1/storage", "value": true},
            ]))
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    common::eventually("the new storage version's hash", || {
        let client = client.clone();
        async move {
            let list = client
                .list_api_group_resources("hash.test.io/v1beta1")
                .await
                .ok()?;
            (hash_of(&list, "gadgets") == Some("3V/FtmcaeCE=")).then_some(())
        }
    })
    .await;

    // Aggregated discovery has no such field (kube's APIResourceDiscovery has none), and
    // still lists the resources.
    let aggregated = client
        .request_text(
            http::Request::get("/apis")
                .header(
                    "Accept",
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                )
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(aggregated.contains("\"gadgets\""));
    assert!(!aggregated.contains("storageVersionHash"));

    if kubectl::available() {
        let (code, out, err) =
            kubectl::run(&server, &["get", "--raw", "/apis/apps/v1"], None).await;
        assert_eq!(code, 0, "{err}");
        let list: Value = serde_json::from_str(&out).unwrap();
        let deployments = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments")
            .unwrap();
        assert_eq!(deployments["storageVersionHash"], "8aSe+NMegvE=");
    }
}

async fn get_text(client: &kube::Client, path: &str) -> Result<String, kube::Error> {
    client
        .request_text(http::Request::get(path).body(Vec::new()).unwrap())
        .await
}

/// The Status of a failed request.
fn failure(result: Result<String, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// kube-apiserver 1.35's checks this server has, in kube's order: `ping`, `log`, `etcd`, then
/// the readyz-only `etcd-readiness` and `informer-sync`, the post-start hooks of the generic
/// server, of the apiextensions server, of kube-apiserver and of the aggregator (with
/// `autoregister-completion` among them), and readyz's `shutdown` last: every line kube's e2e
/// `health_handlers.go` requires is here.
const POST_START_HOOKS: &str = "[+]poststarthook/start-apiserver-admission-initializer ok
[+]poststarthook/generic-apiserver-start-informers ok
[+]poststarthook/priority-and-fairness-config-consumer ok
[+]poststarthook/priority-and-fairness-filter ok
[+]poststarthook/start-apiextensions-informers ok
[+]poststarthook/start-apiextensions-controllers ok
[+]poststarthook/crd-informer-synced ok
[+]poststarthook/start-system-namespaces-controller ok
[+]poststarthook/start-cluster-authentication-info-controller ok
[+]poststarthook/start-service-ip-repair-controllers ok
[+]poststarthook/rbac/bootstrap-roles ok
[+]poststarthook/scheduling/bootstrap-system-priority-classes ok
[+]poststarthook/priority-and-fairness-config-producer ok
[+]poststarthook/bootstrap-controller ok
[+]poststarthook/start-kube-aggregator-informers ok
[+]poststarthook/apiservice-status-local-available-controller ok
[+]poststarthook/apiservice-status-remote-available-controller ok
[+]poststarthook/apiservice-registration-controller ok
[+]poststarthook/apiservice-discovery-controller ok
[+]poststarthook/kube-apiserver-autoregistration ok
[+]autoregister-completion ok
[+]poststarthook/apiservice-openapi-controller ok
[+]poststarthook/apiservice-openapiv3-controller ok
";

fn readyz_verbose() -> String {
    format!(
        "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n\
         {POST_START_HOOKS}[+]shutdown ok\nreadyz check passed\n"
    )
}

fn verbose(endpoint: &str) -> String {
    format!("[+]ping ok\n[+]log ok\n[+]etcd ok\n{POST_START_HOOKS}{endpoint} check passed\n")
}

#[tokio::test]
async fn health_endpoints_list_named_checks() {
    let server = TlsServer::start().await;
    let client = server.client().await;

    for endpoint in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(get_text(&client, endpoint).await.unwrap(), "ok");
    }
    // kube marks an endpoint's answers `nosniff`, not a single check's `ok`.
    for (path, nosniff) in [
        ("/readyz?verbose", true),
        ("/livez", true),
        ("/livez/ping", false),
    ] {
        let (code, headers, _) = common::send_raw(
            &client,
            http::Request::get(path)
                .body(kube::client::Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(
            headers["content-type"].to_str().unwrap(),
            "text/plain; charset=utf-8"
        );
        let expected = nosniff.then_some("nosniff");
        let got = headers
            .get("x-content-type-options")
            .map(|v| v.to_str().unwrap());
        assert_eq!(got, expected, "{path}");
    }
    assert_eq!(
        get_text(&client, "/readyz?verbose").await.unwrap(),
        readyz_verbose()
    );
    assert_eq!(
        get_text(&client, "/livez?verbose").await.unwrap(),
        verbose("livez")
    );
    assert_eq!(
        get_text(&client, "/healthz?verbose=1").await.unwrap(),
        verbose("healthz")
    );
    // A logical cluster has its own checks.
    let cluster = get_text(&client, "/clusters/c1/readyz?verbose")
        .await
        .unwrap();
    assert_eq!(cluster, readyz_verbose());

    // One check per path; an unknown check is kube's 404.
    for path in [
        "/healthz/ping",
        "/livez/log",
        "/readyz/informer-sync",
        "/livez/etcd",
        "/readyz/shutdown",
        "/readyz/poststarthook/rbac/bootstrap-roles",
    ] {
        assert_eq!(get_text(&client, path).await.unwrap(), "ok", "{path}");
    }
    let status = failure(get_text(&client, "/readyz/nonexistent").await);
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, "NotFound");
    assert_eq!(
        status.message,
        "the server could not find the requested resource"
    );

    // Excluded checks, and names that match none (kube lists those sorted, quoted, joined
    // with commas).
    let excluded = get_text(
        &client,
        "/livez?verbose&exclude=etcd&exclude=log&exclude=nope&exclude=etcd&exclude=also-not",
    )
    .await
    .unwrap();
    assert_eq!(
        excluded,
        format!(
            "[+]ping ok\n[+]log excluded: ok\n[+]etcd excluded: ok\n{POST_START_HOOKS}\
             warn: some health checks cannot be excluded: no matches for \"also-not\",\"nope\"\n\
             livez check passed\n"
        )
    );

    if kubectl::available() {
        let (code, out, err) =
            kubectl::run(&server, &["get", "--raw", "/readyz?verbose"], None).await;
        assert_eq!((code, err.as_str()), (0, ""));
        assert_eq!(out.trim_end(), readyz_verbose().trim_end());
        let (code, out, _) = kubectl::run(&server, &["get", "--raw", "/livez/ping"], None).await;
        assert_eq!((code, out.trim_end()), (0, "ok"));
    }

    // A stopping server is no longer ready, and says which check fails; it is still live.
    server.server.shutdown();
    let status = failure(get_text(&client, "/readyz").await);
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        format!(
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n\
             {POST_START_HOOKS}[-]shutdown failed: reason withheld\nreadyz check failed"
        )
    );
    let status = failure(get_text(&client, "/readyz/shutdown").await);
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "internal server error: process is shutting down"
    );
    assert_eq!(get_text(&client, "/livez").await.unwrap(), "ok");
    if kubectl::available() {
        let (code, _, err) = kubectl::run(&server, &["get", "--raw", "/readyz"], None).await;
        assert_eq!(code, 1);
        assert!(err.contains("[-]shutdown failed: reason withheld"), "{err}");
    }
}

#[tokio::test]
async fn version_is_the_release_of_the_served_types() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let info = client.apiserver_version().await.unwrap();
    // kube-apiserver 1.35 is the reference: the server is at least that release.
    const { assert!(ocm_apiserver::version::KUBERNETES_MINOR >= 35) };
    let minor = ocm_apiserver::version::KUBERNETES_MINOR;
    assert_eq!(info.major, "1");
    assert_eq!(info.minor, minor.to_string());
    assert_eq!(info.git_version, format!("v1.{minor}.0"));
    // The types the server is built on are that release's.
    k8s_openapi::k8s_if_1_35! { assert_eq!(minor, 35); }

    if kubectl::available() {
        let (code, out, err) = kubectl::run(&server, &["version", "-o", "json"], None).await;
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["serverVersion"]["gitVersion"], format!("v1.{minor}.0"));
        assert_eq!(v["serverVersion"]["minor"], minor.to_string());
    }
}

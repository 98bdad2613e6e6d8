//! A server restarted on its data directory keeps its history window: a watch or a paged list
//! begun before the restart resumes after it (no 410, so no relist), and `/metrics` counts
//! requests as kube-apiserver's `apiserver_request_total` does.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use ocm_apiserver::{ApiServer, ApiServerConfig};
use serde_json::json;

fn cm(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": value}})).unwrap()
}

fn config(dir: &std::path::Path) -> ApiServerConfig {
    ApiServerConfig {
        data_dir: Some(dir.to_path_buf()),
        ..ApiServerConfig::default()
    }
}

fn event_name(event: &WatchEvent<ConfigMap>) -> (String, String) {
    let named = |kind: &str, o: &ConfigMap| (kind.to_owned(), o.metadata.name.clone().unwrap());
    match event {
        WatchEvent::Added(o) => named("ADDED", o),
        WatchEvent::Modified(o) => named("MODIFIED", o),
        WatchEvent::Deleted(o) => named("DELETED", o),
        WatchEvent::Bookmark(_) => ("BOOKMARK".into(), String::new()),
        WatchEvent::Error(e) => ("ERROR".into(), e.message.clone()),
    }
}

#[tokio::test]
async fn a_watch_and_a_paged_list_from_before_a_restart_resume_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (seen, continue_token) = {
        let server = ApiServer::start(config(dir.path())).await.unwrap();
        let api: Api<ConfigMap> =
            Api::namespaced(kube::Client::new(server.service(), "default"), "default");
        for name in ["a", "b", "c"] {
            api.create(&PostParams::default(), &cm(name, "1"))
                .await
                .unwrap();
        }
        let page = api.list(&ListParams::default().limit(2)).await.unwrap();
        let seen = page.metadata.resource_version.clone().unwrap();
        let token = page.metadata.continue_.clone().unwrap();
        api.replace("a", &PostParams::default(), &{
            let mut a = api.get("a").await.unwrap();
            a.data = Some([("v".to_owned(), "2".to_owned())].into());
            a
        })
        .await
        .unwrap();
        api.create(&PostParams::default(), &cm("d", "1"))
            .await
            .unwrap();
        api.delete("b", &DeleteParams::default()).await.unwrap();
        server.shutdown();
        (seen, token)
    };

    let server = ApiServer::start(config(dir.path())).await.unwrap();
    let api: Api<ConfigMap> =
        Api::namespaced(kube::Client::new(server.service(), "default"), "default");
    let mut events = api
        .watch(&WatchParams::default(), &seen)
        .await
        .unwrap()
        .boxed();
    let mut got = Vec::new();
    while got.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("event in time")
            .unwrap()
            .expect("stream open");
        got.push(event_name(&event));
    }
    assert_eq!(
        got,
        vec![
            ("MODIFIED".to_owned(), "a".to_owned()),
            ("ADDED".to_owned(), "d".to_owned()),
            ("DELETED".to_owned(), "b".to_owned()),
        ]
    );
    // The list's second page is still the state at its revision: `b` deleted since is not
    // there (it was on the first page), `d` created since is not either.
    let rest = api
        .list(
            &ListParams::default()
                .limit(2)
                .continue_token(&continue_token),
        )
        .await
        .unwrap();
    let names: Vec<_> = rest
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, vec!["c", "kube-root-ca.crt"]);
    assert_eq!(
        rest.metadata.resource_version.as_deref(),
        Some(seen.as_str())
    );
    server.shutdown();
}

/// The value of `apiserver_request_total` for a verb, resource and code (0 when absent).
fn requests(metrics: &str, verb: &str, resource: &str, code: &str) -> u64 {
    ocm_apiserver::metrics::sum_requests(metrics, |c| {
        c.label("verb") == verb && c.label("resource") == resource && c.label("code") == code
    })
}

#[tokio::test]
async fn metrics_count_requests_of_the_default_cluster() {
    let (server, client) = crate::common::server().await;
    let get_metrics = || async {
        client
            .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
            .await
            .unwrap()
    };
    let before = get_metrics().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.list(&ListParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("x", "1"))
        .await
        .unwrap();
    assert!(api.get("missing").await.is_err());
    // A logical cluster's requests are another cluster's: not counted here.
    server.ensure_cluster("other").await.unwrap();
    let other: Api<ConfigMap> = Api::namespaced(
        kube::Client::new(server.service_for_cluster("other"), "default"),
        "default",
    );
    other.list(&ListParams::default()).await.unwrap();

    let after = get_metrics().await;
    assert_eq!(
        requests(&after, "LIST", "configmaps", "200")
            - requests(&before, "LIST", "configmaps", "200"),
        1,
        "{after}"
    );
    assert_eq!(requests(&after, "POST", "configmaps", "201"), 1, "{after}");
    assert_eq!(requests(&after, "GET", "configmaps", "404"), 1, "{after}");
    server.shutdown();
}

/// Starts a server on `dir` and returns its start error, as text.
async fn start_error(dir: &std::path::Path) -> String {
    match ApiServer::start(config(dir)).await {
        Ok(server) => {
            server.shutdown();
            panic!("the server started on a damaged database")
        }
        Err(err) => err.to_string(),
    }
}

#[tokio::test]
async fn a_damaged_database_is_a_clear_start_error_never_an_empty_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("objects.db");

    std::fs::write(&db, b"").unwrap();
    let err = start_error(dir.path()).await;
    assert!(
        err.contains(&db.display().to_string()) && err.contains("empty"),
        "{err}"
    );

    std::fs::write(&db, vec![0x5a; 64 * 1024]).unwrap();
    let err = start_error(dir.path()).await;
    assert!(err.contains("not a database"), "{err}");

    // A real database (written by a server elsewhere, checkpointed into one file) whose pages
    // after the first were overwritten.
    let source = tempfile::tempdir().unwrap();
    {
        let server = ApiServer::start(config(source.path())).await.unwrap();
        let api: Api<ConfigMap> =
            Api::namespaced(kube::Client::new(server.service(), "default"), "default");
        for i in 0..50 {
            api.create(
                &PostParams::default(),
                &cm(&format!("o{i}"), &"x".repeat(2000)),
            )
            .await
            .unwrap();
        }
        server.shutdown();
    }
    std::fs::copy(source.path().join("objects.db"), &db).unwrap();
    std::fs::copy(
        source.path().join("objects.db-wal"),
        dir.path().join("objects.db-wal"),
    )
    .unwrap();
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    }
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 8 * 4096, "{} bytes", bytes.len());
    for b in &mut bytes[4096..] {
        *b = 0xa5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let err = start_error(dir.path()).await;
    assert!(err.contains("reading the database"), "{err}");
}

#[tokio::test]
async fn a_full_database_refuses_writes_with_a_500_keeps_what_it_had_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let limited = |bytes: u64| ApiServerConfig {
        database_quota_bytes: Some(bytes),
        ..config(dir.path())
    };
    let server = ApiServer::start(limited(2 << 20)).await.unwrap();
    let api: Api<ConfigMap> =
        Api::namespaced(kube::Client::new(server.service(), "default"), "default");
    let big = "x".repeat(100 * 1024);
    let mut stored = Vec::new();
    let refused = loop {
        let name = format!("o{}", stored.len());
        match api.create(&PostParams::default(), &cm(&name, &big)).await {
            Ok(_) => stored.push(name),
            Err(err) => break (name, err),
        }
        assert!(stored.len() < 100, "the quota never filled");
    };
    let (name, err) = refused;
    let kube::Error::Api(status) = err else {
        panic!("not a Status: {err}")
    };
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError")
    );
    assert!(status.message.contains("full"), "{}", status.message);
    // Nothing half-written: the refused object does not exist, every earlier one is whole.
    assert!(api.get_opt(&name).await.unwrap().is_none());
    for earlier in &stored {
        let object = api.get(earlier).await.unwrap();
        assert_eq!(object.data.unwrap()["v"].len(), big.len());
    }
    server.shutdown();
    drop(server);

    // Space freed (here: a larger quota): the same data, and writes go through again.
    let server = ApiServer::start(limited(64 << 20)).await.unwrap();
    let api: Api<ConfigMap> =
        Api::namespaced(kube::Client::new(server.service(), "default"), "default");
    let names: Vec<_> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .filter(|n| n.starts_with('o'))
        .collect();
    assert_eq!(names.len(), stored.len());
    api.create(&PostParams::default(), &cm(&name, &big))
        .await
        .unwrap();
    server.shutdown();
}

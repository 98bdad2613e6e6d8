//! Watch: resume, bookmarks, too-old revisions as an ERROR event, selector transitions,
//! streaming lists and timeouts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::watcher;
use ocm_apiserver::ApiServerConfig;
use serde_json::json;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

async fn next<S>(stream: &mut S) -> WatchEvent<ConfigMap>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("event in time")
        .expect("stream open")
        .expect("event ok")
}

fn name_of(e: &WatchEvent<ConfigMap>) -> (String, String) {
    match e {
        WatchEvent::Added(o) => ("ADDED".into(), o.metadata.name.clone().unwrap()),
        WatchEvent::Modified(o) => ("MODIFIED".into(), o.metadata.name.clone().unwrap()),
        WatchEvent::Deleted(o) => ("DELETED".into(), o.metadata.name.clone().unwrap()),
        WatchEvent::Bookmark(_) => ("BOOKMARK".into(), String::new()),
        WatchEvent::Error(e) => ("ERROR".into(), e.message.clone()),
    }
}

/// Waits until the root CA ConfigMap every namespace gets is in `namespace`.
async fn root_ca_published(client: &kube::Client, namespace: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    common::eventually("kube-root-ca.crt", || async {
        api.get_opt("kube-root-ca.crt").await.unwrap().map(|_| ())
    })
    .await;
}

#[tokio::test]
async fn list_then_watch_and_resume() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let list = api.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .unwrap();
    let deleted = api.delete("b", &DeleteParams::default()).await.unwrap();
    let _ = deleted;
    let events: Vec<_> = [
        next(&mut stream).await,
        next(&mut stream).await,
        next(&mut stream).await,
    ]
    .to_vec();
    let names: Vec<_> = events.iter().map(name_of).collect();
    assert_eq!(
        names,
        [
            ("ADDED".into(), "b".into()),
            ("MODIFIED".into(), "a".into()),
            ("DELETED".into(), "b".into())
        ]
    );
    // Revisions increase, and DELETED carries the deletion revision.
    let revs: Vec<u64> = events
        .iter()
        .map(|e| match e {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o
                .metadata
                .resource_version
                .clone()
                .unwrap()
                .parse()
                .unwrap(),
            _ => 0,
        })
        .collect();
    assert!(revs[0] < revs[1] && revs[1] < revs[2], "{revs:?}");
    // Resuming from the list revision replays the same events.
    let mut replay = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let again: Vec<_> = [
        next(&mut replay).await,
        next(&mut replay).await,
        next(&mut replay).await,
    ]
    .iter()
    .map(name_of)
    .collect();
    assert_eq!(again, names);
}

#[tokio::test]
async fn too_old_revision_is_an_error_event() {
    let mut config = ApiServerConfig::default();
    config.store.history_window = 5;
    let (_s, client) = common::server_with(config).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let first = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let old_rv = first.metadata.resource_version.unwrap();
    for i in 0..10 {
        api.patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"i": i.to_string()}})),
        )
        .await
        .unwrap();
    }
    let mut stream = api
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match next(&mut stream).await {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
            assert!(
                e.message
                    .starts_with(&format!("too old resource version: {old_rv} (")),
                "{}",
                e.message
            );
        }
        other => panic!("expected ERROR, got {:?}", name_of(&other)),
    }
    // A paged list whose snapshot left the window is 410 too.
    for i in 0..3 {
        api.create(&PostParams::default(), &cm(&format!("p{i}"), json!({})))
            .await
            .unwrap();
    }
    let page = api.list(&ListParams::default().limit(1)).await.unwrap();
    for i in 0..10 {
        api.patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"j": i.to_string()}})),
        )
        .await
        .unwrap();
    }
    let err = api
        .list(
            &ListParams::default()
                .limit(1)
                .continue_token(page.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 410 && s.reason == "Expired"),
        "{err:?}"
    );
}

#[tokio::test]
async fn bookmarks_and_timeout() {
    let config = ApiServerConfig {
        bookmark_interval: Duration::from_millis(50),
        ..ApiServerConfig::default()
    };
    let (_s, client) = common::server_with(config).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.unwrap();
    let wp = WatchParams::default().timeout(2);
    let mut stream = api.watch(&wp, &rv).await.unwrap().boxed();
    match next(&mut stream).await {
        WatchEvent::Bookmark(b) => assert!(
            b.metadata.resource_version.parse::<u64>().unwrap() >= rv.parse::<u64>().unwrap()
        ),
        other => panic!("expected BOOKMARK, got {:?}", name_of(&other)),
    }
    // timeoutSeconds ends the stream.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(e) = stream.next().await {
            e.unwrap();
        }
    })
    .await;
    assert!(ended.is_ok(), "watch ended after its timeout");
}

#[tokio::test]
async fn selector_watch_sees_objects_enter_and_leave() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = api
        .create(&PostParams::default(), &cm("a", json!({"team": "x"})))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.unwrap();
    let wp = WatchParams::default().labels("team=x");
    let mut stream = api.watch(&wp, &rv).await.unwrap().boxed();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "y"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"ignored": "1"}})),
    )
    .await
    .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "x"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"seen": "1"}})),
    )
    .await
    .unwrap();
    let got: Vec<_> = [
        next(&mut stream).await,
        next(&mut stream).await,
        next(&mut stream).await,
    ]
    .iter()
    .map(name_of)
    .collect();
    assert_eq!(
        got,
        [
            ("DELETED".into(), "a".into()),
            ("ADDED".into(), "a".into()),
            ("MODIFIED".into(), "a".into())
        ]
    );
}

#[tokio::test]
async fn all_namespace_watch_and_streaming_list() {
    let (_s, client) = common::server().await;
    let nsapi: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    nsapi
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "other"}})).unwrap(),
        )
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm("one", json!({})))
        .await
        .unwrap();
    root_ca_published(&client, "other").await;
    let all: Api<ConfigMap> = Api::all(client.clone());
    // kube-runtime watcher with streaming lists (sendInitialEvents + initial-events-end bookmark).
    let mut events = watcher(all, watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match e {
            watcher::Event::Init => {}
            watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    // Besides "one", the ConfigMaps every cluster has: `kube-root-ca.crt` in each of the five
    // namespaces and `kube-system/extension-apiserver-authentication`.
    initial.sort();
    assert_eq!(
        initial,
        [
            "extension-apiserver-authentication",
            "kube-root-ca.crt",
            "kube-root-ca.crt",
            "kube-root-ca.crt",
            "kube-root-ca.crt",
            "kube-root-ca.crt",
            "one"
        ]
    );
    Api::<ConfigMap>::namespaced(client, "other")
        .create(&PostParams::default(), &cm("two", json!({})))
        .await
        .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match e {
        watcher::Event::Apply(o) => assert_eq!(o.metadata.namespace.as_deref(), Some("other")),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn all_namespace_watch_by_namespace_and_name_fields_sees_only_that_object() {
    let (_s, client) = common::server().await;
    let nsapi: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let pp = PostParams::default();
    for ns in ["blue", "green"] {
        let namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        nsapi.create(&pp, &namespace).await.unwrap();
        root_ca_published(&client, ns).await;
    }
    let all: Api<ConfigMap> = Api::all(client.clone());
    let by_namespace = WatchParams::default().fields("metadata.namespace=green");
    let by_both = WatchParams::default().fields("metadata.namespace=green,metadata.name=a");
    let mut in_green = all.watch(&by_namespace, "0").await.unwrap().boxed();
    let mut green_a = all.watch(&by_both, "0").await.unwrap().boxed();
    for (ns, name) in [("blue", "a"), ("green", "b"), ("blue", "b"), ("green", "a")] {
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .create(&pp, &cm(name, json!({})))
            .await
            .unwrap();
    }
    let added = |name: &str| ("ADDED".to_owned(), name.to_owned());
    // From "0": what the namespace holds already (its `kube-root-ca.crt`), then the changes.
    assert_eq!(
        name_of(&next(&mut in_green).await),
        added("kube-root-ca.crt")
    );
    assert_eq!(name_of(&next(&mut in_green).await), added("b"));
    assert_eq!(name_of(&next(&mut in_green).await), added("a"));
    let first = next(&mut green_a).await;
    assert_eq!(name_of(&first), added("a"));
    match first {
        WatchEvent::Added(o) => assert_eq!(o.metadata.namespace.as_deref(), Some("green")),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn name_field_selector_watch_sees_only_that_name() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams::default();
    let mut stream = api
        .watch(&WatchParams::default().fields("metadata.name=a"), "0")
        .await
        .unwrap()
        .boxed();
    api.create(&pp, &cm("b", json!({}))).await.unwrap();
    api.create(&pp, &cm("a", json!({}))).await.unwrap();
    let merge = Patch::Merge(json!({"data": {"x": "1"}}));
    api.patch("b", &PatchParams::default(), &merge)
        .await
        .unwrap();
    api.patch("a", &PatchParams::default(), &merge)
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let mut names = Vec::new();
    for _ in 0..3 {
        names.push(name_of(&next(&mut stream).await));
    }
    assert_eq!(
        names,
        [
            ("ADDED".into(), "a".into()),
            ("MODIFIED".into(), "a".into()),
            ("DELETED".into(), "a".into()),
        ]
    );
}

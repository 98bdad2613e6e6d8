//! Write semantics: generation, status split, finalizers, garbage collection, namespaces,
//! selectors and pagination, dry run and field validation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::crd::{Widget, WidgetSpec, WidgetStatus, install_widget};
use common::eventually;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use serde_json::json;

fn widget(name: &str, color: &str) -> Widget {
    Widget::new(
        name,
        WidgetSpec {
            color: color.into(),
            size: None,
        },
    )
}

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

#[tokio::test]
async fn generation_bumps_only_on_spec_changes() {
    let (_s, client) = common::server().await;
    install_widget(&client).await;
    let api: Api<Widget> = Api::namespaced(client, "default");
    let w = api
        .create(&PostParams::default(), &widget("w", "red"))
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(1));
    let w = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        w.metadata.generation,
        Some(1),
        "labels do not bump generation"
    );
    let w = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}})),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
    let w = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observed_generation": 2, "ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(
        w.metadata.generation,
        Some(2),
        "status does not bump generation"
    );
    // A ConfigMap has no generation at all.
    let cms: Api<ConfigMap> = Api::namespaced(api.into_client(), "default");
    let c = cms
        .create(&PostParams::default(), &cm("c", json!({})))
        .await
        .unwrap();
    assert_eq!(c.metadata.generation, None);
}

#[tokio::test]
async fn status_subresource_split() {
    let (_s, client) = common::server().await;
    install_widget(&client).await;
    let api: Api<Widget> = Api::namespaced(client, "default");
    let mut w = widget("w", "red");
    w.status = Some(WidgetStatus {
        observed_generation: 7,
        ready: true,
    });
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.status, None, "status is dropped on create");
    // The main resource ignores status changes.
    let after = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(after.status, None);
    assert_eq!(after.spec.size, Some(3));
    // /status ignores everything but status.
    let after = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"color": "green"}})),
        )
        .await
        .unwrap();
    assert_eq!(after.status.as_ref().map(|s| s.ready), Some(true));
    assert_eq!(after.spec.color, "red");
    let mut replace = api.get_status("w").await.unwrap();
    replace.status = Some(WidgetStatus {
        observed_generation: 9,
        ready: false,
    });
    let replaced = api
        .replace_status("w", &PostParams::default(), &replace)
        .await
        .unwrap();
    assert_eq!(replaced.status.unwrap().observed_generation, 9);
}

#[tokio::test]
async fn finalizers_with_kube_runtime_helper() {
    let (_s, client) = common::server().await;
    install_widget(&client).await;
    let api: Api<Widget> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &widget("w", "red"))
        .await
        .unwrap();
    let name = "test.ocm.io/cleanup";
    // First run adds the finalizer (JSON patch with `test /metadata/finalizers == null`).
    let obj = std::sync::Arc::new(api.get("w").await.unwrap());
    let action = finalizer(&api, name, obj, |event| async move {
        match event {
            FinalizerEvent::Apply(_) => {
                Ok::<_, std::convert::Infallible>(kube::runtime::controller::Action::await_change())
            }
            FinalizerEvent::Cleanup(_) => Ok(kube::runtime::controller::Action::await_change()),
        }
    })
    .await;
    assert!(action.is_ok(), "{action:?}");
    let w = api.get("w").await.unwrap();
    assert_eq!(w.metadata.finalizers, Some(vec![name.to_string()]));
    // Delete: the object stays with a deletionTimestamp and a bumped generation.
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let w = api.get("w").await.unwrap();
    assert!(w.metadata.deletion_timestamp.is_some());
    assert_eq!(w.metadata.generation, Some(2));
    // Adding a finalizer now is refused.
    let err = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [name, "other.io/x"]}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422),
        "{err:?}"
    );
    // The helper's cleanup removes the finalizer, and the object is gone.
    let obj = std::sync::Arc::new(w);
    finalizer(&api, name, obj, |event| async move {
        match event {
            FinalizerEvent::Apply(_) => {
                Ok::<_, std::convert::Infallible>(kube::runtime::controller::Action::await_change())
            }
            FinalizerEvent::Cleanup(_) => Ok(kube::runtime::controller::Action::await_change()),
        }
    })
    .await
    .unwrap();
    let err = api.get("w").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 404));
    // And a fresh object without finalizers gets one again (the `test == null` path).
    api.create(&PostParams::default(), &widget("w", "red"))
        .await
        .unwrap();
    let obj = std::sync::Arc::new(api.get("w").await.unwrap());
    finalizer(&api, name, obj, |_| async {
        Ok::<_, std::convert::Infallible>(kube::runtime::controller::Action::await_change())
    })
    .await
    .unwrap();
    assert_eq!(
        api.get("w").await.unwrap().metadata.finalizers,
        Some(vec![name.to_string()])
    );
}

fn owned_cm(name: &str, owner: &ConfigMap, block: bool) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap",
                "name": owner.metadata.name, "uid": owner.metadata.uid,
                "blockOwnerDeletion": block,
            }],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn garbage_collection_background() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &owned_cm("child", &owner, false))
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    assert!(
        api.get_opt("owner").await.unwrap().is_none(),
        "owner goes first"
    );
    eventually("child collected", || async {
        api.get_opt("child").await.unwrap().is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn garbage_collection_foreground() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    let mut child = owned_cm("child", &owner, true);
    child.metadata.finalizers = Some(vec!["test.io/hold".into()]);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    // The owner waits with the foregroundDeletion finalizer while the child is held.
    let o = api.get("owner").await.unwrap();
    assert!(o.metadata.deletion_timestamp.is_some());
    assert!(
        o.metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    eventually("child marked for deletion", || async {
        api.get("child")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .map(|_| ())
    })
    .await;
    assert!(api.get_opt("owner").await.unwrap().is_some());
    // Releasing the child lets both go.
    api.patch(
        "child",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("owner gone", || async {
        api.get_opt("owner").await.unwrap().is_none().then_some(())
    })
    .await;
    assert!(api.get_opt("child").await.unwrap().is_none());
}

#[tokio::test]
async fn garbage_collection_orphan() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &owned_cm("child", &owner, true))
        .await
        .unwrap();
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    api.delete("owner", &dp).await.unwrap();
    eventually("owner gone", || async {
        api.get_opt("owner").await.unwrap().is_none().then_some(())
    })
    .await;
    let child = api.get("child").await.unwrap();
    assert!(
        child.metadata.owner_references.is_none(),
        "{:?}",
        child.metadata.owner_references
    );
    assert!(child.metadata.deletion_timestamp.is_none());
}

#[tokio::test]
async fn namespace_termination() {
    let (_s, client) = common::server().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    let created = nss.create(&PostParams::default(), &ns).await.unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(
        created.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_string()])
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    cms.create(&PostParams::default(), &cm("plain", json!({})))
        .await
        .unwrap();
    let mut held = cm("held", json!({}));
    held.metadata.finalizers = Some(vec!["test.io/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let ns = nss.get("doomed").await.unwrap();
    assert_eq!(
        ns.status.as_ref().unwrap().phase.as_deref(),
        Some("Terminating")
    );
    // New content is refused with 403.
    let err = cms
        .create(&PostParams::default(), &cm("new", json!({})))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert_eq!(
                s.message,
                "configmaps \"new\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
            );
        }
        other => panic!("{other:?}"),
    }
    eventually("plain content deleted", || async {
        cms.get_opt("plain").await.unwrap().is_none().then_some(())
    })
    .await;
    // The controller records what remains after its deletion pass, so (as with kube's) the
    // condition can follow the content's removal by a moment.
    eventually("NamespaceFinalizersRemaining", || async {
        let ns = nss.get("doomed").await.unwrap();
        let conditions = ns.status.unwrap().conditions.unwrap_or_default();
        conditions
            .iter()
            .any(|c| c.type_ == "NamespaceFinalizersRemaining" && c.status == "True")
            .then_some(())
    })
    .await;
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("namespace gone", || async {
        nss.get_opt("doomed").await.unwrap().is_none().then_some(())
    })
    .await;
    // System namespaces cannot be deleted.
    let err = nss
        .delete("default", &DeleteParams::default())
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 403));
}

/// kube-apiserver 1.35 answers a DELETE of a namespace that is already terminating with 200
/// and the namespace as it stands (not 409), still checking a UID precondition.
#[tokio::test]
async fn deleting_a_terminating_namespace_again_answers_the_namespace() {
    let (_s, client) = common::server().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "twice"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "twice");
    let mut held = cm("held", json!({}));
    held.metadata.finalizers = Some(vec!["test.io/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();

    let first = nss
        .delete("twice", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("the namespace itself");
    assert!(first.metadata.deletion_timestamp.is_some());
    let again = nss
        .delete("twice", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("the terminating namespace itself");
    assert_eq!(again.metadata.uid, first.metadata.uid);
    assert_eq!(
        again.metadata.deletion_timestamp,
        first.metadata.deletion_timestamp
    );
    assert_eq!(
        again.status.as_ref().unwrap().phase.as_deref(),
        Some("Terminating")
    );
    // Orphan propagation changes nothing on a terminating namespace either.
    let orphan = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    let third = nss.delete("twice", &orphan).await.unwrap().left().unwrap();
    assert_eq!(third.metadata.finalizers, None);
    // A UID precondition that does not hold is still a conflict.
    let wrong_uid = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match nss.delete("twice", &wrong_uid).await.unwrap_err() {
        kube::Error::Api(s) => assert_eq!(s.code, 409, "{s:?}"),
        other => panic!("{other:?}"),
    }

    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("namespace gone", || async {
        nss.get_opt("twice").await.unwrap().is_none().then_some(())
    })
    .await;
}

/// As kube's namespace controller, ours leaves a terminating namespace's content alone for a
/// grace period: a client that deletes a namespace and then the objects in it gets 200s, not
/// 404s; the rest of the content goes afterwards, and the namespace with it.
#[tokio::test]
async fn a_namespace_content_is_deleted_after_the_grace_period() {
    let (_s, client) = common::server().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "later"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "later");
    for name in ["mine", "rest"] {
        cms.create(&PostParams::default(), &cm(name, json!({})))
            .await
            .unwrap();
    }
    nss.delete("later", &DeleteParams::default()).await.unwrap();
    cms.delete("mine", &DeleteParams::default())
        .await
        .expect("the object is still there to delete");
    assert!(cms.get_opt("rest").await.unwrap().is_some());
    eventually("the rest of the content deleted", || async {
        cms.get_opt("rest").await.unwrap().is_none().then_some(())
    })
    .await;
    eventually("namespace gone", || async {
        nss.get_opt("later").await.unwrap().is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn selectors_and_pagination() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..25 {
        let tier = if i % 2 == 0 { "even" } else { "odd" };
        api.create(
            &PostParams::default(),
            &cm(
                &format!("cm-{i:02}"),
                json!({"tier": tier, "n": i.to_string()}),
            ),
        )
        .await
        .unwrap();
    }
    let even = api
        .list(&ListParams::default().labels("tier=even"))
        .await
        .unwrap();
    assert_eq!(even.items.len(), 13);
    let set = api
        .list(&ListParams::default().labels("tier in (odd),n notin (1,3)"))
        .await
        .unwrap();
    assert_eq!(set.items.len(), 10);
    // Only the namespace's `kube-root-ca.crt` has no tier.
    let none = api
        .list(&ListParams::default().labels("!tier"))
        .await
        .unwrap();
    let untiered: Vec<_> = none
        .items
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    assert_eq!(untiered, ["kube-root-ca.crt"]);
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=cm-07"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    let err = api
        .list(&ListParams::default().fields("data.k=v"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400),
        "{err:?}"
    );
    // Pages of 10 over a stable snapshot of the 25 and `kube-root-ca.crt`.
    let first = api.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(first.items.len(), 10);
    let token = first.metadata.continue_.clone().unwrap();
    assert_eq!(first.metadata.remaining_item_count, Some(16));
    api.create(&PostParams::default(), &cm("cm-99", json!({})))
        .await
        .unwrap();
    api.delete("cm-20", &DeleteParams::default()).await.unwrap();
    let second = api
        .list(&ListParams::default().limit(10).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    let third = api
        .list(
            &ListParams::default()
                .limit(10)
                .continue_token(second.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert!(third.metadata.continue_.is_none());
    let names: Vec<String> = first
        .items
        .iter()
        .chain(&second.items)
        .chain(&third.items)
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names.len(), 26, "the snapshot of the first page: {names:?}");
    assert!(names.contains(&"cm-20".to_string()) && !names.contains(&"cm-99".to_string()));
    // Selector + limit.
    let page = api
        .list(&ListParams::default().labels("tier=odd").limit(5))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 5);
    assert!(page.metadata.continue_.is_some());
    // A bad token is a 400, an expired one 410 (see watch tests for compaction).
    let err = api
        .list(&ListParams::default().continue_token("nonsense"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400),
        "{err:?}"
    );
    // All-namespace list.
    let all: Api<ConfigMap> = Api::all(client);
    assert_eq!(
        all.list(&ListParams::default().labels("tier"))
            .await
            .unwrap()
            .items
            .len(),
        24
    );
}

#[tokio::test]
async fn dry_run_and_field_validation() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let dry = api.create(&pp, &cm("dry", json!({}))).await.unwrap();
    assert_eq!(dry.metadata.name.as_deref(), Some("dry"));
    assert!(api.get_opt("dry").await.unwrap().is_none());
    api.create(&PostParams::default(), &cm("real", json!({})))
        .await
        .unwrap();
    let dp = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    api.delete("real", &dp).await.unwrap();
    assert!(api.get_opt("real").await.unwrap().is_some());
    let patch = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    let p = api
        .patch("real", &patch, &Patch::Merge(json!({"data": {"x": "y"}})))
        .await
        .unwrap();
    assert_eq!(p.data.unwrap().get("x").map(String::as_str), Some("y"));
    assert!(
        !api.get("real")
            .await
            .unwrap()
            .data
            .unwrap()
            .contains_key("x")
    );
    // Unknown fields: Strict fails (for a patch, kube's 422 with a `patch` cause holding the
    // patched object), Warn/Ignore drop them.
    let strict = PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let err = api
        .patch("real", &strict, &Patch::Merge(json!({"bogus": 1})))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
            assert!(
                s.message
                    .starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
                "{}",
                s.message
            );
            assert!(
                s.message
                    .ends_with("\": strict decoding error: unknown field \"bogus\""),
                "{}",
                s.message
            );
        }
        other => panic!("{other:?}"),
    }
    let ok = api
        .patch(
            "real",
            &PatchParams::default(),
            &Patch::Merge(json!({"bogus": 1})),
        )
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&ok).unwrap().get("bogus"), None);
}

#[tokio::test]
async fn generate_name() {
    let (_s, client) = common::server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut c = cm("", json!({}));
    c.metadata.name = None;
    c.metadata.generate_name = Some("gen-".into());
    let a = api.create(&PostParams::default(), &c).await.unwrap();
    let b = api.create(&PostParams::default(), &c).await.unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(a.starts_with("gen-") && a.len() == 9, "{a}");
    assert_ne!(a, b);
}

#[tokio::test]
async fn events_are_shared_between_core_and_events_api() {
    use k8s_openapi::api::core::v1::{Event as CoreEvent, ObjectReference};
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let (_s, client) = common::server().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let target = cms
        .create(&PostParams::default(), &cm("target", json!({})))
        .await
        .unwrap();
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: target.metadata.name.clone(),
        namespace: Some("default".into()),
        uid: target.metadata.uid.clone(),
        ..ObjectReference::default()
    };
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "test-controller".into(),
            instance: None,
        },
    );
    let event = Event {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("it works".into()),
        action: "Testing".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();
    let core: Api<CoreEvent> = Api::namespaced(client, "default");
    let listed = core
        .list(
            &ListParams::default()
                .fields("involvedObject.name=target,involvedObject.kind=ConfigMap"),
        )
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1, "{listed:?}");
    let e = &listed.items[0];
    assert_eq!(e.message.as_deref(), Some("it works"));
    assert_eq!(e.reason.as_deref(), Some("Tested"));
    assert_eq!(e.reporting_component.as_deref(), Some("test-controller"));
}

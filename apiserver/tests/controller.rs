//! A kube-runtime Controller (watcher + reflector) reconciling a test CRD and writing status
//! with server-side apply, running through several watch restarts without relisting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::crd::{Widget, WidgetSpec, install_widget};
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use ocm_apiserver::{ApiServer, ApiServerConfig};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
#[error("reconcile failed: {0}")]
struct Failed(#[from] kube::Error);

struct Ctx {
    client: Client,
    reconciles: AtomicUsize,
}

async fn reconcile(w: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, Failed> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    let api: Api<Widget> = Api::namespaced(ctx.client.clone(), &w.namespace().unwrap());
    let status = json!({
        "apiVersion": "test.ocm.io/v1",
        "kind": "Widget",
        "status": {"observed_generation": w.metadata.generation.unwrap_or(0), "ready": true},
    });
    api.patch_status(
        &w.name_any(),
        &PatchParams::apply("widget-controller").force(),
        &Patch::Apply(&status),
    )
    .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Widget>, err: &Failed, _: Arc<Ctx>) -> Action {
    panic!("controller error: {err}");
}

#[tokio::test]
async fn controller_converges_without_relists() {
    let config = ApiServerConfig {
        max_watch_timeout: Duration::from_secs(1),
        ..ApiServerConfig::default()
    };
    let server = ApiServer::start(config).await.unwrap();
    let lists = Arc::new(AtomicUsize::new(0));
    let counter = lists.clone();
    let svc = tower::ServiceBuilder::new()
        .map_request(move |req: http::Request<kube::client::Body>| {
            let q = req.uri().query().unwrap_or("");
            if req.method() == http::Method::GET
                && req.uri().path() == "/apis/test.ocm.io/v1/widgets"
                && !q.contains("watch=true")
            {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            req
        })
        .service(server.service());
    let client = Client::new(svc, "default");
    install_widget(&client).await;
    let api: Api<Widget> = Api::all(client.clone());
    let ns_api: Api<Widget> = Api::namespaced(client.clone(), "default");
    for i in 0..5 {
        ns_api
            .create(
                &PostParams::default(),
                &Widget::new(
                    &format!("w{i}"),
                    WidgetSpec {
                        color: "red".into(),
                        size: None,
                    },
                ),
            )
            .await
            .unwrap();
    }
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        reconciles: AtomicUsize::new(0),
    });
    let controller = Controller::new(api, watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|res| async move {
            res.expect("reconcile ok");
        });
    let handle = tokio::spawn(controller);
    common::eventually("all widgets ready", || async {
        let list = ns_api.list(&Default::default()).await.unwrap();
        list.items
            .iter()
            .all(|w| {
                w.status
                    .as_ref()
                    .is_some_and(|s| s.ready && s.observed_generation == 1)
            })
            .then_some(())
    })
    .await;
    // A spec change is observed.
    ns_api
        .patch(
            "w3",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}})),
        )
        .await
        .unwrap();
    common::eventually("w3 observed generation 2", || async {
        let w = ns_api.get("w3").await.unwrap();
        (w.status.unwrap().observed_generation == 2).then_some(())
    })
    .await;
    let settled_rev = server.store().revision();
    let settled_reconciles = ctx.reconciles.load(Ordering::SeqCst);
    // Run through several watch timeouts: the watcher resumes, it never relists, and the
    // converged controller writes nothing.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(!handle.is_finished(), "controller still running");
    assert_eq!(
        lists.load(Ordering::SeqCst),
        1,
        "one initial list, no relist"
    );
    assert_eq!(
        server.store().revision(),
        settled_rev,
        "no writes after convergence"
    );
    assert_eq!(
        ctx.reconciles.load(Ordering::SeqCst),
        settled_reconciles,
        "no reconcile loop"
    );
    handle.abort();
}

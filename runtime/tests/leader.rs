//! Leader election against the embedded API server: one leader at a time, hand-over on
//! shutdown (released lease), stepping down when renewals fail, re-acquiring afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};
use ocm_apiserver::{ApiServer, Identity};
use ocm_runtime::leader::LeaderElection;
use ocm_runtime::shutdown::Shutdown;
use tokio::sync::watch;
use tokio::time::timeout;

/// Records how many works run at once and which candidates ran.
#[derive(Default)]
struct Tracker {
    running: AtomicUsize,
    max_running: AtomicUsize,
    starts: Mutex<Vec<String>>,
}

fn work_for(
    tracker: Arc<Tracker>,
    who: &str,
) -> impl FnMut(Shutdown) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    let who = who.to_owned();
    move |token: Shutdown| {
        let tracker = tracker.clone();
        let who = who.clone();
        Box::pin(async move {
            let now = tracker.running.fetch_add(1, Ordering::SeqCst) + 1;
            tracker.max_running.fetch_max(now, Ordering::SeqCst);
            tracker.starts.lock().unwrap().push(who);
            token.cancelled().await;
            tracker.running.fetch_sub(1, Ordering::SeqCst);
        })
    }
}

async fn wait_leading(rx: &mut watch::Receiver<bool>, want: bool, within: Duration) {
    timeout(within, rx.wait_for(|v| *v == want))
        .await
        .unwrap_or_else(|_| panic!("leading did not become {want} in {within:?}"))
        .unwrap();
}

fn candidate(client: kube::Client, id: &str, lease: Duration, renew: Duration) -> LeaderElection {
    LeaderElection::new(client, "default", "hub-controllers", id).with_timings(
        lease,
        renew,
        Duration::from_millis(100),
    )
}

#[tokio::test]
async fn one_leader_at_a_time_and_hand_over_on_shutdown() {
    let server = ApiServer::in_memory().await.unwrap();
    let client = kube::Client::new(server.service(), "default");
    let tracker = Arc::new(Tracker::default());
    // A long lease: a hand-over faster than it proves the lease was released.
    let lease_duration = Duration::from_secs(30);
    let (tx_a, mut rx_a) = watch::channel(false);
    let (tx_b, mut rx_b) = watch::channel(false);
    let stop_a = Shutdown::new();
    let stop_b = Shutdown::new();
    let a = tokio::spawn(
        candidate(client.clone(), "a", lease_duration, Duration::from_secs(20))
            .report_to(tx_a)
            .run_as_leader(stop_a.clone(), work_for(tracker.clone(), "a")),
    );
    let b = tokio::spawn(
        candidate(client.clone(), "b", lease_duration, Duration::from_secs(20))
            .report_to(tx_b)
            .run_as_leader(stop_b.clone(), work_for(tracker.clone(), "b")),
    );
    let first = timeout(Duration::from_secs(5), async {
        tokio::select! {
            _ = rx_a.wait_for(|v| *v) => "a",
            _ = rx_b.wait_for(|v| *v) => "b",
        }
    })
    .await
    .expect("someone leads");
    // Several renew rounds pass: the other candidate stays a follower.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let renewed_twice = async {
        let mut seen = Vec::new();
        loop {
            let l = leases.get("hub-controllers").await.unwrap();
            let t = l.spec.unwrap().renew_time.unwrap().0;
            if !seen.contains(&t) {
                seen.push(t);
            }
            if seen.len() >= 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    timeout(Duration::from_secs(5), renewed_twice)
        .await
        .expect("leader renews");
    let lease = leases.get("hub-controllers").await.unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(first));
    assert_eq!(spec.lease_duration_seconds, Some(30));
    assert!(spec.acquire_time.is_some());
    assert_eq!(tracker.running.load(Ordering::SeqCst), 1);
    assert_eq!(*tracker.starts.lock().unwrap(), [first]);

    // The leader shuts down: it releases the lease and the other takes over at once.
    let (stop_first, handle_first, rx_other, other) = if first == "a" {
        (stop_a, a, &mut rx_b, "b")
    } else {
        (stop_b, b, &mut rx_a, "a")
    };
    stop_first.cancel();
    timeout(Duration::from_secs(5), handle_first)
        .await
        .expect("leader stops")
        .unwrap();
    wait_leading(rx_other, true, Duration::from_secs(5)).await;
    let spec = leases.get("hub-controllers").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(other));
    assert_eq!(spec.lease_transitions, Some(1));
    assert_eq!(*tracker.starts.lock().unwrap(), [first, other]);
    assert_eq!(tracker.max_running.load(Ordering::SeqCst), 1);
}

async fn grant_leases(client: &kube::Client, user: &str) {
    let roles: Api<Role> = Api::namespaced(client.clone(), "default");
    let role = Role {
        metadata: ObjectMeta {
            name: Some("leases".into()),
            ..ObjectMeta::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["coordination.k8s.io".into()]),
            resources: Some(vec!["leases".into()]),
            verbs: vec!["get".into(), "create".into(), "update".into()],
            ..PolicyRule::default()
        }]),
    };
    if roles.get_opt("leases").await.unwrap().is_none() {
        roles.create(&PostParams::default(), &role).await.unwrap();
    }
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), "default");
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some("leases".into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "leases".into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: user.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Subject::default()
        }]),
    };
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_leader_that_cannot_renew_stops_its_work_and_comes_back() {
    let server = ApiServer::in_memory().await.unwrap();
    let admin = kube::Client::new(server.service(), "default");
    grant_leases(&admin, "hub").await;
    let hub = kube::Client::new(
        server.service_as(Identity {
            user: "hub".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let tracker = Arc::new(Tracker::default());
    let (tx, mut rx) = watch::channel(false);
    let stop = Shutdown::new();
    let task = tokio::spawn(
        candidate(
            hub,
            "hub-1",
            Duration::from_secs(60),
            Duration::from_millis(800),
        )
        .report_to(tx)
        .run_as_leader(stop.clone(), work_for(tracker.clone(), "hub-1")),
    );
    wait_leading(&mut rx, true, Duration::from_secs(5)).await;
    assert_eq!(tracker.running.load(Ordering::SeqCst), 1);

    // Renewals are now refused (403): after the renew deadline the work is cancelled.
    Api::<RoleBinding>::namespaced(admin.clone(), "default")
        .delete("leases", &DeleteParams::default())
        .await
        .unwrap();
    wait_leading(&mut rx, false, Duration::from_secs(5)).await;
    timeout(Duration::from_secs(5), async {
        while tracker.running.load(Ordering::SeqCst) != 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("work stopped");

    // Access restored: the same candidate (still the recorded holder) leads again.
    grant_leases(&admin, "hub").await;
    wait_leading(&mut rx, true, Duration::from_secs(5)).await;
    assert_eq!(tracker.starts.lock().unwrap().len(), 2);
    stop.cancel();
    timeout(Duration::from_secs(5), task)
        .await
        .expect("stops")
        .unwrap();
    let spec = Api::<Lease>::namespaced(admin, "default")
        .get("hub-controllers")
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(spec.holder_identity, None, "released on shutdown");
    assert_eq!(tracker.max_running.load(Ordering::SeqCst), 1);
}

/// A waiting candidate watches the Lease: when the leader releases it, the candidate leads at
/// once — long before its next retry (two minutes here).
#[tokio::test]
async fn a_waiting_candidate_takes_a_released_lease_at_once() {
    let server = ApiServer::in_memory().await.unwrap();
    // Tells when a candidate has started watching (it waits for the Lease to change then).
    let (watching_tx, mut watching) = watch::channel(0usize);
    let service = tower::ServiceBuilder::new()
        .map_request(move |request: http::Request<kube::client::Body>| {
            if request
                .uri()
                .query()
                .is_some_and(|q| q.contains("watch=true"))
            {
                watching_tx.send_modify(|n| *n += 1);
            }
            request
        })
        .service(server.service());
    let client = kube::Client::new(service, "default");
    let slow = |id: &str| {
        LeaderElection::new(client.clone(), "default", "hub-controllers", id).with_timings(
            Duration::from_secs(300),
            Duration::from_secs(200),
            Duration::from_secs(120),
        )
    };
    let idle = |token: Shutdown| async move { token.cancelled().await };
    let (tx_a, mut rx_a) = watch::channel(false);
    let stop_a = Shutdown::new();
    let a = tokio::spawn(
        slow("a")
            .report_to(tx_a)
            .run_as_leader(stop_a.clone(), idle),
    );
    wait_leading(&mut rx_a, true, Duration::from_secs(5)).await;
    let (tx_b, mut rx_b) = watch::channel(false);
    let stop_b = Shutdown::new();
    let b = tokio::spawn(
        slow("b")
            .report_to(tx_b)
            .run_as_leader(stop_b.clone(), idle),
    );
    timeout(Duration::from_secs(5), watching.wait_for(|n| *n >= 1))
        .await
        .expect("b watches the Lease")
        .unwrap();
    assert!(!*rx_b.borrow());

    stop_a.cancel();
    timeout(Duration::from_secs(5), a)
        .await
        .expect("a stops")
        .unwrap();
    wait_leading(&mut rx_b, true, Duration::from_secs(5)).await;
    stop_b.cancel();
    timeout(Duration::from_secs(5), b)
        .await
        .expect("b stops")
        .unwrap();
}

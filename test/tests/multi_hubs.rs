//! Several hubs (upstream's `MultipleHubs`) as a user runs them: hub A an embedded `ocm hub`,
//! hub B a plain `ocm apiserver` run by `ocm hub --kubeconfig`; `ocm init` on each and
//! `ocm join` naming both, back to back as processes; bad input to `ocm join` fails clearly
//! and leaves nothing on either hub. The cluster joins A and gets a ManifestWork; A is killed
//! (`kill -9`); the agent registers with B by itself, B's admin accepts it, and the workload
//! on the managed cluster (a plain `ocm apiserver` process) is the same object throughout:
//! B's same work takes it over, and after the eviction grace (`ocm join
//! --appliedmanifestwork-eviction-grace-period`) the agent deletes A's AppliedManifestWork and
//! the object only A's work applied. A comes back: the agent stays on B across further lease
//! renewals, and asks nothing more of A; `ocm join` run again keeps it on B. With A down
//! again, the same `ocm join` run again at once starts (A's earlier bootstrap kubeconfig kept,
//! with a warning) and the cluster stays Available on B; with another token for A it fails
//! naming A and writes nothing; `ocm agent` restarted with the listed secrets carries on with
//! B too. A back, B's admin withdraws B's acceptance: the agent goes back to A at once, A's
//! work takes the workload over, and B's AppliedManifestWork is evicted in turn. Both hubs
//! down: `ocm join` run again still starts the registered agent, which keeps asking them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use ocm_e2e::process::{HubProcess, ManagedApiserver, Process, run_ocm, start_apiserver};
use ocm_e2e::{joined_and_available, wait_for, wait_gone};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");
const AGENT_NS: &str = "open-cluster-management-agent";
/// The eviction grace the agent is given: long enough for a work to take over what the
/// evicted record shares with it (the new hub's work is in place when the agent gets there).
const GRACE: &str = "10s";

fn ocm(home: &Path, args: &[&str]) -> (i32, String, String) {
    run_ocm(OCM, home, args)
}

/// `ocm init --kubeconfig KUBECONFIG`: the hub URL and token it prints.
fn init(home: &Path, kubeconfig: &Path) -> (String, String) {
    let (code, stdout, stderr) = ocm(
        home,
        &["init", "--kubeconfig", kubeconfig.to_str().unwrap()],
    );
    assert_eq!(code, 0, "ocm init: {stderr}");
    let word_after = |flag: &str| {
        stdout
            .split_whitespace()
            .skip_while(|w| *w != flag)
            .nth(1)
            .unwrap_or_else(|| panic!("no {flag} in {stdout}"))
            .to_owned()
    };
    (word_after("--hub-apiserver"), word_after("--hub-token"))
}

/// `kubectl --kubeconfig KUBECONFIG ARGS…`, which must succeed; its stdout.
fn kubectl(home: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `kubectl patch managedcluster c1 --type=merge -p {"spec": SPEC}` on the hub of
/// `kubeconfig`.
fn patch_c1_spec(home: &Path, kubeconfig: &Path, spec: &str) {
    let patch = format!(r#"{{"spec":{spec}}}"#);
    kubectl(
        home,
        kubeconfig,
        &[
            "patch",
            "managedcluster",
            "c1",
            "--type=merge",
            "-p",
            &patch,
        ],
    );
}

async fn client(kubeconfig: &Path) -> kube::Client {
    ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap()
}

/// `ocm accept --clusters CLUSTER --wait` on the hub of `kubeconfig`; its output.
fn accept(home: &Path, kubeconfig: &Path, cluster: &str) -> String {
    let (code, stdout, stderr) = ocm(
        home,
        &[
            "accept",
            "--clusters",
            cluster,
            "--wait",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    stdout
}

/// [`accept`] of a cluster not accepted before.
fn accept_new(home: &Path, kubeconfig: &Path, cluster: &str) {
    let stdout = accept(home, kubeconfig, cluster);
    assert!(
        stdout.contains(&format!("cluster {cluster} accepted")),
        "{stdout}"
    );
}

/// The owners' names of an object.
fn owner_names(meta: &kube::api::ObjectMeta) -> Vec<String> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|o| o.name.clone())
        .collect()
}

/// Whether an AppliedManifestWork is marked for eviction.
fn marked_for_eviction(amw: &AppliedManifestWork) -> bool {
    amw.status
        .as_ref()
        .is_some_and(|s| s.eviction_start_time.is_some())
}

/// `ocm create work app --cluster c1 -f MANIFESTS` on the hub of `kubeconfig`.
fn create_work(home: &Path, kubeconfig: &Path, manifests: &Path) {
    let (code, stdout, stderr) = ocm(
        home,
        &[
            "create",
            "work",
            "app",
            "--cluster",
            "c1",
            "-f",
            manifests.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
}

fn applied_and_available(work: &ManifestWork) -> bool {
    work.status.as_ref().is_some_and(|s| {
        ["Applied", "Available"].iter().all(|t| {
            s.conditions
                .iter()
                .any(|c| c.type_ == *t && c.status == "True")
        })
    })
}

fn renew_time(lease: &Lease) -> Option<jiff::Timestamp> {
    lease.spec.as_ref()?.renew_time.as_ref().map(|t| t.0)
}

/// Waits until the cluster lease in `leases` is renewed after `after`; the renewal's time.
async fn renewed_after(leases: &Api<Lease>, after: jiff::Timestamp, what: &str) -> jiff::Timestamp {
    let lease = wait_for(leases, "managed-cluster-lease", what, |l| {
        renew_time(l).is_some_and(|t| t > after)
    })
    .await
    .unwrap();
    renew_time(&lease).unwrap()
}

/// The CSRs of cluster `c1` on a hub.
async fn csrs_of_c1(hub: &kube::Client) -> usize {
    Api::<CertificateSigningRequest>::all(hub.clone())
        .list(&ListParams::default().labels("open-cluster-management.io/cluster-name=c1"))
        .await
        .unwrap()
        .items
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_joined_to_two_hubs_moves_to_the_second_when_the_first_dies() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let dir_a = home.join("hub-a");
    let hub_a = HubProcess::start(OCM, home, &dir_a, "127.0.0.1:0");
    let listen_a = hub_a.listen_address();
    let kubeconfig_a = hub_a.kubeconfig.clone();
    let hub_b = ManagedApiserver::start(OCM, home);
    let kubeconfig_b = hub_b.kubeconfig.clone();
    let (url_a, token_a) = init(home, &kubeconfig_a);
    let (url_b, token_b) = init(home, &kubeconfig_b);
    let admin_a = client(&kubeconfig_a).await;
    let admin_b = client(&kubeconfig_b).await;

    // Bad input: a clear message naming the hub, non-zero exit, nothing written anywhere.
    // The managed cluster: a plain `ocm apiserver` process.
    let (spoke_process, spoke_kubeconfig) = start_apiserver(OCM, &home.join("spoke"), &[]);
    let spoke_kubeconfig = spoke_kubeconfig.to_str().unwrap();
    let spoke = client(Path::new(spoke_kubeconfig)).await;
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &[
                "--hub-apiserver",
                &url_a,
                "--hub-token",
                &token_a,
                "--hub-apiserver",
                &url_b,
            ],
            &["go in pairs"],
        ),
        (
            &[
                "--hub-apiserver",
                &url_a,
                "--hub-token",
                &token_a,
                "--hub-apiserver",
                &url_b,
                "--hub-token",
                &token_a,
            ],
            &["hub 2 of 2", "rejected the token"],
        ),
        (
            &[
                "--hub-apiserver",
                &url_a,
                "--hub-token",
                &token_a,
                "--hub-apiserver",
                "https://127.0.0.1:1",
                "--hub-token",
                &token_b,
            ],
            &["hub 2 of 2 (https://127.0.0.1:1)", "cannot reach the hub"],
        ),
    ];
    for (hubs, messages) in cases {
        let mut args = vec!["join"];
        args.extend_from_slice(hubs);
        args.extend_from_slice(&[
            "--cluster-name",
            "c1",
            "--spoke-kubeconfig",
            spoke_kubeconfig,
        ]);
        let (code, _, stderr) = ocm(home, &args);
        assert_ne!(code, 0, "{hubs:?} should fail");
        for message in messages {
            assert!(stderr.contains(message), "{hubs:?}: {stderr}");
        }
    }
    for admin in [&admin_a, &admin_b] {
        let clusters: Api<ManagedCluster> = Api::all(admin.clone());
        assert!(clusters.get_opt("c1").await.unwrap().is_none());
        assert_eq!(csrs_of_c1(admin).await, 0);
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(spoke.clone());
    assert!(
        namespaces.get_opt(AGENT_NS).await.unwrap().is_none(),
        "nothing written on the managed cluster"
    );

    // The real thing: both hubs, the agent moving after 5 s without its hub.
    let join_args = [
        "join",
        "--hub-apiserver",
        &url_a,
        "--hub-token",
        &token_a,
        "--hub-apiserver",
        &url_b,
        "--hub-token",
        &token_b,
        "--hub-connection-timeout-seconds",
        "5",
        "--appliedmanifestwork-eviction-grace-period",
        GRACE,
        "--cluster-name",
        "c1",
        "--spoke-kubeconfig",
        spoke_kubeconfig,
    ];
    let join = Process::spawn(OCM, home, &join_args);
    join.wait_line(&format!("hub {url_b} reachable, token accepted"));
    accept_new(home, &kubeconfig_a, "c1");
    let clusters_a: Api<ManagedCluster> = Api::all(admin_a.clone());
    wait_for(
        &clusters_a,
        "c1",
        "Joined and Available on A",
        joined_and_available,
    )
    .await
    .unwrap();
    // A short lease, so that the agent finds out soon that A is gone.
    patch_c1_spec(home, &kubeconfig_a, r#"{"leaseDurationSeconds":5}"#);
    // A's work: `settings`, which B's work will share, and `only-a`.
    let settings_yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {a: '1'}\n";
    let manifests = home.join("app.yaml");
    std::fs::write(&manifests, settings_yaml).unwrap();
    let manifests_a = home.join("app-a.yaml");
    std::fs::write(
        &manifests_a,
        format!(
            "{settings_yaml}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: only-a, namespace: default}}\ndata: {{a: '1'}}\n"
        ),
    )
    .unwrap();
    create_work(home, &kubeconfig_a, &manifests_a);
    let works_a: Api<ManifestWork> = Api::namespaced(admin_a.clone(), "c1");
    wait_for(
        &works_a,
        "app",
        "Applied and Available on A",
        applied_and_available,
    )
    .await
    .unwrap();

    let configmaps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "default");
    let uid = configmaps.get("settings").await.unwrap().metadata.uid;
    assert!(uid.is_some());
    configmaps.get("only-a").await.unwrap();
    let applied: Api<AppliedManifestWork> = Api::all(spoke.clone());
    let hash_a = ocm_work::agent::hub_hash(&url_a);
    let applied_a = ocm_work::agent::applied_work_name(&hash_a, "app");
    let record_a = applied.get(&applied_a).await.unwrap();
    let csrs_on_a = csrs_of_c1(&admin_a).await;

    // Hub A dies. The agent registers with B by itself; B's admin accepts the cluster.
    hub_a.process.kill_9();
    let clusters_b: Api<ManagedCluster> = Api::all(admin_b.clone());
    wait_for(&clusters_b, "c1", "the cluster asking to join B", |_| true)
        .await
        .unwrap();
    // B's admin stages the same work (`settings` only) before accepting the cluster, so that
    // it is there when the agent arrives.
    kubectl(home, &kubeconfig_b, &["create", "namespace", "c1"]);
    create_work(home, &kubeconfig_b, &manifests);
    accept_new(home, &kubeconfig_b, "c1");
    wait_for(
        &clusters_b,
        "c1",
        "Joined and Available on B",
        joined_and_available,
    )
    .await
    .unwrap();
    let moved = join.lines_containing("[c1] registering again: the hub was out of reach");
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert!(moved[0].contains(&url_b), "{moved:?}");

    // B's work takes over the same object; A's record of it is marked for eviction.
    let works_b: Api<ManifestWork> = Api::namespaced(admin_b.clone(), "c1");
    wait_for(
        &works_b,
        "app",
        "Applied and Available on B",
        applied_and_available,
    )
    .await
    .unwrap();
    let applied_b = ocm_work::agent::applied_work_name(&ocm_work::agent::hub_hash(&url_b), "app");
    let record_b = applied.get(&applied_b).await.unwrap();
    let settings = configmaps.get("settings").await.unwrap();
    assert_eq!(settings.metadata.uid, uid);
    assert!(
        owner_names(&settings.metadata).contains(&applied_b),
        "{:?}",
        settings.metadata.owner_references
    );
    // After the grace, A's record is evicted: `only-a`, which only it owned, goes with it;
    // `settings` stays, the same object, owned by B's record alone. Both records name the
    // same agent id, which the move did not change.
    wait_gone(&applied, &applied_a).await.unwrap();
    wait_gone(&configmaps, "only-a").await.unwrap();
    let settings = configmaps.get("settings").await.unwrap();
    assert_eq!(settings.metadata.uid, uid);
    assert_eq!(owner_names(&settings.metadata), vec![applied_b.clone()]);
    let agent_name = Api::<Secret>::namespaced(spoke.clone(), AGENT_NS)
        .get("hub-kubeconfig-secret")
        .await
        .unwrap()
        .data
        .unwrap()["agent-name"]
        .0
        .clone();
    assert_eq!(record_b.spec.agent_id.as_bytes(), agent_name.as_slice());
    assert_eq!(record_a.spec.agent_id, record_b.spec.agent_id);
    assert!(!marked_for_eviction(
        &applied.get(&applied_b).await.unwrap()
    ));

    // Hub A comes back (same data, same address). The agent stays on B: B's lease is renewed
    // twice more while the cluster stays Available there, and A hears nothing from it.
    let hub_a = HubProcess::start(OCM, home, &dir_a, &listen_a);
    let admin_a = client(&hub_a.kubeconfig).await;
    patch_c1_spec(home, &kubeconfig_b, r#"{"leaseDurationSeconds":5}"#);
    // On A the cluster's lease is no longer renewed: Available turns Unknown.
    let clusters_a: Api<ManagedCluster> = Api::all(admin_a.clone());
    let unknown_on_a = |c: &ManagedCluster| {
        ocm_e2e::cluster_condition(c, "ManagedClusterConditionAvailable") == "Unknown"
    };
    wait_for(&clusters_a, "c1", "Available Unknown on A", unknown_on_a)
        .await
        .unwrap();
    let leases_b: Api<Lease> = Api::namespaced(admin_b.clone(), "c1");
    let back = jiff::Timestamp::now();
    let first = renewed_after(&leases_b, back, "renewed on B").await;
    renewed_after(&leases_b, first, "renewed on B again").await;
    let cluster_b = clusters_b.get("c1").await.unwrap();
    assert!(joined_and_available(&cluster_b), "{:?}", cluster_b.status);
    assert!(unknown_on_a(&clusters_a.get("c1").await.unwrap()));
    assert_eq!(
        join.lines_containing("[c1] registering again: the hub was out of reach")
            .len(),
        1
    );
    assert_eq!(csrs_of_c1(&admin_a).await, csrs_on_a, "no new CSR on A");
    let lease_a = Api::<Lease>::namespaced(admin_a.clone(), "c1")
        .get("managed-cluster-lease")
        .await
        .unwrap();
    assert!(
        renew_time(&lease_a).is_some_and(|t| t < back),
        "A's lease renewed after A came back: {:?}",
        lease_a.spec
    );
    let hub_secret = Api::<Secret>::namespaced(spoke.clone(), AGENT_NS)
        .get("hub-kubeconfig-secret")
        .await
        .unwrap();
    let stored = String::from_utf8(hub_secret.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    assert!(stored.contains(&url_b), "{stored}");
    assert_eq!(configmaps.get("settings").await.unwrap().metadata.uid, uid);

    // Joining again with the same two hubs keeps the agent on B.
    join.stop();
    let join = Process::spawn(OCM, home, &join_args);
    join.wait_line("[c1] joined the hub and available");
    assert!(
        join.lines_containing("[c1] registering").is_empty(),
        "{:?}",
        join.lines_containing("[c1]")
    );
    assert_eq!(csrs_of_c1(&admin_a).await, csrs_on_a, "no new CSR on A");

    // Hub A dies again, and the very same `ocm join` runs again at once (a restart): this
    // cluster joined A before with these credentials, so A's bootstrap kubeconfig is kept with
    // a warning, and the agent carries on with B.
    hub_a.process.kill_9();
    join.stop();
    let join = Process::spawn(OCM, home, &join_args);
    let warning = join.wait_line("not reachable now");
    assert!(
        warning.contains(&format!(
            "hub 1 of 2 ({url_a}): not reachable now; keeping its bootstrap kubeconfig from the \
             earlier join"
        )),
        "{warning}"
    );
    join.wait_line(&format!("hub {url_b} reachable, token accepted"));
    join.wait_line("[c1] joined the hub and available");
    let now = jiff::Timestamp::now();
    renewed_after(&leases_b, now, "renewed by the agent of ocm join run again").await;
    let cluster_b = clusters_b.get("c1").await.unwrap();
    assert!(joined_and_available(&cluster_b), "{:?}", cluster_b.status);
    assert!(
        join.lines_containing("[c1] registering").is_empty(),
        "{:?}",
        join.lines_containing("[c1]")
    );
    // With another token for A (down), `ocm join` cannot tell it is the hub joined before: it
    // fails naming A, and writes nothing.
    let bootstrap_secrets = || async {
        Api::<Secret>::namespaced(spoke.clone(), AGENT_NS)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|s| {
                s.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("bootstrap-hub-kubeconfig"))
            })
            .map(|s| (s.metadata.name, s.metadata.resource_version, s.data))
            .collect::<Vec<_>>()
    };
    let before = bootstrap_secrets().await;
    assert_eq!(before.len(), 3, "{before:?}");
    let other_token = "zzzzzz.0123456789abcdef";
    assert_ne!(token_a, other_token);
    let changed: Vec<&str> = join_args
        .iter()
        .map(|a| if *a == token_a { other_token } else { *a })
        .collect();
    let (code, _, stderr) = ocm(home, &changed);
    assert_ne!(code, 0, "{stderr}");
    for message in [
        &format!("hub 1 of 2 ({url_a})"),
        "cannot reach the hub",
        "has not joined it before with this URL, CA and token",
    ] {
        assert!(stderr.contains(message), "{message}: {stderr}");
    }
    assert_eq!(bootstrap_secrets().await, before, "nothing written");

    // `ocm agent` restarted on its own with the secrets `ocm join` left carries on with B too.
    join.stop();
    let agent = Process::spawn(
        OCM,
        home,
        &[
            "agent",
            "--cluster-name",
            "c1",
            "--spoke-kubeconfig",
            spoke_kubeconfig,
            "--bootstrap-kubeconfig-secrets",
            "bootstrap-hub-kubeconfig-1,bootstrap-hub-kubeconfig-2",
            "--hub-connection-timeout-seconds",
            "5",
            "--appliedmanifestwork-eviction-grace-period",
            GRACE,
        ],
    );
    agent.wait_line("[c1] joined the hub and available");
    let now = jiff::Timestamp::now();
    renewed_after(&leases_b, now, "renewed by ocm agent").await;
    assert!(
        agent.lines_containing("[c1] registering").is_empty(),
        "{:?}",
        agent.lines_containing("[c1]")
    );
    assert_eq!(configmaps.get("settings").await.unwrap().metadata.uid, uid);

    // A back once more, and B's admin withdraws B's acceptance: the agent leaves B for A at
    // once (A still accepts the cluster); A's admin approves its new certificate.
    let hub_a = HubProcess::start(OCM, home, &dir_a, &listen_a);
    patch_c1_spec(home, &kubeconfig_b, r#"{"hubAcceptsClient":false}"#);
    let moved = agent.wait_line("[c1] registering again: the hub no longer accepts the cluster");
    assert!(
        moved.contains(&format!("bootstrap-hub-kubeconfig-1 (hub {url_a})")),
        "{moved}"
    );
    agent.wait_line("[c1] waiting for the hub admin to approve certificate signing request");
    let stdout = accept(home, &hub_a.kubeconfig, "c1");
    assert!(
        stdout.contains("approved") && stdout.contains("cluster c1 was already accepted"),
        "{stdout}"
    );
    let admin_a = client(&hub_a.kubeconfig).await;
    let clusters_a: Api<ManagedCluster> = Api::all(admin_a.clone());
    wait_for(
        &clusters_a,
        "c1",
        "Available on A again",
        joined_and_available,
    )
    .await
    .unwrap();
    // Back on A, A's work applies again (`only-a` anew) and takes `settings` over; B's record
    // is evicted in turn after the grace, and `settings` is still the same object.
    wait_for(&applied, &applied_a, "A's record again", |_| true)
        .await
        .unwrap();
    wait_gone(&applied, &applied_b).await.unwrap();
    configmaps.get("only-a").await.unwrap();
    let settings = configmaps.get("settings").await.unwrap();
    assert_eq!(settings.metadata.uid, uid);
    assert_eq!(owner_names(&settings.metadata), vec![applied_a.clone()]);

    // Both hubs down: the agent registered before, so the same `ocm join` run again still
    // starts it, with a warning naming each hub, and the agent keeps asking them.
    agent.stop();
    hub_a.process.kill_9();
    hub_b.stop();
    let join = Process::spawn(OCM, home, &join_args);
    for hub in [
        format!("hub 1 of 2 ({url_a})"),
        format!("hub 2 of 2 ({url_b})"),
    ] {
        join.wait_line(&format!("{hub}: not reachable now"));
    }
    join.wait_line("no listed bootstrap kubeconfig reaches a hub that answers");
    join.stop();
    spoke_process.stop();
}

//! The join flow as a user runs it: `ocm hub`, `ocm init`, `ocm join` and `ocm accept` as
//! separate processes over real TLS, then real kubectl; bad input to `ocm join` fails clearly
//! and leaves nothing on the hub; `ocm demo` joins its clusters and resumes on a second run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, ListParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::process::{HubProcess, Process, http_get};
use ocm_e2e::{joined_and_available, wait_for};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// Runs `ocm` to completion: (exit code, stdout, stderr).
fn ocm(home: &Path, args: &[&str]) -> (i32, String, String) {
    ocm_e2e::process::run_ocm(OCM, home, args)
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

async fn admin_client(kubeconfig: &Path) -> kube::Client {
    ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap()
}

fn start_hub(home: &Path) -> HubProcess {
    HubProcess::start(OCM, home, &home.join("hub"), "127.0.0.1:0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_join_accept_as_processes_then_kubectl_shows_the_cluster() {
    let home = tempfile::tempdir().unwrap();
    let hub = start_hub(home.path());
    let kubeconfig = hub.kubeconfig.to_str().unwrap().to_owned();

    let (code, stdout, stderr) = ocm(home.path(), &["init", "--kubeconfig", &kubeconfig]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("ocm join --hub-apiserver"), "{stdout}");
    let token = stdout
        .split_whitespace()
        .skip_while(|w| *w != "--hub-token")
        .nth(1)
        .unwrap()
        .to_owned();

    // Bad input: clear message, non-zero exit, nothing written to the hub.
    let spoke_dir = home.path().join("spoke-c1");
    let spoke_dir = spoke_dir.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "--hub-apiserver",
                &hub.url,
                "--hub-token",
                &token,
                "--cluster-name",
                "Not_A_Name",
            ],
            "invalid cluster name",
        ),
        (
            &[
                "--hub-apiserver",
                "http://127.0.0.1:1",
                "--hub-token",
                &token,
                "--cluster-name",
                "c1",
            ],
            "invalid hub URL",
        ),
        (
            &[
                "--hub-apiserver",
                "https://127.0.0.1:1",
                "--hub-token",
                &token,
                "--cluster-name",
                "c1",
            ],
            "cannot reach the hub",
        ),
        (
            &[
                "--hub-apiserver",
                &hub.url,
                "--hub-token",
                "abcdef.0123456789abcdef",
                "--cluster-name",
                "c1",
            ],
            "rejected the token",
        ),
        (
            &[
                "--hub-apiserver",
                &hub.url,
                "--hub-token",
                "",
                "--cluster-name",
                "c1",
            ],
            "invalid hub token",
        ),
    ];
    for (args, message) in cases {
        let mut full = vec!["join"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["--simulated", "--data-dir", spoke_dir]);
        let (code, _, stderr) = ocm(home.path(), &full);
        assert_ne!(code, 0, "{args:?} should fail");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let admin = admin_client(&hub.kubeconfig).await;
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    assert!(
        clusters
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        csrs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // The real thing.
    let join_args = [
        "join",
        "--hub-apiserver",
        &hub.url,
        "--hub-token",
        &token,
        "--cluster-name",
        "c1",
        "--simulated",
        "--data-dir",
        spoke_dir,
    ];
    let join = Process::spawn(OCM, home.path(), &join_args);
    join.wait_line("token accepted");
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "accept",
            "--clusters",
            "c1",
            "--wait",
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("cluster c1 accepted"), "{stdout}");
    // The next step of a script writes into the cluster's namespace: it is there already.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    assert!(namespaces.get_opt("c1").await.unwrap().is_some());
    wait_for(
        &clusters,
        "c1",
        "Joined and Available",
        joined_and_available,
    )
    .await
    .unwrap();
    let csr_count = csrs.list(&ListParams::default()).await.unwrap().items.len();

    let (code, stdout, _) = ocm(
        home.path(),
        &["get", "clusters", "--kubeconfig", &kubeconfig],
    );
    assert_eq!(code, 0);
    assert!(stdout.contains("HUB ACCEPTED"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("c1 ") && l.contains("True")),
        "{stdout}"
    );

    if kubectl_available() {
        let out = Command::new("kubectl")
            .args(["--kubeconfig", &kubeconfig, "get", "managedclusters"])
            .env("HOME", home.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let header = stdout.lines().next().unwrap();
        for column in [
            "NAME",
            "HUB ACCEPTED",
            "MANAGED CLUSTER URLS",
            "JOINED",
            "AVAILABLE",
            "AGE",
        ] {
            assert!(header.contains(column), "{header}");
        }
        let row = stdout.lines().find(|l| l.starts_with("c1 ")).unwrap();
        assert!(row.contains("true") && row.contains("True"), "{row}");
    } else {
        eprintln!("kubectl not found: skipping the kubectl part");
    }

    // `ocm create work`: the work agent that `ocm join` runs applies it; `ocm get works` shows it.
    let manifests = home.path().join("app.yaml");
    std::fs::write(
        &manifests,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {a: '1'}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n\
         spec: {replicas: 1, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, \
         spec: {containers: [{name: web, image: nginx}]}}}\n",
    )
    .unwrap();
    let manifests = manifests.to_str().unwrap();
    let create = [
        "create",
        "work",
        "app",
        "--cluster",
        "c1",
        "-f",
        manifests,
        "--kubeconfig",
        &kubeconfig,
    ];
    let (code, stdout, stderr) = ocm(home.path(), &create);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("manifestwork c1/app created"), "{stdout}");
    let (code, _, stderr) = ocm(home.path(), &create);
    assert_ne!(code, 0);
    assert!(stderr.contains("already exists"), "{stderr}");
    let (code, _, stderr) = ocm(
        home.path(),
        &[
            "create",
            "work",
            "app",
            "--cluster",
            "nope",
            "-f",
            manifests,
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("has no namespace"), "{stderr}");
    let works: Api<ocm_api::work::v1::ManifestWork> = Api::namespaced(admin.clone(), "c1");
    wait_for(&works, "app", "Applied and Available", |w| {
        w.status.as_ref().is_some_and(|s| {
            ["Applied", "Available"].iter().all(|t| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == *t && c.status == "True")
            })
        })
    })
    .await
    .unwrap();
    // The registration and work agents of the one process share one connection to the hub.
    let hub_port: u16 = hub.url.rsplit(':').next().unwrap().parse().unwrap();
    let one_connection = tokio::time::timeout(ocm_e2e::WAIT, async {
        while ocm_e2e::process::tcp_connections_to(join.pid(), hub_port) != 1 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(
        one_connection.is_ok(),
        "the agent process holds {} connections to the hub",
        ocm_e2e::process::tcp_connections_to(join.pid(), hub_port)
    );
    let (code, stdout, _) = ocm(
        home.path(),
        &[
            "get",
            "works",
            "--cluster",
            "c1",
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_eq!(code, 0);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("app ") && l.matches("True").count() == 2),
        "{stdout}"
    );
    let (code, stdout, stderr) = ocm(
        home.path(),
        &["get", "placements", "-A", "--kubeconfig", &kubeconfig],
    );
    assert_eq!(code, 0);
    assert_eq!(
        stdout, "",
        "nothing found is said on stderr, as kubectl does"
    );
    assert!(stderr.contains("No placements found."), "{stderr}");

    // Addons: enable needs a known addon and a known cluster; get shows kubectl's columns.
    let (code, _, stderr) = ocm(
        home.path(),
        &[
            "addon",
            "enable",
            "--names",
            "hello",
            "--clusters",
            "c1",
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains("addon \"hello\" is not known on this hub"),
        "{stderr}"
    );
    let cmas: Api<ocm_api::addon::v1beta1::ClusterManagementAddOn> = Api::all(admin.clone());
    cmas.create(
        &Default::default(),
        &serde_json::from_value(serde_json::json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": "hello"}, "spec": {}}))
        .unwrap(),
    )
    .await
    .unwrap();
    let (code, _, stderr) = ocm(
        home.path(),
        &[
            "addon",
            "enable",
            "--names",
            "hello",
            "--clusters",
            "nope",
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("not a managed cluster"), "{stderr}");
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "addon",
            "enable",
            "--names",
            "hello",
            "--clusters",
            "c1",
            "-n",
            "hello-ns",
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("addon hello enabled on cluster c1"),
        "{stdout}"
    );
    let (code, stdout, _) = ocm(home.path(), &["get", "addons", "--kubeconfig", &kubeconfig]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("NAMESPACE   NAME    AVAILABLE   DEGRADED   PROGRESSING"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("c1 ") && l.contains("hello")),
        "{stdout}"
    );
    let addons: Api<ocm_api::addon::v1beta1::ManagedClusterAddOn> =
        Api::namespaced(admin.clone(), "c1");
    let mca = addons.get("hello").await.unwrap();
    assert_eq!(
        mca.metadata.annotations.unwrap_or_default()
            [ocm_api::addon::names::annotations::V1ALPHA1_INSTALL_NAMESPACE],
        "hello-ns"
    );
    let (code, stdout, _) = ocm(
        home.path(),
        &[
            "addon",
            "disable",
            "--names",
            "hello",
            "--clusters",
            "c1",
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_eq!(code, 0);
    assert!(
        stdout.contains("addon hello disabled on cluster c1"),
        "{stdout}"
    );
    ocm_e2e::wait_gone(&addons, "hello").await.unwrap();

    // Restarting the agent re-registers nothing.
    join.stop();
    let join = Process::spawn(OCM, home.path(), &join_args);
    join.wait_line("token accepted");
    let restarted = jiff::Timestamp::now();
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(admin.clone(), "c1");
    wait_for(
        &leases,
        "managed-cluster-lease",
        "renewed by the restarted agent",
        move |l| {
            l.spec
                .as_ref()
                .and_then(|s| s.renew_time.as_ref())
                .is_some_and(|t| t.0 > restarted)
        },
    )
    .await
    .unwrap();
    assert_eq!(
        csrs.list(&ListParams::default()).await.unwrap().items.len(),
        csr_count
    );

    // `ocm unjoin` removes the agent's namespace and credentials from the managed cluster.
    let spoke_kubeconfig = format!("{spoke_dir}/admin.kubeconfig");
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "unjoin",
            "--cluster-name",
            "c1",
            "--spoke-kubeconfig",
            &spoke_kubeconfig,
        ],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("removed"), "{stdout}");
    let spoke = admin_client(Path::new(&spoke_kubeconfig)).await;
    ocm_e2e::wait_gone(
        &Api::<k8s_openapi::api::core::v1::Namespace>::all(spoke),
        "open-cluster-management-agent",
    )
    .await
    .unwrap();
    join.stop();
    hub.process.stop();
}

#[test]
fn demo_joins_its_clusters_and_resumes_on_a_second_run() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("demo");
    let data = data.to_str().unwrap();
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "demo",
            "--data-dir",
            data,
            "--clusters",
            "2",
            "--until-ready",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for needle in [
        "ocm init",
        "cluster1",
        "cluster2",
        "approved CSR",
        "kubectl --kubeconfig",
        "helloworld enabled",
        "agent registered, hub credentials in",
        "NAMESPACE   NAME         AVAILABLE",
        "cluster1: tunnel open",
        "cluster2: tunnel open",
        "ocm proxy kubectl",
        "dashboard:      http://127.0.0.1:",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
    assert!(stdout.contains("NAME"), "{stdout}");

    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "demo",
            "--data-dir",
            data,
            "--clusters",
            "2",
            "--until-ready",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("resuming"), "{stdout}");
    assert!(stdout.contains("cluster2: tunnel open"), "{stdout}");
    assert!(stdout.contains("was already accepted"), "{stdout}");
    assert!(!stdout.contains("approved CSR"), "{stdout}");
    assert!(
        stdout.contains("helloworld was already enabled"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("cluster1") && l.contains("helloworld") && l.contains("True")),
        "{stdout}"
    );
}

#[test]
fn demo_with_no_clusters_brings_up_the_hub_and_finishes() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("demo");
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "demo",
            "--data-dir",
            data.to_str().unwrap(),
            "--clusters",
            "0",
            "--until-ready",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for needle in [
        "Starting 0 simulated managed clusters",
        "Try it alongside:",
        "get managedclusters",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
    assert!(!stdout.contains("ocm proxy kubectl"), "{stdout}");
}

#[test]
fn registration_benchmark_runs_and_prints_its_figures() {
    let home = tempfile::tempdir().unwrap();
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "registration",
            "--clusters",
            "3",
            "--lease-seconds",
            "5",
            "--steady-seconds",
            "1",
        ];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = ocm(home.path(), &args);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        stdout
    };
    let expect = |stdout: &str, needles: &[&str]| {
        for needle in needles {
            assert!(
                stdout.contains(needle),
                "{needle:?} missing from:\n{stdout}"
            );
        }
    };
    expect(
        &bench(&[]),
        &[
            "3 simulated clusters prepared",
            "Joined and Available",
            "RSS (hub, API server, simulated clusters and agents):",
            "CPU in steady heartbeat",
        ],
    );
    // The clusters and agents in other processes (real children `ocm bench fleet`).
    expect(
        &bench(&["--fleet-process"]),
        &[
            "3 simulated clusters prepared",
            "Joined and Available",
            "RSS (hub and API server):",
            "RSS of the fleet processes (simulated clusters and agents):",
        ],
    );
    // The hub stopped and started again on its data directory, the agents resuming.
    expect(
        &bench(&["--fleet-process", "--restart"]),
        &[
            "restart: hub stopped and serving again",
            "every cluster's lease renewed on the new hub",
            "restart: clusters not Available now: 0",
            "WATCH  managedclusters",
        ],
    );
}

#[test]
fn footprint_benchmark_runs_and_prints_its_figures() {
    let home = tempfile::tempdir().unwrap();
    // The agent-only executable is this package's `ocm-e2e-agent` (not beside `ocm-e2e-ocm`
    // under the name `ocm-agent`).
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "bench",
            "footprint",
            "--settle",
            "1",
            "--agent-binary",
            env!("CARGO_BIN_EXE_ocm-e2e-agent"),
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for needle in [
        "clusters footprint1, footprint2, footprint3 Joined and Available",
        "resident memory after settling",
        "VmRSS",
        "ocm hub (embedded, 3 clusters)",
        "ocm join --simulated ",
        "ocm agent ",
        "ocm-agent agent ",
        "ocm apiserver (a cluster)",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
}

#[test]
fn soak_benchmark_runs_and_prints_its_figures() {
    let home = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "bench",
            "soak",
            "--clusters",
            "3",
            "--minutes",
            "2",
            "--warmup-minutes",
            "1",
            "--placements",
            "2",
            "--round-seconds",
            "2",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for needle in [
        "3 clusters joined",
        "works and placements created; churning",
        "RSS after the warm-up",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
    // Two rows, no failed request, no 5xx, every cluster Available.
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 9 && f[0].parse::<u32>().is_ok())
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for row in rows {
        assert_eq!(&row[6..], ["0", "0", "0"], "{stdout}");
    }
}

#[test]
fn addons_benchmark_runs_and_prints_its_figures() {
    let home = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = ocm(
        home.path(),
        &[
            "bench",
            "addons",
            "--clusters",
            "3",
            "--addons",
            "2",
            "--status-sync-seconds",
            "1",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for needle in [
        "3 clusters joined",
        "6 ManagedClusterAddOns: all created after",
        "all Available after",
        "install controller during the rollout:",
        "ManagedClusterAddOns looked at",
        "MiB before",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_then_dashboard_as_processes_serves_the_overview() {
    let home = tempfile::tempdir().unwrap();
    let hub = start_hub(home.path());
    let kubeconfig = hub.kubeconfig.to_str().unwrap().to_owned();
    // Straight after the hub, as a script would run it.
    let dashboard = Process::spawn(
        OCM,
        home.path(),
        &[
            "dashboard",
            "--kubeconfig",
            &kubeconfig,
            "--listen",
            "127.0.0.1:0",
        ],
    );
    let line = dashboard.wait_line("ocm dashboard: http://");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    let (status, body) = http_get(&url, "/");
    assert!(status.contains(" 200 "), "{status}\n{body}");
    assert!(body.contains("Clusters"), "{body}");
    dashboard.stop();
}

//! `ocm init --operator` then `ocm join --operator`, back to back as people script them: the
//! operators themselves run as pods (processes started by the process kubelet, as their
//! ServiceAccounts, with the RBAC of their own manifests), install the hub components and
//! the agents, and the cluster joins.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::api::Api;
use ocm::simulated::SimulatedCluster;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::operator::{AGENT_NS, IMAGE, wait_deployment_available};
use ocm_e2e::process::{run_ocm, start_apiserver};
use ocm_e2e::wait_for;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// Runs `ocm` with `args` off the async runtime.
async fn ocm(home: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let home = home.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_ocm(OCM, &home, &args)
    })
    .await
    .unwrap()
}

/// An `ocm apiserver` process as the hub, with a process kubelet running its `ocm` pods.
async fn start_hub(
    home: &std::path::Path,
) -> (
    ocm_e2e::process::Process,
    std::path::PathBuf,
    ocm_runtime::shutdown::Shutdown,
) {
    let (apiserver, hub_kubeconfig) = start_apiserver(OCM, home, &[]);
    let kubelet = ocm_e2e::start_process_kubelet(OCM, &hub_kubeconfig, IMAGE, &home.join("hub"))
        .await
        .unwrap();
    (apiserver, hub_kubeconfig, kubelet)
}

/// `ocm init --operator --wait` against `hub`; its output.
async fn init_with_operator(home: &std::path::Path, hub: &str) -> String {
    let (code, out, err) = ocm(
        home,
        &[
            "init",
            "--kubeconfig",
            hub,
            "--operator",
            "--image",
            IMAGE,
            "--wait",
            "--timeout",
            "60",
        ],
    )
    .await;
    assert_eq!(code, 0, "ocm init --operator failed:\n{out}\n{err}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_and_join_with_operators_back_to_back() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, hub_kubeconfig, hub_kubelet) = start_hub(home).await;
    let spoke = SimulatedCluster::start(&home.join("c1"), ([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let spoke_kubelet =
        ocm_e2e::start_process_kubelet(OCM, &spoke.kubeconfig, IMAGE, &home.join("c1"))
            .await
            .unwrap();
    let hub = hub_kubeconfig.to_str().unwrap();

    let out = init_with_operator(home, hub).await;
    assert!(out.contains("hub components running"), "{out}");
    // The printed join command, with this cluster's name and kubeconfig filled in.
    let join_line = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("ocm join"))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<String> = join_line
        .split_whitespace()
        .filter(|w| *w != "\\")
        .skip(1)
        .map(|w| match w {
            "<cluster-name>" => "c1".to_owned(),
            "<managed-cluster-kubeconfig>" => spoke.kubeconfig.display().to_string(),
            other => other.to_owned(),
        })
        .collect();
    assert!(words.contains(&"--operator".to_owned()), "{join_line}");
    let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
    args.extend(["--wait", "--timeout", "60"]);
    let (code, out, err) = ocm(home, &args).await;
    assert_eq!(code, 0, "ocm join --operator failed:\n{out}\n{err}");
    assert!(out.contains("cluster c1 asked to join the hub"), "{out}");

    let (code, out, err) = ocm(home, &["accept", "--kubeconfig", hub, "--clusters", "c1"]).await;
    assert_eq!(code, 0, "ocm accept failed:\n{out}\n{err}");
    let admin = ocm_runtime::kubeconfig::client_from_file(&hub_kubeconfig)
        .await
        .unwrap();
    let clusters: Api<ManagedCluster> = Api::all(admin);
    wait_for(
        &clusters,
        "c1",
        "Joined and Available",
        ocm_e2e::joined_and_available,
    )
    .await
    .unwrap();
    // The operators and agents ran as pods of the image.
    wait_deployment_available(&spoke.client(), "open-cluster-management", "klusterlet", 1)
        .await
        .unwrap();
    wait_deployment_available(&spoke.client(), AGENT_NS, "klusterlet-work-agent", 1)
        .await
        .unwrap();
    spoke_kubelet.cancel();
    hub_kubelet.cancel();
    spoke.stop().await;
    apiserver.stop();
}

/// `ocm demo --operator`: the hub components and every cluster's agents are installed by the
/// operators and run as processes; the clusters join; the dashboard is served; a second run
/// resumes on the same hub address (and serves no dashboard with `--no-dashboard`).
#[test]
fn the_operator_demo_joins_its_clusters_through_the_operators_and_resumes() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("demo");
    let data = data.to_str().unwrap();
    let args = [
        "demo",
        "--operator",
        "--data-dir",
        data,
        "--clusters",
        "2",
        "--until-ready",
    ];
    let (code, stdout, stderr) = run_ocm(OCM, home.path(), &args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for needle in [
        "open-cluster-management-hub/cluster-manager-registration-controller-",
        "open-cluster-management/cluster-manager-",
        "cluster1: accepted",
        "cluster2: accepted",
        "open-cluster-management-agent/klusterlet-registration-agent-",
        "open-cluster-management-agent/klusterlet-work-agent-",
        "dashboard:      http://127.0.0.1:",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
    let table: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("cluster1 ") || l.starts_with("cluster2 "))
        .collect();
    assert_eq!(table.len(), 2, "{stdout}");
    assert!(
        table.iter().all(|l| l.contains("True     True")),
        "{stdout}"
    );

    // The second run without the dashboard.
    let mut args = args.to_vec();
    args.push("--no-dashboard");
    let (code, stdout, stderr) = run_ocm(OCM, home.path(), &args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("cluster1: was already accepted"),
        "{stdout}"
    );
    assert!(!stdout.contains("dashboard:"), "{stdout}");
}

/// The shape of upstream's e2e environment, made with ocm's installers back to back: the hub
/// cluster is also the managed cluster; `ocm join --operator --no-klusterlet
/// --bootstrap-kubeconfig <hub admin kubeconfig>` installs the klusterlet operator and the
/// bootstrap Secret only (upstream's klusterlet chart with `klusterlet.create=false`), and a
/// Klusterlet created afterwards by hand joins the hub it runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_joins_itself_with_a_bootstrap_kubeconfig_and_no_klusterlet() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::PostParams;
    use ocm_api::operator::v1::Klusterlet;

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, hub_kubeconfig, hub_kubelet) = start_hub(home).await;
    let hub = hub_kubeconfig.to_str().unwrap();
    init_with_operator(home, hub).await;
    let join = [
        "join",
        "--operator",
        "--no-klusterlet",
        "--image",
        IMAGE,
        "--spoke-kubeconfig",
        hub,
        "--bootstrap-kubeconfig",
        hub,
    ];
    let (code, out, err) = ocm(home, &join).await;
    assert_eq!(code, 0, "ocm join --no-klusterlet failed:\n{out}\n{err}");
    assert!(out.contains("no Klusterlet"), "{out}");

    let admin = ocm_runtime::kubeconfig::client_from_file(&hub_kubeconfig)
        .await
        .unwrap();
    // The operator and the bootstrap Secret (the kubeconfig as given), and no Klusterlet.
    wait_deployment_available(&admin, "open-cluster-management", "klusterlet", 1)
        .await
        .unwrap();
    let secret = Api::<Secret>::namespaced(admin.clone(), AGENT_NS)
        .get("bootstrap-hub-kubeconfig")
        .await
        .unwrap();
    assert_eq!(
        secret.data.unwrap()["kubeconfig"].0,
        std::fs::read(&hub_kubeconfig).unwrap()
    );
    let klusterlets: Api<Klusterlet> = Api::all(admin.clone());
    assert!(
        klusterlets
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // A Klusterlet naming its cluster, as upstream's suite makes them: the agents join.
    let klusterlet: Klusterlet = serde_json::from_value(serde_json::json!({
        "apiVersion": "operator.open-cluster-management.io/v1", "kind": "Klusterlet",
        "metadata": {"name": "klusterlet"},
        "spec": {"clusterName": "local", "namespace": AGENT_NS,
                 "registrationImagePullSpec": IMAGE, "workImagePullSpec": IMAGE}}))
    .unwrap();
    klusterlets
        .create(&PostParams::default(), &klusterlet)
        .await
        .unwrap();
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    wait_for(&clusters, "local", "asked to join", |_| true)
        .await
        .unwrap();
    ocm_e2e::wait_for_pending_csr(&admin, "local", |_| true)
        .await
        .unwrap();
    // Its request comes from the hub's admin, not a bootstrap identity: accepted only when
    // the hub admin says so (as clusteradm's --skip-approve-check).
    let accept = ["accept", "--kubeconfig", hub, "--clusters", "local"];
    let (code, out, err) = ocm(home, &accept).await;
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("no pending certificate request from a bootstrap identity"),
        "{err}"
    );
    let (code, out, err) = ocm(home, &[&accept[..], &["--skip-approve-check"]].concat()).await;
    assert_eq!(code, 0, "ocm accept failed:\n{out}\n{err}");
    wait_for(
        &clusters,
        "local",
        "Joined and Available",
        ocm_e2e::joined_and_available,
    )
    .await
    .unwrap();

    // A bootstrap kubeconfig whose credentials are files cannot go into a Secret: refused,
    // naming the problem, before anything is written.
    let with_files = home.join("files.kubeconfig");
    std::fs::write(
        &with_files,
        std::fs::read_to_string(&hub_kubeconfig).unwrap().replace(
            "client-certificate-data:",
            "client-certificate: /tmp/cert.pem\n    x-was:",
        ),
    )
    .unwrap();
    let mut bad = join;
    bad[8] = with_files.to_str().unwrap();
    let (code, out, err) = ocm(home, &bad).await;
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("must be inline"), "{err}");
    hub_kubelet.cancel();
    apiserver.stop();
}

/// `ocm demo --operator --local-image IMAGE=EXECUTABLE`, then at once `kubectl apply` of a
/// Deployment of another tag of that image: its pod runs as the executable (the image's
/// program word dropped, the rest its arguments), and what it prints is the pod's log. The
/// demo's dashboard answers meanwhile.
#[test]
fn the_operator_demo_runs_a_local_image_as_its_executable() {
    let home = tempfile::tempdir().unwrap();
    let tool = home.path().join("tool.sh");
    std::fs::write(
        &tool,
        "#!/bin/sh\necho \"local tool ran: $*\"\nexec sleep 600\n",
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&tool).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&tool, permissions).unwrap();
    let data = home.path().join("demo");
    let local_image = format!("example.com/team/tool={}", tool.display());
    let demo = ocm_e2e::process::Process::spawn(
        OCM,
        home.path(),
        &[
            "demo",
            "--operator",
            "--clusters",
            "0",
            "--data-dir",
            data.to_str().unwrap(),
            "--local-image",
            &local_image,
        ],
    );
    demo.wait_line("Running");
    // It serves the dashboard, as `ocm demo` does.
    let line = demo.wait_line("dashboard:      http://");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap();
    let (status, body) = ocm_e2e::process::http_get(url, "/");
    assert!(status.contains(" 200 "), "{status}\n{body}");
    assert!(body.contains("Clusters"), "{body}");
    let kubeconfig = data.join("hub").join("admin.kubeconfig");
    let deployment = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": "tool", "namespace": "default"},
      "spec": {"selector": {"matchLabels": {"app": "tool"}},
               "template": {"metadata": {"labels": {"app": "tool"}},
                            "spec": {"containers": [{"name": "tool", "image": "example.com/team/tool:v2",
                                                     "args": ["/tool", "hello", "world"]}]}}}}"#;
    let kubectl = |args: &[&str], input: Option<&str>| -> (bool, String, String) {
        let mut child = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl is installed (.ci/run installs it)");
        if let Some(input) = input {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stdout, stderr) = kubectl(&["apply", "-f", "-"], Some(deployment));
    assert!(ok, "{stdout}\n{stderr}");
    // Its pod runs the tool: the Deployment becomes available, and the tool's output is the
    // pod's log (there is no watch for a log; ask until the line is there).
    let (ok, stdout, stderr) = kubectl(
        &[
            "rollout",
            "status",
            "deployment/tool",
            "-n",
            "default",
            "--timeout=120s",
        ],
        None,
    );
    assert!(ok, "{stdout}\n{stderr}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (ok, stdout, stderr) = kubectl(&["logs", "deployment/tool", "-n", "default"], None);
        if ok && stdout.contains("local tool ran: hello world") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no line from the tool in its pod's log: {stdout}\n{stderr}"
        );
        std::thread::yield_now();
    }
    demo.stop();
}

/// `ocm join --operator` naming two hubs (embedded `ocm hub` processes): the Klusterlet lists a
/// bootstrap kubeconfig secret per hub (`bootstrapKubeConfigs` of type LocalSecrets), which
/// the operator hands to the registration agent, and the cluster joins the first, its eviction grace in `workConfiguration`; a connection timeout
/// below the Klusterlet API's 180 s is refused before anything is installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_with_the_operator_names_two_hubs_as_local_secrets() {
    use ocm_api::operator::v1::Klusterlet;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let hub_a = ocm_e2e::process::HubProcess::start(OCM, home, &home.join("hub-a"), "127.0.0.1:0");
    let hub_b = ocm_e2e::process::HubProcess::start(OCM, home, &home.join("hub-b"), "127.0.0.1:0");
    let mut hubs = Vec::new();
    for hub in [&hub_a, &hub_b] {
        let (code, out, err) = ocm(
            home,
            &["init", "--kubeconfig", hub.kubeconfig.to_str().unwrap()],
        )
        .await;
        assert_eq!(code, 0, "{err}");
        let word_after = |flag: &str| {
            out.split_whitespace()
                .skip_while(|w| *w != flag)
                .nth(1)
                .unwrap()
                .to_owned()
        };
        hubs.push((word_after("--hub-apiserver"), word_after("--hub-token")));
    }
    let spoke = SimulatedCluster::start(&home.join("c1"), ([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let spoke_kubelet =
        ocm_e2e::start_process_kubelet(OCM, &spoke.kubeconfig, IMAGE, &home.join("c1"))
            .await
            .unwrap();
    let spoke_kubeconfig = spoke.kubeconfig.to_str().unwrap().to_owned();
    let join = |timeout: &'static str| {
        vec![
            "join".to_owned(),
            "--hub-apiserver".into(),
            hubs[0].0.clone(),
            "--hub-token".into(),
            hubs[0].1.clone(),
            "--hub-apiserver".into(),
            hubs[1].0.clone(),
            "--hub-token".into(),
            hubs[1].1.clone(),
            "--hub-connection-timeout-seconds".into(),
            timeout.into(),
            "--cluster-name".into(),
            "c1".into(),
            "--spoke-kubeconfig".into(),
            spoke_kubeconfig.clone(),
            "--operator".into(),
            "--image".into(),
            IMAGE.into(),
            "--appliedmanifestwork-eviction-grace-period".into(),
            "90m".into(),
        ]
    };

    let short = join("5");
    let short: Vec<&str> = short.iter().map(String::as_str).collect();
    let (code, _, err) = ocm(home, &short).await;
    assert_ne!(code, 0);
    assert!(err.contains("is below 180"), "{err}");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(spoke.client());
    assert!(namespaces.get_opt(AGENT_NS).await.unwrap().is_none());

    let mut args = join("180");
    args.extend(["--wait".into(), "--timeout".into(), "60".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = ocm(home, &args).await;
    assert_eq!(code, 0, "ocm join --operator failed:\n{out}\n{err}");
    // --wait watches both hubs; the agent chose the first, which answers.
    assert!(
        out.contains(&format!("cluster c1 asked to join the hub {}", hubs[0].0)),
        "{out}"
    );
    let klusterlet = Api::<Klusterlet>::all(spoke.client())
        .get("klusterlet")
        .await
        .unwrap();
    let spec = serde_json::to_value(&klusterlet.spec).unwrap();
    assert_eq!(
        spec["registrationConfiguration"]["bootstrapKubeConfigs"],
        serde_json::json!({"type": "LocalSecrets", "localSecretsConfig": {
            "kubeConfigSecrets": [{"name": "bootstrap-hub-kubeconfig-1"},
                                  {"name": "bootstrap-hub-kubeconfig-2"}],
            "hubConnectionTimeoutSeconds": 180}}),
        "{spec}"
    );
    assert_eq!(
        spec["workConfiguration"]["appliedManifestWorkEvictionGracePeriod"], "90m",
        "{spec}"
    );
    // The operator hands the list to the registration agent, which chooses the hub.
    let registration =
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(spoke.client(), AGENT_NS)
            .get("klusterlet-registration-agent")
            .await
            .unwrap();
    let args = registration.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default();
    for flag in [
        "--bootstrap-kubeconfig-secrets=bootstrap-hub-kubeconfig-1,bootstrap-hub-kubeconfig-2",
        "--hub-connection-timeout-seconds=180",
    ] {
        assert!(args.contains(&flag.to_owned()), "{args:?}");
    }
    let (code, out, err) = ocm(
        home,
        &[
            "accept",
            "--kubeconfig",
            hub_a.kubeconfig.to_str().unwrap(),
            "--clusters",
            "c1",
        ],
    )
    .await;
    assert_eq!(code, 0, "ocm accept failed:\n{out}\n{err}");
    let admin_a = hub_a.admin_client().await;
    wait_for(
        &Api::<ManagedCluster>::all(admin_a),
        "c1",
        "Joined and Available on the first hub",
        ocm_e2e::joined_and_available,
    )
    .await
    .unwrap();
    let admin_b = hub_b.admin_client().await;
    assert!(
        Api::<ManagedCluster>::all(admin_b)
            .get_opt("c1")
            .await
            .unwrap()
            .is_none()
    );
    spoke_kubelet.cancel();
    spoke.stop().await;
    hub_a.process.stop();
    hub_b.process.stop();
}

//! `ocm get` as a new user types it: no `--kubeconfig` and no `$KUBECONFIG`, right after
//! `ocm hub` or `ocm demo` (the command finds the hub started last and names it on stderr);
//! kubectl's `-n`, `-A` and `-o yaml|json`; and what it says when there is no hub at all.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use ocm_api::cluster::v1beta1::Placement;
use ocm_e2e::process::{HubProcess, Process};
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// Runs `ocm` with `OCM_HOME` = `home` and `KUBECONFIG` = `kubeconfig` (unset when `None`):
/// (exit code, stdout, stderr).
fn ocm(home: &Path, kubeconfig: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(OCM);
    command
        .args(args)
        .env("OCM_HOME", home)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null());
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The line `ocm` prints on stderr for the hub it reached.
fn hub_line(kubeconfig: &Path, url: &str) -> String {
    format!("hub: {} ({url})", kubeconfig.display())
}

#[test]
fn get_reaches_the_hub_started_last_without_kubeconfig_and_names_it() {
    let home = tempfile::tempdir().unwrap();
    let hub = HubProcess::start(OCM, home.path(), &home.path().join("hub"), "127.0.0.1:0");
    let hub_kubeconfig = hub.kubeconfig.to_str().unwrap().to_owned();

    // At once, no pause: the hub recorded itself before it said it was ready.
    let (code, stdout, stderr) = ocm(home.path(), None, &["get", "clusters"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&hub_line(&hub.kubeconfig, &hub.url)),
        "{stderr}"
    );
    assert!(stderr.contains("No managed clusters found"), "{stderr}");
    assert_eq!(stdout, "", "stdout holds only what scripts parse");

    // `ocm demo` started next, in its default data dir ($OCM_HOME/demo): now that one.
    let demo = Process::spawn(
        OCM,
        home.path(),
        &["demo", "--clusters", "1", "--no-dashboard"],
    );
    let line = demo.wait_line("hub API server:");
    let demo_url = line.split_whitespace().last().unwrap().to_owned();
    let demo_kubeconfig = home.path().join("demo").join("admin.kubeconfig");
    let (code, stdout, stderr) = ocm(home.path(), None, &["get", "clusters"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&hub_line(&demo_kubeconfig, &demo_url)),
        "{stderr}"
    );
    assert!(!stdout.contains("hub:"), "{stdout}");

    // $KUBECONFIG comes before the hub started last (a missing file in its list is
    // skipped, as kubectl does); --kubeconfig before $KUBECONFIG.
    let listed = format!("{}:{hub_kubeconfig}", home.path().join("none").display());
    let (code, _, stderr) = ocm(home.path(), Some(&listed), &["get", "clusters"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&hub_line(&hub.kubeconfig, &hub.url)),
        "{stderr}"
    );
    let (code, _, stderr) = ocm(
        home.path(),
        Some(&hub_kubeconfig),
        &[
            "get",
            "clusters",
            "--kubeconfig",
            demo_kubeconfig.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&hub_line(&demo_kubeconfig, &demo_url)),
        "{stderr}"
    );
    demo.stop();
    hub.process.stop();

    // `ocm hub --kubeconfig` on an existing cluster is a hub started too: now that one.
    let managed_home = home.path().join("managed");
    let managed = ocm_e2e::process::ManagedApiserver::start(OCM, &managed_home);
    let (code, _, stderr) = ocm(&managed_home, None, &["get", "clusters"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("hub: {} (", managed.kubeconfig.display())),
        "{stderr}"
    );
    managed.stop();
}

async fn create_placement(client: &kube::Client, namespace: &str, name: &str) {
    let placement: Placement = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": name, "namespace": namespace}, "spec": {},
    }))
    .unwrap();
    Api::<Placement>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &placement)
        .await
        .unwrap();
}

/// The (namespace, name) of each item of a kubectl `List` of Placements.
fn list_items(list: &Value) -> Vec<(String, String)> {
    assert_eq!(list["apiVersion"], "v1", "{list:#}");
    assert_eq!(list["kind"], "List", "{list:#}");
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            assert_eq!(item["kind"], "Placement", "{item:#}");
            let meta = &item["metadata"];
            (
                meta["namespace"].as_str().unwrap().to_owned(),
                meta["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The first cells of the table's lines (after its header).
fn first_cells(table: &str, count: usize) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .map(|l| {
            l.split_whitespace()
                .take(count)
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_placements_takes_kubectls_namespace_and_output_flags() {
    let home = tempfile::tempdir().unwrap();
    let hub = HubProcess::start(OCM, home.path(), &home.path().join("hub"), "127.0.0.1:0");
    let client = hub.admin_client().await;
    for namespace in ["apps", "web"] {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    for (namespace, name) in [
        ("web", "w1"),
        ("apps", "p2"),
        ("apps", "p1"),
        ("default", "d1"),
    ] {
        create_placement(&client, namespace, name).await;
    }
    let home = home.path();

    let (code, stdout, stderr) = ocm(home, None, &["get", "placements", "-A"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("NAMESPACE   NAME   SELECTED"),
        "{stdout}"
    );
    let rows: Vec<Vec<String>> = first_cells(&stdout, 2);
    assert_eq!(
        rows,
        [
            ["apps", "p1"],
            ["apps", "p2"],
            ["default", "d1"],
            ["web", "w1"]
        ]
        .map(|r| r.map(str::to_owned).to_vec())
        .to_vec(),
        "{stdout}"
    );

    // Neither -n nor -A: kubectl's default namespace (the admin kubeconfig names none).
    let (code, stdout, stderr) = ocm(home, None, &["get", "placements"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("NAME   SELECTED"), "{stdout}");
    assert_eq!(first_cells(&stdout, 1), [["d1".to_owned()]], "{stdout}");

    let (code, stdout, stderr) = ocm(home, None, &["get", "placements", "-n", "apps"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("NAME   SELECTED"), "{stdout}");
    assert_eq!(
        first_cells(&stdout, 1),
        [["p1".to_owned()], ["p2".to_owned()]],
        "{stdout}"
    );

    let (code, stdout, stderr) = ocm(home, None, &["get", "placements", "-A", "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        list_items(&list),
        pairs(&[
            ("apps", "p1"),
            ("apps", "p2"),
            ("default", "d1"),
            ("web", "w1")
        ])
    );

    let (code, stdout, stderr) = ocm(
        home,
        None,
        &["get", "placements", "-n", "apps", "-o", "yaml"],
    );
    assert_eq!(code, 0, "{stderr}");
    let documents = ocm::commands::work::yaml_documents(&stdout).unwrap();
    assert_eq!(documents.len(), 1, "{stdout}");
    assert_eq!(
        list_items(&documents[0]),
        pairs(&[("apps", "p1"), ("apps", "p2")])
    );

    let (code, stdout, _) = ocm(
        home,
        None,
        &["get", "works", "--cluster", "c1", "-o", "json"],
    );
    assert_eq!(code, 0);
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"], json!([]));

    // `ocm explain placement` looks where kubectl would: -n, else the context's namespace,
    // else `default`.
    let (code, _, stderr) = ocm(home, None, &["explain", "placement", "w1"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("placement default/w1 not found"),
        "{stderr}"
    );
    let mut config = kube::config::Kubeconfig::read_from(&hub.kubeconfig).unwrap();
    for context in &mut config.contexts {
        if let Some(c) = context.context.as_mut() {
            c.namespace = Some("web".to_owned());
        }
    }
    let in_web = home.join("in-web.kubeconfig");
    std::fs::write(&in_web, serde_json::to_string(&config).unwrap()).unwrap();
    let in_web = in_web.to_str().unwrap();
    let (code, stdout, stderr) = ocm(home, Some(in_web), &["explain", "placement", "w1"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("CLUSTER"), "{stdout}");
    let (code, stdout, _) = ocm(home, Some(in_web), &["get", "placements"]);
    assert_eq!(code, 0);
    assert_eq!(first_cells(&stdout, 1), [["w1".to_owned()]], "{stdout}");
    let (code, _, stderr) = ocm(
        home,
        Some(in_web),
        &["explain", "placement", "w1", "-n", "apps"],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("placement apps/w1 not found"), "{stderr}");

    // As in kubectl, -A wins over -n.
    let (code, stdout, _) = ocm(home, None, &["get", "placements", "-n", "web", "-A"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("NAMESPACE"), "{stdout}");
    // Bad input is refused before anything reaches the hub.
    let (code, _, stderr) = ocm(home, None, &["get", "addons", "-o", "foo"]);
    assert_ne!(code, 0);
    for accepted in ["wide", "yaml", "json"] {
        assert!(stderr.contains(accepted), "{stderr}");
    }
    hub.process.stop();
}

#[test]
fn without_a_hub_get_names_where_it_looked_and_how_to_start_one() {
    let home = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = ocm(home.path(), None, &["get", "placements", "-A"]);
    assert_ne!(code, 0);
    assert_eq!(stdout, "");
    let home = home.path().display();
    for needle in [
        "no hub found".to_owned(),
        "--kubeconfig".to_owned(),
        "$KUBECONFIG".to_owned(),
        format!("{home}/current-hub"),
        format!("{home}/hub/admin.kubeconfig (`ocm hub`)"),
        format!("{home}/demo/admin.kubeconfig (`ocm demo`)"),
        format!("{home}/demo-operator/hub/admin.kubeconfig (`ocm demo --operator`)"),
        "Start a hub with `ocm hub`".to_owned(),
    ] {
        assert!(
            stderr.contains(&needle),
            "{needle:?} missing from:\n{stderr}"
        );
    }
}

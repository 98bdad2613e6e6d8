//! `ocm apiserver` as a real process: durability across SIGKILL, and real kubectl against it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

/// A running `ocm apiserver`.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
}

impl Server {
    fn start(data_dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ocm"))
            .args(["apiserver", "--data-dir"])
            .arg(data_dir)
            .args(["--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ocm apiserver starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            let mut ready = false;
            for line in lines.by_ref() {
                let Ok(line) = line else { break };
                if !ready && line.contains("ocm apiserver ready") {
                    ready = true;
                    let _ = tx.send(line.clone());
                }
                eprintln!("[ocm apiserver] {line}");
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("ready line logged");
        assert!(line.contains("ocm apiserver ready"));
        Server {
            child,
            kubeconfig: data_dir.join("admin.kubeconfig"),
        }
    }

    async fn client(&self) -> kube::Client {
        let text = std::fs::read_to_string(&self.kubeconfig).unwrap();
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let client = server.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let start_rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..100 {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            let cm: ConfigMap = serde_json::from_value(
                json!({"metadata": {"name": format!("cm-{i}")}, "data": {"i": i.to_string()}}),
            )
            .unwrap();
            let created = api.create(&PostParams::default(), &cm).await.unwrap();
            (
                created.metadata.name.unwrap(),
                created.metadata.resource_version.unwrap(),
            )
        }));
    }
    let mut acked = Vec::new();
    for t in tasks {
        acked.push(t.await.unwrap());
    }
    server.kill();

    let server = Server::start(dir.path());
    let client = server.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut max_rv = 0u64;
    for (name, rv) in &acked {
        let got = api.get(name).await.unwrap();
        assert_eq!(got.metadata.resource_version.as_ref(), Some(rv), "{name}");
        max_rv = max_rv.max(rv.parse().unwrap());
    }
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "after-restart"}})).unwrap();
    let new = api.create(&PostParams::default(), &cm).await.unwrap();
    let new_rv: u64 = new.metadata.resource_version.unwrap().parse().unwrap();
    assert!(new_rv > max_rv, "{new_rv} > {max_rv}");
    // A watch resumed from before the restart either replays or is told to relist.
    let mut stream = api
        .watch(&WatchParams::default(), &start_rv)
        .await
        .unwrap()
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match first {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        WatchEvent::Added(_) => {}
        _ => panic!("unexpected first event"),
    }
    let status = server.terminate();
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
}

/// Runs kubectl with a fresh HOME against `kubeconfig`: (exit code, stdout, stderr).
fn kubectl(
    home: &Path,
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> (i32, String, String) {
    use std::io::Write;
    let mut cmd = Command::new("kubectl");
    cmd.env("HOME", home)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("kubectl runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget for tests.
        properties:
          spec:
            type: object
            description: Desired state of the widget.
            properties:
              color: {type: string, description: The color of the widget.}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
"#;

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\ndata:\n  a: \"1\"\n  b: \"2\"\n";

#[test]
fn kubectl_against_ocm_apiserver() {
    if !kubectl_available() {
        eprintln!(
            "SKIPPED: kubectl is not on PATH; install kubectl to run the kubectl compatibility test"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = Server::start(&dir.path().join("data"));
    let kc = server.kubeconfig.clone();
    let run = |args: &[&str]| kubectl(&home, &kc, args, None);
    let run_in = |args: &[&str], input: &str| kubectl(&home, &kc, args, Some(input));

    let (code, out, err) = run(&["api-resources"]);
    assert_eq!(code, 0, "{err}");
    let header = out.lines().next().unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == ["configmaps", "cm", "v1", "true", "ConfigMap"]),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == ["deployments", "deploy", "apps/v1", "true", "Deployment"]),
        "{out}"
    );

    // create / get / describe
    assert_eq!(
        run_in(&["create", "-f", "-"], CM),
        (0, "configmap/x created\n".into(), String::new())
    );
    let (code, out, _) = run(&["get", "configmap", "x"]);
    assert_eq!(code, 0);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "DATA", "AGE"]);
    assert_eq!(&lines[1][..2], ["x", "2"]);
    let (code, out, _) = run(&["get", "configmap", "x", "-o", "yaml"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("kind: ConfigMap")
            && out.contains("  a: \"1\"")
            && out.contains("resourceVersion:"),
        "{out}"
    );
    let (code, out, _) = run(&["describe", "configmap", "x"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("Name:         x\nNamespace:    default\n"),
        "{out}"
    );
    assert_eq!(
        run_in(&["create", "-f", "-"], CM).0,
        1,
        "second create fails"
    );
    let (_, _, err) = run_in(&["create", "-f", "-"], CM);
    assert_eq!(
        err,
        "Error from server (AlreadyExists): error when creating \"STDIN\": configmaps \"x\" already exists\n"
    );

    // client-side apply: created, unchanged, configured, field removal
    let applied = CM.replace("name: x", "name: applied");
    assert_eq!(
        run_in(&["apply", "-f", "-"], &applied),
        (0, "configmap/applied created\n".into(), String::new())
    );
    assert_eq!(
        run_in(&["apply", "-f", "-"], &applied),
        (0, "configmap/applied unchanged\n".into(), String::new())
    );
    let changed = applied.replace("a: \"1\"", "a: \"3\"");
    assert_eq!(
        run_in(&["apply", "-f", "-"], &changed),
        (0, "configmap/applied configured\n".into(), String::new())
    );
    let removed = changed.replace("  b: \"2\"\n", "");
    assert_eq!(
        run_in(&["apply", "-f", "-"], &removed),
        (0, "configmap/applied configured\n".into(), String::new())
    );
    let (_, out, _) = run(&["get", "configmap", "applied", "-o", "jsonpath={.data}"]);
    assert_eq!(out, "{\"a\":\"3\"}");

    // server-side apply, a conflict, and forcing it
    let ssa = CM.replace("name: x", "name: s");
    assert_eq!(
        run_in(&["apply", "--server-side", "-f", "-"], &ssa),
        (0, "configmap/s serverside-applied\n".into(), String::new())
    );
    let other = ssa.replace("a: \"1\"", "a: \"9\"");
    let (code, out, err) = run_in(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &other,
    );
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(
        err.starts_with(
            "error: Apply failed with 1 conflict: conflict with \"kubectl\": .data.a\n"
        ),
        "{err}"
    );
    assert_eq!(
        run_in(
            &[
                "apply",
                "--server-side",
                "--field-manager=other",
                "--force-conflicts",
                "-f",
                "-"
            ],
            &other
        ),
        (0, "configmap/s serverside-applied\n".into(), String::new())
    );

    // patch, label, annotate
    assert_eq!(
        run(&[
            "patch",
            "configmap",
            "x",
            "--type=merge",
            "-p",
            "{\"data\":{\"c\":\"3\"}}"
        ]),
        (0, "configmap/x patched\n".into(), String::new())
    );
    assert_eq!(
        run(&[
            "patch",
            "configmap",
            "x",
            "--type=merge",
            "-p",
            "{\"data\":{\"c\":\"3\"}}"
        ]),
        (0, "configmap/x patched (no change)\n".into(), String::new())
    );
    assert_eq!(
        run(&[
            "patch",
            "configmap",
            "x",
            "--type=json",
            "-p",
            "[{\"op\":\"add\",\"path\":\"/data/d\",\"value\":\"4\"}]"
        ]),
        (0, "configmap/x patched\n".into(), String::new())
    );
    assert_eq!(
        run(&[
            "patch",
            "configmap",
            "x",
            "--type=strategic",
            "-p",
            "{\"data\":{\"e\":\"5\"}}"
        ]),
        (0, "configmap/x patched\n".into(), String::new())
    );
    assert_eq!(
        run(&["label", "configmap", "x", "team=a"]),
        (0, "configmap/x labeled\n".into(), String::new())
    );
    assert_eq!(
        run(&["annotate", "configmap", "x", "note=hi"]),
        (0, "configmap/x annotated\n".into(), String::new())
    );
    let (_, out, _) = run(&["get", "configmap", "-l", "team=a", "-o", "name"]);
    assert_eq!(out, "configmap/x\n");

    // CRD: wait, printer columns, explain, watch, conditions, foreground delete
    assert_eq!(
        run_in(&["apply", "-f", "-"], CRD),
        (
            0,
            "customresourcedefinition.apiextensions.k8s.io/widgets.example.io created\n".into(),
            String::new()
        )
    );
    assert_eq!(
        run(&[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.io",
            "--timeout=30s"
        ]),
        (
            0,
            "customresourcedefinition.apiextensions.k8s.io/widgets.example.io condition met\n"
                .into(),
            String::new()
        )
    );
    let widget = "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: default\nspec:\n  color: red\n";
    assert_eq!(
        run_in(&["apply", "-f", "-"], widget),
        (0, "widget.example.io/w1 created\n".into(), String::new())
    );
    let (code, out, _) = run(&["get", "widgets"]);
    assert_eq!(code, 0);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "COLOR", "READY"]);
    assert_eq!(lines[1], ["w1", "red"]);
    let (code, out, err) = run(&["explain", "widgets.spec"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("KIND:       Widget")
            && out.contains("Desired state of the widget.")
            && out.contains("color\t<string>"),
        "{out}"
    );

    let mut watch = Command::new("kubectl")
        .env("HOME", &home)
        .env("KUBECONFIG", &kc)
        .args(["get", "widgets", "-w", "--request-timeout=20s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        first.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "COLOR", "READY"]
    );
    let listed = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(listed.split_whitespace().next(), Some("w1"));
    assert_eq!(
        run(&[
            "patch",
            "widget",
            "w1",
            "--subresource=status",
            "--type=merge",
            "-p",
            "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
        ]),
        (0, "widget.example.io/w1 patched\n".into(), String::new())
    );
    let changed = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        changed.split_whitespace().take(3).collect::<Vec<_>>(),
        ["w1", "red", "True"]
    );
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(
        run(&[
            "wait",
            "--for=condition=Ready",
            "widget/w1",
            "--timeout=30s"
        ]),
        (
            0,
            "widget.example.io/w1 condition met\n".into(),
            String::new()
        )
    );
    assert_eq!(
        run(&["delete", "widget", "w1", "--cascade=foreground"]),
        (
            0,
            "widget.example.io \"w1\" deleted\n".into(),
            String::new()
        )
    );
    assert_eq!(
        run(&["delete", "configmap", "x"]),
        (0, "configmap \"x\" deleted\n".into(), String::new())
    );
    let (code, _, err) = run(&["get", "configmap", "x"]);
    assert_eq!(
        (code, err.as_str()),
        (
            1,
            "Error from server (NotFound): configmaps \"x\" not found\n"
        )
    );
}

/// Typed kubectl commands on built-in kinds send protobuf bodies.
#[test]
fn kubectl_typed_commands_send_protobuf() {
    if !kubectl_available() {
        eprintln!(
            "SKIPPED: kubectl is not on PATH; install kubectl to run the kubectl compatibility test"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = Server::start(&dir.path().join("data"));
    let kc = server.kubeconfig.clone();
    let run = |args: &[&str]| kubectl(&home, &kc, args, None);
    let ok = |out: &str| (0, out.to_owned(), String::new());

    assert_eq!(
        run(&["create", "namespace", "team-a"]),
        ok("namespace/team-a created\n")
    );
    assert_eq!(
        run(&[
            "create",
            "configmap",
            "cm1",
            "--from-literal=a=b",
            "-n",
            "team-a"
        ]),
        ok("configmap/cm1 created\n")
    );
    assert_eq!(
        run(&[
            "get",
            "configmap",
            "cm1",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.a}"
        ]),
        ok("b")
    );
    assert_eq!(
        run(&[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=k=v",
            "-n",
            "team-a"
        ]),
        ok("secret/s1 created\n")
    );
    assert_eq!(
        run(&[
            "get",
            "secret",
            "s1",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.k}"
        ]),
        ok("dg==")
    );
    assert_eq!(
        run(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "-n",
            "team-a"
        ]),
        ok("deployment.apps/web created\n")
    );
    assert_eq!(
        run(&[
            "get",
            "deployment",
            "web",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image} {.spec.replicas}"
        ]),
        ok("nginx 1")
    );
    assert_eq!(
        run(&["scale", "deployment", "web", "--replicas=3", "-n", "team-a"]),
        ok("deployment.apps/web scaled\n")
    );
    assert_eq!(
        run(&[
            "get",
            "deployment",
            "web",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        ok("3")
    );
    assert_eq!(run(&["auth", "can-i", "list", "pods"]), ok("yes\n"));
    assert_eq!(
        run(&["create", "serviceaccount", "sa1", "-n", "team-a"]),
        ok("serviceaccount/sa1 created\n")
    );
    let (code, out, err) = run(&["create", "token", "sa1", "-n", "team-a", "--duration=1h"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out.trim_end().split('.').count(), 3, "a JWT: {out}");
    assert_eq!(
        run(&[
            "create",
            "role",
            "r1",
            "--verb=get",
            "--resource=pods",
            "-n",
            "team-a"
        ]),
        ok("role.rbac.authorization.k8s.io/r1 created\n")
    );
    assert_eq!(
        run(&[
            "create",
            "rolebinding",
            "rb1",
            "--role=r1",
            "--serviceaccount=team-a:sa1",
            "-n",
            "team-a"
        ]),
        ok("rolebinding.rbac.authorization.k8s.io/rb1 created\n")
    );
    assert_eq!(
        run(&["create", "job", "j1", "--image=busybox", "-n", "team-a"]),
        ok("job.batch/j1 created\n")
    );
    // `certificate approve` PUTs the whole CSR to /approval as protobuf.
    assert_eq!(
        kubectl(&home, &kc, &["create", "-f", "-"], Some(CSR)),
        ok("certificatesigningrequest.certificates.k8s.io/alice created\n")
    );
    assert_eq!(
        run(&["certificate", "approve", "alice"]),
        ok("certificatesigningrequest.certificates.k8s.io/alice approved\n")
    );
    assert_eq!(
        run(&[
            "get",
            "csr",
            "alice",
            "-o",
            "jsonpath={.status.conditions[0].type} {.status.conditions[0].reason} {.spec.usages[0]}"
        ]),
        ok("Approved KubectlApprove client auth")
    );
    // kubectl sends DeleteOptions as JSON even here (protobuf ones: apiserver/tests/protobuf_bodies.rs).
    assert_eq!(
        run(&[
            "delete",
            "deployment",
            "web",
            "-n",
            "team-a",
            "--cascade=foreground",
            "--wait=false"
        ]),
        ok("deployment.apps \"web\" deleted\n")
    );
    server.kill();
}

/// A fixed P-256 certificate request for CN=alice, O=dev (made with openssl once).
const CSR: &str = "apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: alice}
spec:
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth]
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIYU1JR0FBZ0VBTUI0eERqQU1CZ05WQkFNTUJXRnNhV05sTVF3d0NnWURWUVFLREFOa1pYWXdXVEFUQmdjcQpoa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVJOR28rVm5DWkJPd2R0NDJFb296ak5VRURTa3JqSjROaVpsek1hClZJelFGWHlzNC9ldVJnYkt0cVd2eXB5QSs3bWpiQ3FGQy9PQkxGdWludFJrS0dkRW9BQXdDZ1lJS29aSXpqMEUKQXdJRFNRQXdSZ0loQU1TRUp6djl2T1ppTjB3VGtIdlJtaXBiVTFHZEpUSjZBUG5WMHVUZmpyZDFBaUVBMm44OQpEWlJGV3FmMk9IVW5YV3ROOHUrTXN3aHhsZmVhY29mYzFmZ0VxbHM9Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=
";

/// Authentication and RBAC through real kubectl: `auth can-i` (also `--list`), `--as`
/// impersonation for the admin and not for others, `certificate approve` followed by the
/// built-in signer issuing the certificate.
#[test]
fn kubectl_auth_and_certificates() {
    if !kubectl_available() {
        eprintln!(
            "SKIPPED: kubectl is not on PATH; install kubectl to run the kubectl compatibility test"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = Server::start(&dir.path().join("data"));
    let kc = server.kubeconfig.clone();
    let run = |args: &[&str]| kubectl(&home, &kc, args, None);
    let ok = |s: &str| (0, s.to_owned(), String::new());

    assert_eq!(run(&["auth", "can-i", "list", "secrets"]), ok("yes\n"));
    assert_eq!(
        run(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"
        ]),
        ok("admin [\"system:masters\",\"system:authenticated\"]")
    );
    assert_eq!(
        run(&["auth", "can-i", "list", "secrets", "--as", "jane"]),
        (1, "no\n".to_owned(), String::new())
    );
    let (code, out, err) = run(&["get", "namespaces", "--as", "jane"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        err,
        "Error from server (Forbidden): namespaces is forbidden: User \"jane\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope\n"
    );
    assert_eq!(
        run(&[
            "create",
            "clusterrolebinding",
            "jane-view",
            "--clusterrole=view",
            "--user=jane"
        ]),
        ok("clusterrolebinding.rbac.authorization.k8s.io/jane-view created\n")
    );
    assert_eq!(
        run(&["auth", "can-i", "list", "pods", "--as", "jane"]),
        ok("yes\n")
    );
    let (code, out, _) = run(&["auth", "can-i", "--list", "--as", "jane", "-n", "default"]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l.starts_with("pods ") && l.contains("[get list watch]")),
        "{out}"
    );
    // The admin may impersonate anyone, groups included.
    assert_eq!(
        run(&[
            "auth",
            "can-i",
            "delete",
            "secrets",
            "--as",
            "jane",
            "--as-group",
            "system:masters"
        ]),
        ok("yes\n")
    );
    // A service account with a TokenRequest token may not impersonate.
    assert_eq!(
        run(&["create", "serviceaccount", "bot"]),
        ok("serviceaccount/bot created\n")
    );
    let (code, token, err) = run(&["create", "token", "bot"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["config", "set-credentials", "bot", "--token", token.trim()]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = run(&["auth", "can-i", "list", "pods", "--user", "bot"]);
    assert_eq!((code, out.as_str()), (1, "no\n"));
    let (code, _, err) = run(&["get", "pods", "--user", "bot", "--as", "admin"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "Error from server (Forbidden): users \"admin\" is forbidden: User \"system:serviceaccount:default:bot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope\n"
    );

    assert_eq!(
        kubectl(&home, &kc, &["create", "-f", "-"], Some(CSR)),
        ok("certificatesigningrequest.certificates.k8s.io/alice created\n")
    );
    assert_eq!(
        run(&["certificate", "approve", "alice", "--as", "jane"]).0,
        1,
        "view does not allow approving"
    );
    assert_eq!(
        run(&["certificate", "approve", "alice"]),
        ok("certificatesigningrequest.certificates.k8s.io/alice approved\n")
    );
    let mut issued = String::new();
    for _ in 0..200 {
        let (_, out, _) = run(&[
            "get",
            "csr",
            "alice",
            "-o",
            "jsonpath={.status.certificate}",
        ]);
        if !out.is_empty() {
            issued = out;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !issued.is_empty(),
        "the signer never issued alice's certificate"
    );
    let (_, conditions, _) = run(&[
        "get",
        "csr",
        "alice",
        "-o",
        "jsonpath={.status.conditions[*].type}",
    ]);
    assert_eq!(conditions, "Approved");
    drop(server);
}

/// What the shared RBAC table (`apiserver/tests/data/rbac_cases.json`) needs around it: the
/// `team` namespace of its namespaced objects, a served `widgets.example.com` resource (kubectl
/// sends unknown resources with the group folded into the name), and an aggregated role.
const RBAC_FIXTURE: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: t-aggregate},
 aggregationRule: {clusterRoleSelectors: [{matchLabels: {example.com/aggregate-to-t: "true"}}]}, rules: []}
---
{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole,
 metadata: {name: t-aggregated-part, labels: {example.com/aggregate-to-t: "true"}},
 rules: [{apiGroups: [""], resources: [services], verbs: [list]}]}
---
{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: t-henry},
 roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: t-aggregate},
 subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: henry}]}
"#;

/// `kubectl auth can-i` arguments for one resource case of the shared RBAC table.
fn can_i_args(case: &serde_json::Value) -> Vec<String> {
    let text = |k: &str| case[k].as_str().unwrap_or_default().to_owned();
    let mut target = text("resource");
    if !text("group").is_empty() {
        target = format!("{target}.{}", text("group"));
    }
    if !text("name").is_empty() {
        target = format!("{target}/{}", text("name"));
    }
    let mut args = vec![text("verb"), target];
    if !text("subresource").is_empty() {
        args.push(format!("--subresource={}", text("subresource")));
    }
    match text("namespace").as_str() {
        "" => args.push("-A".into()),
        ns => args.extend(["-n".into(), ns.to_owned()]),
    }
    args.extend(["--as".into(), text("user")]);
    for g in case["groups"].as_array().into_iter().flatten() {
        args.extend([
            "--as-group".into(),
            g.as_str().unwrap_or_default().to_owned(),
        ]);
    }
    args
}

/// The rule fields, subject kinds and aggregation of the RBAC tables, asked through
/// `kubectl auth can-i --as` (SelfSubjectAccessReviews made while impersonating).
#[test]
fn kubectl_auth_can_i_follows_every_rule_field_and_subject_kind() {
    if !kubectl_available() {
        eprintln!("SKIPPED: kubectl is not on PATH");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = Server::start(&dir.path().join("data"));
    let kc = server.kubeconfig.clone();
    let table: serde_json::Value =
        serde_json::from_str(include_str!("../../apiserver/tests/data/rbac_cases.json")).unwrap();
    let (code, _, stderr) = kubectl(&home, &kc, &["create", "-f", "-"], Some(RBAC_FIXTURE));
    assert_eq!(code, 0, "{stderr}");
    // One document per object, as a stream of JSON objects (a `kind: List` works too since
    // the server serves OpenAPI v2, see apiserver/tests/openapi_v2.rs): kubectl before 1.33
    // reads a stream that starts with `{` as JSON only, so no `---`.
    let objects: Vec<String> = table["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(serde_json::Value::to_string)
        .collect();
    let (code, _, stderr) = kubectl(
        &home,
        &kc,
        &["create", "-f", "-"],
        Some(&objects.join("\n")),
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = kubectl(
        &home,
        &kc,
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=60s",
        ],
        None,
    );
    assert_eq!(code, 0, "{stderr}");

    let can_i = |args: &[&str]| {
        let mut full = vec!["auth", "can-i"];
        full.extend_from_slice(args);
        let (code, stdout, stderr) = kubectl(&home, &kc, &full, None);
        match (code, stdout.trim()) {
            (0, "yes") => true,
            // kubectl adds the reason the server gives, e.g. "no - RBAC: clusterrole ... not found".
            (1, out) if out == "no" || out.starts_with("no - ") => false,
            other => panic!("kubectl {full:?}: {other:?} {stderr}"),
        }
    };
    // Every case of the table the evaluator is tested with, asked through kubectl.
    let cases = table["resource"].as_array().unwrap();
    assert!(cases.len() >= 40);
    for case in cases {
        let args = can_i_args(case);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(
            can_i(&args),
            case["allowed"].as_bool().unwrap(),
            "{}: kubectl auth can-i {args:?}",
            case["what"]
        );
    }
    for case in table["nonResource"].as_array().unwrap() {
        let text = |k: &str| case[k].as_str().unwrap_or_default().to_owned();
        let mut args = vec![text("verb"), text("path"), "--as".into(), text("user")];
        for g in case["groups"].as_array().into_iter().flatten() {
            args.extend([
                "--as-group".into(),
                g.as_str().unwrap_or_default().to_owned(),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(
            can_i(&args),
            case["allowed"].as_bool().unwrap(),
            "kubectl auth can-i {args:?}"
        );
    }
    // Aggregation: the aggregated role gains its part's rules (filled by the server's
    // aggregation controller; `kubectl wait` watches for it).
    let (code, _, stderr) = kubectl(
        &home,
        &kc,
        &[
            "wait",
            "--for=jsonpath={.rules[0].resources[0]}=services",
            "clusterrole/t-aggregate",
            "--timeout=60s",
        ],
        None,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(can_i(&["list", "services", "-n", "x", "--as", "henry"]));
    assert!(!can_i(&["delete", "services", "-n", "x", "--as", "henry"]));
}

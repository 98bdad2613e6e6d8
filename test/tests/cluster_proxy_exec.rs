//! `kubectl exec`, `attach`, `logs -f` and `port-forward` through the cluster proxy, end to
//! end: a hub, a simulated managed cluster served over TLS whose process kubelet runs
//! Deployments as real processes, `ocm proxy server` and `ocm proxy agent` as processes, and
//! real kubectl through `ocm proxy kubeconfig` (`exec -it` on the terminal of util-linux
//! `script`) — the user's commands back to back, the refusals included.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::Api;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::create_or_keep as create;
use ocm_e2e::kubectl_exit_code as kubectl;
use ocm_e2e::operator::IMAGE;
use ocm_e2e::{WAIT, wait_for};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");
const ALICE: &str = "system:serviceaccount:team:alice";
const CLUSTER: &str = "c1";
/// The image the ticker Deployment runs, as the local executable [`TICKER`].
const TICKER_IMAGE: &str = "registry.example.com/ticker:1";
/// A program that says hello, then ticks until stopped.
const TICKER: &str = "#!/bin/sh\necho \"started $GREETING\"\ni=0\nwhile true; do i=$((i+1)); echo \"tick $i\"; sleep 0.2; done\n";

/// The image of the pod that reads its stdin, as the local executable [`READER`].
const READER_IMAGE: &str = "registry.example.com/reader:1";
/// A program that answers each line it reads, and says so when its input ends.
const READER: &str =
    "#!/bin/sh\necho ready\nwhile read line; do echo \"got $line\"; done\necho \"input ended\"\n";

/// The image of the pod whose container runs a shell on a terminal (`tty: true`), as the
/// local executable [`CONSOLE`].
const CONSOLE_IMAGE: &str = "registry.example.com/console:1";
/// A program that is a shell.
const CONSOLE: &str = "#!/bin/sh\nexec sh\n";

fn write_executable(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// A Role of `rules` in `default` on the cluster, bound to alice's identity there.
async fn grant(spoke: &kube::Client, name: &str, rules: serde_json::Value) -> anyhow::Result<()> {
    create(
        &Api::<Role>::namespaced(spoke.clone(), "default"),
        json!({"metadata": {"name": name, "namespace": "default"}, "rules": rules}),
    )
    .await?;
    create(
        &Api::<RoleBinding>::namespaced(spoke.clone(), "default"),
        json!({"metadata": {"name": name, "namespace": "default"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": format!("ocm:hub:{ALICE}")}]}),
    )
    .await
}

/// Alice on the hub, allowed through the proxy to `CLUSTER`: her proxy kubeconfig.
async fn alice_through_the_proxy(
    admin: &kube::Client,
    hub_kubeconfig: &Path,
    dir: &Path,
) -> anyhow::Result<PathBuf> {
    create(
        &Api::<Namespace>::all(admin.clone()),
        json!({"metadata": {"name": "team"}}),
    )
    .await?;
    create(
        &Api::<ServiceAccount>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "alice", "namespace": "team"}}),
    )
    .await?;
    ocm_e2e::allow_proxy(
        admin,
        ("proxy-c1", "alice-proxy-c1"),
        CLUSTER,
        ("team", "alice"),
        &["*"],
    )
    .await?;
    let alice_hub =
        ocm_e2e::service_account_kubeconfig(admin, hub_kubeconfig, "team", "alice").await?;
    let out = dir.join("alice-c1.kubeconfig");
    let status = tokio::process::Command::new(OCM)
        .args(["proxy", "kubeconfig", "--cluster", CLUSTER, "--kubeconfig"])
        .arg(&alice_hub)
        .arg("-o")
        .arg(&out)
        .status()
        .await?;
    anyhow::ensure!(status.success(), "ocm proxy kubeconfig failed");
    Ok(out)
}

/// Pod `name` (label `app=<name>`, never restarted) running the local image `image` as its
/// program `name`, its container's stream settings `streams` (`stdin`, `stdinOnce`, `tty`).
async fn run_once(
    pods: &Api<Pod>,
    name: &str,
    image: &str,
    streams: serde_json::Value,
) -> anyhow::Result<()> {
    let mut container = json!({"name": "main", "image": image, "command": [name]});
    if let (Some(container), Some(streams)) = (container.as_object_mut(), streams.as_object()) {
        container.extend(streams.clone());
    }
    create(
        pods,
        json!({"metadata": {"name": name, "labels": {"app": name}},
               "spec": {"restartPolicy": "Never", "containers": [container]}}),
    )
    .await
}

/// Waits until a pod with label `app=<app>` runs its process; its name.
async fn running_pod(pods: &Api<Pod>, app: &str) -> anyhow::Result<String> {
    let watch = kube::runtime::watcher(
        pods.clone(),
        kube::runtime::watcher::Config::default().labels(&format!("app={app}")),
    );
    let mut events = std::pin::pin!(kube::runtime::WatchStreamExt::applied_objects(watch));
    tokio::time::timeout(WAIT, async {
        while let Some(pod) = events.try_next().await? {
            let running = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|s| s.first())
                .and_then(|c| c.state.as_ref())
                .is_some_and(|s| s.running.is_some());
            if running {
                return Ok(pod.metadata.name.unwrap_or_default());
            }
        }
        anyhow::bail!("the pod watch ended")
    })
    .await
    .with_context(|| format!("the {app} pod did not run"))?
}

/// `kubectl port-forward pod/<pod> :<port>` started — over a WebSocket, kubectl's default,
/// else over SPDY, its fallback: the process, the local port it forwards from (read from its
/// "Forwarding from" line) and its stderr's lines.
async fn port_forward(
    kubeconfig: &Path,
    pod: &str,
    port: u16,
    websocket: bool,
) -> anyhow::Result<(
    tokio::process::Child,
    u16,
    tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
)> {
    let mut child = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["port-forward", &format!("pod/{pod}"), &format!(":{port}")])
        .env("KUBECTL_PORT_FORWARD_WEBSOCKETS", websocket.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
    let errors = BufReader::new(child.stderr.take().context("no stderr")?).lines();
    let local = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await? {
            // "Forwarding from 127.0.0.1:<local> -> <port>"
            if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
                let (local, _) = rest.split_once(' ').context("no port")?;
                return Ok(local.parse::<u16>()?);
            }
        }
        anyhow::bail!("kubectl port-forward ended")
    })
    .await
    .context("kubectl port-forward said nothing")??;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, local, errors))
}

/// What an HTTP/1.0 `GET <path>` to 127.0.0.1:`port` answers, whole.
async fn http_get(port: u16, path: &str) -> anyhow::Result<String> {
    use tokio::io::AsyncReadExt;
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    socket
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await?;
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, socket.read_to_end(&mut answer))
        .await
        .context("no answer through the port-forward")??;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The size of the user's terminal in the `exec -it` steps.
const ROWS: u16 = 33;
/// See [`ROWS`].
const COLS: u16 = 101;

/// A user at a terminal: a command run on the pseudo-terminal of util-linux `script` (sized
/// [`ROWS`]×[`COLS`] first), the user's keys written to its input, the screen read from its
/// output.
struct AtTerminal {
    child: tokio::process::Child,
    keys: tokio::process::ChildStdin,
    screen: tokio::process::ChildStdout,
    /// What the screen showed since the last wait.
    shown: String,
    /// Where the terminal's name (`/dev/pts/N`) is written as the command starts.
    named: tempfile::NamedTempFile,
}

impl AtTerminal {
    fn start(command: &str) -> anyhow::Result<Self> {
        let named = tempfile::NamedTempFile::new()?;
        let mut child = tokio::process::Command::new("script")
            .args(["-q", "-e", "-c"])
            .arg(format!(
                "tty > '{}' && stty rows {ROWS} cols {COLS} && exec {command}",
                named.path().display()
            ))
            .arg("/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        Ok(Self {
            keys: child.stdin.take().context("no stdin")?,
            screen: child.stdout.take().context("no stdout")?,
            child,
            shown: String::new(),
            named,
        })
    }

    /// Resizes the user's terminal, as a window resized: the command (kubectl) gets SIGWINCH.
    async fn resize(&self, rows: u16, cols: u16) -> anyhow::Result<()> {
        let terminal = std::fs::read_to_string(self.named.path())?;
        let status = tokio::process::Command::new("stty")
            .args(["-F", terminal.trim(), "rows", &rows.to_string()])
            .args(["cols", &cols.to_string()])
            .status()
            .await?;
        anyhow::ensure!(status.success(), "stty -F {terminal}: {status}");
        Ok(())
    }

    async fn type_keys(&mut self, keys: &str) -> anyhow::Result<()> {
        self.keys.write_all(keys.as_bytes()).await?;
        Ok(self.keys.flush().await?)
    }

    /// Reads the screen until `found` finds the end of what is waited for in what it showed
    /// since the last wait; what it showed up to there (the rest is kept for the next wait).
    async fn wait_until(
        &mut self,
        what: &str,
        found: impl Fn(&str) -> Option<usize>,
    ) -> anyhow::Result<String> {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        let shown = &mut self.shown;
        let screen = &mut self.screen;
        let outcome = tokio::time::timeout(WAIT, async {
            loop {
                if let Some(end) = found(shown) {
                    return Ok(end);
                }
                let n = screen.read(&mut buf).await?;
                anyhow::ensure!(n > 0, "the terminal closed");
                shown.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
        .await;
        match outcome {
            Ok(Ok(end)) => {
                let rest = self.shown.split_off(end);
                Ok(std::mem::replace(&mut self.shown, rest))
            }
            Ok(Err(err)) => Err(err.context(format!("waiting for {what}: {:?}", self.shown))),
            Err(_) => anyhow::bail!("no {what} on the screen: {:?}", self.shown),
        }
    }

    /// Waits for `text` on the screen; what it showed up to its end.
    async fn wait_for(&mut self, text: &str) -> anyhow::Result<String> {
        self.wait_until(text, |shown| shown.find(text).map(|at| at + text.len()))
            .await
    }

    /// Waits for the shell's prompt (`$ ` or `# ` last on the screen).
    async fn wait_for_prompt(&mut self) -> anyhow::Result<String> {
        self.wait_until("a prompt", |shown| {
            (shown.ends_with("$ ") || shown.ends_with("# ")).then_some(shown.len())
        })
        .await
    }
}

/// `kubectl exec -it <pod> -- sh` through the proxy at a terminal: a shell on a terminal of
/// the user's size and of each later size, prompting and echoing, the terminal's line editing
/// and ^C, one output, and its exit code as kubectl's.
async fn shell_at_a_terminal(kubeconfig: &Path, pod: &str) -> anyhow::Result<()> {
    let mut user = AtTerminal::start(&format!(
        "kubectl --kubeconfig '{}' exec -it {pod} -- sh",
        kubeconfig.display()
    ))?;
    user.wait_for_prompt().await?;
    // Quotes split the words typed, so the echo of the line differs from what it prints.
    user.type_keys("tty; stty size; echo term-$TERM; echo to-\"\"stderr >&2\r")
        .await?;
    let shown = user.wait_for("to-stderr").await?;
    assert!(
        shown.contains("tty; stty size; echo term-$TERM"),
        "no echo: {shown:?}"
    );
    assert!(shown.contains("/dev/pts/"), "{shown:?}");
    assert!(
        shown.contains(&format!("\r\n{ROWS} {COLS}\r\n")),
        "{shown:?}"
    );
    assert!(shown.contains("\r\nterm-xterm\r\n"), "{shown:?}");
    user.wait_for_prompt().await?;
    // A later resize of the user's window reaches the shell's terminal: kubectl sends it, the
    // kubelet sets it, and the foreground job gets SIGWINCH (the job says it is ready first,
    // so the resize comes after its trap is set).
    user.type_keys("sh -c 'trap \"stty size; exit\" WINCH; echo ready-\"\"for-resize; while :; do sleep 0.1; done'\r")
        .await?;
    user.wait_for("ready-for-resize").await?;
    user.resize(ROWS + 7, COLS + 19).await?;
    user.wait_for(&format!("\r\n{} {}\r\n", ROWS + 7, COLS + 19))
        .await?;
    user.wait_for_prompt().await?;
    // The terminal's line editing: a rubbed-out letter is gone from the line.
    user.type_keys("echo line-ab\x7fc\r").await?;
    user.wait_for("line-ac\r\n").await?;
    user.wait_for_prompt().await?;
    // ^C interrupts the foreground job (which says it runs once it does), not the shell.
    user.type_keys("sh -c 'echo job-\"\"runs; exec cat'\r")
        .await?;
    user.wait_for("job-runs").await?;
    user.type_keys("\x03").await?;
    user.wait_for_prompt().await?;
    user.type_keys("echo after-$?\r").await?;
    user.wait_for("after-130").await?;
    user.wait_for_prompt().await?;
    user.type_keys("exit 3\r").await?;
    let status = tokio::time::timeout(WAIT, user.child.wait())
        .await
        .context("kubectl exec -it did not end with its shell")??;
    assert_eq!(status.code(), Some(3));
    Ok(())
}

/// `kubectl attach -it <pod>` through the proxy at a terminal, to a shell whose container
/// sets `tty: true`: the shell's terminal, of the user's size, until the shell exits.
async fn attach_at_a_terminal(kubeconfig: &Path, pod: &str) -> anyhow::Result<()> {
    let mut user = AtTerminal::start(&format!(
        "kubectl --kubeconfig '{}' attach -it {pod}",
        kubeconfig.display()
    ))?;
    // The shell prompted before the session: Enter asks again, as kubectl suggests.
    user.wait_for("try pressing enter").await?;
    user.type_keys("\r").await?;
    user.wait_for_prompt().await?;
    user.type_keys("tty; stty size\r").await?;
    let shown = user.wait_for(&format!("\r\n{ROWS} {COLS}\r\n")).await?;
    assert!(shown.contains("/dev/pts/"), "{shown:?}");
    user.wait_for_prompt().await?;
    user.type_keys("exit 5\r").await?;
    tokio::time::timeout(WAIT, user.child.wait())
        .await
        .context("kubectl attach -it did not end with the shell")??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_exec_attach_logs_and_port_forward_through_the_proxy_of_the_embedded_hub()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let home = dir.path();
    let hub = ocm_e2e::start_fast_hub(&home.join("hub")).await?;
    let admin = hub.admin_client();
    let managed =
        ocm::simulated::SimulatedCluster::start(&home.join("c1"), ([127, 0, 0, 1], 0).into())
            .await?;
    let spoke = managed.client();
    let bootstrap = ocm_e2e::bootstrap_kubeconfig(&hub).await?;
    let _agent = ocm_e2e::join(&spoke, &bootstrap, ocm_e2e::fast_agent_options(CLUSTER)).await?;
    tokio::time::timeout(WAIT, ocm::accept::accept_when_asked(&admin, CLUSTER, false))
        .await
        .context("c1 did not ask to join")??;
    wait_for(
        &Api::<ManagedCluster>::all(admin.clone()),
        CLUSTER,
        "joined",
        |c: &ManagedCluster| ocm_e2e::cluster_condition(c, "ManagedClusterJoined") == "True",
    )
    .await?;
    exec_logs_and_port_forward_through_the_proxy(
        &admin,
        &hub.admin_kubeconfig,
        &managed.kubeconfig,
        home,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_exec_attach_logs_and_port_forward_through_the_proxy_of_a_hub_run_with_a_kubeconfig()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let home = dir.path();
    let hub = ocm_e2e::process::ManagedApiserver::start_with(OCM, home, &[]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&hub.kubeconfig).await?;
    // `ocm init`, then `ocm join --simulated` (a cluster served over TLS), accepted.
    let join = ocm_e2e::process::init_then_start_join(OCM, home, &hub.kubeconfig, CLUSTER);
    let (code, stdout, stderr) = ocm_e2e::process::run_ocm(
        OCM,
        home,
        &[
            "accept",
            "--clusters",
            CLUSTER,
            "--wait",
            "--kubeconfig",
            hub.kubeconfig.to_str().unwrap_or_default(),
        ],
    );
    anyhow::ensure!(code == 0, "ocm accept: {stdout}{stderr}");
    let spoke_kubeconfig = home.join("clusters").join(CLUSTER).join("admin.kubeconfig");
    let result = exec_logs_and_port_forward_through_the_proxy(
        &admin,
        &hub.kubeconfig,
        &spoke_kubeconfig,
        home,
    )
    .await;
    join.stop();
    hub.stop();
    result
}

/// From a hub (`admin`, `hub_kubeconfig`) with cluster `c1` joined (`spoke_kubeconfig`, served
/// over TLS): the proxy, the cluster's process kubelet running the ticker, and the user's
/// kubectl commands.
async fn exec_logs_and_port_forward_through_the_proxy(
    admin: &kube::Client,
    hub_kubeconfig: &Path,
    spoke_kubeconfig: &Path,
    home: &Path,
) -> anyhow::Result<()> {
    let spoke = ocm_runtime::kubeconfig::client_from_file(spoke_kubeconfig).await?;
    // The proxy server (with the addon manager) and the agent run as `ocm proxy server` and
    // `ocm proxy agent` processes, the agent with the credentials its pod would mount.
    let mut server = tokio::process::Command::new(OCM)
        .args([
            "proxy",
            "server",
            "--listen",
            "127.0.0.1:0",
            "--image",
            "ocm:test",
            "--kubeconfig",
        ])
        .arg(hub_kubeconfig)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut said = BufReader::new(server.stdout.take().context("no stdout")?).lines();
    let url = tokio::time::timeout(WAIT, async {
        while let Some(line) = said.next_line().await? {
            if let Some(url) = line.strip_prefix("cluster proxy server at ") {
                return Ok(url.to_owned());
            }
        }
        anyhow::bail!("ocm proxy server ended")
    })
    .await
    .context("the proxy server did not start")??;
    tokio::spawn(async move { while let Ok(Some(_)) = said.next_line().await {} });
    // `ocm accept` returns once the cluster is accepted; the hub makes its namespace after.
    wait_for(
        &Api::<Namespace>::all(admin.clone()),
        CLUSTER,
        "the accepted cluster's namespace on the hub",
        |_| true,
    )
    .await?;
    create(
        &Api::<ManagedClusterAddOn>::namespaced(admin.clone(), CLUSTER),
        json!({"metadata": {"name": "cluster-proxy", "namespace": CLUSTER}, "spec": {}}),
    )
    .await?;
    let credentials = home.join("proxy-agent");
    let namespace = ocm_addon_framework::agent_helpers::mount_agent_credentials(
        admin,
        &spoke,
        CLUSTER,
        "cluster-proxy",
        &credentials,
        WAIT,
    )
    .await?;
    let ca_file = home.join("proxy-ca.crt");
    let endpoint =
        ocm_cluster_proxy::pki::read_endpoint(admin, ocm_cluster_proxy::pki::PROXY_NAMESPACE)
            .await?;
    std::fs::write(&ca_file, &endpoint.ca_pem)?;
    let mut agent = tokio::process::Command::new(OCM)
        .args([
            "proxy",
            "agent",
            "--cluster-name",
            CLUSTER,
            "--namespace",
            &namespace,
        ])
        .args(["--proxy-server", &url, "--proxy-ca-file"])
        .arg(&ca_file)
        .arg("--hub-kubeconfig-dir")
        .arg(&credentials)
        .arg("--kubeconfig")
        .arg(spoke_kubeconfig)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut logged = BufReader::new(agent.stderr.take().context("no stderr")?).lines();
    let mut agent_log = Vec::new();
    let opened = tokio::time::timeout(WAIT, async {
        while let Some(line) = logged.next_line().await? {
            if line.contains("tunnel open") {
                return Ok(());
            }
            agent_log.push(line);
        }
        anyhow::bail!("ocm proxy agent ended")
    })
    .await;
    anyhow::ensure!(
        matches!(opened, Ok(Ok(()))),
        "the agent opened no tunnel: {opened:?}\n{}",
        agent_log.join("\n")
    );
    tokio::spawn(async move { while let Ok(Some(_)) = logged.next_line().await {} });

    // The cluster's process kubelet runs the ticker.
    let ticker = home.join("ticker");
    write_executable(&ticker, TICKER)?;
    let reader = home.join("reader");
    write_executable(&reader, READER)?;
    let console = home.join("console");
    write_executable(&console, CONSOLE)?;
    let locals = vec![
        ocm::process_kubelet::LocalImage {
            image: TICKER_IMAGE.into(),
            executable: ticker.clone(),
        },
        ocm::process_kubelet::LocalImage {
            image: READER_IMAGE.into(),
            executable: reader,
        },
        ocm::process_kubelet::LocalImage {
            image: CONSOLE_IMAGE.into(),
            executable: console,
        },
    ];
    let _kubelet =
        ocm_e2e::start_process_kubelet_with_local(OCM, spoke_kubeconfig, IMAGE, home, locals)
            .await?;
    create(
        &Api::<Deployment>::namespaced(spoke.clone(), "default"),
        json!({"metadata": {"name": "ticker"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "ticker"}},
                        "template": {"metadata": {"labels": {"app": "ticker"}},
                                     "spec": {"containers": [{"name": "main", "image": TICKER_IMAGE,
                                         "command": ["ticker"],
                                         "env": [{"name": "GREETING", "value": "hello"}]}]}}}}),
    )
    .await?;
    // A pod no kubelet runs a process for.
    create(
        &Api::<Pod>::namespaced(spoke.clone(), "default"),
        json!({"metadata": {"name": "idle"},
               "spec": {"nodeName": "node-1",
                        "containers": [{"name": "main", "image": "registry.example.com/idle:1"}]}}),
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(spoke.clone(), "default");
    // A pod whose process listens on its container port 8080 (the health endpoint).
    create(
        &Api::<Deployment>::namespaced(spoke.clone(), "default"),
        json!({"metadata": {"name": "web"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "main", "image": IMAGE,
                                         "args": ["hub", "controllers", "--only=placement",
                                                  "--metrics-addr=0.0.0.0:8080"],
                                         "ports": [{"name": "metrics", "containerPort": 8080}]}]}}}}),
    )
    .await?;
    // A pod whose process reads its stdin, closed after the first attach (`stdinOnce`).
    let streams = json!({"stdin": true, "stdinOnce": true});
    run_once(&pods, "reader", READER_IMAGE, streams).await?;
    // A pod whose container runs a shell on a terminal, for attach -it.
    let streams = json!({"stdin": true, "tty": true});
    run_once(&pods, "console", CONSOLE_IMAGE, streams).await?;
    let pod = running_pod(&pods, "ticker").await?;
    let web = running_pod(&pods, "web").await?;
    let reader = running_pod(&pods, "reader").await?;

    let alice = alice_through_the_proxy(admin, hub_kubeconfig, home).await?;
    grant(
        &spoke,
        "pods-read",
        json!([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]),
    )
    .await?;
    // Reading pods is no permission to exec in them.
    let (code, _, err) = kubectl(&alice, &["exec", &pod, "--", "true"], None).await?;
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!(
            "User \"ocm:hub:{ALICE}\" cannot create resource \"pods/exec\""
        )),
        "{err}"
    );
    grant(
        &spoke,
        "pods-exec",
        json!([{"apiGroups": [""], "resources": ["pods/exec", "pods/attach", "pods/portforward"],
                "verbs": ["get", "create"]}]),
    )
    .await?;

    // exec: the pod's environment and folder, stdout and stderr apart, exit codes.
    let (code, out, err) = kubectl(
        &alice,
        &[
            "exec",
            &pod,
            "--",
            "sh",
            "-c",
            "echo \"$GREETING from $(basename \"$(pwd)\")\"; echo oops >&2",
        ],
        None,
    )
    .await?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("hello from {pod}\n"), "{err}");
    assert_eq!(err, "oops\n");
    let (code, _, err) = kubectl(&alice, &["exec", &pod, "--", "sh", "-c", "exit 3"], None).await?;
    assert_eq!(code, 3, "{err}");
    // stdin reaches the command and its end ends it.
    let (code, out, err) = kubectl(
        &alice,
        &["exec", "-i", &pod, "--", "cat"],
        Some("piped in\n"),
    )
    .await?;
    assert_eq!((code, out.as_str()), (0, "piped in\n"), "{err}");
    let (code, _, err) = kubectl(&alice, &["exec", &pod, "--", "no-such-command"], None).await?;
    assert_eq!(code, 127, "{err}");
    // exec -it: a shell on a terminal, as at a user's terminal.
    shell_at_a_terminal(&alice, &pod).await?;

    // logs -f: the first lines as they come; the stream stays open until stopped.
    let mut follow = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&alice)
        .args(["logs", "-f", &pod])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(follow.stdout.take().context("no stdout")?).lines();
    let first: Vec<String> = tokio::time::timeout(WAIT, async {
        let mut seen = Vec::new();
        while seen.len() < 3 {
            match lines.next_line().await? {
                Some(line) => seen.push(line),
                None => anyhow::bail!("logs -f ended after {seen:?}"),
            }
        }
        Ok(seen)
    })
    .await
    .context("logs -f gave no lines")??;
    assert_eq!(first, ["started hello", "tick 1", "tick 2"]);
    follow.kill().await?;

    // port-forward: each local connection reaches the pod's port, and its answer comes back —
    // over kubectl's WebSocket, and over plain SPDY (its fallback) too.
    for websocket in [true, false] {
        let (mut forward, local, _) = port_forward(&alice, &web, 8080, websocket).await?;
        for _ in 0..2 {
            let answer = http_get(local, "/healthz").await?;
            assert!(
                answer.starts_with("HTTP/1.") && answer.contains(" 200 OK\r\n"),
                "{answer}"
            );
            assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
        }
        let metrics = http_get(local, "/metrics").await?;
        assert!(metrics.trim_end().ends_with("# EOF"), "{metrics}");
        forward.kill().await?;
    }
    // A port no process of the pod listens on: kubectl says so when a connection comes.
    let (mut forward, local, mut errors) = port_forward(&alice, &web, 9999, true).await?;
    let answer = http_get(local, "/healthz").await?;
    assert_eq!(answer, "");
    let said = format!("pod default/{web} has no process listening on port 9999");
    let line = tokio::time::timeout(WAIT, async {
        while let Some(line) = errors.next_line().await? {
            if line.contains(&said) {
                return Ok(line);
            }
        }
        anyhow::bail!("kubectl port-forward ended without saying {said:?}")
    })
    .await
    .context("kubectl port-forward reported nothing")??;
    assert!(line.contains("its container declares ports 8080"), "{line}");
    forward.kill().await?;

    // attach: the process's output from now on.
    let mut attached = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&alice)
        .args(["attach", &pod])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(attached.stdout.take().context("no stdout")?).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .context("attach showed nothing")??
        .context("attach ended")?;
    assert!(line.starts_with("tick "), "{line}");
    attached.kill().await?;

    // attach -i: the input reaches the process's stdin; with stdinOnce its end ends the
    // input for good, so the process finishes and the session with it.
    let (code, out, err) = kubectl(&alice, &["attach", "-i", &reader], Some("hello\n")).await?;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("got hello\ninput ended\n"), "{out}");
    let (code, _, err) = kubectl(&alice, &["attach", "-i", &reader], Some("again\n")).await?;
    assert_ne!(code, 0);
    assert!(
        err.contains("not running") || err.contains("completed pod"),
        "{err}"
    );

    // attach -it: the session types into the terminal of a container with tty: true.
    let console = running_pod(&pods, "console").await?;
    attach_at_a_terminal(&alice, &console).await?;

    // Refusals, each clear and leaving nothing behind.
    let (code, _, err) = kubectl(&alice, &["attach", "-i", &pod], None).await?;
    assert_ne!(code, 0);
    assert!(err.contains("does not set stdin: true"), "{err}");
    let (code, _, err) = kubectl(&alice, &["exec", "nope", "--", "true"], None).await?;
    assert_ne!(code, 0);
    assert!(err.contains("pods \"nope\" not found"), "{err}");
    let (code, _, err) =
        kubectl(&alice, &["exec", &pod, "-c", "other", "--", "true"], None).await?;
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("container other is not valid for pod {pod}")),
        "{err}"
    );
    let (code, _, err) = kubectl(&alice, &["exec", "idle", "--", "true"], None).await?;
    assert_ne!(code, 0);
    assert!(err.contains("container \"main\" is not running"), "{err}");
    // The ticker still runs, untouched by all that.
    let (code, out, err) = kubectl(
        &alice,
        &["exec", &pod, "--", "sh", "-c", "echo still"],
        None,
    )
    .await?;
    assert_eq!((code, out.as_str()), (0, "still\n"), "{err}");
    Ok(())
}

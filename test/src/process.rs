//! `ocm` processes for scenario tests: a long-running one whose output lines are collected
//! and waited on, and one-shot runs. Tests pass the binary (`env!("CARGO_BIN_EXE_ocm-e2e-ocm")`:
//! Cargo gives only integration tests the paths of their package's binaries).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A long-running `ocm` process whose output lines are collected.
#[derive(Debug)]
pub struct Process {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    line_added: Arc<std::sync::Condvar>,
    /// Output streams that reached their end (2: the process has closed both).
    closed: Arc<std::sync::atomic::AtomicUsize>,
}

impl Process {
    /// Starts `bin` with `args` and `OCM_HOME` set to `home`, collecting its output lines.
    pub fn spawn(bin: &str, home: &Path, args: &[&str]) -> Process {
        let mut child = Command::new(bin)
            .args(args)
            .env("OCM_HOME", home)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ocm starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let line_added = Arc::new(std::sync::Condvar::new());
        let closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let label = args[0].to_owned();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            let line_added = line_added.clone();
            let label = label.clone();
            let closed = closed.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    eprintln!("[ocm {label}] {line}");
                    lines.lock().unwrap().push(line);
                    line_added.notify_all();
                }
                let _held = lines.lock().unwrap();
                closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                line_added.notify_all();
            });
        }
        Process {
            child,
            lines,
            line_added,
            closed,
        }
    }

    /// Waits for a line containing `needle` and returns it.
    pub fn wait_line(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let mut lines = self.lines.lock().unwrap();
        loop {
            if let Some(line) = lines.iter().find(|l| l.contains(needle)) {
                return line.clone();
            }
            assert!(
                self.closed.load(std::sync::atomic::Ordering::SeqCst) < 2,
                "the process ended without a line containing {needle:?}: {lines:#?}"
            );
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "no line containing {needle:?} in {lines:#?}"
            );
            lines = self.line_added.wait_timeout(lines, left).unwrap().0;
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The output lines so far that contain `needle`.
    pub fn lines_containing(&self, needle: &str) -> Vec<String> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .filter(|l| l.contains(needle))
            .cloned()
            .collect()
    }

    /// Stops the process (SIGTERM, then SIGKILL after 20 s).
    pub fn stop(mut self) {
        self.terminate();
    }

    /// Crashes the process: SIGKILL (`kill -9`, no chance to finish anything) and waits until
    /// it is gone, checking that the signal is what ended it.
    pub fn kill_9(mut self) {
        // `Child::kill` sends SIGKILL on Unix.
        self.child.kill().expect("SIGKILL sent");
        let status = self.child.wait().expect("killed process reaped");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "ended by SIGKILL: {status:?}");
        }
        #[cfg(not(unix))]
        assert!(!status.success(), "{status:?}");
    }

    fn terminate(&mut self) {
        #[cfg(unix)]
        {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(self.child.id().to_string())
                .status();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many established TCP connections process `pid` holds to remote port `port` (its socket
/// file descriptors matched against `/proc/<pid>/net/tcp{,6}`; Linux only).
pub fn tcp_connections_to(pid: u32, port: u16) -> usize {
    let mut inodes = std::collections::BTreeSet::new();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    for fd in fds.flatten() {
        if let Ok(target) = std::fs::read_link(fd.path())
            && let Some(inode) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
        {
            inodes.insert(inode.to_owned());
        }
    }
    let mut count = 0;
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(state), Some(inode)) =
                (fields.get(2), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let remote_port = remote
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            // State 01 is ESTABLISHED.
            if *state == "01" && remote_port == Some(port) && inodes.contains(*inode) {
                count += 1;
            }
        }
    }
    count
}

/// Runs `ocm` (binary `bin`) to completion: (exit code, stdout, stderr).
pub fn run_ocm(bin: &str, home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .env("OCM_HOME", home)
        .stdin(Stdio::null())
        .output()
        .expect("ocm runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl Drop for Process {
    /// A test that fails half-way leaves no process behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An `ocm hub` process serving the embedded API server from a durable data directory.
#[derive(Debug)]
pub struct HubProcess {
    /// The process.
    pub process: Process,
    /// Where its API server listens: `https://127.0.0.1:<port>`.
    pub url: String,
    /// Its admin kubeconfig (in the data directory).
    pub kubeconfig: std::path::PathBuf,
}

impl HubProcess {
    /// Starts `ocm hub --data-dir DATA_DIR --listen LISTEN` (`127.0.0.1:0` for a free port)
    /// and waits until it is ready.
    pub fn start(bin: &str, home: &Path, data_dir: &Path, listen: &str) -> HubProcess {
        let process = Process::spawn(
            bin,
            home,
            &[
                "hub",
                "--data-dir",
                data_dir.to_str().unwrap(),
                "--listen",
                listen,
            ],
        );
        let line = process.wait_line("API server:");
        let url = line.split_whitespace().last().unwrap().to_owned();
        process.wait_line("ocm hub ready");
        HubProcess {
            process,
            url,
            kubeconfig: data_dir.join("admin.kubeconfig"),
        }
    }

    /// The address it listens on (`127.0.0.1:<port>`), to start it again at the same URL.
    pub fn listen_address(&self) -> String {
        self.url.trim_start_matches("https://").to_owned()
    }

    /// A client of its API server with its admin kubeconfig.
    pub async fn admin_client(&self) -> kube::Client {
        ocm_runtime::kubeconfig::client_from_file(&self.kubeconfig)
            .await
            .unwrap()
    }

    /// A bootstrap kubeconfig for this hub (a fresh `ocm init` token, made through `admin`).
    pub async fn bootstrap_kubeconfig(&self, admin: &kube::Client) -> String {
        bootstrap_kubeconfig_for(&self.kubeconfig, admin).await
    }
}

/// One request over plain HTTP/1.1 to `url`'s host and port (`http://HOST:PORT/`), with
/// `body` (form-encoded) when not empty: (status line, response head, response body).
fn http_request(url: &str, method: &str, path: &str, body: &str) -> (String, String, String) {
    use std::io::{Read, Write};
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&authority).unwrap();
    let content = if body.is_empty() {
        String::new()
    } else {
        format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        )
    };
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\n{content}Connection: close\r\n\r\n{body}"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        head.to_owned(),
        body.to_owned(),
    )
}

/// `GET path` over plain HTTP/1.1 to `url`'s host and port (`http://HOST:PORT/`): (status
/// line, body).
pub fn http_get(url: &str, path: &str) -> (String, String) {
    let (status, _, body) = http_request(url, "GET", path, "");
    (status, body)
}

/// `POST path` of the form `form` (`key=value&…`) to `url`'s host and port: (status line,
/// response head).
pub fn http_post_form(url: &str, path: &str, form: &str) -> (String, String) {
    let (status, head, _) = http_request(url, "POST", path, form);
    (status, head)
}

/// GETs `path` of the dashboard at `url` until it answers 200 with a body containing every
/// one of `needles` and no kind of the page still loading (its cache follows the hub through
/// watches, so a page may lag a write by a moment); returns that body, in which a kind the
/// dashboard may not watch shows as `Cannot watch …`. Fails after [`crate::WAIT`].
pub async fn wait_dashboard_page(url: &str, path: &str, needles: &[&str]) -> String {
    let deadline = tokio::time::Instant::now() + crate::WAIT;
    loop {
        let (url_owned, path_owned) = (url.to_owned(), path.to_owned());
        let (status, body) = tokio::task::spawn_blocking(move || http_get(&url_owned, &path_owned))
            .await
            .unwrap();
        let loading = body.contains("role=\"status\">Loading");
        if status.contains(" 200 ") && !loading && needles.iter().all(|n| body.contains(n)) {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{url}{path} did not show {needles:?}: {status}\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `ocm init --kubeconfig KUBECONFIG` (binary `bin`), then at once `ocm join --simulated` of
/// cluster `name` with the printed URL and token (its state under `home/clusters/NAME`);
/// returns the join process once the hub took its token.
pub fn init_then_start_join(bin: &str, home: &Path, kubeconfig: &Path, name: &str) -> Process {
    init_then_start_join_with(bin, home, kubeconfig, name, &[])
}

/// [`init_then_start_join`] with `extra` flags for `ocm join`.
pub fn init_then_start_join_with(
    bin: &str,
    home: &Path,
    kubeconfig: &Path,
    name: &str,
    extra: &[&str],
) -> Process {
    let (code, stdout, stderr) = run_ocm(
        bin,
        home,
        &["init", "--kubeconfig", kubeconfig.to_str().unwrap()],
    );
    assert_eq!(code, 0, "ocm init failed: {stderr}");
    let word_after = |flag: &str| {
        stdout
            .split_whitespace()
            .skip_while(|w| *w != flag)
            .nth(1)
            .unwrap_or_else(|| panic!("no {flag} in {stdout}"))
            .to_owned()
    };
    let (url, token) = (word_after("--hub-apiserver"), word_after("--hub-token"));
    let join = spawn_simulated_join_with(bin, home, &url, &token, name, extra);
    join.wait_line("token accepted");
    join
}

/// `ocm init` then at once `ocm join --simulated` (with `extra` flags) for `name` against the
/// hub of `kubeconfig`, then `ocm accept --wait`; returns the join process and an admin client of
/// the simulated cluster.
pub async fn join_simulated(
    bin: &str,
    home: &Path,
    kubeconfig: &Path,
    name: &str,
    extra: &[&str],
) -> anyhow::Result<(Process, kube::Client)> {
    let join = init_then_start_join_with(bin, home, kubeconfig, name, extra);
    let hub = kubeconfig.to_str().unwrap_or_default();
    let (code, stdout, stderr) = run_ocm(
        bin,
        home,
        &["accept", "--clusters", name, "--wait", "--kubeconfig", hub],
    );
    anyhow::ensure!(code == 0, "ocm accept: {stdout}{stderr}");
    let spoke_kubeconfig = home.join("clusters").join(name).join("admin.kubeconfig");
    let spoke = ocm_runtime::kubeconfig::client_from_file(&spoke_kubeconfig).await?;
    Ok((join, spoke))
}

/// A plain `ocm apiserver` process (in memory, free port, `extra` flags); returns it and its
/// admin kubeconfig once it serves.
pub fn start_apiserver(bin: &str, home: &Path, extra: &[&str]) -> (Process, std::path::PathBuf) {
    let dir = home.join("apiserver");
    let dir_arg = dir.to_str().unwrap().to_owned();
    let mut args = vec![
        "apiserver",
        "--data-dir",
        &dir_arg,
        "--listen",
        "127.0.0.1:0",
        "--memory",
    ];
    args.extend_from_slice(extra);
    let apiserver = Process::spawn(bin, home, &args);
    apiserver.wait_line("ocm apiserver ready");
    (apiserver, dir.join("admin.kubeconfig"))
}

/// A bootstrap kubeconfig (a fresh `ocm init` token, made through `admin`) for the hub whose
/// admin kubeconfig is `admin_kubeconfig`, at that kubeconfig's server.
async fn bootstrap_kubeconfig_for(admin_kubeconfig: &Path, admin: &kube::Client) -> String {
    let text = std::fs::read_to_string(admin_kubeconfig).unwrap();
    let server =
        ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(&text).unwrap())
            .unwrap();
    let token = ocm::bootstrap::init_hub(admin, None).await.unwrap();
    ocm::commands::join::bootstrap_kubeconfig(
        &server.server,
        server.ca_pem.as_deref().unwrap(),
        &token.to_string(),
    )
}

/// A hub on an existing cluster: a plain `ocm apiserver` process managed by an
/// `ocm hub --kubeconfig` process (webhooks on a free port, and the dashboard), both ready.
#[derive(Debug)]
pub struct ManagedApiserver {
    /// The `ocm apiserver` process.
    pub apiserver: Process,
    /// The `ocm hub --kubeconfig` process.
    pub hub: Process,
    /// The apiserver's admin kubeconfig.
    pub kubeconfig: std::path::PathBuf,
    /// The URL of the dashboard the hub serves (from its banner).
    pub dashboard: String,
}

impl ManagedApiserver {
    /// A client of the API server with its admin kubeconfig.
    pub async fn admin_client(&self) -> kube::Client {
        ocm_runtime::kubeconfig::client_from_file(&self.kubeconfig)
            .await
            .unwrap()
    }

    /// A bootstrap kubeconfig for this hub (a fresh `ocm init` token, made through `admin`).
    pub async fn bootstrap_kubeconfig(&self, admin: &kube::Client) -> String {
        bootstrap_kubeconfig_for(&self.kubeconfig, admin).await
    }

    /// Starts both under `home`.
    pub fn start(bin: &str, home: &Path) -> ManagedApiserver {
        Self::start_with(bin, home, &[])
    }

    /// Starts both under `home`, the hub with `hub_flags` added.
    pub fn start_with(bin: &str, home: &Path, hub_flags: &[&str]) -> ManagedApiserver {
        let (apiserver, kubeconfig) = start_apiserver(bin, home, &[]);
        let hub_dir = home.join("hub");
        let mut args = vec![
            "hub",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--data-dir",
            hub_dir.to_str().unwrap(),
            "--webhook-listen",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(hub_flags);
        let hub = Process::spawn(bin, home, &args);
        hub.wait_line("ocm hub ready");
        let dashboard = hub
            .wait_line("  dashboard:")
            .split_whitespace()
            .last()
            .unwrap()
            .to_owned();
        ManagedApiserver {
            apiserver,
            hub,
            kubeconfig,
            dashboard,
        }
    }

    /// Stops the hub, then the apiserver.
    pub fn stop(self) {
        self.hub.stop();
        self.apiserver.stop();
    }
}

/// Starts `ocm hub controllers --kubeconfig KUBECONFIG --only COMPONENT` and waits until it
/// runs that component.
pub fn start_hub_component(bin: &str, home: &Path, kubeconfig: &Path, component: &str) -> Process {
    start_hub_component_with(bin, home, kubeconfig, component, &[])
}

/// [`start_hub_component`] with `extra` flags (e.g. `--feature-gates=…`).
pub fn start_hub_component_with(
    bin: &str,
    home: &Path,
    kubeconfig: &Path,
    component: &str,
    extra: &[&str],
) -> Process {
    let mut args = vec![
        "hub",
        "controllers",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--only",
        component,
    ];
    args.extend_from_slice(extra);
    let process = Process::spawn(bin, home, &args);
    process.wait_line(&format!("ocm hub controllers running: {component}"));
    process
}

/// Spawns `ocm join` for simulated cluster `name` (its data, and its admin kubeconfig
/// `admin.kubeconfig`, under `home/clusters/<name>`) with the hub URL and token `ocm init`
/// printed.
pub fn spawn_simulated_join(bin: &str, home: &Path, url: &str, token: &str, name: &str) -> Process {
    spawn_simulated_join_with(bin, home, url, token, name, &[])
}

/// [`spawn_simulated_join`] with `extra` flags.
pub fn spawn_simulated_join_with(
    bin: &str,
    home: &Path,
    url: &str,
    token: &str,
    name: &str,
    extra: &[&str],
) -> Process {
    let data = home.join("clusters").join(name);
    let mut args = vec![
        "join",
        "--hub-apiserver",
        url,
        "--hub-token",
        token,
        "--cluster-name",
        name,
        "--simulated",
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Process::spawn(bin, home, &args)
}

//! A pod process's standard streams, as a container runtime wires them: its output (stdout
//! and stderr) appended to the pod's log, its stdin kept for `kubectl attach -i` when its
//! container sets `stdin: true` ([`super::stdin`]). A container with `tty: true` runs on a
//! pseudo-terminal ([`super::terminal`], leading a new session whose controlling terminal it
//! is, `TERM=xterm` unless its environment says otherwise): the terminal's bytes go to the
//! log as they come (a prompt without its line end included), and an attach session's
//! input and resizes go to the terminal.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

use super::stdin::{OpenStdin, Stdins};
use super::terminal::{self, Terminal};

/// A started pod process and what carries its streams while it lives.
pub(super) struct Started {
    /// The process.
    pub(super) child: tokio::process::Child,
    /// The tasks copying its output to the log; they end with the output.
    pub(super) copies: Vec<JoinHandle<()>>,
    /// Its stdin's slot for attach sessions, when its container asks for stdin.
    pub(super) stdin: Option<OpenStdin>,
}

/// The container's stream settings, from its spec.
struct Wiring {
    stdin: bool,
    stdin_once: bool,
    tty: bool,
}

impl Wiring {
    fn of(container: &Value) -> Self {
        let flag = |name: &str| container[name].as_bool() == Some(true);
        Self {
            stdin: flag("stdin"),
            stdin_once: flag("stdinOnce"),
            tty: flag("tty"),
        }
    }
}

/// Starts `executable` with `args` and `env` as the process of the pod in `pod_dir` whose
/// first container is `container`, its streams wired as the container asks; its output is
/// echoed to stderr under `label` when given.
pub(super) fn start(
    executable: &Path,
    args: &[String],
    env: &[(String, String)],
    container: &Value,
    pod_dir: &Path,
    stdins: &Stdins,
    label: Option<String>,
) -> std::io::Result<Started> {
    let wiring = Wiring::of(container);
    let log = pod_dir.join("container.log");
    if wiring.tty {
        return on_terminal(executable, args, env, &wiring, pod_dir, stdins, log, label);
    }
    let mut child = super::default_signals::command(executable)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(if wiring.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .map(|pipe| stdins.open(pod_dir, pipe, wiring.stdin_once, None));
    let mut copies = Vec::new();
    if let Some(out) = child.stdout.take() {
        copies.push(tokio::spawn(copy_lines(out, log.clone(), label.clone())));
    }
    if let Some(err) = child.stderr.take() {
        copies.push(tokio::spawn(copy_lines(err, log, label)));
    }
    Ok(Started {
        child,
        copies,
        stdin,
    })
}

#[allow(clippy::too_many_arguments)]
fn on_terminal(
    executable: &Path,
    args: &[String],
    env: &[(String, String)],
    wiring: &Wiring,
    pod_dir: &Path,
    stdins: &Stdins,
    log: PathBuf,
    label: Option<String>,
) -> std::io::Result<Started> {
    let Terminal {
        output,
        input,
        sizer,
        follower,
    } = terminal::open().map_err(std::io::Error::other)?;
    let child = terminal::command(executable, args, &follower)?
        .env("TERM", terminal::TERM)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true)
        .spawn()?;
    // The command (dropped above) and the process hold the follower side now.
    drop(follower);
    let stdin = wiring
        .stdin
        .then(|| stdins.open(pod_dir, input, wiring.stdin_once, Some(sizer)));
    Ok(Started {
        child,
        copies: vec![tokio::spawn(copy_bytes(output, log, label))],
        stdin,
    })
}

async fn append_to(log: &Path) -> Option<tokio::fs::File> {
    tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .await
        .ok()
}

/// Appends the lines of a process's output to `log` (the Pod's log), and echoes them to
/// stderr under `label` when given.
async fn copy_lines(stream: impl AsyncRead + Unpin, log: PathBuf, label: Option<String>) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut file = append_to(&log).await;
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(label) = &label {
            eprintln!("[pod {label}] {line}");
        }
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(format!("{line}\n").as_bytes()).await;
        }
    }
}

/// Appends a terminal's bytes to `log` as they come, and echoes them to stderr under `label`
/// when given.
async fn copy_bytes(mut stream: impl AsyncRead + Unpin, log: PathBuf, label: Option<String>) {
    let mut file = append_to(&log).await;
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Some(label) = &label {
            eprintln!(
                "[pod {label}] {}",
                String::from_utf8_lossy(&buf[..n]).trim_end()
            );
        }
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(&buf[..n]).await;
        }
    }
}

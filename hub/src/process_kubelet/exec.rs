//! The kubelet's exec endpoint, so that `kubectl exec` (the API server's `pods/exec`, which
//! passes the upgrade on) runs a command in a running pod's process environment:
//! `GET /exec/<namespace>/<pod>/<container>?command=…&stdin=…&stdout=…&stderr=…&tty=…`,
//! upgraded to a WebSocket of the `v5.channel.k8s.io` (or `v4.channel.k8s.io`) protocol.
//! Each binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the final
//! `Status` (the exit code of a failed command in its causes), 4 terminal resizes, 255 (v5)
//! the end of a channel — stdin's.
//!
//! With `tty=true` the command runs on a pseudo-terminal ([`super::terminal`]) as the leader
//! of a new session whose controlling terminal it is, with `TERM=xterm` as container runtimes
//! set: its stdin, stdout and stderr are the terminal, whose output comes back on stdout only
//! (as the kubelet does, `stderr` is dropped from a `tty` request), the session's input is
//! typed into it (so ^C interrupts the foreground job), and each resize
//! (`{"Width":W,"Height":H}`) sets its window size. Without `tty` the command runs on pipes and
//! resizes are ignored.
//!
//! The command runs with the pod process's environment (the variables it was started with,
//! its `KUBECONFIG`), in the pod's folder, the image's executable first on `PATH`; the
//! supervisor records that environment while the process runs ([`super::record::record`]), so a pod whose
//! process is not running refuses exec before any upgrade. SPDY is not served. Nothing is sent
//! before the client answers a first ping ([`client_ready`]).
//!
//! `GET /attach/<namespace>/<pod>/<container>?stdin=…&stdout=…&stderr=…` (same protocols)
//! streams what the pod's process writes from then on, on stdout, until it ends (the final
//! Status is then `Success`); with `stdin=true` the session's input goes to the process's
//! stdin, which it has only when its container sets `stdin: true` ([`super::stdin`]; else the
//! request is refused before the upgrade, naming why). A container with `tty: true` runs on a
//! terminal ([`super::container_io`]): an attach session with `tty=true` types into it and its
//! resizes set its window size.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};

use super::logs::is_plain_name;
use super::record::PROCESS_FILE;
use super::stdin::Stdins;
use super::terminal::{self, Sizer, Terminal};
use super::websocket::{self, Message};

/// The channel protocols served, preferred first.
pub const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;
const CLOSE: u8 = 255;

/// What an exec or attach request asks for.
#[derive(Debug, PartialEq, Eq)]
pub struct ExecRequest {
    /// Attach to the process rather than run a command.
    pub attach: bool,
    /// The pod's folder.
    pub pod_dir: PathBuf,
    /// The container named.
    pub container: String,
    /// The command and its arguments (none for attach).
    pub command: Vec<String>,
    /// Whether stdin, stdout and stderr are streamed.
    pub stdin: bool,
    /// See `stdin`.
    pub stdout: bool,
    /// See `stdin`.
    pub stderr: bool,
    /// Whether the command runs on a terminal (exec only).
    pub tty: bool,
}

/// Decodes a query word (`+` is a space, `%XX` a byte).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[i], escaped) {
            (_, Some(b)) => {
                out.push(b);
                i += 2;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads `/exec/<ns>/<pod>/<container>` (or `/attach/…`) and its query; `Err` names what is
/// wrong.
pub fn parse(work_dir: &Path, path: &str, query: &str) -> Result<ExecRequest, String> {
    let (attach, rest) = match (path.strip_prefix("/exec/"), path.strip_prefix("/attach/")) {
        (Some(rest), _) => (false, rest),
        (None, Some(rest)) => (true, rest),
        (None, None) => return Err(format!("{path} is neither an exec nor an attach path")),
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let [namespace, pod, container] = parts.as_slice() else {
        return Err(format!(
            "{path} does not name <namespace>/<pod>/<container>"
        ));
    };
    if ![namespace, pod, container].iter().all(|p| is_plain_name(p)) {
        return Err(format!("{path} does not name a pod's container"));
    }
    let pairs: Vec<(String, String)> = query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect();
    let flag = |key: &str| {
        pairs
            .iter()
            .any(|(k, v)| k == key && (v == "true" || v == "1"))
    };
    let command: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.clone())
        .collect();
    if command.is_empty() && !attach {
        return Err("you must specify at least 1 command".into());
    }
    let request = ExecRequest {
        attach,
        pod_dir: work_dir.join(namespace).join(pod),
        container: (*container).to_owned(),
        command,
        stdin: flag("stdin"),
        stdout: flag("stdout"),
        // A terminal has one output: the kubelet drops stderr from a `tty` request.
        stderr: flag("stderr") && !flag("tty"),
        tty: flag("tty"),
    };
    if !(request.stdin || request.stdout || request.stderr) {
        return Err("you must specify at least 1 of stdin, stdout, stderr".into());
    }
    Ok(request)
}

/// The channel protocol to speak, of those the client offers.
pub fn choose_protocol(offered: &str) -> Option<&'static str> {
    let offered: Vec<&str> = offered.split(',').map(str::trim).collect();
    PROTOCOLS.into_iter().find(|p| offered.contains(p))
}

/// The process environment recorded for a running pod.
struct ProcessEnv {
    executable: PathBuf,
    env: Vec<(String, String)>,
}

fn process_env(pod_dir: &Path) -> Option<ProcessEnv> {
    let text = std::fs::read_to_string(pod_dir.join(PROCESS_FILE)).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    Some(ProcessEnv {
        executable: PathBuf::from(value["executable"].as_str()?),
        env: serde_json::from_value(value["env"].clone()).ok()?,
    })
}

pub(super) fn reply(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}

/// Answers an exec request: refusals before the upgrade, else `101 Switching Protocols` and
/// the command runs over the upgraded connection.
pub fn answer(
    work_dir: &Path,
    stdins: &Stdins,
    mut req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let query = req.uri().query().unwrap_or_default().to_owned();
    let exec = match parse(work_dir, req.uri().path(), &query) {
        Ok(exec) => exec,
        Err(message) => return reply(StatusCode::BAD_REQUEST, message),
    };
    let Some(process) = process_env(&exec.pod_dir) else {
        return reply(
            StatusCode::BAD_REQUEST,
            format!(
                "container {:?} is not running: it has no process to {}",
                exec.container,
                if exec.attach { "attach to" } else { "exec in" }
            ),
        );
    };
    // Refused before the protocol checks, so that kubectl's SPDY retry hears the same.
    if exec.attach
        && exec.stdin
        && let Err(why) = stdins.check(&exec.pod_dir)
    {
        return no_stdin(&exec.container, &why);
    }
    let header = |name: &str| websocket::header_text(req.headers(), name);
    if !header("upgrade").eq_ignore_ascii_case("websocket") {
        return reply(
            StatusCode::BAD_REQUEST,
            "exec and attach are served over WebSocket (v5.channel.k8s.io or v4.channel.k8s.io); \
             SPDY is not"
                .into(),
        );
    }
    let Some(protocol) = choose_protocol(&header("sec-websocket-protocol")) else {
        return reply(
            StatusCode::BAD_REQUEST,
            format!("no WebSocket protocol offered is served (want one of {PROTOCOLS:?})"),
        );
    };
    let key = match websocket::client_key(req.headers()) {
        Ok(key) => key,
        Err(refusal) => return *refusal,
    };
    let input = match (exec.attach && exec.stdin).then(|| stdins.attach(&exec.pod_dir)) {
        Some(Err(why)) => return no_stdin(&exec.container, &why),
        Some(Ok(writer)) => Some(writer),
        None => None,
    };
    // An attach session's resizes size the terminal of a container with `tty: true`.
    let sizer = (exec.attach && exec.tty)
        .then(|| stdins.terminal(&exec.pod_dir))
        .flatten();
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        match upgrade.await {
            Ok(upgraded) if exec.attach => {
                attach(TokioIo::new(upgraded), exec, input, sizer).await;
            }
            Ok(upgraded) => session(TokioIo::new(upgraded), exec, process).await,
            Err(err) => tracing::debug!(%err, "exec upgrade failed"),
        }
    });
    websocket::switching_protocols(&key, protocol)
}

/// The refusal of an attach session's stdin.
fn no_stdin(container: &str, why: &super::stdin::NoStdin) -> Response<Full<Bytes>> {
    reply(
        StatusCode::BAD_REQUEST,
        format!("cannot attach to the stdin of container {container:?}: {why}"),
    )
}

/// A channel message: the channel byte, then the data.
fn channel_frame(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(data.len() + 1);
    payload.push(channel);
    payload.extend_from_slice(data);
    websocket::frame(0x2, &payload)
}

/// The final Status of a command that ended with `code`.
pub fn exit_status(code: i32) -> Value {
    if code == 0 {
        json!({"metadata": {}, "status": "Success"})
    } else {
        json!({"metadata": {}, "status": "Failure",
               "message": format!("command terminated with non-zero exit code: exit status {code}"),
               "reason": "NonZeroExitCode",
               "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
    }
}

async fn pump(mut from: impl AsyncRead + Unpin, channel: u8, to: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 32 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || to.send(channel_frame(channel, &buf[..n])).await.is_err() {
            break;
        }
    }
}

/// The writing half of a session: frames sent to the channel are written in order; once all
/// senders are gone a close ends the connection.
pub(super) fn frame_writer<W>(writer: W) -> (mpsc::Sender<Vec<u8>>, tokio::task::JoinHandle<()>)
where
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    websocket::byte_writer(writer, true)
}

/// Reads the client's messages until it closes: stdin data goes to `stdin` (dropped at its
/// end), resizes to the terminal when there is one, pings are answered through `frames`. The
/// first pong or message on a stream fires `ready` ([`client_ready`]).
async fn read_input<R>(
    mut reader: R,
    mut stdin: Option<mpsc::Sender<Vec<u8>>>,
    terminal: Option<Sizer>,
    frames: mpsc::Sender<Vec<u8>>,
    mut ready: Option<oneshot::Sender<()>>,
) where
    R: tokio::io::AsyncRead + Unpin,
{
    loop {
        let message = websocket::read_message(&mut reader).await;
        if let Ok(Some(Message::Pong | Message::Data(_))) = &message
            && let Some(ready) = ready.take()
        {
            let _ = ready.send(());
        }
        match message {
            Ok(Some(Message::Data(data))) => match data.split_first() {
                Some((&STDIN, rest)) => {
                    if let Some(pipe) = stdin.as_ref()
                        && pipe.send(rest.to_vec()).await.is_err()
                    {
                        stdin = None;
                    }
                }
                Some((&CLOSE, [STDIN])) => stdin = None,
                Some((&RESIZE, size)) => {
                    if let (Some(terminal), Some(size)) =
                        (terminal.as_ref(), terminal::parse_resize(size))
                    {
                        terminal.resize(size);
                    }
                }
                _ => {}
            },
            Ok(Some(Message::Ping(data))) => {
                let _ = frames.send(websocket::frame(0xA, &data)).await;
            }
            Ok(Some(Message::Pong)) => {}
            Ok(Some(Message::Close) | None) | Err(_) => break,
        }
    }
}

/// How long a session waits for the client's answer to its first ping ([`client_ready`])
/// before it starts anyway (a client that does not answer pings).
const READY_WAIT: Duration = Duration::from_secs(1);

/// Waits, before a session sends anything, until the client shows that it reads: kubectl
/// (client-go's WebSocket executor) starts reading before it has set up its streams and drops
/// a message for a stream it has not set up yet ("Unknown stream id 1, discarding message"),
/// so output sent right after the switch can be lost — the command then seems to have written
/// nothing and exited 0. A ping goes first; the session starts at its pong (or at the client's
/// first message on a stream, which it writes only once its streams exist), when the client
/// is gone, or after [`READY_WAIT`]. The pong proves the client's reader runs, not that its
/// streams exist; the round trip it takes (more than setting up streams does) is what makes
/// the loss unlikely, as the round trips to a container runtime do behind kube-apiserver.
async fn client_ready(frames: &mpsc::Sender<Vec<u8>>, ready: oneshot::Receiver<()>) {
    if frames.send(websocket::frame(0x9, b"")).await.is_ok() {
        let _ = tokio::time::timeout(READY_WAIT, ready).await;
    }
}

/// Ends a session: the final Status, then the close.
async fn finish(frames: mpsc::Sender<Vec<u8>>, writer: tokio::task::JoinHandle<()>, status: Value) {
    let _ = frames
        .send(channel_frame(ERROR, status.to_string().as_bytes()))
        .await;
    drop(frames);
    let _ = writer.await;
}

/// Streams the pod process's output from now on until it ends or the client goes; the
/// client's input goes to `input`, the process's stdin, when the session has it, and its
/// resizes to the process's terminal when it has one (`sizer`).
async fn attach<S>(
    io: S,
    exec: ExecRequest,
    input: Option<mpsc::Sender<Vec<u8>>>,
    sizer: Option<Sizer>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    let (reader, writer) = tokio::io::split(io);
    let (frames, written) = frame_writer(writer);
    let log = exec.pod_dir.join("container.log");
    let end = std::fs::metadata(&log).map_or(0, |m| m.len());
    let mut output = super::logs::follow(log, end);
    let (ready, is_ready) = oneshot::channel();
    // Boxed so it can go (with its handle on `frames`) before the session finishes.
    let mut input = Box::pin(read_input(
        reader,
        input,
        sizer,
        frames.clone(),
        Some(ready),
    ));
    // What the process writes meanwhile is streamed after: `output` follows from `end`.
    tokio::select! {
        () = client_ready(&frames, is_ready) => {}
        () = &mut input => return,
    }
    let channel = if exec.stdout { STDOUT } else { STDERR };
    loop {
        tokio::select! {
            chunk = output.recv() => match chunk {
                Some(chunk) => {
                    if frames.send(channel_frame(channel, &chunk)).await.is_err() {
                        return;
                    }
                }
                None => break,
            },
            () = &mut input => return,
        }
    }
    drop(input);
    finish(frames, written, exit_status(0)).await;
}

/// Runs the command of an exec request — on pipes, or on a terminal with `tty` — streaming
/// its input and output, and reports its exit. Nothing is sent before the client reads
/// ([`client_ready`]).
async fn session<S>(io: S, exec: ExecRequest, process: ProcessEnv)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    let (reader, writer) = tokio::io::split(io);
    let (frames, written) = frame_writer(writer);
    let terminal = match exec.tty.then(terminal::open).transpose() {
        Ok(terminal) => terminal,
        Err(err) => {
            tracing::warn!(%err, pod = %exec.pod_dir.display(), "exec -t");
            finish(frames, written, internal_error(&err.to_string())).await;
            return;
        }
    };
    // The client's input is read from the start; stdin is kept for the command's.
    let (stdin, typed) = if exec.stdin {
        let (sender, receiver) = mpsc::channel(16);
        (Some(sender), Some(receiver))
    } else {
        (None, None)
    };
    let (ready, is_ready) = oneshot::channel();
    let sizer = terminal.as_ref().map(|t| t.sizer.clone());
    let input = tokio::spawn(read_input(
        reader,
        stdin,
        sizer,
        frames.clone(),
        Some(ready),
    ));
    client_ready(&frames, is_ready).await;
    let status = match (program_in_pod(&exec, &process), terminal) {
        (Err(err), _) => not_started(&err, &exec, &frames).await,
        (Ok(program), Some(terminal)) => {
            on_terminal(terminal, typed, &program, &exec, &process, &frames).await
        }
        (Ok(program), None) => on_pipes(typed, &program, &exec, &process, &frames).await,
    };
    input.abort();
    finish(frames, written, status).await;
}

/// The `PATH` of commands run in the pod: the image's executable's folder first.
fn pod_path(process: &ProcessEnv) -> Option<std::ffi::OsString> {
    match (process.executable.parent(), std::env::var_os("PATH")) {
        (Some(dir), Some(path)) => {
            let mut dirs = vec![dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).ok()
        }
        (Some(dir), None) => Some(dir.as_os_str().to_owned()),
        _ => None,
    }
}

/// The executable the command names, found as a shell in the pod finds it: a path as given
/// (from the pod's folder), a bare name on the pod's `PATH` ([`pod_path`]) — so that a
/// missing command is this kubelet's to report (127, as a container runtime), not that of
/// the program that starts it.
fn program_in_pod(exec: &ExecRequest, process: &ProcessEnv) -> std::io::Result<PathBuf> {
    let name = &exec.command[0];
    if name.contains('/') {
        return Ok(exec.pod_dir.join(name));
    }
    pod_path(process)
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|candidate| candidate.is_file())
        })
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "executable file not found in $PATH",
            )
        })
}

/// Gives `command` the pod process's environment and folder, the image's executable first
/// on `PATH`.
fn in_pod(command: &mut tokio::process::Command, exec: &ExecRequest, process: &ProcessEnv) {
    let path = pod_path(process);
    command
        .envs(process.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&exec.pod_dir)
        .kill_on_drop(true);
    if let Some(path) = path {
        command.env("PATH", path);
    }
}

/// The channel a session's own error messages go on, when it streams one: stdout on a
/// terminal (which merges both), stderr otherwise.
fn error_channel(exec: &ExecRequest) -> Option<u8> {
    if exec.tty {
        exec.stdout.then_some(STDOUT)
    } else {
        exec.stderr.then_some(STDERR)
    }
}

/// The exit a command that could not start gets, as a container runtime reports it, its
/// error written on the session's [`error_channel`] when it streams one.
async fn not_started(
    err: &std::io::Error,
    exec: &ExecRequest,
    frames: &mpsc::Sender<Vec<u8>>,
) -> Value {
    if let Some(channel) = error_channel(exec) {
        let message = format!("exec: {:?}: {err}\n", exec.command[0]);
        let _ = frames
            .send(channel_frame(channel, message.as_bytes()))
            .await;
    }
    exit_status(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// The final Status of a session that failed on this kubelet's side, naming why.
pub fn internal_error(message: &str) -> Value {
    json!({"metadata": {}, "status": "Failure", "message": message,
           "reason": "InternalError", "code": 500})
}

/// Runs the command with pipes for the streams the session asks for; what the client types
/// (`typed`) goes to its stdin.
async fn on_pipes(
    typed: Option<mpsc::Receiver<Vec<u8>>>,
    program: &Path,
    exec: &ExecRequest,
    process: &ProcessEnv,
    frames: &mpsc::Sender<Vec<u8>>,
) -> Value {
    let pipe = |wanted: bool| {
        if wanted {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    let mut command = super::default_signals::command(program);
    command
        .args(&exec.command[1..])
        .stdin(pipe(exec.stdin))
        .stdout(pipe(exec.stdout))
        .stderr(pipe(exec.stderr));
    in_pod(&mut command, exec, process);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return not_started(&err, exec, frames).await,
    };
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        pumps.push(tokio::spawn(pump(out, STDOUT, frames.clone())));
    }
    if let Some(err) = child.stderr.take() {
        pumps.push(tokio::spawn(pump(err, STDERR, frames.clone())));
    }
    if let (Some(pipe), Some(typed)) = (child.stdin.take(), typed) {
        websocket::write_from(pipe, typed, false);
    }
    let code = match child.wait().await {
        Ok(status) => status.code().unwrap_or(-1),
        Err(_) => -1,
    };
    for pump in pumps {
        let _ = pump.await;
    }
    exit_status(code)
}

/// Runs the command on the session's pseudo-terminal: what the client types (`typed`, and
/// its resizes, read from before the command starts) goes to it, its output comes back on
/// stdout until the terminal's last user is gone.
async fn on_terminal(
    terminal: Terminal,
    typed: Option<mpsc::Receiver<Vec<u8>>>,
    program: &Path,
    exec: &ExecRequest,
    process: &ProcessEnv,
    frames: &mpsc::Sender<Vec<u8>>,
) -> Value {
    let Terminal {
        mut output,
        input,
        sizer: _,
        follower,
    } = terminal;
    if let Some(typed) = typed {
        websocket::write_from(input, typed, false);
    }
    let spawned =
        terminal::command(program, &exec.command[1..], &follower).and_then(|mut command| {
            in_pod(&mut command, exec, process);
            command.env("TERM", terminal::TERM).spawn()
        });
    // Only the command holds the terminal's follower side now: its end ends the output.
    drop(follower);
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => return not_started(&err, exec, frames).await,
    };
    let output = if exec.stdout {
        tokio::spawn(pump(output, STDOUT, frames.clone()))
    } else {
        // Read and dropped, so that the command never waits on a full terminal.
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut output, &mut tokio::io::sink()).await;
        })
    };
    let code = match child.wait().await {
        Ok(status) => status.code().unwrap_or(-1),
        Err(_) => -1,
    };
    let _ = output.await;
    exit_status(code)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A session of `sh -c <script>` in a fresh pod folder, and the client's ends.
    fn sh_session(
        script: &str,
    ) -> (
        tempfile::TempDir,
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) {
        sh_session_with(script, false)
    }

    /// [`sh_session`], on a terminal with stdin (`exec -it`) when `tty`.
    fn sh_session_with(
        script: &str,
        tty: bool,
    ) -> (
        tempfile::TempDir,
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let exec = ExecRequest {
            attach: false,
            pod_dir: dir.path().to_path_buf(),
            container: "main".into(),
            command: vec!["sh".into(), "-c".into(), script.into()],
            stdin: tty,
            stdout: true,
            stderr: !tty,
            tty,
        };
        let process = ProcessEnv {
            executable: PathBuf::from("/bin/sh"),
            env: Vec::new(),
        };
        let (client, server) = tokio::io::duplex(1 << 16);
        tokio::spawn(session(server, exec, process));
        let (from, to) = tokio::io::split(client);
        (dir, from, to)
    }

    /// The session's messages after the first, until its close: stdout, then the Status.
    async fn output_then_status(from: &mut (impl AsyncRead + Unpin)) -> (Vec<u8>, Value) {
        let mut messages = Vec::new();
        while let Some(message) = websocket::read_message(from).await.unwrap() {
            messages.push(message);
        }
        let [.., Message::Data(status), Message::Close] = messages.as_slice() else {
            panic!("no Status then close: {messages:?}");
        };
        let stdout = messages
            .iter()
            .filter_map(|m| match m {
                Message::Data(data) if data.first() == Some(&STDOUT) => Some(data[1..].to_vec()),
                _ => None,
            })
            .flatten()
            .collect();
        (stdout, serde_json::from_slice(&status[1..]).unwrap())
    }

    #[tokio::test]
    async fn a_session_pings_first_and_runs_the_command_once_the_client_answers() {
        let (dir, mut from, mut to) = sh_session("touch ran; echo hi");
        assert_eq!(
            websocket::read_message(&mut from).await.unwrap(),
            Some(Message::Ping(Vec::new()))
        );
        // Unanswered, the command has not run (it would have been lost on a client whose
        // streams are not set up yet).
        assert!(!dir.path().join("ran").exists());
        to.write_all(&websocket::frame(0xA, b"")).await.unwrap();
        let (stdout, status) = output_then_status(&mut from).await;
        assert_eq!(stdout, b"hi\n");
        assert_eq!(status["status"], "Success");
        assert!(dir.path().join("ran").exists());
    }

    #[tokio::test]
    async fn a_client_that_never_answers_pings_gets_its_output_after_the_wait() {
        let (_dir, mut from, _to) = sh_session("echo hi");
        assert_eq!(
            websocket::read_message(&mut from).await.unwrap(),
            Some(Message::Ping(Vec::new()))
        );
        let (stdout, status) = output_then_status(&mut from).await;
        assert_eq!(stdout, b"hi\n");
        assert_eq!(status["status"], "Success");
    }

    /// Reads the session's messages until its stdout has shown `want`; all stdout read.
    async fn stdout_until(from: &mut (impl AsyncRead + Unpin), want: &str) -> String {
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains(want) {
            match websocket::read_message(from).await.unwrap() {
                Some(Message::Data(data)) if data.first() == Some(&STDOUT) => {
                    seen.extend_from_slice(&data[1..]);
                }
                Some(_) => {}
                None => panic!("the session ended before {want:?}: {seen:?}"),
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    }

    /// As containerd does for `exec -t`, the end of the client's stdin does not end the
    /// command's input: no end-of-file is typed and the terminal is not hung up — the command
    /// goes on (here: still reading, and told of a later resize) and the session ends with it.
    #[tokio::test]
    async fn on_a_terminal_the_end_of_stdin_leaves_the_command_running() {
        let script = "trap 'echo trapped; exit 5' WINCH; echo ready; \
                      while read line; do echo \"got:$line\"; done; echo eof";
        let (_dir, mut from, mut to) = sh_session_with(script, true);
        assert_eq!(
            websocket::read_message(&mut from).await.unwrap(),
            Some(Message::Ping(Vec::new()))
        );
        to.write_all(&websocket::frame(0xA, b"")).await.unwrap();
        stdout_until(&mut from, "ready").await;
        to.write_all(&channel_frame(STDIN, b"one\n")).await.unwrap();
        stdout_until(&mut from, "got:one").await;
        to.write_all(&channel_frame(CLOSE, &[STDIN])).await.unwrap();
        // The close has been read once the ping after it is answered.
        to.write_all(&websocket::frame(0x9, b"")).await.unwrap();
        loop {
            match websocket::read_message(&mut from).await.unwrap() {
                Some(Message::Pong) => break,
                Some(Message::Data(data)) => {
                    let text = String::from_utf8_lossy(&data[1..]).into_owned();
                    assert!(!text.contains("eof"), "stdin's end was typed: {text}");
                }
                other => panic!("{other:?}"),
            }
        }
        let resize = br#"{"Width":50,"Height":20}"#;
        to.write_all(&channel_frame(RESIZE, resize)).await.unwrap();
        let (stdout, status) = output_then_status(&mut from).await;
        let stdout = String::from_utf8_lossy(&stdout);
        assert!(
            stdout.contains("trapped") && !stdout.contains("eof"),
            "{stdout}"
        );
        assert_eq!(status["details"]["causes"][0]["message"], "5", "{status}");
    }

    #[test]
    fn an_exec_path_and_query_read_as_the_command_and_streams() {
        let exec = parse(
            Path::new("/pods"),
            "/exec/ns/p-1/main",
            "command=sh&command=-c&command=echo+%22a+b%22&stdout=true&stderr=1",
        )
        .unwrap();
        assert_eq!(exec.pod_dir, Path::new("/pods/ns/p-1"));
        assert_eq!(exec.container, "main");
        assert_eq!(exec.command, ["sh", "-c", "echo \"a b\""]);
        assert!(!exec.stdin && exec.stdout && exec.stderr);
        let dir = Path::new("/pods");
        assert!(parse(dir, "/exec/ns/p/main", "stdout=true").is_err());
        assert!(parse(dir, "/exec/ns/p/main", "command=ls").is_err());
        assert!(parse(dir, "/exec/../p/main", "command=ls&stdout=true").is_err());
        let attach = parse(dir, "/attach/ns/p/main", "stdout=true").unwrap();
        assert!(attach.attach && attach.command.is_empty());
        let attach = parse(dir, "/attach/ns/p/main", "stdin=true&stdout=true").unwrap();
        assert!(attach.attach && attach.stdin);
    }

    #[test]
    fn a_terminal_request_has_no_stderr_as_the_kubelets() {
        let dir = Path::new("/pods");
        let exec = parse(
            dir,
            "/exec/ns/p/main",
            "command=sh&stdin=true&stdout=true&stderr=true&tty=true",
        )
        .unwrap();
        assert!(exec.tty && exec.stdin && exec.stdout && !exec.stderr);
        // An output-only terminal is fine; a terminal asking for stderr alone asks for nothing.
        let exec = parse(dir, "/exec/ns/p/main", "command=top&stdout=1&tty=1").unwrap();
        assert!(exec.tty && !exec.stdin);
        let err = parse(dir, "/exec/ns/p/main", "command=sh&stderr=true&tty=true").unwrap_err();
        assert_eq!(err, "you must specify at least 1 of stdin, stdout, stderr");
    }

    #[test]
    fn a_terminal_that_cannot_be_had_fails_the_session_naming_why() {
        let status = internal_error("cannot allocate a pseudo-terminal: open: No such device");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["reason"], "InternalError");
        assert_eq!(status["code"], 500);
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .starts_with("cannot allocate a pseudo-terminal")
        );
    }

    #[test]
    fn v5_is_preferred_to_v4_and_spdy_is_not_served() {
        assert_eq!(
            choose_protocol("v4.channel.k8s.io, v5.channel.k8s.io"),
            Some("v5.channel.k8s.io")
        );
        assert_eq!(
            choose_protocol("v4.channel.k8s.io"),
            Some("v4.channel.k8s.io")
        );
        assert_eq!(choose_protocol("SPDY/3.1+portforward.k8s.io"), None);
    }

    #[test]
    fn a_failed_command_reports_its_exit_code_in_the_status_causes() {
        assert_eq!(exit_status(0)["status"], "Success");
        let failed = exit_status(3);
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(failed["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(failed["details"]["causes"][0]["message"], "3");
    }
}

//! Pseudo-terminals for `kubectl exec -t` and containers with `tty: true`: a leader side the
//! kubelet reads the command's output from and writes the session's input and window size
//! to, and a follower side that becomes the command's stdin, stdout and stderr.
//!
//! The command gets the terminal as its controlling terminal in a new session by starting
//! through util-linux `setsid --ctty` (it makes a session and takes its stdin, the follower,
//! as the session's terminal, then executes the command in place, keeping its exit code) — the
//! safe way to do what a container runtime does, since `unsafe` (and so a `pre_exec` of our
//! own) is forbidden here. Without `setsid` on this machine's `PATH` the command still runs on
//! the terminal, without a controlling one (so ^C typed into it stops nothing); that is logged
//! once.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustix::pty::OpenptFlags;
use rustix::termios::Winsize;
use tokio::net::unix::pipe;

/// Why no pseudo-terminal could be had.
#[derive(Debug, thiserror::Error)]
#[error("cannot allocate a pseudo-terminal: {step}: {source}")]
pub struct PtyError {
    step: &'static str,
    #[source]
    source: io::Error,
}

fn step(step: &'static str) -> impl FnOnce(rustix::io::Errno) -> PtyError {
    move |errno| PtyError {
        step,
        source: errno.into(),
    }
}

/// A terminal window size, as a `kubectl` client reports it on the resize channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    /// Columns.
    pub width: u16,
    /// Rows.
    pub height: u16,
}

/// Reads a resize message (`{"Width":W,"Height":H}`, both required and within `u16`).
pub fn parse_resize(message: &[u8]) -> Option<WindowSize> {
    let value: serde_json::Value = serde_json::from_slice(message).ok()?;
    let field = |name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| u16::try_from(n).ok())
    };
    Some(WindowSize {
        width: field("Width")?,
        height: field("Height")?,
    })
}

/// A new pseudo-terminal: its leader side split in the ends a session uses (non-blocking,
/// registered with the runtime), and its follower side for the command. Every descriptor is
/// closed on exec and none is a controlling terminal of this process; the leader side closes
/// when its last end goes.
pub struct Terminal {
    /// What the command writes to the terminal (and the terminal echoes).
    pub output: pipe::Receiver,
    /// What is typed into the terminal.
    pub input: pipe::Sender,
    /// Sets the terminal's window size.
    pub sizer: Sizer,
    /// The follower side, the command's stdin, stdout and stderr.
    pub follower: OwnedFd,
}

/// Sets the window size of a terminal (a handle on its leader side).
#[derive(Clone)]
pub struct Sizer(Arc<OwnedFd>);

/// Opens a new pseudo-terminal.
///
/// The leader's read and write ends are tokio's pipe ends over it: the "unchecked" builders
/// take any non-blocking descriptor that reads and writes bytes, which a terminal's leader is.
pub fn open() -> Result<Terminal, PtyError> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let leader = rustix::pty::openpt(flags).map_err(step("open"))?;
    rustix::pty::grantpt(&leader).map_err(step("grant"))?;
    rustix::pty::unlockpt(&leader).map_err(step("unlock"))?;
    let follower = rustix::pty::ioctl_tiocgptpeer(&leader, flags).map_err(step("open peer"))?;
    // On the open file description, so for every duplicate below too.
    rustix::io::ioctl_fionbio(&leader, true).map_err(step("set non-blocking"))?;
    let duplicate = |what| {
        leader
            .try_clone()
            .map_err(|source| PtyError { step: what, source })
    };
    let writer = duplicate("duplicate for input")?;
    let sizer = Sizer(Arc::new(duplicate("duplicate for resizes")?));
    let register = |source| PtyError {
        step: "register",
        source,
    };
    Ok(Terminal {
        output: pipe::Receiver::from_owned_fd_unchecked(leader).map_err(register)?,
        input: pipe::Sender::from_owned_fd_unchecked(writer).map_err(register)?,
        sizer,
        follower,
    })
}

impl Sizer {
    /// Sets the terminal's window size (its foreground job hears `SIGWINCH`).
    pub fn resize(&self, size: WindowSize) {
        let winsize = Winsize {
            ws_row: size.height,
            ws_col: size.width,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        if let Err(err) = rustix::termios::tcsetwinsize(&*self.0, winsize) {
            tracing::debug!(%err, "setting a terminal's window size failed");
        }
    }
}

/// util-linux `setsid` on this machine's `PATH`, looked up once; its absence is logged once.
fn setsid() -> Option<&'static Path> {
    static SETSID: OnceLock<Option<PathBuf>> = OnceLock::new();
    SETSID
        .get_or_init(|| {
            let found = std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join("setsid"))
                    .find(|candidate| candidate.is_file())
            });
            if found.is_none() {
                tracing::warn!(
                    "setsid (util-linux) is not on PATH: `kubectl exec -t` commands run on a \
                     terminal that is not their controlling terminal, so ^C does not interrupt them"
                );
            }
            found
        })
        .as_deref()
}

/// The `TERM` a command on a terminal gets, whatever its environment says, as container
/// runtimes (containerd's CRI) set it for `exec -t`.
pub const TERM: &str = "xterm";

/// The command that runs `program` with `args` on the terminal `follower` (its stdin,
/// stdout and stderr), as the leader of a new session whose controlling terminal it is when
/// `setsid` is here, every signal at its default action ([`super::default_signals`]).
pub fn command(
    program: impl AsRef<std::ffi::OsStr>,
    args: &[String],
    follower: &OwnedFd,
) -> io::Result<tokio::process::Command> {
    command_with(setsid(), program, args, follower)
}

/// [`command`] with `setsid` found (or not) by the caller.
fn command_with(
    setsid: Option<&Path>,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[String],
    follower: &OwnedFd,
) -> io::Result<tokio::process::Command> {
    let mut command = match setsid {
        Some(setsid) => {
            let mut command = tokio::process::Command::new(setsid);
            command
                .args(["--ctty", "--wait", "--"])
                .args(super::default_signals::prefix())
                .arg(program);
            command
        }
        None => super::default_signals::command(program),
    };
    command
        .args(args)
        .stdin(follower.try_clone()?)
        .stdout(follower.try_clone()?)
        .stderr(follower.try_clone()?);
    Ok(command)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn a_resize_message_reads_as_its_width_and_height() {
        assert_eq!(
            parse_resize(br#"{"Width":120,"Height":40}"#),
            Some(WindowSize {
                width: 120,
                height: 40
            })
        );
        assert_eq!(parse_resize(br#"{"Width":80}"#), None);
        assert_eq!(parse_resize(br#"{"Width":70000,"Height":1}"#), None);
        assert_eq!(parse_resize(br#"{"Width":-1,"Height":1}"#), None);
        assert_eq!(parse_resize(b"not json"), None);
    }

    /// Reads from `output` until `want` has appeared; all read.
    async fn read_until(output: &mut pipe::Receiver, want: &str) -> String {
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&seen).contains(want) {
            let n = output.read(&mut buf).await.unwrap();
            assert!(n > 0, "the terminal ended before {want:?}: {seen:?}");
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    }

    /// A command running `sh -c script` on a new terminal of `size` (through `setsid` when
    /// given), `TERM` set as a session sets it: the terminal's output and input, and the child
    /// — the only holder of the follower side, so the terminal ends with it.
    fn run_on_terminal(
        setsid: Option<&Path>,
        script: &str,
        size: Option<WindowSize>,
    ) -> (pipe::Receiver, pipe::Sender, tokio::process::Child) {
        let Terminal {
            output,
            input,
            sizer,
            follower,
        } = open().unwrap();
        if let Some(size) = size {
            sizer.resize(size);
        }
        let mut command =
            command_with(setsid, "sh", &["-c".into(), script.into()], &follower).unwrap();
        let child = command
            .env("TERM", TERM)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        (output, input, child)
    }

    #[tokio::test]
    async fn a_command_runs_on_the_terminal_with_its_size_and_as_its_session() {
        let script = "tty; stty size; echo \"term=$TERM\"; read line; echo \"got $line\"; exit 4";
        let size = WindowSize {
            width: 91,
            height: 27,
        };
        let (mut output, mut input, mut child) = run_on_terminal(setsid(), script, Some(size));
        let seen = read_until(&mut output, "term=xterm").await;
        assert!(seen.contains("/dev/pts/"), "{seen}");
        assert!(seen.contains("27 91"), "{seen}");
        input.write_all(b"hello\n").await.unwrap();
        // The terminal echoes the input, then the command answers.
        let seen = read_until(&mut output, "got hello").await;
        assert!(seen.contains("hello\r\n"), "{seen}");
        assert_eq!(child.wait().await.unwrap().code(), Some(4));
        // Once the command and its terminal are gone, reading ends (with an error, as Linux
        // reports a leader whose follower is closed).
        let mut rest = Vec::new();
        assert!(output.read_to_end(&mut rest).await.is_err());
    }

    #[tokio::test]
    async fn control_c_interrupts_the_foreground_job() {
        // The foreground job says it waits only once it runs (a trap of the shell's own
        // would wait for the job's end to run).
        let script = "trap 'echo interrupted; exit 7' INT; sh -c 'echo waiting; exec cat'";
        let (mut output, mut input, mut child) = run_on_terminal(setsid(), script, None);
        read_until(&mut output, "waiting").await;
        input.write_all(&[0x03]).await.unwrap();
        read_until(&mut output, "interrupted").await;
        assert_eq!(child.wait().await.unwrap().code(), Some(7));
    }

    #[tokio::test]
    async fn without_setsid_a_command_still_runs_on_the_terminal_but_does_not_control_it() {
        // `tty` names the terminal (stdin is it). No session has it as its controlling
        // terminal, so ^C typed into it signals nobody: `cat` goes on, echoes the line typed
        // after it and ends at ^D (with a controlling terminal, ^C would have killed it).
        let script = "tty; echo waiting; exec cat";
        let (mut output, mut input, mut child) = run_on_terminal(None, script, None);
        let seen = read_until(&mut output, "waiting").await;
        assert!(seen.contains("/dev/pts/"), "{seen}");
        input.write_all(b"\x03typed\n\x04").await.unwrap();
        // The terminal's echo of the line, then cat's copy of it.
        read_until(&mut output, "typed\r\ntyped\r\n").await;
        assert_eq!(child.wait().await.unwrap().code(), Some(0));
    }
}

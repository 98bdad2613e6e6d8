//! Pseudo-terminals for `kubectl exec -t`: a leader side the kubelet reads the command's
//! output from and writes the session's input and window size to, and a follower side that
//! becomes the command's stdin, stdout and stderr.
//!
//! The command gets the terminal as its controlling terminal in a new session by starting
//! through util-linux `setsid --ctty` (it makes a session and takes its stdin, the follower,
//! as the session's terminal, then executes the command in place, keeping its exit code) — the
//! safe way to do what a container runtime does, since `unsafe` (and so a `pre_exec` of our
//! own) is forbidden here. Without `setsid` on this machine's `PATH` the command still runs on
//! the terminal, without a controlling one (so ^C typed into it stops nothing); that is logged
//! once.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};

use rustix::pty::OpenptFlags;
use rustix::termios::Winsize;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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

/// The leader side of a pseudo-terminal, shared by the session's output reader, its input
/// writer and its resizes; the terminal closes when the last handle goes.
#[derive(Clone)]
pub struct Leader {
    fd: Arc<AsyncFd<OwnedFd>>,
}

/// A new pseudo-terminal: its leader (non-blocking, registered with the runtime) and its
/// follower, both closed on exec, neither a controlling terminal of this process.
pub fn open() -> Result<(Leader, OwnedFd), PtyError> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let leader = rustix::pty::openpt(flags).map_err(step("open"))?;
    rustix::pty::grantpt(&leader).map_err(step("grant"))?;
    rustix::pty::unlockpt(&leader).map_err(step("unlock"))?;
    let follower = rustix::pty::ioctl_tiocgptpeer(&leader, flags).map_err(step("open peer"))?;
    rustix::io::ioctl_fionbio(&leader, true).map_err(step("set non-blocking"))?;
    let fd = AsyncFd::new(leader).map_err(|source| PtyError {
        step: "register",
        source,
    })?;
    Ok((Leader { fd: Arc::new(fd) }, follower))
}

impl Leader {
    /// Sets the terminal's window size (the foreground job hears `SIGWINCH`).
    pub fn resize(&self, size: WindowSize) {
        let winsize = Winsize {
            ws_row: size.height,
            ws_col: size.width,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        if let Err(err) = rustix::termios::tcsetwinsize(self.fd.get_ref(), winsize) {
            tracing::debug!(%err, "setting a terminal's window size failed");
        }
    }
}

impl AsyncRead for Leader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard.try_io(|fd| Ok(rustix::io::read(fd.get_ref().as_fd(), &mut *unfilled)?)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                Err(_would_block) => {}
            }
        }
    }
}

impl AsyncWrite for Leader {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            match guard.try_io(|fd| Ok(rustix::io::write(fd.get_ref().as_fd(), data)?)) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// The terminal stays open for the command's output; only this writer ends.
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
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
/// `setsid` is here.
pub fn command(
    program: &str,
    args: &[String],
    follower: &OwnedFd,
) -> io::Result<tokio::process::Command> {
    let mut command = match setsid() {
        Some(setsid) => {
            let mut command = tokio::process::Command::new(setsid);
            command.args(["--ctty", "--wait", "--"]).arg(program);
            command
        }
        None => tokio::process::Command::new(program),
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

    /// Reads from `leader` until `want` has appeared; all read.
    async fn read_until(leader: &mut Leader, want: &str) -> String {
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&seen).contains(want) {
            let n = leader.read(&mut buf).await.unwrap();
            assert!(n > 0, "the terminal ended before {want:?}: {seen:?}");
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    }

    #[tokio::test]
    async fn a_command_runs_on_the_terminal_with_its_size_and_as_its_session() {
        let (mut leader, follower) = open().unwrap();
        leader.resize(WindowSize {
            width: 91,
            height: 27,
        });
        let script = "tty; stty size; echo \"term=$TERM\"; read line; echo \"got $line\"; exit 4";
        let mut command = command("sh", &["-c".into(), script.into()], &follower).unwrap();
        let mut child = command.env("TERM", TERM).kill_on_drop(true).spawn().unwrap();
        drop(command);
        drop(follower);
        let seen = read_until(&mut leader, "term=xterm").await;
        assert!(seen.contains("/dev/pts/"), "{seen}");
        assert!(seen.contains("27 91"), "{seen}");
        leader.write_all(b"hello\n").await.unwrap();
        // The terminal echoes the input, then the command answers.
        let seen = read_until(&mut leader, "got hello").await;
        assert!(seen.contains("hello\r\n"), "{seen}");
        assert_eq!(child.wait().await.unwrap().code(), Some(4));
        // Once the command and its terminal are gone, reading ends (with an error, as Linux
        // reports a leader whose follower is closed).
        let mut rest = Vec::new();
        assert!(leader.read_to_end(&mut rest).await.is_err());
    }

    #[tokio::test]
    async fn control_c_interrupts_the_foreground_job() {
        let (mut leader, follower) = open().unwrap();
        let script = "trap 'echo interrupted; exit 7' INT; echo waiting; cat";
        let mut command = command("sh", &["-c".into(), script.into()], &follower).unwrap();
        let mut child = command.kill_on_drop(true).spawn().unwrap();
        drop(command);
        drop(follower);
        read_until(&mut leader, "waiting").await;
        leader.write_all(&[0x03]).await.unwrap();
        read_until(&mut leader, "interrupted").await;
        assert_eq!(child.wait().await.unwrap().code(), Some(7));
    }
}

//! Standard input of the pod processes whose container asks for one (`stdin: true`), for
//! `kubectl attach -i`. The supervisor starts such a process with a pipe for stdin and opens
//! a slot for it here, keyed by the pod's folder; an attach session takes a writer from the
//! slot. As a container runtime does: without `stdinOnce` the process's stdin stays open
//! across attach sessions (each session's end only ends its own writer) until the process
//! ends; with `stdinOnce` the first session that attaches with stdin gets the only writer, so
//! its end closes the process's stdin for good, and later sessions find it closed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use super::terminal::Sizer;

/// What the stdin of one pod's process is, for an attach session.
enum Slot {
    /// Open: a writer for each session to clone (`once`: to take).
    Open {
        writer: mpsc::Sender<Vec<u8>>,
        once: bool,
        /// The window size of the terminal the process runs on (`tty: true`).
        sizer: Option<Sizer>,
    },
    /// Closed after the first attach session (`stdinOnce`).
    ClosedAfterFirstAttach,
}

/// The open stdins of this kubelet's pod processes, by pod folder.
#[derive(Clone, Default)]
pub struct Stdins {
    slots: Arc<Mutex<HashMap<PathBuf, Slot>>>,
}

/// Why an attach session gets no stdin.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoStdin {
    /// The container does not ask for one.
    #[error("its container does not set stdin: true, so its process reads no input")]
    NotRequested,
    /// `stdinOnce`, and an earlier attach session already had it.
    #[error("its container sets stdinOnce: true and an earlier attach session closed its stdin")]
    ClosedAfterFirstAttach,
}

/// Keeps a process's stdin slot open while it lives; dropping it (the process ended or was
/// stopped) removes the slot, so the pipe closes once no session writes to it.
pub struct OpenStdin {
    stdins: Stdins,
    pod_dir: PathBuf,
}

impl Drop for OpenStdin {
    fn drop(&mut self) {
        self.stdins.lock().remove(&self.pod_dir);
    }
}

impl Stdins {
    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the slot of the process of `pod_dir`, writing into `input` — its stdin pipe, or
    /// its terminal, sized by `sizer` (`once`: the container's `stdinOnce`); the slot lives as
    /// long as the returned guard.
    pub fn open<W>(&self, pod_dir: &Path, input: W, once: bool, sizer: Option<Sizer>) -> OpenStdin
    where
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (writer, _) = super::websocket::byte_writer(input, false);
        self.lock().insert(
            pod_dir.to_path_buf(),
            Slot::Open {
                writer,
                once,
                sizer,
            },
        );
        OpenStdin {
            stdins: self.clone(),
            pod_dir: pod_dir.to_path_buf(),
        }
    }

    /// A writer into the stdin of the process of `pod_dir`, for one attach session.
    pub fn attach(&self, pod_dir: &Path) -> Result<mpsc::Sender<Vec<u8>>, NoStdin> {
        let mut slots = self.lock();
        match slots.get(pod_dir) {
            None => Err(NoStdin::NotRequested),
            Some(Slot::ClosedAfterFirstAttach) => Err(NoStdin::ClosedAfterFirstAttach),
            Some(Slot::Open {
                writer,
                once: false,
                ..
            }) => Ok(writer.clone()),
            Some(Slot::Open { once: true, .. }) => {
                match slots.insert(pod_dir.to_path_buf(), Slot::ClosedAfterFirstAttach) {
                    Some(Slot::Open { writer, .. }) => Ok(writer),
                    _ => Err(NoStdin::ClosedAfterFirstAttach),
                }
            }
        }
    }

    /// The window size of the terminal the process of `pod_dir` runs on, when it has one an
    /// attach session can type into.
    pub fn terminal(&self, pod_dir: &Path) -> Option<Sizer> {
        match self.lock().get(pod_dir) {
            Some(Slot::Open { sizer, .. }) => sizer.clone(),
            _ => None,
        }
    }

    /// Whether the process of `pod_dir` has a stdin an attach session could write to now.
    pub fn check(&self, pod_dir: &Path) -> Result<(), NoStdin> {
        match self.lock().get(pod_dir) {
            None => Err(NoStdin::NotRequested),
            Some(Slot::ClosedAfterFirstAttach) => Err(NoStdin::ClosedAfterFirstAttach),
            Some(Slot::Open { .. }) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use tokio::io::AsyncReadExt;

    /// `cat` with its stdin in a slot of `stdins`; its stdout.
    fn cat(
        stdins: &Stdins,
        dir: &Path,
        once: bool,
    ) -> (
        tokio::process::Child,
        tokio::process::ChildStdout,
        OpenStdin,
    ) {
        let mut child = tokio::process::Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let open = stdins.open(dir, child.stdin.take().unwrap(), once, None);
        let out = child.stdout.take().unwrap();
        (child, out, open)
    }

    #[tokio::test]
    async fn without_once_each_session_writes_and_the_pipe_closes_with_the_slot() {
        let stdins = Stdins::default();
        let dir = Path::new("/pods/ns/a");
        let (mut child, mut out, open) = cat(&stdins, dir, false);
        for text in ["one ", "two"] {
            let session = stdins.attach(dir).unwrap();
            session.send(text.as_bytes().to_vec()).await.unwrap();
            drop(session);
        }
        assert_eq!(stdins.check(dir), Ok(()));
        drop(open);
        let mut got = String::new();
        out.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "one two");
        assert!(child.wait().await.unwrap().success());
        assert_eq!(stdins.attach(dir).unwrap_err(), NoStdin::NotRequested);
    }

    #[tokio::test]
    async fn with_once_the_first_session_ends_the_input() {
        let stdins = Stdins::default();
        let dir = Path::new("/pods/ns/b");
        let (mut child, mut out, _open) = cat(&stdins, dir, true);
        let session = stdins.attach(dir).unwrap();
        assert_eq!(
            stdins.attach(dir).unwrap_err(),
            NoStdin::ClosedAfterFirstAttach
        );
        session.send(b"only".to_vec()).await.unwrap();
        drop(session);
        let mut got = String::new();
        out.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "only");
        assert!(child.wait().await.unwrap().success());
    }
}

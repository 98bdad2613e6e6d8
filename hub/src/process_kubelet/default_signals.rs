//! Pod processes start with every signal at its default action, as a container runtime starts
//! a container's processes — whatever this process inherited. A kubelet started from a
//! script's background job has SIGINT and SIGQUIT ignored (POSIX shells ignore them for
//! asynchronous commands), one started by `nohup` SIGHUP, and ignored signals stay ignored
//! across `exec`: a pod's shell would then not stop on ^C typed into `kubectl exec -it`, nor
//! hang up when the session ends.
//!
//! `unsafe` (and so a `pre_exec` of our own) is forbidden here; the reset is done by GNU
//! coreutils `env --default-signal` (8.31 and later), which resets every signal and then
//! executes the command in place (same process, same exit code). Without such an `env` on
//! this machine's `PATH` the command runs with what it inherits; that is logged once.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The arguments of `env` that reset every signal and then run the command that follows.
const RESET: [&str; 2] = ["--default-signal", "--"];

/// GNU `env` on this machine's `PATH` if it resets signals, looked up (and tried) once; the
/// first call blocks on that trial run ([`probe`] makes it early, off the async workers).
fn env_resetting_signals() -> Option<&'static Path> {
    static ENV: OnceLock<Option<PathBuf>> = OnceLock::new();
    ENV.get_or_init(|| {
        let found = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("env"))
                .find(|candidate| candidate.is_file())
        });
        let works = found.filter(|env| {
            std::process::Command::new(env)
                .args(RESET)
                .arg("true")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        });
        if works.is_none() {
            tracing::warn!(
                "no env on PATH resets signals (GNU coreutils 8.31 or later): pod processes \
                 keep the signals this process ignores (^C may not interrupt `kubectl exec -t`)"
            );
        }
        works
    })
    .as_deref()
}

/// Looks up and tries the signal-resetting `env` on a blocking thread, so that no pod start
/// waits on the trial run on an async worker. Called once as the kubelet starts.
pub async fn probe() {
    let _ = tokio::task::spawn_blocking(env_resetting_signals).await;
}

/// The words that, put before a command, run it with every signal at its default action:
/// `env --default-signal --`, or nothing without such an `env`.
pub fn prefix() -> Vec<&'static OsStr> {
    match env_resetting_signals() {
        Some(env) => std::iter::once(env.as_os_str())
            .chain(RESET.iter().map(OsStr::new))
            .collect(),
        None => Vec::new(),
    }
}

/// A command that runs `program` with every signal at its default action.
pub fn command(program: impl AsRef<OsStr>) -> tokio::process::Command {
    let prefix = prefix();
    match prefix.split_first() {
        Some((env, rest)) => {
            let mut command = tokio::process::Command::new(env);
            command.args(rest).arg(program);
            command
        }
        None => tokio::process::Command::new(program),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The mask of signals ignored by what `script` runs as a background job of a
    /// non-interactive shell (which ignores SIGINT and SIGQUIT for it).
    async fn ignored_in_a_background_job(script: &str) -> u64 {
        let out = tokio::process::Command::new("sh")
            .args(["-c", &format!("{script} & wait")])
            .output()
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mask = text
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .unwrap_or_else(|| panic!("no SigIgn in {text:?}"));
        u64::from_str_radix(mask.trim(), 16).unwrap()
    }

    #[tokio::test]
    async fn a_pod_process_ignores_no_signal_even_when_started_from_a_background_job() {
        const SIGINT_AND_SIGQUIT: u64 = 0b110;
        let report = "grep SigIgn /proc/self/status";
        let plain = ignored_in_a_background_job(report).await;
        assert_eq!(plain & SIGINT_AND_SIGQUIT, SIGINT_AND_SIGQUIT, "{plain:x}");
        let words: Vec<String> = prefix()
            .iter()
            .map(|w| format!("'{}'", w.to_string_lossy()))
            .collect();
        let reset = ignored_in_a_background_job(&format!("{} {report}", words.join(" "))).await;
        // The standard signals (1–31); the C library keeps a few real-time ones for itself.
        const STANDARD: u64 = (1 << 31) - 1;
        assert_eq!(reset & STANDARD, 0, "{reset:x}");
    }
}

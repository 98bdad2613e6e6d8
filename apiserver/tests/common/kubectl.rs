//! The real `kubectl` against a [`super::tls::TlsServer`], for checks a user would type.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use super::tls::TlsServer;

/// Whether `kubectl` is on PATH; tests that need it say SKIPPED and return when it is not.
pub fn available() -> bool {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("SKIPPED: kubectl is not on PATH; install kubectl to run the kubectl checks");
    }
    found
}

/// Runs kubectl as the server's admin, with a fresh HOME: (exit code, stdout, stderr). It runs
/// on a blocking thread, so an in-process server on the test's runtime keeps answering.
pub async fn run(server: &TlsServer, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let home = server.dir.path().join("kubectl-home");
    let kubeconfig = server.kubeconfig.clone();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let stdin = stdin.map(str::to_owned);
    tokio::task::spawn_blocking(move || run_blocking(&home, &kubeconfig, &args, stdin.as_deref()))
        .await
        .unwrap()
}

fn run_blocking(
    home: &Path,
    kubeconfig: &Path,
    args: &[String],
    stdin: Option<&str>,
) -> (i32, String, String) {
    std::fs::create_dir_all(home).unwrap();
    let mut child = Command::new("kubectl")
        .env("HOME", home)
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
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

/// The whitespace-separated columns of each output line.
pub fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

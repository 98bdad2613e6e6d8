//! The kubelet's log files, so that `kubectl logs` (the API server's `pods/log`) reaches the
//! pods this kubelet runs: `GET /containerLogs/<namespace>/<pod>/<container>` answers the
//! container's output, kept in `<work dir>/<namespace>/<pod>/container.log` (options
//! `tailLines`, `limitBytes` and `follow`: with `follow=true` the answer streams what the
//! process writes next, until its process ends or the pod goes). Served by
//! [`super::endpoint`].

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures::SinkExt;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};

/// Whether `name` can name a namespace, pod or container (no path tricks).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// The log file of `path` (`/containerLogs/<ns>/<pod>/<container>`) under `work_dir`.
pub fn log_file(work_dir: &Path, path: &str) -> Option<PathBuf> {
    let rest = path.strip_prefix("/containerLogs/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let [namespace, pod, container] = parts.as_slice() else {
        return None;
    };
    [namespace, pod, container]
        .iter()
        .all(|p| is_plain_name(p))
        .then(|| work_dir.join(namespace).join(pod).join("container.log"))
}

/// The part of `text` the options ask for: the last `tailLines` lines, then at most
/// `limitBytes` bytes from the start.
pub fn select(text: &str, tail_lines: Option<usize>, limit_bytes: Option<usize>) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let from = tail_lines.map_or(0, |n| lines.len().saturating_sub(n));
    let mut out = lines[from..].concat();
    if let Some(limit) = limit_bytes
        && out.len() > limit
    {
        let mut end = limit;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

/// What the endpoint answers.
pub(super) type Answer = Response<UnsyncBoxBody<Bytes, Infallible>>;

/// How often a followed log is read again for new output.
const FOLLOW_PERIOD: std::time::Duration = std::time::Duration::from_millis(200);

/// A plain-text answer.
pub(super) fn reply(status: StatusCode, body: String) -> Answer {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Answers a `/containerLogs/…` request.
pub(super) fn answer(work_dir: &Path, req: Request<Incoming>) -> Answer {
    let Some(file) = log_file(work_dir, req.uri().path()) else {
        return reply(StatusCode::NOT_FOUND, "404 page not found".into());
    };
    let query = req.uri().query().unwrap_or_default();
    let option = |key: &str| {
        query
            .split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    };
    let number = |key: &str| option(key).and_then(|v| v.parse::<usize>().ok());
    let follow = option("follow").is_some_and(|v| v == "true" || v == "1");
    match std::fs::read(&file) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let first = select(&text, number("tailLines"), number("limitBytes"));
            if !follow {
                return reply(StatusCode::OK, first);
            }
            let mut response = reply(StatusCode::OK, String::new());
            *response.body_mut() = follow_body(file, bytes.len() as u64, first);
            response
        }
        Err(_) => reply(
            StatusCode::NOT_FOUND,
            format!("no log for {}", req.uri().path()),
        ),
    }
}

/// A body of `first`, then what [`follow`] reads, until the reader goes.
fn follow_body(file: PathBuf, offset: u64, first: String) -> UnsyncBoxBody<Bytes, Infallible> {
    let (tx, rx) = futures::channel::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(8);
    tokio::spawn(async move {
        let mut tx = tx;
        if !first.is_empty() && tx.send(Ok(Frame::data(Bytes::from(first)))).await.is_err() {
            return;
        }
        let mut more = follow(file, offset);
        while let Some(chunk) = more.recv().await {
            if tx.send(Ok(Frame::data(chunk))).await.is_err() {
                return;
            }
        }
    });
    StreamBody::new(rx).boxed_unsync()
}

/// Whatever is appended to a pod's log `file` after `offset`, read again every
/// [`FOLLOW_PERIOD`], until the pod's process has ended (its exec record is gone: see
/// [`super::record::forget`]) or the receiver goes.
pub fn follow(file: PathBuf, offset: u64) -> tokio::sync::mpsc::Receiver<Bytes> {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        let mut offset = offset;
        let pod_dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        loop {
            let running = super::record::is_recorded(&pod_dir);
            let more = read_from(&file, offset).await;
            if !more.is_empty() {
                offset += more.len() as u64;
                if tx.send(Bytes::from(more)).await.is_err() {
                    return;
                }
            }
            if !running {
                return;
            }
            tokio::time::sleep(FOLLOW_PERIOD).await;
        }
    });
    rx
}

/// The bytes of `file` after `offset` (none when it is gone).
async fn read_from(file: &Path, offset: u64) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut out = Vec::new();
    if let Ok(mut f) = tokio::fs::File::open(file).await
        && f.seek(std::io::SeekFrom::Start(offset)).await.is_ok()
    {
        let _ = f.read_to_end(&mut out).await;
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_plain_names_reach_a_log_file() {
        let dir = Path::new("/pods");
        assert_eq!(
            log_file(dir, "/containerLogs/ns/p-1/curl").unwrap(),
            Path::new("/pods/ns/p-1/container.log")
        );
        assert_eq!(log_file(dir, "/containerLogs/../p/c"), None);
        assert_eq!(log_file(dir, "/containerLogs/ns/p"), None);
        assert_eq!(log_file(dir, "/other/ns/p/c"), None);
    }

    #[test]
    fn tail_lines_and_limit_bytes_cut_the_log() {
        let text = "a\nb\nc\n";
        assert_eq!(select(text, None, None), text);
        assert_eq!(select(text, Some(2), None), "b\nc\n");
        assert_eq!(select(text, Some(5), None), text);
        assert_eq!(select(text, Some(0), None), "");
        assert_eq!(select("a\nb\nc", Some(1), None), "c");
        assert_eq!(select(text, None, Some(3)), "a\nb");
    }
}

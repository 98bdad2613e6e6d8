//! The load of `ocm bench proxy`: `C` concurrent clients, each with its own kube client (its
//! own connections), send the same GET for a fixed time; the figures are requests/s, latency
//! percentiles and response bytes/s. Each client sends one request before the clock starts
//! (connections open, the proxy's authorization cached), so set-up is not measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

/// What one run of the load measured.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// Answered requests (2xx).
    pub requests: u64,
    /// Failed requests.
    pub errors: u64,
    /// Response body bytes of the answered requests.
    pub bytes: u64,
    /// From the start signal until the last client stopped.
    pub elapsed: Duration,
    /// Each answered request's latency, sorted.
    latencies: Vec<Duration>,
}

impl Figures {
    /// Answered requests per second.
    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// Response megabytes (10^6 bytes) per second.
    pub fn megabytes_per_second(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// The latency below which a share `q` (0..=1) of the requests stayed.
    pub fn percentile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let last = self.latencies.len() - 1;
        let index = ((last as f64) * q.clamp(0.0, 1.0)).round() as usize;
        self.latencies[index.min(last)]
    }

    fn merge(&mut self, other: Figures) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.bytes += other.bytes;
        self.latencies.extend(other.latencies);
    }
}

async fn get(client: &kube::Client, path: &str) -> anyhow::Result<usize> {
    let request = http::Request::get(path).body(Vec::new())?;
    Ok(client.request_text(request).await?.len())
}

/// Sends GET `path` from every client at once, for `duration`; fails if a client's first
/// (untimed) request fails, or if no request succeeded.
pub async fn run(
    clients: Vec<kube::Client>,
    path: &str,
    duration: Duration,
) -> anyhow::Result<Figures> {
    let start = Arc::new(tokio::sync::Barrier::new(clients.len() + 1));
    let mut workers = Vec::new();
    for client in clients {
        let (start, path) = (start.clone(), path.to_owned());
        workers.push(tokio::spawn(async move {
            let warm = get(&client, &path).await;
            start.wait().await;
            warm.with_context(|| format!("GET {path}"))?;
            let deadline = Instant::now() + duration;
            let mut figures = Figures::default();
            while Instant::now() < deadline {
                let sent = Instant::now();
                match get(&client, &path).await {
                    Ok(len) => {
                        figures.latencies.push(sent.elapsed());
                        figures.requests += 1;
                        figures.bytes += len as u64;
                    }
                    Err(err) => {
                        figures.errors += 1;
                        tracing::warn!(%err, %path, "request failed");
                    }
                }
            }
            anyhow::Ok(figures)
        }));
    }
    start.wait().await;
    let began = Instant::now();
    let mut total = Figures::default();
    for worker in workers {
        total.merge(worker.await.context("a load client")??);
    }
    total.elapsed = began.elapsed();
    total.latencies.sort_unstable();
    anyhow::ensure!(
        total.requests > 0,
        "no GET {path} succeeded ({} failed)",
        total.errors
    );
    Ok(total)
}

/// One row of the printed table: a workload over one path.
#[derive(Debug)]
pub struct Row {
    /// The workload (e.g. `small GET`).
    pub workload: String,
    /// `direct` or `proxy`.
    pub path: &'static str,
    /// What it measured.
    pub figures: Figures,
    /// Its requests/s over the direct path's, for proxy rows.
    pub versus_direct: Option<f64>,
}

/// The rows as a table, one line each.
pub fn render(rows: &[Row]) -> String {
    let millis = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let f = &r.figures;
            vec![
                r.workload.clone(),
                r.path.to_owned(),
                f.requests.to_string(),
                f.errors.to_string(),
                format!("{:.0}", f.per_second()),
                millis(f.percentile(0.5)),
                millis(f.percentile(0.99)),
                format!("{:.1}", f.megabytes_per_second()),
                r.versus_direct
                    .map(|v| format!("{:.0} %", v * 100.0))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    ocm_runtime::text_table::render(
        &[
            "WORKLOAD",
            "PATH",
            "REQUESTS",
            "ERRORS",
            "REQ/S",
            "P50 MS",
            "P99 MS",
            "MB/S",
            "OF DIRECT",
        ],
        &cells,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_rates_come_from_the_samples() {
        let figures = Figures {
            requests: 100,
            errors: 0,
            bytes: 2_000_000,
            elapsed: Duration::from_secs(2),
            latencies: (1..=100).map(Duration::from_millis).collect(),
        };
        assert_eq!(figures.percentile(0.5), Duration::from_millis(51));
        assert_eq!(figures.percentile(0.99), Duration::from_millis(99));
        assert_eq!(figures.per_second(), 50.0);
        assert_eq!(figures.megabytes_per_second(), 1.0);
        assert_eq!(Figures::default().percentile(0.5), Duration::ZERO);
    }
}

//! `ocm bench proxy` as a real process with tiny parameters, so the benchmark cannot rot: it
//! must finish and print the throughput table and the tunnel-scale figures.

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

#[test]
fn proxy_benchmark_runs_and_prints_its_figures() {
    let home = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = ocm_e2e::process::run_ocm(
        OCM,
        home.path(),
        &[
            "bench",
            "proxy",
            "--clusters",
            "2",
            "--seconds",
            "1",
            "--concurrency",
            "2",
            "--big-kib",
            "64",
            "--big-configmaps",
            "2",
            "--tunnels",
            "5",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for needle in [
        "2 joined clusters",
        "WORKLOAD",
        "small GET",
        "GET 64 KiB ConfigMap",
        "LIST 2 x 64 KiB",
        "proxy",
        "direct",
        "addon registration bypassed",
        "5 tunnels open",
        "the server lists 5",
        "RSS of the proxy server process:",
        "KiB per tunnel",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing from:\n{stdout}"
        );
    }
    // Every workload ran on both paths without a failed request (table cells are three or
    // more spaces apart; WORKLOAD PATH REQUESTS ERRORS …).
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| {
            l.split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.len() >= 8 && matches!(cells[1], "direct" | "proxy"))
        .collect();
    assert_eq!(rows.len(), 6, "{stdout}");
    for cells in rows {
        assert_ne!(cells[2], "0", "no request answered: {cells:?}");
        assert_eq!(cells[3], "0", "failed requests: {cells:?}");
    }
}

//! Tracing setup shared by every `ocm` process.

/// Installs a `tracing` subscriber writing to stderr, filtered by `RUST_LOG` or else
/// `default_filter` (e.g. `"info"`). A second call is a no-op.
pub fn init(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Installs the tracing subscriber ([`init`] with `default_filter`), starts a multi-threaded
/// tokio runtime and runs `future` on it to the end. Fails only when the runtime cannot start.
pub fn block_on<F: std::future::Future>(
    default_filter: &str,
    future: F,
) -> std::io::Result<F::Output> {
    init(default_filter);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(future))
}

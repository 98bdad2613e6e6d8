//! The error type every hub controller returns, and how a failed reconcile is counted, logged
//! and retried.

use std::time::Duration;

use kube::runtime::controller::Action;
use ocm_runtime::metrics::ControllerMetrics;

/// Errors of the hub registration controllers.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HubError {
    /// A call to the hub API server failed.
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// Several steps failed; the message lists them.
    #[error("{0}")]
    Many(String),
}

impl HubError {
    /// A failed call, described by what it tried to do.
    pub(crate) fn kube(what: impl Into<String>, source: kube::Error) -> HubError {
        HubError::Kube {
            what: what.into(),
            source,
        }
    }

    /// Short label for the error metric.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            HubError::Kube { source, .. } => match source {
                kube::Error::Api(s) if s.is_conflict() => "conflict",
                kube::Error::Api(s) if s.is_forbidden() => "forbidden",
                kube::Error::Api(s) if s.is_not_found() => "not_found",
                kube::Error::Api(_) => "api",
                _ => "client",
            },
            HubError::Many(_) => "apply",
        }
    }
}

/// Whether `err` is a 404 from the server.
pub(crate) fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.is_not_found())
}

/// Whether `err` is an API error with `code`.
pub(crate) fn has_code(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == code)
}

/// Counts a failed reconcile of `controller`, logs it (conflicts — someone else wrote first,
/// the retry reads again — only at debug level) and requeues after `delay`.
pub(crate) fn retry_after(
    metrics: &ControllerMetrics,
    controller: &str,
    err: &HubError,
    delay: Duration,
) -> Action {
    metrics.failed(controller, err.kind());
    if err.kind() == "conflict" {
        tracing::debug!(controller, error = %err, "reconcile conflicted; retrying");
    } else {
        tracing::warn!(controller, error = %err, "reconcile failed; retrying");
    }
    Action::requeue(delay)
}

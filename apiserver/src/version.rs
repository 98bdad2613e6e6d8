//! `/version`: the server claims the Kubernetes release of the API types it is built on (the
//! `k8s-openapi` version feature chosen in the workspace), so clients see no version skew
//! between what the server says and what it serves.

use serde_json::{Value, json};

// Exactly one of these defines `MINOR`; a new k8s-openapi version feature fails the build
// here until it is added.
k8s_openapi::k8s_if_1_33! { const MINOR: u32 = 33; }
k8s_openapi::k8s_if_1_34! { const MINOR: u32 = 34; }
k8s_openapi::k8s_if_1_35! { const MINOR: u32 = 35; }
k8s_openapi::k8s_if_1_36! { const MINOR: u32 = 36; }
k8s_openapi::k8s_if_1_37! { const MINOR: u32 = 37; }

/// The Kubernetes minor version the server reports (`1.<minor>`).
pub const KUBERNETES_MINOR: u32 = MINOR;

/// The `gitVersion` the server reports, e.g. `v1.35.0`.
pub fn git_version() -> String {
    format!("v1.{MINOR}.0")
}

/// The body of `GET /version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": MINOR.to_string(),
        "emulationMajor": "1",
        "emulationMinor": MINOR.to_string(),
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": (MINOR - 1).to_string(),
        "gitVersion": git_version(),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": format!("{}/{}", go_os(), go_arch()),
    })
}

/// Go's name of the operating system, as kube reports it.
fn go_os() -> &'static str {
    std::env::consts::OS
}

/// Go's name of the architecture, as kube reports it.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_types_release() {
        let v = version();
        assert_eq!(v["minor"], MINOR.to_string());
        assert_eq!(v["gitVersion"], format!("v1.{MINOR}.0"));
    }
}

//! kube-apiserver's group-version priorities: the `groupPriorityMinimum` and
//! `versionPriority` of the local APIService it registers for each built-in group-version,
//! which also order the groups of discovery (highest first, ties by APIService name).

/// The priorities custom resource groups get (kube's CRD registration controller).
pub const CRD_PRIORITY: (i64, i64) = (1000, 100);

/// `(groupPriorityMinimum, versionPriority)` of a built-in group-version; `None` for a
/// group-version kube registers no APIService for.
pub fn builtin_priority(group: &str, version: &str) -> Option<(i64, i64)> {
    let group_priority = match group {
        "" => 18000,
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "admissionregistration.k8s.io" | "apiextensions.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" | "resource.k8s.io" => 16200,
        "flowcontrol.apiserver.k8s.io" => 16100,
        _ => return None,
    };
    let version_priority = match (group, version) {
        ("", "v1") => 1,
        ("autoscaling", "v2") => 30,
        ("flowcontrol.apiserver.k8s.io", "v1") | ("resource.k8s.io", "v1") => 21,
        (_, "v1") => 15,
        _ => return None,
    };
    Some((group_priority, version_priority))
}

/// The priority a served group sorts by in discovery: its highest built-in group priority,
/// or custom resources' (groups kube registers no APIService for, like
/// `apiregistration.k8s.io`, come first, as kube lists the aggregator's own group first).
pub fn group_order_priority(group: &str, versions: &[&str]) -> i64 {
    if group == "apiregistration.k8s.io" {
        return i64::MAX;
    }
    versions
        .iter()
        .filter_map(|v| builtin_priority(group, v))
        .map(|(g, _)| g)
        .max()
        .unwrap_or(CRD_PRIORITY.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubes_table() {
        assert_eq!(builtin_priority("", "v1"), Some((18000, 1)));
        assert_eq!(builtin_priority("autoscaling", "v2"), Some((17500, 30)));
        assert_eq!(builtin_priority("apps", "v1"), Some((17800, 15)));
        assert_eq!(builtin_priority("apiregistration.k8s.io", "v1"), None);
        assert_eq!(builtin_priority("example.com", "v1"), None);
        assert_eq!(group_order_priority("example.com", &["v1"]), 1000);
        assert_eq!(
            group_order_priority("apiregistration.k8s.io", &["v1"]),
            i64::MAX
        );
    }
}

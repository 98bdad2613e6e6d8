//! Kubernetes-aware version ordering: `v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > foo`.

use std::cmp::Ordering;

fn parse(version: &str) -> Option<(u64, u8, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    if digits_end == 0 {
        return None;
    }
    let major: u64 = rest[..digits_end].parse().ok()?;
    let tail = &rest[digits_end..];
    if tail.is_empty() {
        return Some((major, 2, 0));
    }
    let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
        (1, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (0, n)
    } else {
        return None;
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, level, num.parse().ok()?))
}

/// Orders versions by priority: `Less` means `a` is preferred over `b`.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => lb.cmp(&la).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Sorts versions most preferred first.
pub fn sort_versions(versions: &mut [String]) {
    versions.sort_by(|a, b| compare_versions(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_version_order() {
        let mut v: Vec<String> = [
            "foo10",
            "v1alpha1",
            "v11alpha2",
            "v1",
            "v2",
            "v10beta3",
            "v1beta1",
            "foo1",
            "v12alpha1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        sort_versions(&mut v);
        assert_eq!(
            v,
            [
                "v2",
                "v1",
                "v10beta3",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }
}

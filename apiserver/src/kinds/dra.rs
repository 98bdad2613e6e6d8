//! Dynamic resource allocation (`resource.k8s.io/v1`): ResourceClaims and DeviceClasses —
//! kube's defaults and validation.

use serde_json::{Value, json};

use super::{array_at, default_field, str_at};
use crate::validation::{Cause, dns1123_label_errors, dns1123_subdomain_errors};

const ALLOCATION_MODES: [&str; 2] = ["All", "ExactCount"];

/// `allocationMode: ExactCount` and, for it, `count: 1` on a device request or subrequest.
fn default_request(request: &mut Value) {
    default_field(request, "allocationMode", json!("ExactCount"));
    if request.get("allocationMode").and_then(Value::as_str) == Some("ExactCount") {
        let zero = request
            .get("count")
            .is_none_or(|c| c.is_null() || c.as_i64() == Some(0));
        if zero {
            request["count"] = json!(1);
        }
    }
}

/// `SetDefaults_ExactDeviceRequest` / `SetDefaults_DeviceSubRequest` for every request.
pub(super) fn default_claim(obj: &mut Value) {
    let Some(requests) = obj
        .pointer_mut("/spec/devices/requests")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for request in requests {
        if let Some(exactly) = request.get_mut("exactly").filter(|e| e.is_object()) {
            default_request(exactly);
        }
        if let Some(subs) = request
            .get_mut("firstAvailable")
            .and_then(Value::as_array_mut)
        {
            for sub in subs {
                default_request(sub);
            }
        }
    }
}

/// DeviceClasses have no defaults of their own.
pub(super) fn default_class(_obj: &mut Value) {}

/// The device class name, allocation mode and count of a request at `field`.
fn validate_exact(request: &Value, field: &str, causes: &mut Vec<Cause>) {
    let class = str_at(request, "/deviceClassName");
    if class.is_empty() {
        causes.push(Cause::required(format!("{field}.deviceClassName"), ""));
    } else {
        for msg in dns1123_subdomain_errors(class) {
            causes.push(Cause::invalid(
                format!("{field}.deviceClassName"),
                class,
                &msg,
            ));
        }
    }
    let mode = str_at(request, "/allocationMode");
    match mode {
        "ExactCount" => {
            let count = request.get("count").and_then(Value::as_i64).unwrap_or(0);
            if count <= 0 {
                causes.push(Cause::invalid(
                    format!("{field}.count"),
                    count,
                    "must be greater than zero",
                ));
            }
        }
        "All" => {
            if let Some(count) = request.get("count").and_then(Value::as_i64)
                && count != 0
            {
                causes.push(Cause::invalid(
                    format!("{field}.count"),
                    count,
                    "must not be specified when allocationMode is 'All'",
                ));
            }
        }
        "" => causes.push(Cause::required(format!("{field}.allocationMode"), "")),
        other => causes.push(Cause::not_supported(
            format!("{field}.allocationMode"),
            other,
            &ALLOCATION_MODES,
        )),
    }
}

/// A request or subrequest name (a DNS label) at `field`.
fn validate_request_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(Cause::required(field, ""));
    } else {
        for msg in dns1123_label_errors(name) {
            causes.push(Cause::invalid(field, name, &msg));
        }
    }
}

/// `ValidateResourceClaim`; on update the spec is immutable.
pub(super) fn validate_claim(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let requests = array_at(obj, "/spec/devices/requests");
    let mut names = std::collections::HashSet::new();
    for (i, request) in requests.iter().enumerate() {
        let at = format!("spec.devices.requests[{i}]");
        let name = str_at(request, "/name");
        validate_request_name(name, &format!("{at}.name"), &mut causes);
        if !name.is_empty() && !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(format!("{at}.name"), name));
        }
        let exactly = request.get("exactly").filter(|v| !v.is_null());
        let first = request.get("firstAvailable").filter(|v| !v.is_null());
        match (exactly, first) {
            (Some(exactly), None) => validate_exact(exactly, &format!("{at}.exactly"), &mut causes),
            (None, Some(_)) => {
                let subs = array_at(request, "/firstAvailable");
                if subs.is_empty() {
                    causes.push(Cause::required(format!("{at}.firstAvailable"), ""));
                }
                for (j, sub) in subs.iter().enumerate() {
                    let sub_at = format!("{at}.firstAvailable[{j}]");
                    validate_request_name(str_at(sub, "/name"), &format!("{sub_at}.name"), &mut causes);
                    validate_exact(sub, &sub_at, &mut causes);
                }
            }
            (Some(_), Some(_)) => causes.push(Cause::forbidden(
                at.as_str(),
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            )),
            (None, None) => causes.push(Cause::required(
                at.as_str(),
                "exactly one of `exactly` or `firstAvailable` is required",
            )),
        }
    }
    if let Some(old) = old
        && old.get("spec") != obj.get("spec")
    {
        causes.push(Cause::invalid(
            "spec",
            obj.get("spec").unwrap_or(&Value::Null),
            "field is immutable",
        ));
    }
    causes
}

/// `ValidateDeviceClass`: every selector carries a CEL expression.
pub(super) fn validate_class(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, selector) in array_at(obj, "/spec/selectors").iter().enumerate() {
        let at = format!("spec.selectors[{i}]");
        match selector.get("cel").filter(|v| !v.is_null()) {
            None => causes.push(Cause::required(format!("{at}.cel"), "")),
            Some(cel) if str_at(cel, "/expression").is_empty() => {
                causes.push(Cause::required(format!("{at}.cel.expression"), ""));
            }
            Some(_) => {}
        }
    }
    causes
}

/// The devices a claim asks for per device class (quota's
/// `<class>.deviceclass.resource.k8s.io/devices`): `count` of an ExactCount request, 32 for
/// `All` (kube's worst case), and for `firstAvailable` the largest count per class.
pub(crate) fn devices_per_class(obj: &Value) -> Vec<(String, u64)> {
    const ALL_WORST_CASE: u64 = 32;
    let amount = |r: &Value| match str_at(r, "/allocationMode") {
        "ExactCount" => r.get("count").and_then(Value::as_u64).unwrap_or(1),
        "All" => ALL_WORST_CASE,
        _ => 0,
    };
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut add = |class: &str, n: u64| match out.iter_mut().find(|(c, _)| c == class) {
        Some((_, total)) => *total += n,
        None => out.push((class.to_string(), n)),
    };
    for request in array_at(obj, "/spec/devices/requests") {
        if let Some(exactly) = request.get("exactly").filter(|v| v.is_object()) {
            add(str_at(exactly, "/deviceClassName"), amount(exactly));
        }
        let mut largest: Vec<(String, u64)> = Vec::new();
        for sub in array_at(request, "/firstAvailable") {
            let class = str_at(sub, "/deviceClassName");
            let n = amount(sub);
            match largest.iter_mut().find(|(c, _)| c == class) {
                Some((_, m)) => *m = (*m).max(n),
                None => largest.push((class.to_string(), n)),
            }
        }
        for (class, n) in largest {
            add(&class, n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_defaults_and_device_counts() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
            {"name": "any", "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu.example.com", "count": 2},
                {"name": "small", "deviceClassName": "gpu.example.com"},
            ]},
        ]}}});
        default_claim(&mut claim);
        assert_eq!(
            claim["spec"]["devices"]["requests"][0]["exactly"]["count"],
            1
        );
        assert_eq!(
            claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"],
            "ExactCount"
        );
        assert!(
            validate_claim(&claim, None).is_empty(),
            "{:?}",
            validate_claim(&claim, None)
        );
        assert_eq!(
            devices_per_class(&claim),
            [("gpu.example.com".to_string(), 3)]
        );
        let mut changed = claim.clone();
        changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
        assert_eq!(validate_claim(&changed, Some(&claim)).len(), 1);
    }
}

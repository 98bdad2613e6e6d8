//! Ingresses, IngressClasses and NetworkPolicies: kube's defaults and validation.

use serde_json::{Value, json};

use super::{array_at, default_field, str_at};
use crate::validation::{
    Cause, dns1035_label_errors, dns1123_subdomain_errors, is_dns1123_subdomain,
};

const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];
const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];
const POLICY_TYPES: [&str; 2] = ["Ingress", "Egress"];

/// v1 has no Ingress defaults beyond its ports' protocols; kept for symmetry with the other
/// kinds (nothing to do).
pub(super) fn default_ingress(_obj: &mut Value) {}

/// `SetDefaults_NetworkPolicy` (`policyTypes` from the rules present) and
/// `SetDefaults_NetworkPolicyPort` (`protocol: TCP`).
pub(super) fn default_network_policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec") else {
        return;
    };
    for direction in ["ingress", "egress"] {
        let Some(rules) = spec.get_mut(direction).and_then(Value::as_array_mut) else {
            continue;
        };
        for rule in rules {
            if let Some(ports) = rule.get_mut("ports").and_then(Value::as_array_mut) {
                for port in ports {
                    default_field(port, "protocol", json!("TCP"));
                }
            }
        }
    }
    let has_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if !has_types {
        let mut types = vec![json!("Ingress")];
        if spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty())
        {
            types.push(json!("Egress"));
        }
        spec["policyTypes"] = Value::Array(types);
    }
}

/// A port number (1–65535) at `field`.
fn validate_port_number(port: i64, field: &str, causes: &mut Vec<Cause>) {
    if !(1..=65535).contains(&port) {
        causes.push(Cause::invalid(
            field,
            port,
            "must be between 1 and 65535, inclusive",
        ));
    }
}

/// kube's `IsValidPortName` at `field`.
fn validate_port_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    let mut msgs = Vec::new();
    if name.len() > 15 {
        msgs.push("must be no more than 15 characters".to_string());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        msgs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        msgs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        msgs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        msgs.push("must not begin or end with a hyphen".into());
    }
    for msg in msgs {
        causes.push(Cause::invalid(field, name, &msg));
    }
}

/// An Ingress backend at `field`: a service (name and one of port name or number) or a
/// resource, not both.
fn validate_backend(backend: &Value, field: &str, causes: &mut Vec<Cause>) {
    let service = backend.get("service").filter(|v| !v.is_null());
    let resource = backend.get("resource").filter(|v| !v.is_null());
    match (service, resource) {
        (Some(_), Some(_)) => causes.push(Cause::invalid(
            field,
            "",
            "cannot set both resource and service backends",
        )),
        (None, Some(resource)) => {
            if str_at(resource, "/kind").is_empty() {
                causes.push(Cause::required(
                    format!("{field}.resource.kind"),
                    "kind is required",
                ));
            }
            if str_at(resource, "/name").is_empty() {
                causes.push(Cause::required(
                    format!("{field}.resource.name"),
                    "name is required",
                ));
            }
        }
        (Some(service), None) => {
            let name = str_at(service, "/name");
            let at = format!("{field}.service.name");
            if name.is_empty() {
                causes.push(Cause::required(at, ""));
            } else {
                for msg in dns1035_label_errors(name) {
                    causes.push(Cause::invalid(at.as_str(), name, &msg));
                }
            }
            let port_name = str_at(service, "/port/name");
            let number = service
                .pointer("/port/number")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            match (port_name.is_empty(), number == 0) {
                (false, false) => causes.push(Cause::invalid(
                    field,
                    "",
                    "cannot set both port name & port number",
                )),
                (false, true) => {
                    validate_port_name(port_name, &format!("{field}.service.port.name"), causes)
                }
                (true, false) => {
                    validate_port_number(number, &format!("{field}.service.port.number"), causes)
                }
                (true, true) => {
                    causes.push(Cause::required(field, "port name or number is required"))
                }
            }
        }
        (None, None) => causes.push(Cause::invalid(
            field,
            "",
            "resource or service backend is required",
        )),
    }
}

/// An Ingress rule host at `field`: a DNS name (a leading `*.` allowed), not an IP address.
fn validate_host(host: &str, field: &str, causes: &mut Vec<Cause>) {
    if host.parse::<std::net::IpAddr>().is_ok() {
        causes.push(Cause::invalid(
            field,
            host,
            "must be a DNS name, not an IP address",
        ));
        return;
    }
    if let Some(rest) = host.strip_prefix("*.") {
        if !is_dns1123_subdomain(rest) || rest.contains('*') {
            causes.push(Cause::invalid(
                field,
                host,
                "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ));
        }
        return;
    }
    for msg in dns1123_subdomain_errors(host) {
        causes.push(Cause::invalid(field, host, &msg));
    }
}

/// An HTTP path of an Ingress rule at `field`.
fn validate_path(path: &Value, field: &str, causes: &mut Vec<Cause>) {
    let text = str_at(path, "/path");
    match path.get("pathType").and_then(Value::as_str) {
        None => {
            // kube stops at a missing pathType: the backend is not looked at.
            causes.push(Cause::required(
                format!("{field}.pathType"),
                "pathType must be specified",
            ));
            return;
        }
        Some("Exact" | "Prefix") => {
            if !text.starts_with('/') {
                causes.push(Cause::invalid(
                    format!("{field}.path"),
                    text,
                    "must be an absolute path",
                ));
            } else {
                for bad in ["//", "/./", "/../", "%2f", "%2F"] {
                    if text.contains(bad) {
                        causes.push(Cause::invalid(
                            format!("{field}.path"),
                            text,
                            &format!("must not contain '{bad}'"),
                        ));
                    }
                }
                for bad in ["/..", "/."] {
                    if text.ends_with(bad) {
                        causes.push(Cause::invalid(
                            format!("{field}.path"),
                            text,
                            &format!("cannot end with '{bad}'"),
                        ));
                    }
                }
            }
        }
        Some("ImplementationSpecific") => {
            if !text.is_empty() && !text.starts_with('/') {
                causes.push(Cause::invalid(
                    format!("{field}.path"),
                    text,
                    "must be an absolute path",
                ));
            }
        }
        Some(other) => causes.push(Cause::not_supported(
            format!("{field}.pathType"),
            other,
            &PATH_TYPES,
        )),
    }
    match path.get("backend") {
        Some(backend) => validate_backend(backend, &format!("{field}.backend"), causes),
        None => validate_backend(&json!({}), &format!("{field}.backend"), causes),
    }
}

/// `ValidateIngressCreate` / `ValidateIngressUpdate` (the spec rules are the same).
pub(super) fn validate_ingress(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let rules = array_at(&spec, "/rules");
    let default_backend = spec.get("defaultBackend").filter(|v| !v.is_null());
    if rules.is_empty() && default_backend.is_none() {
        causes.push(Cause::invalid(
            "spec",
            crate::validation::BadValue::Null,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        validate_backend(backend, "spec.defaultBackend", &mut causes);
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        let host = str_at(rule, "/host");
        if !host.is_empty() {
            validate_host(host, &format!("{at}.host"), &mut causes);
        }
        if let Some(http) = rule.get("http").filter(|v| !v.is_null()) {
            let paths = array_at(http, "/paths");
            if paths.is_empty() {
                causes.push(Cause::required(format!("{at}.http.paths"), ""));
            }
            for (j, path) in paths.iter().enumerate() {
                validate_path(path, &format!("{at}.http.paths[{j}]"), &mut causes);
            }
        }
    }
    for (i, tls) in array_at(&spec, "/tls").iter().enumerate() {
        for (j, host) in array_at(tls, "/hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or("");
            validate_host(host, &format!("spec.tls[{i}].hosts[{j}]"), &mut causes);
        }
    }
    let class = str_at(&spec, "/ingressClassName");
    if !class.is_empty() {
        for msg in dns1123_subdomain_errors(class) {
            causes.push(Cause::invalid("spec.ingressClassName", class, &msg));
        }
    }
    causes
}

/// `ValidateIngressClass` (and the immutable controller on update).
pub(super) fn validate_ingress_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let controller = str_at(obj, "/spec/controller");
    if controller.is_empty() {
        causes.push(Cause::required("spec.controller", ""));
    } else if controller.len() > 250 {
        causes.push(Cause::too_long("spec.controller", 250));
    } else {
        validate_domain_prefixed_path(controller, "spec.controller", &mut causes);
    }
    if let Some(params) = obj.pointer("/spec/parameters").filter(|v| !v.is_null()) {
        if str_at(params, "/kind").is_empty() {
            causes.push(Cause::required("spec.parameters.kind", "kind is required"));
        }
        if str_at(params, "/name").is_empty() {
            causes.push(Cause::required("spec.parameters.name", "name is required"));
        }
        let scope = str_at(params, "/scope");
        let namespace = str_at(params, "/namespace");
        match scope {
            "" | "Cluster" if !namespace.is_empty() => causes.push(Cause::forbidden(
                "spec.parameters.namespace",
                "`parameters.scope` is set to 'Cluster'",
            )),
            "Namespace" if namespace.is_empty() => causes.push(Cause::required(
                "spec.parameters.namespace",
                "`parameters.scope` is set to 'Namespace'",
            )),
            "" | "Cluster" | "Namespace" => {}
            other => causes.push(Cause::not_supported(
                "spec.parameters.scope",
                other,
                &["Cluster", "Namespace"],
            )),
        }
    }
    if let Some(old) = old {
        let was = str_at(old, "/spec/controller");
        if was != controller {
            causes.push(Cause::invalid(
                "spec.controller",
                controller,
                "field is immutable",
            ));
        }
    }
    causes
}

/// kube's `IsDomainPrefixedPath`: `<domain>/<path>`.
fn validate_domain_prefixed_path(value: &str, field: &str, causes: &mut Vec<Cause>) {
    let Some((host, path)) = value.split_once('/') else {
        causes.push(Cause::invalid(
            field,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for msg in dns1123_subdomain_errors(host) {
        causes.push(Cause::invalid(field, host, &msg));
    }
    let ok = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !ok {
        causes.push(Cause::invalid(
            field,
            path,
            "segment of path must contain only valid characters: [a-zA-Z0-9/\\-._~%!$&'()*+,;=:]",
        ));
    }
}

/// `ValidateNetworkPolicy`.
pub(super) fn validate_network_policy(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    causes.extend(super::selector::validate_label_selector(
        spec.get("podSelector"),
        "spec.podSelector",
    ));
    for (direction, peers_key) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in array_at(&spec, &format!("/{direction}")).iter().enumerate() {
            let at = format!("spec.{direction}[{i}]");
            for (j, port) in array_at(rule, "/ports").iter().enumerate() {
                validate_policy_port(port, &format!("{at}.ports[{j}]"), &mut causes);
            }
            for (j, peer) in array_at(rule, &format!("/{peers_key}")).iter().enumerate() {
                validate_peer(peer, &format!("{at}.{peers_key}[{j}]"), &mut causes);
            }
        }
    }
    let types = array_at(&spec, "/policyTypes");
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if !POLICY_TYPES.contains(&t) {
            causes.push(Cause::not_supported(
                format!("spec.policyTypes[{i}]"),
                t,
                &POLICY_TYPES,
            ));
        }
    }
    if types.len() > 2 {
        causes.push(Cause::invalid(
            "spec.policyTypes",
            &json!(types),
            "may not specify more than two policyTypes",
        ));
    }
    causes
}

/// A NetworkPolicy port: protocol, port number or name, and `endPort`.
fn validate_policy_port(port: &Value, field: &str, causes: &mut Vec<Cause>) {
    let protocol = str_at(port, "/protocol");
    if !protocol.is_empty() && !PROTOCOLS.contains(&protocol) {
        causes.push(Cause::not_supported(
            format!("{field}.protocol"),
            protocol,
            &PROTOCOLS,
        ));
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    match port.get("port") {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            validate_port_number(n, &format!("{field}.port"), causes);
            if let Some(end) = end {
                if end < n {
                    causes.push(Cause::invalid(
                        format!("{field}.endPort"),
                        end,
                        "must be greater than or equal to `port`",
                    ));
                }
                validate_port_number(end, &format!("{field}.endPort"), causes);
            }
        }
        Some(Value::String(name)) => {
            if end.is_some() {
                causes.push(Cause::forbidden(
                    format!("{field}.endPort"),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            validate_port_name(name, &format!("{field}.port"), causes);
        }
        _ => {
            if end.is_some() {
                causes.push(Cause::forbidden(
                    format!("{field}.endPort"),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

/// A NetworkPolicy peer: at least one of its selectors or an IP block (alone).
fn validate_peer(peer: &Value, field: &str, causes: &mut Vec<Cause>) {
    let present = |k: &str| peer.get(k).is_some_and(|v| !v.is_null());
    let count = ["podSelector", "namespaceSelector", "ipBlock"]
        .iter()
        .filter(|k| present(k))
        .count();
    if count == 0 {
        causes.push(Cause::required(field, "must specify a peer"));
    } else if count > 1 && present("ipBlock") {
        causes.push(Cause::forbidden(
            field,
            "may not specify both ipBlock and another peer",
        ));
    }
    for key in ["podSelector", "namespaceSelector"] {
        causes.extend(super::selector::validate_label_selector(
            peer.get(key),
            &format!("{field}.{key}"),
        ));
    }
    if let Some(block) = peer.get("ipBlock").filter(|v| !v.is_null()) {
        let cidr = str_at(block, "/cidr");
        if cidr.is_empty() {
            causes.push(Cause::required(format!("{field}.ipBlock.cidr"), ""));
        } else if !is_cidr(cidr) {
            causes.push(Cause::invalid(
                format!("{field}.ipBlock.cidr"),
                cidr,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            ));
        }
    }
}

/// Whether `s` is `<ip>/<prefix>`.
fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    prefix.parse::<u8>().is_ok_and(|p| p <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn network_policy_defaults() {
        let mut np = json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}});
        default_network_policy(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        assert!(validate_network_policy(&np).is_empty());
    }

    #[test]
    fn ingress_paths_and_backends() {
        let ing = json!({"spec": {"rules": [{"host": "10.0.0.1", "http": {"paths": [
            {"path": "x", "pathType": "Prefix", "backend": {"service": {"name": "web"}}},
            {"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
        ]}}]}});
        assert_eq!(
            texts(validate_ingress(&ing)),
            [
                "spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address",
                "spec.rules[0].http.paths[0].path: Invalid value: \"x\": must be an absolute path",
                "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
                "spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified",
            ]
        );
    }

    #[test]
    fn ingress_class_controller() {
        assert_eq!(
            texts(validate_ingress_class(&json!({"spec": {}}), None)),
            ["spec.controller: Required value"]
        );
        let old = json!({"spec": {"controller": "example.com/a"}});
        let new = json!({"spec": {"controller": "example.com/b"}});
        assert_eq!(
            texts(validate_ingress_class(&new, Some(&old))),
            ["spec.controller: Invalid value: \"example.com/b\": field is immutable"]
        );
    }
}

//! Services: kube's v1 defaults, and the cluster IP and node ports kube-apiserver allocates
//! when a Service is created (from the service CIDR `10.96.0.0/12` and the node port range
//! 30000–32767), kept when an update leaves them out.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::{array_at, default_field, str_at};
use crate::validation::Cause;

/// The service CIDR: network address and prefix length.
const SERVICE_CIDR: (Ipv4Addr, u32) = (Ipv4Addr::new(10, 96, 0, 0), 12);
/// kube's default node port range.
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// `SetDefaults_Service` and its ports': `type: ClusterIP`, `sessionAffinity: None`,
/// `protocol: TCP`, `targetPort` the port, `internalTrafficPolicy: Cluster`, and for node
/// port and load balancer Services `externalTrafficPolicy: Cluster` (and
/// `allocateLoadBalancerNodePorts: true`).
pub(super) fn default_service(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    default_field(spec, "type", json!("ClusterIP"));
    default_field(spec, "sessionAffinity", json!("None"));
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        default_field(
            spec,
            "sessionAffinityConfig",
            json!({"clientIP": {"timeoutSeconds": 10800}}),
        );
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports {
            default_field(port, "protocol", json!("TCP"));
            let number = port.get("port").cloned().unwrap_or(Value::Null);
            let unset = port
                .get("targetPort")
                .is_none_or(|t| t.is_null() || t == &json!(0) || t == &json!(""));
            if unset && !number.is_null() {
                port["targetPort"] = number;
            }
        }
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if ty != "ExternalName" {
        default_field(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        default_field(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        default_field(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

/// The IPs and node ports the Services of a cluster hold.
#[derive(Debug, Default)]
pub(crate) struct Allocated {
    ips: HashSet<Ipv4Addr>,
    node_ports: HashSet<i64>,
}

impl Allocated {
    /// What `services` (every Service of the cluster) hold.
    pub(crate) fn of(services: &[Value]) -> Allocated {
        let mut out = Allocated::default();
        for svc in services {
            for ip in array_at(svc, "/spec/clusterIPs") {
                if let Some(ip) = ip.as_str().and_then(|i| i.parse().ok()) {
                    out.ips.insert(ip);
                }
            }
            if let Ok(ip) = str_at(svc, "/spec/clusterIP").parse() {
                out.ips.insert(ip);
            }
            for port in array_at(svc, "/spec/ports") {
                if let Some(n) = port.get("nodePort").and_then(Value::as_i64) {
                    out.node_ports.insert(n);
                }
            }
        }
        out
    }
}

fn in_cidr(ip: Ipv4Addr) -> bool {
    let (net, bits) = SERVICE_CIDR;
    let mask = u32::MAX << (32 - bits);
    u32::from(ip) & mask == u32::from(net)
}

/// A free IP of the service CIDR, drawn from `seed` as kube draws one at random (never the
/// network or broadcast address).
fn free_ip(taken: &HashSet<Ipv4Addr>, seed: u128) -> Option<Ipv4Addr> {
    let (net, bits) = SERVICE_CIDR;
    let size = 1u32 << (32 - bits);
    let start = (seed % u128::from(size - 2)) as u32 + 1;
    (0..size - 2)
        .map(|i| (start - 1 + i) % (size - 2) + 1)
        .map(|offset| Ipv4Addr::from(u32::from(net) + offset))
        .find(|ip| !taken.contains(ip))
}

/// A free node port, drawn from `seed`.
fn free_node_port(taken: &HashSet<i64>, seed: u128) -> Option<i64> {
    let size = NODE_PORTS.end() - NODE_PORTS.start() + 1;
    let start = (seed % size as u128) as i64;
    (0..size)
        .map(|i| NODE_PORTS.start() + (start + i) % size)
        .find(|p| !taken.contains(p))
}

/// Allocates a new Service's cluster IP (unless headless or `ExternalName`) and node ports,
/// as kube-apiserver's Service storage does; a requested IP or port that is taken or out of
/// range is kube's 422 cause.
pub(crate) fn allocate(obj: &mut Value, allocated: &Allocated, seed: u128) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return causes;
    };
    let ty = str_at(spec, "/type").to_owned();
    if ty != "ExternalName" {
        let requested = str_at(spec, "/clusterIP").to_owned();
        let ip = match requested.as_str() {
            "None" => Some("None".to_owned()),
            "" => free_ip(&allocated.ips, seed).map(|ip| ip.to_string()),
            given => match given.parse::<Ipv4Addr>() {
                Ok(ip) if !in_cidr(ip) => {
                    causes.push(Cause::invalid(
                        "spec.clusterIPs",
                        crate::validation::BadValue::Json(json!([given])),
                        &format!(
                            "failed to allocate IP {given}: the provided IP ({given}) is not in the valid range. The range of valid IPs is {}/{}",
                            SERVICE_CIDR.0, SERVICE_CIDR.1
                        ),
                    ));
                    None
                }
                Ok(ip) if allocated.ips.contains(&ip) => {
                    causes.push(Cause::invalid(
                        "spec.clusterIPs",
                        crate::validation::BadValue::Json(json!([given])),
                        &format!("failed to allocate IP {given}: provided IP is already allocated"),
                    ));
                    None
                }
                Ok(ip) => Some(ip.to_string()),
                Err(_) => {
                    causes.push(Cause::invalid(
                        "spec.clusterIPs[0]",
                        given,
                        "must be empty, 'None', or a valid IP address",
                    ));
                    None
                }
            },
        };
        if let Some(ip) = ip {
            spec["clusterIP"] = json!(ip);
            spec["clusterIPs"] = json!([ip]);
            default_field(spec, "ipFamilies", json!(["IPv4"]));
            default_field(spec, "ipFamilyPolicy", json!("SingleStack"));
        }
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        let mut taken = allocated.node_ports.clone();
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for (i, port) in ports.iter_mut().enumerate() {
                match port.get("nodePort").and_then(Value::as_i64) {
                    Some(n) if !NODE_PORTS.contains(&n) => causes.push(Cause::invalid(
                        format!("spec.ports[{i}].nodePort"),
                        n,
                        "provided port is not in the valid range. The range of valid ports is 30000-32767",
                    )),
                    Some(n) if !taken.insert(n) => causes.push(Cause::invalid(
                        format!("spec.ports[{i}].nodePort"),
                        n,
                        "provided port is already allocated",
                    )),
                    Some(_) => {}
                    None => {
                        if let Some(n) = free_node_port(&taken, seed >> 32) {
                            taken.insert(n);
                            port["nodePort"] = json!(n);
                        }
                    }
                }
            }
        }
    }
    causes
}

/// What an update of a Service keeps of the allocated values it leaves out (kube's
/// `patchAllocatedValues`): the cluster IPs and IP families, and each port's node port.
pub(crate) fn keep_allocations(new: &mut Value, old: &Value) {
    let Some(spec) = new.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    if str_at(spec, "/type") == "ExternalName" {
        return;
    }
    for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let missing = spec
            .get(key)
            .is_none_or(|v| v.is_null() || v == &json!("") || v == &json!([]));
        if missing && let Some(kept) = old.pointer(&format!("/spec/{key}")) {
            spec[key] = kept.clone();
        }
    }
    let old_ports = array_at(old, "/spec/ports");
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports {
            if port.get("nodePort").is_some_and(|n| !n.is_null()) {
                continue;
            }
            let same = old_ports.iter().find(|o| {
                o.get("port") == port.get("port") && o.get("protocol") == port.get("protocol")
            });
            if let Some(n) = same.and_then(|o| o.get("nodePort")) {
                port["nodePort"] = n.clone();
            }
        }
    }
}

/// A Service update may not move its cluster IP.
pub(super) fn validate_service(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(old) = old {
        let was = str_at(old, "/spec/clusterIP");
        let now = str_at(obj, "/spec/clusterIP");
        let external = str_at(obj, "/spec/type") == "ExternalName";
        if !was.is_empty() && !external && was != now {
            causes.push(Cause::invalid(
                "spec.clusterIPs[0]",
                now,
                "may not change once set",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_allocation() {
        let mut svc = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        default_service(&mut svc);
        assert_eq!(svc["spec"]["sessionAffinity"], "None");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
        let taken = Allocated::of(&[
            json!({"spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"]}}),
        ]);
        assert!(allocate(&mut svc, &taken, 0).is_empty());
        let ip: Ipv4Addr = svc["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
        assert!(in_cidr(ip) && ip != Ipv4Addr::new(10, 96, 0, 1), "{ip}");
        assert!(NODE_PORTS.contains(&svc["spec"]["ports"][0]["nodePort"].as_i64().unwrap()));
        let mut clash = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1"}});
        let texts: Vec<String> = allocate(&mut clash, &taken, 0)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            texts,
            [
                "spec.clusterIPs: Invalid value: [\"10.96.0.1\"]: failed to allocate IP 10.96.0.1: provided IP is already allocated"
            ]
        );
        let mut update =
            json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}});
        keep_allocations(&mut update, &svc);
        assert_eq!(update["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
        assert_eq!(
            update["spec"]["ports"][0]["nodePort"],
            svc["spec"]["ports"][0]["nodePort"]
        );
    }
}

//! The built-in kinds users ship with their applications — PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses, PodDisruptionBudgets, Ingresses, IngressClasses,
//! NetworkPolicies, HorizontalPodAutoscalers (autoscaling/v2), ResourceClaims and
//! DeviceClasses — through kube-rs and real kubectl: kube-apiserver 1.35's defaults, status
//! shape, 422 texts, kubectl columns, and ResourceQuota's storage and device usage.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim, ResourceQuota,
};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::common::tls::TlsServer;
use crate::common::{self, kubectl, status_of};

/// Creates `obj` through `api`; the object the server answered, as JSON.
async fn create<K>(api: &Api<K>, obj: Value) -> Value
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let typed: K = serde_json::from_value(obj).unwrap();
    let created = api.create(&PostParams::default(), &typed).await.unwrap();
    serde_json::to_value(created).unwrap()
}

/// The 422 of creating `obj` through `api`: (code, reason, message).
async fn refused<K>(api: &Api<K>, obj: Value) -> (u16, String, String)
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let typed: K = serde_json::from_value(obj).unwrap();
    status_of(
        api.create(&PostParams::default(), &typed)
            .await
            .unwrap_err(),
    )
}

async fn namespace(client: &kube::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

fn claim(name: &str, class: Option<&str>, storage: &str) -> Value {
    let mut spec = json!({"accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": storage}}});
    if let Some(class) = class {
        spec["storageClassName"] = json!(class);
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn storage_kinds_are_defaulted_and_validated_as_kube_does() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    namespace(&client, "apps").await;

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "apps");
    let pvc = create(&claims, claim("data", Some("fast"), "1Gi")).await;
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"], json!({"phase": "Pending"}));
    assert!(pvc["metadata"].get("generation").is_none());
    // The requested storage may grow; the rest of the spec is fixed.
    let mut bigger = pvc.clone();
    bigger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    let bigger: PersistentVolumeClaim = serde_json::from_value(bigger).unwrap();
    let grown = claims
        .replace("data", &PostParams::default(), &bigger)
        .await
        .unwrap();
    let mut other = serde_json::to_value(grown).unwrap();
    other["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    let other: PersistentVolumeClaim = serde_json::from_value(other).unwrap();
    let (code, reason, message) = status_of(
        claims
            .replace("data", &PostParams::default(), &other)
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.starts_with("PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"),
        "{message}"
    );
    assert_eq!(
        refused(&claims, json!({"metadata": {"name": "bad"}, "spec": {}})).await,
        (
            422,
            "Invalid".into(),
            "PersistentVolumeClaim \"bad\" is invalid: [spec.accessModes: Required value: at least 1 access mode is required, spec.resources[storage]: Required value]".into()
        )
    );
    assert_eq!(
        refused(
            &claims,
            json!({"metadata": {"name": "bad"}, "spec": {
            "accessModes": ["ReadWriteOncePod", "ReadWriteOnce"],
            "resources": {"requests": {"storage": "0"}}}})
        )
        .await
        .2,
        "PersistentVolumeClaim \"bad\" is invalid: [spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes, spec.resources[storage]: Invalid value: \"0\": must be greater than zero]"
    );

    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let pv = create(
        &volumes,
        json!({"metadata": {"name": "disk-1"}, "spec": {
        "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/data"}}}),
    )
    .await;
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pv["status"]["phase"], "Pending");
    assert!(pv["status"]["lastPhaseTransitionTime"].is_string());
    assert_eq!(
        refused(
            &volumes,
            json!({"metadata": {"name": "nothing"}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}})
        )
        .await
        .2,
        "PersistentVolume \"nothing\" is invalid: spec: Required value: must specify a volume type"
    );

    let classes: Api<StorageClass> = Api::all(client.clone());
    let sc = create(
        &classes,
        json!({"metadata": {"name": "fast"},
        "provisioner": "example.com/ssd", "parameters": {"tier": "1"}}),
    )
    .await;
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");
    let mut changed = sc.clone();
    changed["parameters"]["tier"] = json!("2");
    let changed: StorageClass = serde_json::from_value(changed).unwrap();
    assert_eq!(
        status_of(
            classes
                .replace("fast", &PostParams::default(), &changed)
                .await
                .unwrap_err()
        )
        .2,
        "StorageClass.storage.k8s.io \"fast\" is invalid: parameters: Forbidden: updates to parameters are forbidden."
    );
    assert_eq!(
        refused(&classes, json!({"metadata": {"name": "none"}}))
            .await
            .2,
        "StorageClass.storage.k8s.io \"none\" is invalid: provisioner: Required value"
    );
}

#[tokio::test]
async fn workload_kinds_are_defaulted_and_validated_as_kube_does() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    namespace(&client, "apps").await;

    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "apps");
    let pdb = create(
        &budgets,
        json!({"metadata": {"name": "web"}, "spec": {
        "minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}}),
    )
    .await;
    assert_eq!(pdb["metadata"]["generation"], 1);
    assert_eq!(
        pdb["status"],
        json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0})
    );
    assert_eq!(
        refused(
            &budgets,
            json!({"metadata": {"name": "bad"}, "spec": {
            "maxUnavailable": "120%",
            "selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}})
        )
        .await
        .2,
        "PodDisruptionBudget.policy \"bad\" is invalid: [spec.maxUnavailable: Invalid value: \"120%\": must not be greater than 100%, spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn']"
    );

    let autoscalers: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), "apps");
    let hpa = create(
        &autoscalers,
        json!({"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 5}}),
    )
    .await;
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert!(hpa["spec"].get("behavior").is_none());
    assert_eq!(hpa["status"]["desiredReplicas"], 0);
    assert_eq!(
        refused(
            &autoscalers,
            json!({"metadata": {"name": "bad"}, "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 3, "maxReplicas": 2}})
        )
        .await
        .2,
        "HorizontalPodAutoscaler.autoscaling \"bad\" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"
    );

    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), "apps");
    let rc = create(
        &claims,
        json!({"metadata": {"name": "gpu"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}),
    )
    .await;
    assert_eq!(
        rc["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"],
        "ExactCount"
    );
    assert_eq!(rc["spec"]["devices"]["requests"][0]["exactly"]["count"], 1);
    let mut changed = rc.clone();
    changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
    let changed: ResourceClaim = serde_json::from_value(changed).unwrap();
    let message = status_of(
        claims
            .replace("gpu", &PostParams::default(), &changed)
            .await
            .unwrap_err(),
    )
    .2;
    assert!(
        message
            .starts_with("ResourceClaim.resource.k8s.io \"gpu\" is invalid: spec: Invalid value: "),
        "{message}"
    );
    assert!(message.ends_with(": field is immutable"), "{message}");

    let classes: Api<DeviceClass> = Api::all(client.clone());
    let dc = create(
        &classes,
        json!({"metadata": {"name": "gpu.example.com"}, "spec": {
        "selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}),
    )
    .await;
    assert_eq!(dc["metadata"]["generation"], 1);
}

#[tokio::test]
async fn networking_kinds_are_defaulted_and_validated_as_kube_does() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    namespace(&client, "apps").await;

    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), "apps");
    let np = create(
        &policies,
        json!({"metadata": {"name": "dns"}, "spec": {
        "podSelector": {"matchLabels": {"app": "web"}},
        "egress": [{"ports": [{"port": 53}]}]}}),
    )
    .await;
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(np["metadata"]["generation"], 1);
    assert_eq!(
        refused(
            &policies,
            json!({"metadata": {"name": "bad"}, "spec": {"podSelector": {},
            "ingress": [{"from": [{}], "ports": [{"protocol": "ICMP", "port": 0}]}]}})
        )
        .await
        .2,
        "NetworkPolicy.networking.k8s.io \"bad\" is invalid: [spec.ingress[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\", spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ingress[0].from[0]: Required value: must specify a peer]"
    );

    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), "apps");
    let ing = create(
        &ingresses,
        json!({"metadata": {"name": "web"}, "spec": {
        "ingressClassName": "nginx",
        "rules": [{"host": "web.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
    )
    .await;
    assert_eq!(ing["status"], json!({"loadBalancer": {}}));
    assert_eq!(ing["metadata"]["generation"], 1);
    assert_eq!(
        refused(
            &ingresses,
            json!({"metadata": {"name": "bad"}, "spec": {"rules": [{"host": "1.2.3.4",
            "http": {"paths": [{"path": "api", "pathType": "Exact",
                "backend": {"service": {"name": "web"}}}]}}]}})
        )
        .await
        .2,
        "Ingress.networking.k8s.io \"bad\" is invalid: [spec.rules[0].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address, spec.rules[0].http.paths[0].path: Invalid value: \"api\": must be an absolute path, spec.rules[0].http.paths[0].backend: Required value: port name or number is required]"
    );

    let classes: Api<IngressClass> = Api::all(client.clone());
    create(
        &classes,
        json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
    )
    .await;
    assert_eq!(
        refused(&classes, json!({"metadata": {"name": "none"}, "spec": {}}))
            .await
            .2,
        "IngressClass.networking.k8s.io \"none\" is invalid: spec.controller: Required value"
    );
}

/// What `kubectl get` prints for the kinds: kube's columns, and cells as kube fills them.
#[tokio::test]
async fn kubectl_shows_kubes_columns() {
    if !kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    let manifest = r#"
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/ssd
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: apps}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk-1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteMany, ReadWriteOnce]
  hostPath: {path: /data}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: apps}
spec: {minAvailable: 2, selector: {matchLabels: {app: web}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: apps}
spec: {podSelector: {matchLabels: {app: web}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: apps}
spec:
  tls: [{hosts: [web.example.com]}]
  rules:
  - host: web.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: apps}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
"#;
    let (code, _, err) = kubectl::run(&server, &["apply", "-f", "-"], Some(manifest)).await;
    assert_eq!(code, 0, "{err}");
    let get = |args: &'static [&'static str]| {
        let server = &server;
        async move {
            let (code, out, err) = kubectl::run(server, args, None).await;
            assert_eq!(code, 0, "{args:?}: {err}");
            kubectl::rows(&out)
        }
    };
    let rows = get(&["get", "pvc", "-n", "apps", "-o", "wide"]).await;
    assert_eq!(
        rows[0],
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE",
            "VOLUMEMODE"
        ]
    );
    assert_eq!(rows[1][..4], ["data", "Pending", "fast", "<unset>"]);
    assert_eq!(rows[1][5], "Filesystem");
    let rows = get(&["get", "pv"]).await;
    assert_eq!(
        rows[0],
        [
            "NAME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "RECLAIM",
            "POLICY",
            "STATUS",
            "CLAIM",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "REASON",
            "AGE"
        ]
    );
    assert_eq!(
        rows[1][..5],
        ["disk-1", "10Gi", "RWO,RWX", "Retain", "Pending"]
    );
    let rows = get(&["get", "sc"]).await;
    assert_eq!(
        rows[0],
        [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE"
        ]
    );
    assert_eq!(
        rows[1][..6],
        [
            "fast",
            "(default)",
            "example.com/ssd",
            "Delete",
            "Immediate",
            "false"
        ]
    );
    let rows = get(&["get", "pdb", "-n", "apps"]).await;
    assert_eq!(
        rows[0],
        [
            "NAME",
            "MIN",
            "AVAILABLE",
            "MAX",
            "UNAVAILABLE",
            "ALLOWED",
            "DISRUPTIONS",
            "AGE"
        ]
    );
    assert_eq!(rows[1][..4], ["web", "2", "N/A", "0"]);
    let rows = get(&["get", "netpol", "-n", "apps"]).await;
    assert_eq!(rows[0], ["NAME", "POD-SELECTOR", "AGE"]);
    assert_eq!(rows[1][..2], ["web", "app=web"]);
    let rows = get(&["get", "ing", "-n", "apps"]).await;
    assert_eq!(
        rows[0],
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    );
    assert_eq!(
        rows[1][..5],
        ["web", "<none>", "web.example.com", "80,", "443"]
    );
    let rows = get(&["get", "hpa", "-n", "apps"]).await;
    assert_eq!(
        rows[0],
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    assert_eq!(
        rows[1][..7],
        [
            "web",
            "Deployment/web",
            "cpu:",
            "<unknown>/80%",
            "1",
            "4",
            "0"
        ]
    );
    // `kubectl get all` includes autoscalers, as kube's categories say.
    let (code, out, err) = kubectl::run(&server, &["get", "all", "-n", "apps"], None).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("horizontalpodautoscaler.autoscaling/web"),
        "{out}"
    );
}

async fn used(quotas: &Api<ResourceQuota>, name: &str, key: &str, want: &str) {
    common::eventually(&format!("{key} = {want}"), || async {
        let q = quotas.get(name).await.ok()?;
        let used = q.status?.used?;
        (used.get(key).map(|v| v.0.as_str()) == Some(want)).then_some(())
    })
    .await;
}

/// ResourceQuota sums what claims request — storage in all and per StorageClass, and devices
/// per DeviceClass — and refuses a claim that would go over, in kube's words.
#[tokio::test]
async fn quotas_measure_storage_and_devices() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    namespace(&client, "team").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "team");
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "storage"},
        "spec": {"hard": {
            "requests.storage": "3Gi",
            "persistentvolumeclaims": "5",
            "gold.storageclass.storage.k8s.io/requests.storage": "1Gi",
            "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
            "gpu.example.com.deviceclass.resource.k8s.io/devices": "2",
            "count/resourceclaims.resource.k8s.io": "4",
        }},
    }))
    .unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    used(&quotas, "storage", "requests.storage", "0").await;
    used(
        &quotas,
        "storage",
        "gpu.example.com.deviceclass.resource.k8s.io/devices",
        "0",
    )
    .await;

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "team");
    create(&claims, claim("a", None, "1Gi")).await;
    create(&claims, claim("b", Some("gold"), "512Mi")).await;
    used(&quotas, "storage", "requests.storage", "1536Mi").await;
    used(&quotas, "storage", "persistentvolumeclaims", "2").await;
    used(
        &quotas,
        "storage",
        "gold.storageclass.storage.k8s.io/requests.storage",
        "512Mi",
    )
    .await;
    used(
        &quotas,
        "storage",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
        "1",
    )
    .await;

    let (code, reason, message) = refused(&claims, claim("c", Some("gold"), "1Gi")).await;
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "persistentvolumeclaims \"c\" is forbidden: exceeded quota: storage, requested: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/requests.storage=1Gi, used: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/requests.storage=512Mi, limited: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/requests.storage=1Gi"
    );
    let message = refused(&claims, claim("d", None, "2Gi")).await.2;
    assert_eq!(
        message,
        "persistentvolumeclaims \"d\" is forbidden: exceeded quota: storage, requested: requests.storage=2Gi, used: requests.storage=1536Mi, limited: requests.storage=3Gi"
    );

    let resource_claims: Api<ResourceClaim> = Api::namespaced(client.clone(), "team");
    let gpu = |name: &str, count: u32| {
        json!({"metadata": {"name": name}, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": count}}]}}})
    };
    create(&resource_claims, gpu("one", 1)).await;
    used(
        &quotas,
        "storage",
        "gpu.example.com.deviceclass.resource.k8s.io/devices",
        "1",
    )
    .await;
    used(
        &quotas,
        "storage",
        "count/resourceclaims.resource.k8s.io",
        "1",
    )
    .await;
    let message = refused(&resource_claims, gpu("two", 2)).await.2;
    assert_eq!(
        message,
        "resourceclaims.resource.k8s.io \"two\" is forbidden: exceeded quota: storage, requested: gpu.example.com.deviceclass.resource.k8s.io/devices=2, used: gpu.example.com.deviceclass.resource.k8s.io/devices=1, limited: gpu.example.com.deviceclass.resource.k8s.io/devices=2"
    );
}

/// Services get kube's defaults and a cluster IP from the service CIDR (node ports for
/// `NodePort`), kept when an update leaves them out and refused when taken; every cluster has
/// kube's system PriorityClasses, and user classes are checked as kube checks them.
#[tokio::test]
async fn services_get_cluster_ips_and_clusters_have_system_priority_classes() {
    use k8s_openapi::api::core::v1::Service;
    use k8s_openapi::api::scheduling::v1::PriorityClass;

    let server = TlsServer::start().await;
    let client = server.client().await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let web = create(
        &services,
        json!({"metadata": {"name": "web"}, "spec": {
        "type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    )
    .await;
    let ip: std::net::Ipv4Addr = web["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
    assert_eq!(ip.octets()[0], 10);
    assert!((96..112).contains(&ip.octets()[1]), "{ip}");
    assert_eq!(web["spec"]["clusterIPs"], json!([ip.to_string()]));
    assert_eq!(web["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(web["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(web["spec"]["sessionAffinity"], "None");
    assert_eq!(web["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(web["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(web["status"], json!({"loadBalancer": {}}));
    let node_port = web["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&node_port));
    // A replace without the allocated values keeps them.
    let mut again = web.clone();
    again["spec"].as_object_mut().unwrap().remove("clusterIP");
    again["spec"].as_object_mut().unwrap().remove("clusterIPs");
    again["spec"]["ports"][0]
        .as_object_mut()
        .unwrap()
        .remove("nodePort");
    let again: Service = serde_json::from_value(again).unwrap();
    let kept = services
        .replace("web", &PostParams::default(), &again)
        .await
        .unwrap();
    let kept = serde_json::to_value(kept).unwrap();
    assert_eq!(kept["spec"]["clusterIP"], web["spec"]["clusterIP"]);
    assert_eq!(kept["spec"]["ports"][0]["nodePort"], node_port);
    // The kubernetes Service holds 10.96.0.1.
    assert_eq!(
        refused(
            &services,
            json!({"metadata": {"name": "clash"}, "spec": {
            "clusterIP": "10.96.0.1", "ports": [{"port": 80}]}})
        )
        .await
        .2,
        "Service \"clash\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.1\"]: failed to allocate IP 10.96.0.1: provided IP is already allocated"
    );
    let headless = create(
        &services,
        json!({"metadata": {"name": "db"}, "spec": {
        "clusterIP": "None", "ports": [{"port": 5432}]}}),
    )
    .await;
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));

    let classes: Api<PriorityClass> = Api::all(client.clone());
    let critical = classes.get("system-cluster-critical").await.unwrap();
    assert_eq!(critical.value, 2_000_000_000);
    assert_eq!(
        critical.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );
    assert_eq!(
        classes.get("system-node-critical").await.unwrap().value,
        2_000_001_000
    );
    let mine = create(
        &classes,
        json!({"metadata": {"name": "batch-low"}, "value": 100}),
    )
    .await;
    assert_eq!(mine["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(
        refused(
            &classes,
            json!({"metadata": {"name": "system-mine"}, "value": 1})
        )
        .await
        .2,
        "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
    );
}

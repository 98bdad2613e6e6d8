//! Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) for `kubectl get`:
//! printer columns of custom resources and kube-like columns for the built-ins.

use serde_json::{Value, json};

use crate::meta;
use crate::registry::{BuiltinKind, PrinterColumn, ResourceInfo};

/// Human-readable age, the way kubectl shows it (`5s`, `3m2s`, `4h`, `2d3h`...).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{}h", hours / 24, h)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{}d", hours / 24 / 365, dy)
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn age_of(ts: &str) -> Value {
    match meta::parse_time(ts) {
        Some(t) => {
            let secs = jiff::Timestamp::now().as_second() - t.as_second();
            json!(human_duration(secs))
        }
        None => json!("<unknown>"),
    }
}

fn age(obj: &Value) -> Value {
    age_of(meta::meta_str(obj, "creationTimestamp"))
}

struct Col {
    name: &'static str,
    ty: &'static str,
    format: &'static str,
    priority: i64,
    description: &'static str,
}

const fn col(
    name: &'static str,
    ty: &'static str,
    priority: i64,
    description: &'static str,
) -> Col {
    Col {
        name,
        ty,
        format: "",
        priority,
        description,
    }
}

const NAME: Col = Col {
    name: "Name",
    ty: "string",
    format: "name",
    priority: 0,
    description: "Name must be unique within a namespace.",
};
const AGE: Col = col(
    "Age",
    "string",
    0,
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
);
const CREATED_AT: Col = Col {
    name: "Created At",
    ty: "date",
    format: "",
    priority: 0,
    description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
};

fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn int(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

fn count(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

fn or_none(s: String) -> Value {
    if s.is_empty() {
        json!("<none>")
    } else {
        json!(s)
    }
}

fn containers_images(obj: &Value, pointer: &str) -> (String, String) {
    let containers = obj
        .pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<String> = containers.iter().map(|c| s(c.get("name"))).collect();
    let images: Vec<String> = containers.iter().map(|c| s(c.get("image"))).collect();
    (names.join(","), images.join(","))
}

fn selector_string(v: Option<&Value>) -> String {
    v.and_then(|s| ocm_apiserver_selector::LabelSelector::from_structured(s).ok())
        .map(|s| s.to_string())
        .unwrap_or_default()
}

use crate::meta::condition_true;

fn builtin_columns(kind: BuiltinKind) -> Vec<Col> {
    use BuiltinKind::*;
    match kind {
        Namespace => vec![
            NAME,
            col("Status", "string", 0, "The status of the namespace"),
            AGE,
        ],
        Secret => vec![
            NAME,
            col("Type", "string", 0, "The type of the secret"),
            col("Data", "string", 0, "The number of entries in the secret"),
            AGE,
        ],
        ConfigMap => vec![
            NAME,
            col(
                "Data",
                "string",
                0,
                "The number of entries in the configmap",
            ),
            AGE,
        ],
        ServiceAccount => vec![
            NAME,
            col("Secrets", "string", 0, "The number of secrets"),
            AGE,
        ],
        CoreEvent | EventsEvent => vec![
            col("Last Seen", "string", 0, "Time when last event occurred"),
            col("Type", "string", 0, "Type of this event"),
            col("Reason", "string", 0, "Reason is why the action was taken"),
            col("Object", "string", 0, "The object this event is about"),
            col(
                "Subobject",
                "string",
                1,
                "The subobject this event is about",
            ),
            col("Source", "string", 1, "The component reporting this event"),
            col(
                "Message",
                "string",
                0,
                "A human-readable description of the status of this operation",
            ),
            col("First Seen", "string", 1, "Time when first event occurred"),
            col(
                "Count",
                "string",
                1,
                "The number of times this event has occurred",
            ),
            Col {
                priority: 1,
                ..NAME
            },
        ],
        Node => vec![
            NAME,
            col("Status", "string", 0, "The status of the node"),
            col("Roles", "string", 0, "The roles of the node"),
            AGE,
            col(
                "Version",
                "string",
                0,
                "Kubelet Version reported by the node",
            ),
            col("Internal-IP", "string", 1, "List of internal IPs"),
            col("External-IP", "string", 1, "List of external IPs"),
            col("OS-Image", "string", 1, "OS image"),
            col("Kernel-Version", "string", 1, "Kernel version"),
            col("Container-Runtime", "string", 1, "Container runtime"),
        ],
        Pod => vec![
            NAME,
            col(
                "Ready",
                "string",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            col(
                "Status",
                "string",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            col(
                "Restarts",
                "string",
                0,
                "The number of times the containers in this pod have been restarted.",
            ),
            AGE,
            col("IP", "string", 1, "IP address allocated to the pod."),
            col("Node", "string", 1, "Name of the Node the Pod is bound to."),
            col(
                "Nominated Node",
                "string",
                1,
                "Name of the node that the pod is nominated to.",
            ),
            col(
                "Readiness Gates",
                "string",
                1,
                "The readiness gates of the pod.",
            ),
        ],
        Service => vec![
            NAME,
            col("Type", "string", 0, "The type of service."),
            col("Cluster-IP", "string", 0, "The cluster IP address."),
            col("External-IP", "string", 0, "The external IP address."),
            col("Port(s)", "string", 0, "The ports of the service."),
            AGE,
            col("Selector", "string", 1, "The selector of the service."),
        ],
        PodTemplate => vec![
            NAME,
            col(
                "Containers",
                "string",
                0,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                0,
                "Images referenced by each container in the template.",
            ),
            col(
                "Pod Labels",
                "string",
                0,
                "The labels for the pod template.",
            ),
        ],
        Deployment => vec![
            NAME,
            col("Ready", "string", 0, "Number of the pod with ready state"),
            col(
                "Up-to-date",
                "string",
                0,
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            col(
                "Available",
                "string",
                0,
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            AGE,
            col(
                "Containers",
                "string",
                1,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector for pods."),
        ],
        ReplicaSet => vec![
            NAME,
            col("Desired", "integer", 0, "Number of desired pods."),
            col("Current", "integer", 0, "Number of actual replicas."),
            col("Ready", "integer", 0, "The number of ready replicas."),
            AGE,
            col(
                "Containers",
                "string",
                1,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector for pods."),
        ],
        StatefulSet => vec![
            NAME,
            col("Ready", "string", 0, "Number of the pod with ready state"),
            AGE,
            col(
                "Containers",
                "string",
                1,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
        ],
        DaemonSet => vec![
            NAME,
            col(
                "Desired",
                "integer",
                0,
                "The total number of nodes that should be running the daemon pod.",
            ),
            col(
                "Current",
                "integer",
                0,
                "The number of nodes that are running at least 1 daemon pod.",
            ),
            col("Ready", "integer", 0, "The number of ready daemon pods."),
            col(
                "Up-to-date",
                "integer",
                0,
                "The total number of nodes that are running updated daemon pod.",
            ),
            col(
                "Available",
                "integer",
                0,
                "The number of available daemon pods.",
            ),
            col("Node Selector", "string", 0, "Node selector."),
            AGE,
            col(
                "Containers",
                "string",
                1,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector for pods."),
        ],
        Job => vec![
            NAME,
            col("Status", "string", 0, "Status of the job."),
            col(
                "Completions",
                "string",
                0,
                "The desired number of successfully finished pods the job should be run with.",
            ),
            col(
                "Duration",
                "string",
                0,
                "Time required to complete the job.",
            ),
            AGE,
            col(
                "Containers",
                "string",
                1,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector for pods."),
        ],
        CronJob => vec![
            NAME,
            col("Schedule", "string", 0, "The schedule in Cron format."),
            col(
                "Timezone",
                "string",
                0,
                "The time zone name for the given schedule.",
            ),
            col(
                "Suspend",
                "boolean",
                0,
                "Whether subsequent executions are suspended.",
            ),
            col(
                "Active",
                "integer",
                0,
                "The number of currently running jobs.",
            ),
            col(
                "Last Schedule",
                "string",
                0,
                "When the job was last scheduled.",
            ),
            AGE,
            col(
                "Containers",
                "string",
                1,
                "Names of each container in the template.",
            ),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector for pods."),
        ],
        ValidatingWebhookConfiguration | MutatingWebhookConfiguration => vec![
            NAME,
            col(
                "Webhooks",
                "integer",
                0,
                "Webhooks indicates the number of webhooks in the configuration.",
            ),
            AGE,
        ],
        ValidatingAdmissionPolicy => vec![
            NAME,
            col(
                "Validations",
                "integer",
                0,
                "Validations indicates the number of validation rules defined in this configuration",
            ),
            col(
                "ParamKind",
                "string",
                0,
                "ParamKind specifies the kind of resources used to parameterize this policy",
            ),
            AGE,
        ],
        ValidatingAdmissionPolicyBinding => vec![
            NAME,
            col(
                "PolicyName",
                "string",
                0,
                "PolicyName indicates the policy definition which the policy binding binded to",
            ),
            col(
                "ParamRef",
                "string",
                0,
                "ParamRef indicates the param resource which sets the configration param",
            ),
            AGE,
        ],
        Lease => vec![
            NAME,
            col("Holder", "string", 0, "The holder of the lease."),
            AGE,
        ],
        ResourceQuota => vec![
            NAME,
            AGE,
            col(
                "Request",
                "string",
                0,
                "Used over hard, for what is not a limit.",
            ),
            col("Limit", "string", 0, "Used over hard, for limits."),
        ],
        FlowSchema => vec![
            NAME,
            col(
                "PriorityLevel",
                "string",
                0,
                "The priority level requests go to.",
            ),
            col(
                "MatchingPrecedence",
                "string",
                0,
                "Lower values are matched first.",
            ),
            col(
                "DistinguisherMethod",
                "string",
                0,
                "How flows are told apart.",
            ),
            AGE,
            col(
                "MissingPL",
                "string",
                0,
                "Whether the priority level does not exist.",
            ),
        ],
        PriorityLevelConfiguration => vec![
            NAME,
            col("Type", "string", 0, "Exempt or Limited."),
            col(
                "NominalConcurrencyShares",
                "string",
                0,
                "Share of the concurrency limit.",
            ),
            col("Queues", "string", 0, "Number of queues."),
            col(
                "HandSize",
                "string",
                0,
                "Queues a flow is shuffle-sharded over.",
            ),
            col(
                "QueueLengthLimit",
                "string",
                0,
                "Requests a queue may hold.",
            ),
            AGE,
        ],
        CertificateSigningRequest => vec![
            NAME,
            AGE,
            col("SignerName", "string", 0, "The name of the signer."),
            col(
                "Requestor",
                "string",
                0,
                "Name of the user which created the request.",
            ),
            col(
                "RequestedDuration",
                "string",
                0,
                "Requested duration of the issued certificate.",
            ),
            col("Condition", "string", 0, "The condition of the request."),
        ],
        RoleBinding | ClusterRoleBinding => vec![
            NAME,
            col("Role", "string", 0, "Role of the binding."),
            AGE,
            col("Users", "string", 1, "Users in the binding."),
            col("Groups", "string", 1, "Groups in the binding."),
            col(
                "ServiceAccounts",
                "string",
                1,
                "ServiceAccounts in the binding.",
            ),
        ],
        PersistentVolumeClaim => vec![
            NAME,
            col(
                "Status",
                "string",
                0,
                "Phase represents the current phase of PersistentVolumeClaim.",
            ),
            col(
                "Volume",
                "string",
                0,
                "VolumeName is the binding reference to the PersistentVolume backing this claim.",
            ),
            col(
                "Capacity",
                "string",
                0,
                "Capacity represents the actual resources of the underlying volume.",
            ),
            col(
                "Access Modes",
                "string",
                0,
                "AccessModes contains the desired access modes the volume should have.",
            ),
            col(
                "StorageClass",
                "string",
                0,
                "StorageClassName is the name of the StorageClass required by the claim.",
            ),
            col(
                "VolumeAttributesClass",
                "string",
                0,
                "VolumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim.",
            ),
            AGE,
            col(
                "VolumeMode",
                "string",
                1,
                "volumeMode defines what type of volume is required by the claim.",
            ),
        ],
        PersistentVolume => vec![
            NAME,
            col(
                "Capacity",
                "string",
                0,
                "capacity is the description of the persistent volume's resources and capacity.",
            ),
            col(
                "Access Modes",
                "string",
                0,
                "accessModes contains all ways the volume can be mounted.",
            ),
            col(
                "Reclaim Policy",
                "string",
                0,
                "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
            ),
            col(
                "Status",
                "string",
                0,
                "phase indicates if a volume is available, bound to a claim, or released by a claim.",
            ),
            col(
                "Claim",
                "string",
                0,
                "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
            ),
            col(
                "StorageClass",
                "string",
                0,
                "storageClassName is the name of StorageClass to which this persistent volume belongs.",
            ),
            col(
                "VolumeAttributesClass",
                "string",
                0,
                "Name of VolumeAttributesClass to which this persistent volume belongs.",
            ),
            col(
                "Reason",
                "string",
                0,
                "reason is a brief CamelCase string that describes any failure.",
            ),
            AGE,
            col(
                "VolumeMode",
                "string",
                1,
                "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
            ),
        ],
        StorageClass => vec![
            NAME,
            col(
                "Provisioner",
                "string",
                0,
                "provisioner indicates the type of the provisioner.",
            ),
            col(
                "ReclaimPolicy",
                "string",
                0,
                "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.",
            ),
            col(
                "VolumeBindingMode",
                "string",
                0,
                "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.",
            ),
            col(
                "AllowVolumeExpansion",
                "string",
                0,
                "allowVolumeExpansion shows whether the storage class allow volume expand.",
            ),
            AGE,
        ],
        PodDisruptionBudget => vec![
            NAME,
            col(
                "Min Available",
                "string",
                0,
                "The minimum number of pods that must be available simultaneously. This can be either an integer or a string specifying a percentage, e.g. \"28%\".",
            ),
            col(
                "Max Unavailable",
                "string",
                0,
                "The maximum number of pods that may be unavailable. This can be either an integer or a string specifying a percentage, e.g. \"28%\".",
            ),
            col(
                "Allowed Disruptions",
                "integer",
                0,
                "Calculated number of pods that may be disrupted at this time.",
            ),
            AGE,
        ],
        Ingress => vec![
            NAME,
            col(
                "Class",
                "string",
                0,
                "The name of the IngressClass resource.",
            ),
            col(
                "Hosts",
                "string",
                0,
                "Hosts that incoming requests are matched against before the ingress rule.",
            ),
            col(
                "Address",
                "string",
                0,
                "Address is a list containing ingress points for the load-balancer.",
            ),
            col(
                "Ports",
                "string",
                0,
                "Ports of TLS configurations that open.",
            ),
            AGE,
        ],
        IngressClass => vec![
            NAME,
            col(
                "Controller",
                "string",
                0,
                "Controller that is responsible for handling this class.",
            ),
            col(
                "Parameters",
                "string",
                0,
                "A reference to a resource with additional parameters.",
            ),
            AGE,
        ],
        NetworkPolicy => vec![
            NAME,
            col(
                "Pod-Selector",
                "string",
                0,
                "podSelector selects the pods to which this NetworkPolicy object applies.",
            ),
            AGE,
        ],
        HorizontalPodAutoscaler => vec![
            NAME,
            col(
                "Reference",
                "string",
                0,
                "The reference to the resource being autoscaled.",
            ),
            col(
                "Targets",
                "string",
                0,
                "The current and target values of the metrics used to scale.",
            ),
            col(
                "MinPods",
                "string",
                0,
                "Lower limit for the number of pods that can be set by the autoscaler, default 1.",
            ),
            col(
                "MaxPods",
                "string",
                0,
                "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.",
            ),
            col(
                "Replicas",
                "string",
                0,
                "Current number of replicas of pods managed by this autoscaler.",
            ),
            AGE,
        ],
        ResourceClaim => vec![
            NAME,
            col(
                "State",
                "string",
                0,
                "A summary of the current state (allocated, pending, reserved, etc.).",
            ),
            AGE,
        ],
        DeviceClass => vec![NAME, AGE],
        PriorityClass => vec![
            NAME,
            col(
                "Value",
                "integer",
                0,
                "value represents the integer value of this priority class.",
            ),
            col(
                "Global-Default",
                "boolean",
                0,
                "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
            ),
            AGE,
            col(
                "PreemptionPolicy",
                "string",
                0,
                "preemptionPolicy is the Policy for preempting pods with lower priority.",
            ),
        ],
        APIService => vec![
            NAME,
            col(
                "Service",
                "string",
                0,
                "The reference to the service that hosts this API endpoint.",
            ),
            col(
                "Available",
                "string",
                0,
                "Whether this service is available.",
            ),
            AGE,
        ],
        _ => vec![NAME, CREATED_AT],
    }
}

fn builtin_cells(kind: BuiltinKind, obj: &Value) -> Vec<Value> {
    use BuiltinKind::*;
    let name = json!(meta::meta_str(obj, "name"));
    match kind {
        Namespace => vec![name, json!(s(obj.pointer("/status/phase"))), age(obj)],
        Secret => vec![
            name,
            json!(s(obj.get("type"))),
            json!(count(obj.get("data"))),
            age(obj),
        ],
        ConfigMap => vec![
            name,
            json!(count(obj.get("data")) + count(obj.get("binaryData"))),
            age(obj),
        ],
        ServiceAccount => vec![name, json!(count(obj.get("secrets"))), age(obj)],
        CoreEvent | EventsEvent => {
            let (involved, source) = if kind == CoreEvent {
                (
                    obj.get("involvedObject"),
                    s(obj.pointer("/source/component")),
                )
            } else {
                (obj.get("regarding"), s(obj.get("reportingController")))
            };
            let object = involved
                .map(|o| {
                    format!(
                        "{}/{}",
                        s(o.get("kind")).to_ascii_lowercase(),
                        s(o.get("name"))
                    )
                })
                .unwrap_or_default();
            let last = s(obj.get("lastTimestamp"));
            let last = if last.is_empty() {
                s(obj.get("eventTime"))
            } else {
                last
            };
            let last_seen = if last.is_empty() {
                age(obj)
            } else {
                age_of(&last)
            };
            let first = s(obj.get("firstTimestamp"));
            let first_seen = if first.is_empty() {
                age(obj)
            } else {
                age_of(&first)
            };
            let message = if kind == CoreEvent {
                s(obj.get("message"))
            } else {
                s(obj.get("note"))
            };
            vec![
                last_seen,
                json!(s(obj.get("type"))),
                json!(s(obj.get("reason"))),
                json!(object),
                json!(s(involved.and_then(|o| o.get("fieldPath")))),
                json!(source),
                json!(message),
                first_seen,
                json!(int(obj.get("count")).max(1)),
                name,
            ]
        }
        Node => {
            let ready = if condition_true(obj, "Ready") {
                "Ready"
            } else {
                "NotReady"
            };
            let mut status = ready.to_owned();
            if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
                status.push_str(",SchedulingDisabled");
            }
            let roles: Vec<String> = meta::labels(obj)
                .keys()
                .filter_map(|k| {
                    k.strip_prefix("node-role.kubernetes.io/")
                        .map(str::to_owned)
                })
                .collect();
            let addr = |ty: &str| {
                obj.pointer("/status/addresses")
                    .and_then(Value::as_array)
                    .and_then(|a| {
                        a.iter()
                            .find(|x| x.get("type").and_then(Value::as_str) == Some(ty))
                    })
                    .map(|x| s(x.get("address")))
                    .unwrap_or_default()
            };
            vec![
                name,
                json!(status),
                or_none(roles.join(",")),
                age(obj),
                json!(s(obj.pointer("/status/nodeInfo/kubeletVersion"))),
                or_none(addr("InternalIP")),
                or_none(addr("ExternalIP")),
                json!(s(obj.pointer("/status/nodeInfo/osImage"))),
                json!(s(obj.pointer("/status/nodeInfo/kernelVersion"))),
                json!(s(obj.pointer("/status/nodeInfo/containerRuntimeVersion"))),
            ]
        }
        Pod => {
            let total = count(obj.pointer("/spec/containers"));
            let statuses = obj
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let ready = statuses
                .iter()
                .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                .count();
            let restarts: i64 = statuses.iter().map(|c| int(c.get("restartCount"))).sum();
            let mut status = s(obj.pointer("/status/reason"));
            if status.is_empty() {
                status = s(obj.pointer("/status/phase"));
            }
            if meta::is_deleting(obj) {
                status = "Terminating".into();
            }
            vec![
                name,
                json!(format!("{ready}/{total}")),
                json!(status),
                json!(restarts.to_string()),
                age(obj),
                or_none(s(obj.pointer("/status/podIP"))),
                or_none(s(obj.pointer("/spec/nodeName"))),
                or_none(s(obj.pointer("/status/nominatedNodeName"))),
                json!("<none>"),
            ]
        }
        Service => {
            let ports: Vec<String> = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                            match p.get("nodePort").and_then(Value::as_i64) {
                                Some(np) => format!("{}:{}/{}", int(p.get("port")), np, proto),
                                None => format!("{}/{}", int(p.get("port")), proto),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            let ty = match s(obj.pointer("/spec/type")) {
                t if t.is_empty() => "ClusterIP".to_owned(),
                t => t,
            };
            let selector: Vec<String> = obj
                .pointer("/spec/selector")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", s(Some(v))))
                        .collect()
                })
                .unwrap_or_default();
            vec![
                name,
                json!(ty),
                or_none(s(obj.pointer("/spec/clusterIP"))),
                or_none(String::new()),
                or_none(ports.join(",")),
                age(obj),
                or_none(selector.join(",")),
            ]
        }
        PodTemplate => {
            let (c, i) = containers_images(obj, "/template/spec/containers");
            // labels.FormatLabels: sorted by key.
            let mut labels: Vec<(&String, String)> = obj
                .pointer("/template/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| m.iter().map(|(k, v)| (k, s(Some(v)))).collect())
                .unwrap_or_default();
            labels.sort();
            let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            vec![name, json!(c), json!(i), or_none(labels.join(","))]
        }
        Deployment => {
            let (c, i) = containers_images(obj, "/spec/template/spec/containers");
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    int(obj.pointer("/status/readyReplicas")),
                    int(obj.pointer("/spec/replicas"))
                )),
                json!(int(obj.pointer("/status/updatedReplicas"))),
                json!(int(obj.pointer("/status/availableReplicas"))),
                age(obj),
                json!(c),
                json!(i),
                json!(selector_string(obj.pointer("/spec/selector"))),
            ]
        }
        ReplicaSet => {
            let (c, i) = containers_images(obj, "/spec/template/spec/containers");
            vec![
                name,
                json!(int(obj.pointer("/spec/replicas"))),
                json!(int(obj.pointer("/status/replicas"))),
                json!(int(obj.pointer("/status/readyReplicas"))),
                age(obj),
                json!(c),
                json!(i),
                json!(selector_string(obj.pointer("/spec/selector"))),
            ]
        }
        StatefulSet => {
            let (c, i) = containers_images(obj, "/spec/template/spec/containers");
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    int(obj.pointer("/status/readyReplicas")),
                    int(obj.pointer("/spec/replicas"))
                )),
                age(obj),
                json!(c),
                json!(i),
            ]
        }
        DaemonSet => {
            let (c, i) = containers_images(obj, "/spec/template/spec/containers");
            let node_selector: Vec<String> = obj
                .pointer("/spec/template/spec/nodeSelector")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", s(Some(v))))
                        .collect()
                })
                .unwrap_or_default();
            vec![
                name,
                json!(int(obj.pointer("/status/desiredNumberScheduled"))),
                json!(int(obj.pointer("/status/currentNumberScheduled"))),
                json!(int(obj.pointer("/status/numberReady"))),
                json!(int(obj.pointer("/status/updatedNumberScheduled"))),
                json!(int(obj.pointer("/status/numberAvailable"))),
                or_none(node_selector.join(",")),
                age(obj),
                json!(c),
                json!(i),
                json!(selector_string(obj.pointer("/spec/selector"))),
            ]
        }
        Job => {
            let (c, i) = containers_images(obj, "/spec/template/spec/containers");
            let completions = obj.pointer("/spec/completions").and_then(Value::as_i64);
            let succeeded = int(obj.pointer("/status/succeeded"));
            let comp = match completions {
                Some(n) => format!("{succeeded}/{n}"),
                None => format!("{succeeded}/1"),
            };
            let status = if condition_true(obj, "Complete") {
                "Complete"
            } else if condition_true(obj, "Failed") {
                "Failed"
            } else if meta::is_deleting(obj) {
                "Terminating"
            } else {
                "Running"
            };
            let duration = match (
                s(obj.pointer("/status/startTime")),
                s(obj.pointer("/status/completionTime")),
            ) {
                (start, end) if !start.is_empty() && !end.is_empty() => {
                    match (meta::parse_time(&start), meta::parse_time(&end)) {
                        (Some(a), Some(b)) => human_duration(b.as_second() - a.as_second()),
                        _ => String::new(),
                    }
                }
                (start, _) if !start.is_empty() => match meta::parse_time(&start) {
                    Some(a) => human_duration(jiff::Timestamp::now().as_second() - a.as_second()),
                    None => String::new(),
                },
                _ => String::new(),
            };
            vec![
                name,
                json!(status),
                json!(comp),
                json!(duration),
                age(obj),
                json!(c),
                json!(i),
                json!(selector_string(obj.pointer("/spec/selector"))),
            ]
        }
        CronJob => {
            let (c, i) = containers_images(obj, "/spec/jobTemplate/spec/template/spec/containers");
            let last = s(obj.pointer("/status/lastScheduleTime"));
            vec![
                name,
                json!(s(obj.pointer("/spec/schedule"))),
                or_none(s(obj.pointer("/spec/timeZone"))),
                json!(
                    obj.pointer("/spec/suspend")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                json!(count(obj.pointer("/status/active"))),
                if last.is_empty() {
                    json!("<none>")
                } else {
                    age_of(&last)
                },
                age(obj),
                json!(c),
                json!(i),
                json!(selector_string(
                    obj.pointer("/spec/jobTemplate/spec/selector")
                )),
            ]
        }
        ValidatingWebhookConfiguration | MutatingWebhookConfiguration => {
            vec![name, json!(count(obj.get("webhooks"))), age(obj)]
        }
        ValidatingAdmissionPolicy => {
            let param_kind = match obj.pointer("/spec/paramKind") {
                Some(pk) if pk.is_object() => {
                    format!("{}/{}", s(pk.get("apiVersion")), s(pk.get("kind")))
                }
                _ => "<unset>".to_owned(),
            };
            vec![
                name,
                json!(count(obj.pointer("/spec/validations"))),
                json!(param_kind),
                age(obj),
            ]
        }
        ValidatingAdmissionPolicyBinding => {
            let param_ref = match obj.pointer("/spec/paramRef") {
                Some(pr) if !s(pr.get("name")).is_empty() => {
                    let ns = s(pr.get("namespace"));
                    let ns = if ns.is_empty() { "*".to_owned() } else { ns };
                    format!("{ns}/{}", s(pr.get("name")))
                }
                Some(pr) if pr.get("selector").is_some_and(|v| !v.is_null()) => {
                    selector_string(pr.get("selector"))
                }
                _ => "<unset>".to_owned(),
            };
            vec![
                name,
                json!(s(obj.pointer("/spec/policyName"))),
                json!(param_ref),
                age(obj),
            ]
        }
        Lease => vec![
            name,
            or_none(s(obj.pointer("/spec/holderIdentity"))),
            age(obj),
        ],
        ResourceQuota => {
            let hard = obj.pointer("/status/hard").and_then(Value::as_object);
            let used = obj.pointer("/status/used");
            let mut requests = Vec::new();
            let mut limits = Vec::new();
            for (key, limit) in hard.into_iter().flatten() {
                let now = s(used.and_then(|u| u.get(key)));
                let text = format!(
                    "{key}: {}/{}",
                    if now.is_empty() { "0".into() } else { now },
                    s(Some(limit))
                );
                if key.starts_with("limits.") {
                    limits.push(text);
                } else {
                    requests.push(text);
                }
            }
            vec![
                name,
                age(obj),
                json!(requests.join(", ")),
                json!(limits.join(", ")),
            ]
        }
        FlowSchema => {
            let distinguisher = obj
                .pointer("/spec/distinguisherMethod/type")
                .map(|v| s(Some(v)))
                .unwrap_or_else(|| "*".into());
            let dangling = obj
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| s(c.get("type")) == "Dangling"))
                .map(|c| s(c.get("status")))
                .unwrap_or_else(|| "?".into());
            vec![
                name,
                json!(s(obj.pointer("/spec/priorityLevelConfiguration/name"))),
                json!(s(obj.pointer("/spec/matchingPrecedence"))),
                json!(distinguisher),
                age(obj),
                json!(dangling),
            ]
        }
        PriorityLevelConfiguration => {
            let limited = obj.pointer("/spec/limited");
            let queuing = limited
                .and_then(|l| l.pointer("/limitResponse"))
                .filter(|r| s(r.get("type")) == "Queue")
                .and_then(|r| r.get("queuing"));
            let queued = |field: &str| or_none(s(queuing.and_then(|q| q.get(field))));
            vec![
                name,
                json!(s(obj.pointer("/spec/type"))),
                or_none(s(limited.and_then(|l| l.get("nominalConcurrencyShares")))),
                queued("queues"),
                queued("handSize"),
                queued("queueLengthLimit"),
                age(obj),
            ]
        }
        CertificateSigningRequest => {
            let mut conditions: Vec<String> = obj
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .map(|cs| cs.iter().map(|c| s(c.get("type"))).collect())
                .unwrap_or_default();
            if obj
                .pointer("/status/certificate")
                .is_some_and(|c| !c.is_null())
            {
                conditions.push("Issued".into());
            }
            let condition = if conditions.is_empty() {
                "Pending".to_owned()
            } else {
                conditions.join(",")
            };
            let duration = obj
                .pointer("/spec/expirationSeconds")
                .and_then(Value::as_i64)
                .map(human_duration)
                .unwrap_or_else(|| "<none>".into());
            vec![
                name,
                age(obj),
                json!(s(obj.pointer("/spec/signerName"))),
                json!(s(obj.pointer("/spec/username"))),
                json!(duration),
                json!(condition),
            ]
        }
        RoleBinding | ClusterRoleBinding => {
            let role = format!(
                "{}/{}",
                s(obj.pointer("/roleRef/kind")),
                s(obj.pointer("/roleRef/name"))
            );
            let subjects = obj
                .get("subjects")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let pick = |k: &str| -> String {
                subjects
                    .iter()
                    .filter(|x| x.get("kind").and_then(Value::as_str) == Some(k))
                    .map(|x| {
                        if k == "ServiceAccount" {
                            format!("{}/{}", s(x.get("namespace")), s(x.get("name")))
                        } else {
                            s(x.get("name"))
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            vec![
                name,
                json!(role),
                age(obj),
                json!(pick("User")),
                json!(pick("Group")),
                json!(pick("ServiceAccount")),
            ]
        }
        PersistentVolumeClaim => {
            let bound = !s(obj.pointer("/spec/volumeName")).is_empty();
            let (capacity, modes) = if bound {
                (
                    s(obj.pointer("/status/capacity/storage")),
                    access_modes(obj.pointer("/status/accessModes")),
                )
            } else {
                (String::new(), String::new())
            };
            vec![
                name,
                json!(phase_or_terminating(obj)),
                json!(s(obj.pointer("/spec/volumeName"))),
                json!(capacity),
                json!(modes),
                json!(storage_class(obj)),
                json!(or_unset(s(obj.pointer("/spec/volumeAttributesClassName")))),
                age(obj),
                json!(or_unset(s(obj.pointer("/spec/volumeMode")))),
            ]
        }
        PersistentVolume => {
            let claim = obj
                .pointer("/spec/claimRef")
                .filter(|c| c.is_object())
                .map(|c| format!("{}/{}", s(c.get("namespace")), s(c.get("name"))))
                .unwrap_or_default();
            vec![
                name,
                json!(s(obj.pointer("/spec/capacity/storage"))),
                json!(access_modes(obj.pointer("/spec/accessModes"))),
                json!(s(obj.pointer("/spec/persistentVolumeReclaimPolicy"))),
                json!(phase_or_terminating(obj)),
                json!(claim),
                json!(storage_class(obj)),
                json!(or_unset(s(obj.pointer("/spec/volumeAttributesClassName")))),
                json!(s(obj.pointer("/status/reason"))),
                age(obj),
                json!(or_unset(s(obj.pointer("/spec/volumeMode")))),
            ]
        }
        StorageClass => {
            let annotation =
                |k: &str| obj.pointer(&format!("/metadata/annotations/{}", k.replace('/', "~1")));
            let default = [
                "storageclass.kubernetes.io/is-default-class",
                "storageclass.beta.kubernetes.io/is-default-class",
            ]
            .iter()
            .any(|k| annotation(k).and_then(Value::as_str) == Some("true"));
            let shown = if default {
                format!("{} (default)", meta::meta_str(obj, "name"))
            } else {
                meta::meta_str(obj, "name").to_string()
            };
            let or = |v: String, d: &str| if v.is_empty() { d.to_string() } else { v };
            vec![
                json!(shown),
                json!(s(obj.get("provisioner"))),
                json!(or(s(obj.get("reclaimPolicy")), "Delete")),
                json!(or(s(obj.get("volumeBindingMode")), "Immediate")),
                json!(
                    obj.get("allowVolumeExpansion")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                age(obj),
            ]
        }
        PodDisruptionBudget => {
            let budget = |k: &str| match obj.pointer(&format!("/spec/{k}")) {
                None | Some(Value::Null) => "N/A".to_string(),
                v => s(v),
            };
            vec![
                name,
                json!(budget("minAvailable")),
                json!(budget("maxUnavailable")),
                json!(int(obj.pointer("/status/disruptionsAllowed"))),
                age(obj),
            ]
        }
        Ingress => {
            let rules = obj
                .pointer("/spec/rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let hosts: Vec<String> = rules
                .iter()
                .map(|r| s(r.get("host")))
                .filter(|h| !h.is_empty())
                .collect();
            let mut shown = hosts.iter().take(3).cloned().collect::<Vec<_>>().join(",");
            if rules.len() > 3 {
                shown = format!("{shown} + {} more...", rules.len() - 3);
            }
            if shown.is_empty() {
                shown = "*".into();
            }
            let mut addresses: Vec<String> = obj
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|i| {
                            let ip = s(i.get("ip"));
                            if ip.is_empty() {
                                s(i.get("hostname"))
                            } else {
                                ip
                            }
                        })
                        .filter(|a| !a.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            addresses.sort();
            addresses.dedup();
            let ports = if count(obj.pointer("/spec/tls")) > 0 {
                "80, 443"
            } else {
                "80"
            };
            vec![
                name,
                or_none(s(obj.pointer("/spec/ingressClassName"))),
                json!(shown),
                json!(addresses.join(",")),
                json!(ports),
                age(obj),
            ]
        }
        IngressClass => {
            let parameters = obj
                .pointer("/spec/parameters")
                .filter(|p| p.is_object())
                .map(|p| {
                    let group = s(p.get("apiGroup"));
                    let kind = if group.is_empty() {
                        s(p.get("kind"))
                    } else {
                        format!("{}.{group}", s(p.get("kind")))
                    };
                    format!("{kind}/{}", s(p.get("name")))
                })
                .unwrap_or_else(|| "<none>".into());
            vec![
                name,
                json!(s(obj.pointer("/spec/controller"))),
                json!(parameters),
                age(obj),
            ]
        }
        NetworkPolicy => vec![
            name,
            or_none(selector_string(obj.pointer("/spec/podSelector"))),
            age(obj),
        ],
        HorizontalPodAutoscaler => {
            let reference = format!(
                "{}/{}",
                s(obj.pointer("/spec/scaleTargetRef/kind")),
                s(obj.pointer("/spec/scaleTargetRef/name"))
            );
            let min = obj
                .pointer("/spec/minReplicas")
                .and_then(Value::as_i64)
                .map(|m| m.to_string())
                .unwrap_or_else(|| "<unset>".into());
            vec![
                name,
                json!(reference),
                json!(hpa_targets(obj)),
                json!(min),
                json!(int(obj.pointer("/spec/maxReplicas"))),
                json!(int(obj.pointer("/status/currentReplicas"))),
                age(obj),
            ]
        }
        ResourceClaim => {
            let mut state = Vec::new();
            let deleting = meta::is_deleting(obj);
            if deleting {
                state.push("deleted");
            }
            match obj.pointer("/status/allocation").filter(|a| !a.is_null()) {
                None if !deleting => state.push("pending"),
                None => {}
                Some(_) => {
                    state.push("allocated");
                    if count(obj.pointer("/status/reservedFor")) > 0 {
                        state.push("reserved");
                    }
                }
            }
            vec![name, json!(state.join(",")), age(obj)]
        }
        DeviceClass => vec![name, age(obj)],
        PriorityClass => vec![
            name,
            json!(int(obj.get("value"))),
            json!(
                obj.get("globalDefault")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            ),
            age(obj),
            json!(s(obj.get("preemptionPolicy"))),
        ],
        APIService => {
            let service = obj
                .pointer("/spec/service")
                .filter(|s| s.is_object())
                .map(|svc| format!("{}/{}", s(svc.get("namespace")), s(svc.get("name"))))
                .unwrap_or_else(|| "Local".into());
            let available = obj
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
                })
                .map(|c| {
                    let status = s(c.get("status"));
                    let reason = s(c.get("reason"));
                    if status == "True" || reason.is_empty() {
                        status
                    } else {
                        format!("{status} ({reason})")
                    }
                })
                .unwrap_or_else(|| "Unknown".into());
            vec![name, json!(service), json!(available), age(obj)]
        }
        _ => vec![name, json!(meta::meta_str(obj, "creationTimestamp"))],
    }
}

/// kubectl's short access modes (`RWO,ROX,RWX,RWOP`, in that order, each once).
fn access_modes(modes: Option<&Value>) -> String {
    let given: Vec<&str> = modes
        .and_then(Value::as_array)
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| given.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// A volume's or claim's phase, or `Terminating` while it is deleted.
fn phase_or_terminating(obj: &Value) -> String {
    if meta::is_deleting(obj) {
        "Terminating".into()
    } else {
        s(obj.pointer("/status/phase"))
    }
}

/// The storage class: the beta annotation when present, else `spec.storageClassName`.
fn storage_class(obj: &Value) -> String {
    obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| s(obj.pointer("/spec/storageClassName")))
}

fn or_unset(v: String) -> String {
    if v.is_empty() { "<unset>".into() } else { v }
}

/// kubectl's Targets cell of an autoscaler: up to two metrics as `current/target`.
fn hpa_targets(obj: &Value) -> String {
    let specs = obj
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = obj
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let shown: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, m)| metric_cell(m, statuses.get(i)))
        .collect();
    if shown.len() > 2 {
        format!("{} + {} more...", shown[..2].join(", "), shown.len() - 2)
    } else {
        shown.join(", ")
    }
}

/// One metric of the Targets cell.
fn metric_cell(spec: &Value, status: Option<&Value>) -> String {
    let ty = s(spec.get("type"));
    let key = match ty.as_str() {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        _ => return "<unknown type>".into(),
    };
    let target = spec
        .pointer(&format!("/{key}/target"))
        .cloned()
        .unwrap_or(Value::Null);
    let current = status
        .and_then(|st| st.pointer(&format!("/{key}/current")))
        .cloned()
        .unwrap_or(Value::Null);
    let unknown = |v: String| {
        if v.is_empty() {
            "<unknown>".to_string()
        } else {
            v
        }
    };
    match key {
        "resource" | "containerResource" => {
            let name = s(spec.pointer(&format!("/{key}/name")));
            if let Some(avg) = target.get("averageValue").filter(|v| !v.is_null()) {
                format!(
                    "{name}: {}/{}",
                    unknown(s(current.get("averageValue"))),
                    s(Some(avg))
                )
            } else {
                let cur = current
                    .get("averageUtilization")
                    .and_then(Value::as_i64)
                    .map(|u| format!("{u}%"))
                    .unwrap_or_else(|| "<unknown>".into());
                let want = target
                    .get("averageUtilization")
                    .and_then(Value::as_i64)
                    .map(|u| format!("{u}%"))
                    .unwrap_or_else(|| "<auto>".into());
                format!("{name}: {cur}/{want}")
            }
        }
        "pods" => format!(
            "{}/{}",
            unknown(s(current.get("averageValue"))),
            s(target.get("averageValue"))
        ),
        _ => {
            if let Some(avg) = target.get("averageValue").filter(|v| !v.is_null()) {
                format!(
                    "{}/{} (avg)",
                    unknown(s(current.get("averageValue"))),
                    s(Some(avg))
                )
            } else {
                format!(
                    "{}/{}",
                    unknown(s(current.get("value"))),
                    s(target.get("value"))
                )
            }
        }
    }
}

/// Evaluates a printer-column JSONPath (`.a.b`, `.a[0]`, `.a[*].b`, `.a[?(@.k=="v")].b`).
pub fn json_path(obj: &Value, path: &str) -> Vec<Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut current = vec![obj.clone()];
    let mut rest = path.trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            rest = &r[end..];
            if key.is_empty() {
                continue;
            }
            current = current.iter().filter_map(|v| v.get(key).cloned()).collect();
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Vec::new();
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            if inner == "*" {
                current = current
                    .iter()
                    .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                    .collect();
            } else if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')'))
            {
                let filter = filter.trim();
                let (lhs, rhs, negate) = if let Some((l, r)) = filter.split_once("!=") {
                    (l, r, true)
                } else if let Some((l, r)) = filter.split_once("==") {
                    (l, r, false)
                } else {
                    (filter, "", false)
                };
                let field = lhs.trim().trim_start_matches('@');
                let want = rhs.trim().trim_matches(|c| c == '"' || c == '\'');
                current = current
                    .iter()
                    .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                    .filter(|item| {
                        let got = json_path(item, field);
                        if rhs.is_empty() {
                            return !got.is_empty();
                        }
                        let equal = got.first().map(|g| match g {
                            Value::String(s) => s == want,
                            other => *other == want.parse::<Value>().unwrap_or(Value::Null),
                        });
                        if negate {
                            equal == Some(false)
                        } else {
                            equal == Some(true)
                        }
                    })
                    .collect();
            } else if let Ok(i) = inner.trim().parse::<i64>() {
                current = current
                    .iter()
                    .filter_map(|v| {
                        let a = v.as_array()?;
                        let idx = if i < 0 { a.len() as i64 + i } else { i };
                        a.get(usize::try_from(idx).ok()?).cloned()
                    })
                    .collect();
            } else {
                let key = inner.trim_matches(|c| c == '\'' || c == '"');
                current = current.iter().filter_map(|v| v.get(key).cloned()).collect();
            }
        } else {
            return Vec::new();
        }
    }
    current
}

fn custom_cell(col: &PrinterColumn, obj: &Value) -> Value {
    let values = json_path(obj, &col.json_path);
    let Some(first) = values.first() else {
        return Value::Null;
    };
    if col.type_ == "date"
        && let Some(ts) = first.as_str()
    {
        return age_of(ts);
    }
    if values.len() > 1 {
        let parts: Vec<String> = values.iter().map(|v| s(Some(v))).collect();
        return json!(parts.join(","));
    }
    match first {
        Value::Object(_) | Value::Array(_) => json!(first.to_string()),
        other => other.clone(),
    }
}

/// A `meta.k8s.io/v1` Table of `objects`.
pub fn table(
    res: &ResourceInfo,
    version: &str,
    objects: &[Value],
    rv: &str,
    continue_token: &str,
    columns: bool,
) -> Value {
    let (defs, rows): (Vec<Value>, Vec<Value>) = match res.builtin() {
        Some(kind) => {
            let cols = builtin_columns(kind);
            let defs = cols
                .iter()
                .map(|c| json!({"name": c.name, "type": c.ty, "format": c.format, "description": c.description, "priority": c.priority}))
                .collect();
            let rows = objects
                .iter()
                .map(|o| json!({"cells": builtin_cells(kind, o), "object": crate::meta::partial_metadata(o)}))
                .collect();
            (defs, rows)
        }
        None => {
            let mut printer: Vec<PrinterColumn> = res
                .version(version)
                .map(|v| v.printer_columns.clone())
                .unwrap_or_default();
            if printer.is_empty() {
                printer.push(PrinterColumn {
                    name: "Age".into(),
                    type_: "date".into(),
                    format: String::new(),
                    description: AGE.description.into(),
                    priority: 0,
                    json_path: ".metadata.creationTimestamp".into(),
                });
            }
            let mut defs = vec![
                json!({"name": NAME.name, "type": NAME.ty, "format": NAME.format, "description": NAME.description, "priority": 0}),
            ];
            defs.extend(printer.iter().map(|c| {
                json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})
            }));
            let rows = objects
                .iter()
                .map(|o| {
                    let mut cells = vec![json!(meta::meta_str(o, "name"))];
                    cells.extend(printer.iter().map(|c| custom_cell(c, o)));
                    json!({"cells": cells, "object": crate::meta::partial_metadata(o)})
                })
                .collect();
            (defs, rows)
        }
    };
    let mut metadata = json!({"resourceVersion": rv});
    if !continue_token.is_empty() {
        metadata["continue"] = json!(continue_token);
    }
    let mut table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata});
    if columns {
        table["columnDefinitions"] = Value::Array(defs);
    } else {
        table["columnDefinitions"] = Value::Null;
    }
    table["rows"] = Value::Array(rows);
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(182), "3m2s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(50 * 3600), "2d2h");
        assert_eq!(human_duration(400 * 86400), "400d");
    }

    #[test]
    fn json_paths() {
        let obj = json!({"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}, "spec": {"l": [1, 2]}});
        assert_eq!(
            json_path(&obj, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![json!("True")]
        );
        assert_eq!(json_path(&obj, ".spec.l[1]"), vec![json!(2)]);
        assert_eq!(json_path(&obj, ".spec.l[*]"), vec![json!(1), json!(2)]);
        assert!(json_path(&obj, ".spec.missing").is_empty());
    }
}

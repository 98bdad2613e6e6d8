//! The built-in resources: names, scope, verbs, subresources and the typed normalization of
//! their objects (decoding into the k8s-openapi type and encoding again drops unknown fields,
//! as kube-apiserver's typed decoding does).

use k8s_openapi::api::{
    admissionregistration::v1 as admreg, apps::v1 as apps, authentication::v1 as authn,
    authorization::v1 as authz, autoscaling::v2 as autoscaling, batch::v1 as batch,
    certificates::v1 as certs, coordination::v1 as coordination, core::v1 as core,
    events::v1 as events, flowcontrol::v1 as flowcontrol, networking::v1 as networking,
    policy::v1 as policy, rbac::v1 as rbac, resource::v1 as resource, scheduling::v1 as scheduling,
    storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apireg;
use k8s_openapi::schemars::JsonSchema;
use serde_json::Value;

use super::{NameKind, ResourceInfo, ScaleSpec, Source, VersionInfo};

/// Every built-in kind the server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BuiltinKind {
    Namespace,
    Secret,
    ConfigMap,
    ServiceAccount,
    CoreEvent,
    Node,
    Pod,
    Service,
    PodTemplate,
    ResourceQuota,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    Lease,
    EventsEvent,
    CertificateSigningRequest,
    Role,
    RoleBinding,
    ClusterRole,
    ClusterRoleBinding,
    CustomResourceDefinition,
    SelfSubjectAccessReview,
    SubjectAccessReview,
    LocalSubjectAccessReview,
    SelfSubjectRulesReview,
    SelfSubjectReview,
    TokenReview,
    FlowSchema,
    PriorityLevelConfiguration,
    ValidatingWebhookConfiguration,
    MutatingWebhookConfiguration,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    PodDisruptionBudget,
    Ingress,
    IngressClass,
    NetworkPolicy,
    HorizontalPodAutoscaler,
    ResourceClaim,
    DeviceClass,
    APIService,
    PriorityClass,
}

/// Something done with the k8s-openapi type of a built-in kind (see [`BuiltinKind::with_type`]).
pub(crate) trait TypeVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the kind's typed object `K`.
    fn visit<K>(self) -> Self::Output
    where
        K: serde::de::DeserializeOwned + serde::Serialize + JsonSchema;
}

/// Decodes a value into the typed object and encodes it again.
struct Roundtrip(Value);

impl TypeVisitor for Roundtrip {
    type Output = Result<Value, String>;

    fn visit<K>(self) -> Self::Output
    where
        K: serde::de::DeserializeOwned + serde::Serialize + JsonSchema,
    {
        let typed: K = serde_json::from_value(self.0).map_err(|err| err.to_string())?;
        serde_json::to_value(&typed).map_err(|err| err.to_string())
    }
}

impl BuiltinKind {
    /// Calls `visitor` with the k8s-openapi type of this kind: the one table from kinds to
    /// Rust types (normalization, OpenAPI schemas).
    pub(crate) fn with_type<V: TypeVisitor>(self, visitor: V) -> V::Output {
        use BuiltinKind::*;
        match self {
            Namespace => visitor.visit::<core::Namespace>(),
            Secret => visitor.visit::<core::Secret>(),
            ConfigMap => visitor.visit::<core::ConfigMap>(),
            ServiceAccount => visitor.visit::<core::ServiceAccount>(),
            CoreEvent => visitor.visit::<core::Event>(),
            Node => visitor.visit::<core::Node>(),
            Pod => visitor.visit::<core::Pod>(),
            Service => visitor.visit::<core::Service>(),
            PodTemplate => visitor.visit::<core::PodTemplate>(),
            ResourceQuota => visitor.visit::<core::ResourceQuota>(),
            Deployment => visitor.visit::<apps::Deployment>(),
            ReplicaSet => visitor.visit::<apps::ReplicaSet>(),
            StatefulSet => visitor.visit::<apps::StatefulSet>(),
            DaemonSet => visitor.visit::<apps::DaemonSet>(),
            Job => visitor.visit::<batch::Job>(),
            CronJob => visitor.visit::<batch::CronJob>(),
            Lease => visitor.visit::<coordination::Lease>(),
            EventsEvent => visitor.visit::<events::Event>(),
            CertificateSigningRequest => visitor.visit::<certs::CertificateSigningRequest>(),
            Role => visitor.visit::<rbac::Role>(),
            RoleBinding => visitor.visit::<rbac::RoleBinding>(),
            ClusterRole => visitor.visit::<rbac::ClusterRole>(),
            ClusterRoleBinding => visitor.visit::<rbac::ClusterRoleBinding>(),
            CustomResourceDefinition => visitor.visit::<apiext::CustomResourceDefinition>(),
            SelfSubjectAccessReview => visitor.visit::<authz::SelfSubjectAccessReview>(),
            SubjectAccessReview => visitor.visit::<authz::SubjectAccessReview>(),
            LocalSubjectAccessReview => visitor.visit::<authz::LocalSubjectAccessReview>(),
            SelfSubjectRulesReview => visitor.visit::<authz::SelfSubjectRulesReview>(),
            SelfSubjectReview => visitor.visit::<authn::SelfSubjectReview>(),
            TokenReview => visitor.visit::<authn::TokenReview>(),
            FlowSchema => visitor.visit::<flowcontrol::FlowSchema>(),
            PriorityLevelConfiguration => {
                visitor.visit::<flowcontrol::PriorityLevelConfiguration>()
            }
            ValidatingWebhookConfiguration => {
                visitor.visit::<admreg::ValidatingWebhookConfiguration>()
            }
            MutatingWebhookConfiguration => visitor.visit::<admreg::MutatingWebhookConfiguration>(),
            ValidatingAdmissionPolicy => visitor.visit::<admreg::ValidatingAdmissionPolicy>(),
            ValidatingAdmissionPolicyBinding => {
                visitor.visit::<admreg::ValidatingAdmissionPolicyBinding>()
            }
            PersistentVolumeClaim => visitor.visit::<core::PersistentVolumeClaim>(),
            PersistentVolume => visitor.visit::<core::PersistentVolume>(),
            StorageClass => visitor.visit::<storage::StorageClass>(),
            PodDisruptionBudget => visitor.visit::<policy::PodDisruptionBudget>(),
            Ingress => visitor.visit::<networking::Ingress>(),
            IngressClass => visitor.visit::<networking::IngressClass>(),
            NetworkPolicy => visitor.visit::<networking::NetworkPolicy>(),
            HorizontalPodAutoscaler => visitor.visit::<autoscaling::HorizontalPodAutoscaler>(),
            ResourceClaim => visitor.visit::<resource::ResourceClaim>(),
            DeviceClass => visitor.visit::<resource::DeviceClass>(),
            APIService => visitor.visit::<apireg::APIService>(),
            PriorityClass => visitor.visit::<scheduling::PriorityClass>(),
        }
    }

    /// Decodes `value` into the typed object and encodes it again: unknown fields disappear,
    /// timestamps and byte strings are normalized; a type mismatch is an error message.
    pub fn normalize(self, value: Value) -> Result<Value, String> {
        self.with_type(Roundtrip(value))
    }

    /// Whether objects of this kind are never stored (access reviews).
    pub fn is_virtual(self) -> bool {
        use BuiltinKind::*;
        matches!(
            self,
            SelfSubjectAccessReview
                | SubjectAccessReview
                | LocalSubjectAccessReview
                | SelfSubjectRulesReview
                | SelfSubjectReview
                | TokenReview
        )
    }
}

const CRUD: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

struct Def {
    kind: BuiltinKind,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind_name: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
    extra: &'static [&'static str],
    names: NameKind,
    fields: &'static [&'static str],
    verbs: &'static [&'static str],
}

const fn def(
    kind: BuiltinKind,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind_name: &'static str,
    namespaced: bool,
) -> Def {
    Def {
        kind,
        group,
        version,
        plural,
        kind_name,
        namespaced,
        short: &[],
        categories: &[],
        status: false,
        scale: false,
        extra: &[],
        names: NameKind::Subdomain,
        fields: &[],
        verbs: CRUD,
    }
}

const ALL: &[&str] = &["all"];
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

fn defs() -> Vec<Def> {
    use BuiltinKind as K;
    let review = |kind, plural, kind_name, namespaced| Def {
        verbs: &["create"],
        ..def(
            kind,
            "authorization.k8s.io",
            "v1",
            plural,
            kind_name,
            namespaced,
        )
    };
    vec![
        Def {
            short: &["ns"],
            status: true,
            extra: &["finalize"],
            names: NameKind::Label,
            fields: &["status.phase"],
            verbs: &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ],
            ..def(K::Namespace, "", "v1", "namespaces", "Namespace", false)
        },
        Def {
            fields: &["type"],
            ..def(K::Secret, "", "v1", "secrets", "Secret", true)
        },
        Def {
            short: &["cm"],
            ..def(K::ConfigMap, "", "v1", "configmaps", "ConfigMap", true)
        },
        Def {
            short: &["sa"],
            extra: &["token"],
            ..def(
                K::ServiceAccount,
                "",
                "v1",
                "serviceaccounts",
                "ServiceAccount",
                true,
            )
        },
        Def {
            short: &["ev"],
            fields: EVENT_FIELDS,
            ..def(K::CoreEvent, "", "v1", "events", "Event", true)
        },
        Def {
            short: &["no"],
            status: true,
            fields: &["spec.unschedulable"],
            ..def(K::Node, "", "v1", "nodes", "Node", false)
        },
        Def {
            short: &["po"],
            categories: ALL,
            status: true,
            fields: &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            // As served when something plays the kubelet (see `handlers::pods`).
            extra: &["attach", "binding", "exec", "log", "portforward"],
            ..def(K::Pod, "", "v1", "pods", "Pod", true)
        },
        Def {
            short: &["svc"],
            categories: ALL,
            status: true,
            names: NameKind::Dns1035Label,
            fields: &["spec.clusterIP", "spec.type"],
            verbs: &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
            ..def(K::Service, "", "v1", "services", "Service", true)
        },
        Def {
            short: &["quota"],
            status: true,
            ..def(
                K::ResourceQuota,
                "",
                "v1",
                "resourcequotas",
                "ResourceQuota",
                true,
            )
        },
        def(
            K::PodTemplate,
            "",
            "v1",
            "podtemplates",
            "PodTemplate",
            true,
        ),
        Def {
            short: &["deploy"],
            categories: ALL,
            status: true,
            scale: true,
            ..def(
                K::Deployment,
                "apps",
                "v1",
                "deployments",
                "Deployment",
                true,
            )
        },
        Def {
            short: &["rs"],
            categories: ALL,
            status: true,
            scale: true,
            fields: &["status.replicas"],
            ..def(
                K::ReplicaSet,
                "apps",
                "v1",
                "replicasets",
                "ReplicaSet",
                true,
            )
        },
        Def {
            short: &["sts"],
            categories: ALL,
            status: true,
            scale: true,
            ..def(
                K::StatefulSet,
                "apps",
                "v1",
                "statefulsets",
                "StatefulSet",
                true,
            )
        },
        Def {
            short: &["ds"],
            categories: ALL,
            status: true,
            ..def(K::DaemonSet, "apps", "v1", "daemonsets", "DaemonSet", true)
        },
        Def {
            categories: ALL,
            status: true,
            fields: &["status.successful"],
            ..def(K::Job, "batch", "v1", "jobs", "Job", true)
        },
        Def {
            short: &["cj"],
            categories: ALL,
            status: true,
            ..def(K::CronJob, "batch", "v1", "cronjobs", "CronJob", true)
        },
        Def {
            status: true,
            ..def(
                K::FlowSchema,
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "flowschemas",
                "FlowSchema",
                false,
            )
        },
        Def {
            status: true,
            ..def(
                K::PriorityLevelConfiguration,
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "prioritylevelconfigurations",
                "PriorityLevelConfiguration",
                false,
            )
        },
        def(
            K::Lease,
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            true,
        ),
        Def {
            short: &["ev"],
            ..def(
                K::EventsEvent,
                "events.k8s.io",
                "v1",
                "events",
                "Event",
                true,
            )
        },
        Def {
            short: &["csr"],
            status: true,
            extra: &["approval"],
            fields: &["spec.signerName"],
            ..def(
                K::CertificateSigningRequest,
                "certificates.k8s.io",
                "v1",
                "certificatesigningrequests",
                "CertificateSigningRequest",
                false,
            )
        },
        Def {
            names: NameKind::PathSegment,
            ..def(
                K::Role,
                "rbac.authorization.k8s.io",
                "v1",
                "roles",
                "Role",
                true,
            )
        },
        Def {
            names: NameKind::PathSegment,
            ..def(
                K::RoleBinding,
                "rbac.authorization.k8s.io",
                "v1",
                "rolebindings",
                "RoleBinding",
                true,
            )
        },
        Def {
            names: NameKind::PathSegment,
            ..def(
                K::ClusterRole,
                "rbac.authorization.k8s.io",
                "v1",
                "clusterroles",
                "ClusterRole",
                false,
            )
        },
        Def {
            names: NameKind::PathSegment,
            ..def(
                K::ClusterRoleBinding,
                "rbac.authorization.k8s.io",
                "v1",
                "clusterrolebindings",
                "ClusterRoleBinding",
                false,
            )
        },
        Def {
            short: &["crd", "crds"],
            categories: &["api-extensions"],
            status: true,
            ..def(
                K::CustomResourceDefinition,
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                false,
            )
        },
        Def {
            categories: &["api-extensions"],
            ..def(
                K::MutatingWebhookConfiguration,
                "admissionregistration.k8s.io",
                "v1",
                "mutatingwebhookconfigurations",
                "MutatingWebhookConfiguration",
                false,
            )
        },
        Def {
            categories: &["api-extensions"],
            ..def(
                K::ValidatingWebhookConfiguration,
                "admissionregistration.k8s.io",
                "v1",
                "validatingwebhookconfigurations",
                "ValidatingWebhookConfiguration",
                false,
            )
        },
        Def {
            categories: &["api-extensions"],
            status: true,
            ..def(
                K::ValidatingAdmissionPolicy,
                "admissionregistration.k8s.io",
                "v1",
                "validatingadmissionpolicies",
                "ValidatingAdmissionPolicy",
                false,
            )
        },
        Def {
            categories: &["api-extensions"],
            ..def(
                K::ValidatingAdmissionPolicyBinding,
                "admissionregistration.k8s.io",
                "v1",
                "validatingadmissionpolicybindings",
                "ValidatingAdmissionPolicyBinding",
                false,
            )
        },
        Def {
            short: &["pvc"],
            status: true,
            ..def(
                K::PersistentVolumeClaim,
                "",
                "v1",
                "persistentvolumeclaims",
                "PersistentVolumeClaim",
                true,
            )
        },
        Def {
            short: &["pv"],
            status: true,
            ..def(
                K::PersistentVolume,
                "",
                "v1",
                "persistentvolumes",
                "PersistentVolume",
                false,
            )
        },
        Def {
            short: &["sc"],
            ..def(
                K::StorageClass,
                "storage.k8s.io",
                "v1",
                "storageclasses",
                "StorageClass",
                false,
            )
        },
        Def {
            short: &["pdb"],
            status: true,
            ..def(
                K::PodDisruptionBudget,
                "policy",
                "v1",
                "poddisruptionbudgets",
                "PodDisruptionBudget",
                true,
            )
        },
        Def {
            short: &["ing"],
            status: true,
            ..def(
                K::Ingress,
                "networking.k8s.io",
                "v1",
                "ingresses",
                "Ingress",
                true,
            )
        },
        def(
            K::IngressClass,
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            "IngressClass",
            false,
        ),
        Def {
            short: &["netpol"],
            ..def(
                K::NetworkPolicy,
                "networking.k8s.io",
                "v1",
                "networkpolicies",
                "NetworkPolicy",
                true,
            )
        },
        Def {
            short: &["hpa"],
            categories: ALL,
            status: true,
            ..def(
                K::HorizontalPodAutoscaler,
                "autoscaling",
                "v2",
                "horizontalpodautoscalers",
                "HorizontalPodAutoscaler",
                true,
            )
        },
        Def {
            status: true,
            ..def(
                K::ResourceClaim,
                "resource.k8s.io",
                "v1",
                "resourceclaims",
                "ResourceClaim",
                true,
            )
        },
        def(
            K::DeviceClass,
            "resource.k8s.io",
            "v1",
            "deviceclasses",
            "DeviceClass",
            false,
        ),
        Def {
            short: &["pc"],
            ..def(
                K::PriorityClass,
                "scheduling.k8s.io",
                "v1",
                "priorityclasses",
                "PriorityClass",
                false,
            )
        },
        Def {
            categories: &["api-extensions"],
            status: true,
            names: NameKind::PathSegment,
            ..def(
                K::APIService,
                "apiregistration.k8s.io",
                "v1",
                "apiservices",
                "APIService",
                false,
            )
        },
        review(
            K::LocalSubjectAccessReview,
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
        ),
        review(
            K::SelfSubjectAccessReview,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
        ),
        review(
            K::SelfSubjectRulesReview,
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            false,
        ),
        review(
            K::SubjectAccessReview,
            "subjectaccessreviews",
            "SubjectAccessReview",
            false,
        ),
        Def {
            verbs: &["create"],
            ..def(
                K::SelfSubjectReview,
                "authentication.k8s.io",
                "v1",
                "selfsubjectreviews",
                "SelfSubjectReview",
                false,
            )
        },
        Def {
            verbs: &["create"],
            ..def(
                K::TokenReview,
                "authentication.k8s.io",
                "v1",
                "tokenreviews",
                "TokenReview",
                false,
            )
        },
    ]
}

/// The built-in resources, in discovery order.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    defs()
        .into_iter()
        .map(|d| {
            let singular = d.kind_name.to_ascii_lowercase();
            let scale = d.scale.then(|| ScaleSpec {
                spec_replicas_path: ".spec.replicas".into(),
                status_replicas_path: ".status.replicas".into(),
                label_selector_path: Some(".status.selector".into()),
            });
            ResourceInfo {
                group: d.group.into(),
                versions: vec![VersionInfo {
                    name: d.version.into(),
                    schema: None,
                    printer_columns: Vec::new(),
                    selectable_fields: Vec::new(),
                    status: d.status,
                    scale,
                    deprecation_warning: None,
                    patch_types: Default::default(),
                    structural: Default::default(),
                }],
                storage_version: d.version.into(),
                plural: d.plural.into(),
                singular,
                kind: d.kind_name.into(),
                list_kind: format!("{}List", d.kind_name),
                namespaced: d.namespaced,
                short_names: d.short.iter().map(|s| s.to_string()).collect(),
                categories: d.categories.iter().map(|s| s.to_string()).collect(),
                verbs: d.verbs.iter().map(|s| s.to_string()).collect(),
                extra_subresources: d.extra.iter().map(|s| s.to_string()).collect(),
                source: Source::Builtin(d.kind),
                name_kind: d.names,
                field_labels: d.fields.iter().map(|s| s.to_string()).collect(),
                conversion_webhook: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn normalize_drops_unknown_fields() {
        let out = BuiltinKind::ConfigMap
            .normalize(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}, "bogus": 1}))
            .unwrap();
        assert_eq!(
            out,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}})
        );
        assert!(
            BuiltinKind::ConfigMap
                .normalize(json!({"data": {"a": 1}}))
                .is_err()
        );
    }

    /// Every built-in kind the server serves (each served version, and its list if it lists)
    /// has a protobuf layout, so protobuf bodies decode and protobuf answers encode for all of
    /// them.
    #[test]
    fn every_served_builtin_kind_is_in_the_protobuf_table() {
        let mut missing = Vec::new();
        for res in builtin_resources() {
            for version in &res.versions {
                let api_version = res.api_version(&version.name);
                let listed = res.verbs.iter().any(|v| v == "list");
                for kind in [&res.kind, &res.list_kind] {
                    if (listed || kind == &res.kind)
                        && ocm_apiserver_protobuf::table::message_for(&api_version, kind).is_none()
                    {
                        missing.push(format!("{api_version} {kind}"));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "{missing:#?}");
    }

    #[test]
    fn resources_are_unique() {
        let all = builtin_resources();
        let mut seen = std::collections::HashSet::new();
        for r in &all {
            assert!(
                seen.insert((r.group.clone(), r.plural.clone())),
                "{}",
                r.plural
            );
        }
    }
}

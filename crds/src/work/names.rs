//! Well-known names of the `work` API group: labels, annotations, finalizers, conditions.

// --- Finalizers ---------------------------------------------------------------------------

/// Finalizer the work agent puts on every ManifestWork; removed once the work's
/// AppliedManifestWork (and so its objects) is gone.
pub const MANIFEST_WORK_FINALIZER: &str =
    "cluster.open-cluster-management.io/manifest-work-cleanup";

/// Finalizer on every AppliedManifestWork; removed once every object it owns is deleted.
pub const APPLIED_MANIFEST_WORK_FINALIZER: &str =
    "cluster.open-cluster-management.io/applied-manifest-work-cleanup";

/// Finalizer on every ManifestWorkReplicaSet; removed once its ManifestWorks are deleted.
/// (Same path as the ManifestWork one, under the `work.` domain.)
pub const MANIFEST_WORK_REPLICA_SET_FINALIZER: &str =
    "work.open-cluster-management.io/manifest-work-cleanup";

// --- Labels -------------------------------------------------------------------------------

/// Label on a ManifestWork created by a ManifestWorkReplicaSet: `<namespace>.<name>` of the
/// replica set.
pub const MANIFEST_WORK_REPLICA_SET_LABEL: &str =
    "work.open-cluster-management.io/manifestworkreplicaset";

/// Label on a ManifestWork created by a ManifestWorkReplicaSet: the name of the Placement
/// that selected its cluster.
pub const PLACEMENT_NAME_LABEL: &str = "work.open-cluster-management.io/placementname";

// --- Annotations --------------------------------------------------------------------------

/// Annotation on a ManifestWork listing the hashes of the configurations (e.g. addon
/// configs) it was rendered from.
pub const CONFIG_SPEC_HASH_ANNOTATION: &str = "open-cluster-management.io/config-spec-hash";

/// Annotation on an applied object: hash of its manifest in the ManifestWork.
pub const OBJECT_HASH_ANNOTATION: &str = "open-cluster-management.io/object-hash";

// --- Defaults and limits ------------------------------------------------------------------

/// Default server-side-apply field manager of the work agent; custom ones must start with it.
pub const DEFAULT_FIELD_MANAGER: &str = "work-agent";

/// Default upper bound, in bytes, of the total size of a ManifestWork's manifests (hub
/// webhook flag `--manifestLimit`); addon works are split at the same size.
pub const MANIFEST_SIZE_LIMIT: usize = 512_000;

/// Longest JSON text a `JsonRaw` feedback value may hold.
pub const FEEDBACK_JSON_RAW_MAX_LENGTH: usize = 1024;

/// Condition types of a ManifestWork and of each of its manifests.
pub mod conditions {
    /// Work: every manifest was applied. Manifest: the object was applied.
    pub const APPLIED: &str = "Applied";
    /// Work: every object exists. Manifest: the object exists.
    pub const AVAILABLE: &str = "Available";
    /// Work or manifest is being applied (set only through condition rules).
    pub const PROGRESSING: &str = "Progressing";
    /// Work or manifest does not reach its desired state (set only through condition rules).
    pub const DEGRADED: &str = "Degraded";
    /// The work is being deleted by the agent.
    pub const DELETING: &str = "Deleting";
    /// Work: every completable manifest is complete, it is no longer reconciled. Manifest:
    /// the object finished, it is no longer updated.
    pub const COMPLETE: &str = "Complete";
    /// Manifest: the feedback rules' values were gathered.
    pub const STATUS_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";
}

/// Condition reasons of a ManifestWork (whole-work conditions).
pub mod work_reasons {
    /// `Applied` True: every manifest applied.
    pub const APPLIED_MANIFEST_WORK_COMPLETE: &str = "AppliedManifestWorkComplete";
    /// `Applied` False: some manifest failed to apply.
    pub const APPLIED_MANIFEST_WORK_FAILED: &str = "AppliedManifestWorkFailed";
    /// `Available` True: every object exists.
    pub const RESOURCES_AVAILABLE: &str = "ResourcesAvailable";
    /// `Available` False: some objects are missing ("k of n resources are not available").
    pub const RESOURCES_NOT_AVAILABLE: &str = "ResourcesNotAvailable";
    /// `Available` Unknown: the state of some objects is not known.
    pub const RESOURCES_STATUS_UNKNOWN: &str = "ResourcesStatusUnknown";
    /// `Deleting` True: the agent started deleting the work's objects.
    pub const WORK_DELETING: &str = "WorkDeleting";
    /// Work conditions aggregated from the manifests' rule conditions (e.g. `Complete`).
    pub const CONDITION_RULES_AGGREGATED: &str = "ConditionRulesAggregated";
    /// `Complete`: every completable manifest is complete.
    pub const MANIFESTS_COMPLETE: &str = "ManifestsComplete";
    /// `Progressing`: objects are being applied.
    pub const APPLYING: &str = "Applying";
    /// `Progressing` False: everything applied and available.
    pub const COMPLETED: &str = "Completed";
    /// `Progressing`/`Degraded`: the work failed to apply.
    pub const FAILED: &str = "Failed";
}

/// Condition reasons of one manifest of a ManifestWork.
pub mod manifest_reasons {
    /// `Applied` True: the object was applied.
    pub const APPLIED_MANIFEST_COMPLETE: &str = "AppliedManifestComplete";
    /// `Applied` False: the object could not be applied.
    pub const APPLIED_MANIFEST_FAILED: &str = "AppliedManifestFailed";
    /// `Applied` False: server-side apply failed while handling `ignoreFields`.
    pub const APPLIED_MANIFEST_SSA_IGNORE_FIELD_ERROR: &str = "AppliedManifestSSAIgnoreFieldError";
    /// `Available` True: the object exists.
    pub const RESOURCE_AVAILABLE: &str = "ResourceAvailable";
    /// `Available` False: the object does not exist.
    pub const RESOURCE_NOT_AVAILABLE: &str = "ResourceNotAvailable";
    /// `Available` Unknown: reading the object failed.
    pub const FETCHING_RESOURCE_FAILED: &str = "FetchingResourceFailed";
    /// `Available` Unknown: the manifest's group/version/resource/name is not resolved yet.
    pub const INCOMPLETE_RESOURCE_META: &str = "IncompleteResourceMeta";
    /// `StatusFeedbackSynced` True: every feedback value was gathered.
    pub const STATUS_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";
    /// `StatusFeedbackSynced` False: no value could be gathered.
    pub const NO_STATUS_FEEDBACK_SYNCED: &str = "NoStatusFeedbackSynced";
    /// `StatusFeedbackSynced` False: gathering some value failed.
    pub const STATUS_FEEDBACK_SYNC_FAILED: &str = "StatusFeedbackSyncFailed";
    /// Prefix of every reason set by condition-rule evaluation; conditions carrying it are
    /// rule-generated (and pruned when stale).
    pub const CONDITION_RULE_PREFIX: &str = "ConditionRule";
    /// Rule condition: the rule was evaluated.
    pub const CONDITION_RULE_EVALUATED: &str = "ConditionRuleEvaluated";
    /// Rule condition: the rule is invalid and was not evaluated.
    pub const CONDITION_RULE_INVALID: &str = "ConditionRuleInvalid";
    /// Rule condition: a CEL expression failed.
    pub const CONDITION_RULE_EXPRESSION_ERROR: &str = "ConditionRuleExpressionError";
    /// Rule condition: evaluation failed for a reason other than the expression.
    pub const CONDITION_RULE_INTERNAL_ERROR: &str = "ConditionRuleInternalError";
}

/// Condition types and reasons of a ManifestWorkReplicaSet.
pub mod replica_set {
    /// Condition: the placements and their decisions were found.
    pub const PLACEMENT_VERIFIED: &str = "PlacementVerified";
    /// Condition: the rollout over the placements' clusters has finished.
    pub const PLACEMENT_ROLLED_OUT: &str = "PlacementRolledOut";
    /// Condition: a ManifestWork exists for each selected cluster.
    pub const MANIFESTWORK_APPLIED: &str = "ManifestworkApplied";

    /// Reason: as expected (`PlacementVerified`, `ManifestworkApplied`).
    pub const AS_EXPECTED: &str = "AsExpected";
    /// Reason of `PlacementVerified` False: no PlacementDecision found.
    pub const PLACEMENT_DECISION_NOT_FOUND: &str = "PlacementDecisionNotFound";
    /// Reason of `PlacementVerified` False: the decisions select no cluster.
    pub const PLACEMENT_DECISION_EMPTY: &str = "PlacementDecisionEmpty";
    /// Reason: not as expected (`PlacementVerified`, `ManifestworkApplied`).
    pub const NOT_AS_EXPECTED: &str = "NotAsExpected";
    /// Reason of `ManifestworkApplied`: works are being created or updated.
    pub const PROCESSING: &str = "Processing";
    /// Reason of `ManifestworkApplied` False: a generated work name is invalid.
    pub const INVALID_MANIFEST_WORK_NAME: &str = "InvalidManifestWorkName";
    /// Reason of `PlacementRolledOut` False: the rollout is in progress.
    pub const PROGRESSING: &str = "Progressing";
    /// Reason of `PlacementRolledOut` True: the rollout reached every cluster.
    pub const COMPLETE: &str = "Complete";
}

/// Feedback values the agent reports for well-known kinds under a `WellKnownStatus` rule.
pub mod well_known_status {
    /// Deployment `.status.readyReplicas`.
    pub const READY_REPLICAS: &str = "ReadyReplicas";
    /// Deployment `.status.replicas`.
    pub const REPLICAS: &str = "Replicas";
    /// Deployment `.status.availableReplicas`.
    pub const AVAILABLE_REPLICAS: &str = "AvailableReplicas";
    /// DaemonSet `.status.numberReady`.
    pub const NUMBER_READY: &str = "NumberReady";
    /// DaemonSet `.status.desiredNumberScheduled`.
    pub const DESIRED_NUMBER_SCHEDULED: &str = "DesiredNumberScheduled";
    /// DaemonSet `.status.numberAvailable`.
    pub const NUMBER_AVAILABLE: &str = "NumberAvailable";
    /// Job: status of its `Complete` condition.
    pub const JOB_COMPLETE: &str = "JobComplete";
    /// Job `.status.succeeded`.
    pub const JOB_SUCCEEDED: &str = "JobSucceeded";
    /// Pod: status of its `Ready` condition.
    pub const POD_READY: &str = "PodReady";
    /// Pod `.status.phase`.
    pub const POD_PHASE: &str = "PodPhase";

    /// Feedback values of an `apps/v1` Deployment: (name, JSONPath).
    pub const DEPLOYMENT: &[(&str, &str)] = &[
        (READY_REPLICAS, ".status.readyReplicas"),
        (REPLICAS, ".status.replicas"),
        (AVAILABLE_REPLICAS, ".status.availableReplicas"),
    ];
    /// Feedback values of an `apps/v1` DaemonSet: (name, JSONPath).
    pub const DAEMON_SET: &[(&str, &str)] = &[
        (NUMBER_READY, ".status.numberReady"),
        (DESIRED_NUMBER_SCHEDULED, ".status.desiredNumberScheduled"),
        (NUMBER_AVAILABLE, ".status.numberAvailable"),
    ];
    /// Feedback values of a `batch/v1` Job: (name, JSONPath).
    pub const JOB: &[(&str, &str)] = &[
        (
            JOB_COMPLETE,
            r#".status.conditions[?(@.type=="Complete")].status"#,
        ),
        (JOB_SUCCEEDED, ".status.succeeded"),
    ];
    /// Feedback values of a `v1` Pod: (name, JSONPath).
    pub const POD: &[(&str, &str)] = &[
        (
            POD_READY,
            r#".status.conditions[?(@.type=="Ready")].status"#,
        ),
        (POD_PHASE, ".status.phase"),
    ];

    /// The built-in feedback values of one kind.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Rule {
        /// API group of the kind (empty for core).
        pub group: &'static str,
        /// API version of the kind.
        pub version: &'static str,
        /// The kind.
        pub kind: &'static str,
        /// (name, JSONPath) of each value reported.
        pub values: &'static [(&'static str, &'static str)],
    }

    /// The rules, one per well-known kind.
    pub const RULES: &[Rule] = &[
        Rule {
            group: "apps",
            version: "v1",
            kind: "Deployment",
            values: DEPLOYMENT,
        },
        Rule {
            group: "apps",
            version: "v1",
            kind: "DaemonSet",
            values: DAEMON_SET,
        },
        Rule {
            group: "batch",
            version: "v1",
            kind: "Job",
            values: JOB,
        },
        Rule {
            group: "",
            version: "v1",
            kind: "Pod",
            values: POD,
        },
    ];

    /// The (name, JSONPath) feedback values of a kind, empty for kinds without a rule.
    pub fn for_kind(
        group: &str,
        version: &str,
        kind: &str,
    ) -> &'static [(&'static str, &'static str)] {
        RULES
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .map(|r| r.values)
            .unwrap_or(&[])
    }
}

/// The hub's work feature gates (upstream's names; each off unless enabled). A
/// ClusterManager lists them in `spec.workConfiguration.featureGates`; the hub components take
/// them as `--feature-gates=<name>=true`.
pub mod hub_feature_gates {
    /// The work webhook checks a ManifestWork without `spec.executor` as if its executor were
    /// the work agent's default service account (`system:serviceaccount::klusterlet-work-sa`).
    pub const NIL_EXECUTOR_VALIDATING: &str = "NilExecutorValidating";
    /// The hub work controller fans ManifestWorkReplicaSets out.
    pub const MANIFEST_WORK_REPLICA_SET: &str = "ManifestWorkReplicaSet";
    /// The hub work controller deletes a ManifestWork `ttlSecondsAfterFinished` after its
    /// `Complete` condition became True.
    pub const CLEAN_UP_COMPLETED_MANIFEST_WORK: &str = "CleanUpCompletedManifestWork";
    /// Works delivered through cloud events (accepted, not implemented by ocm-rs).
    pub const CLOUD_EVENTS_DRIVERS: &str = "CloudEventsDrivers";
    /// Every hub work gate.
    pub const ALL: [&str; 4] = [
        NIL_EXECUTOR_VALIDATING,
        MANIFEST_WORK_REPLICA_SET,
        CLEAN_UP_COMPLETED_MANIFEST_WORK,
        CLOUD_EVENTS_DRIVERS,
    ];
    /// The work agent's default service account, the executor a work without one runs as.
    pub const DEFAULT_EXECUTOR: &str = "system:serviceaccount::klusterlet-work-sa";
}

//! The object pipeline shared by the REST handlers and the server's own controllers: create,
//! read-modify-write update (with the status split, generation, metadata rules, validation,
//! managed fields and no-op detection) and delete (finalizers, propagation policy).

mod admission;
mod admission_hooks;
mod builtin_admission;
mod convert;
mod subresource;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::auth::Identity;
use crate::meta;
use crate::registry::ResourceInfo;
use crate::state::Inner;
use ocm_apiserver_status::{ApiError, Gr};
use ocm_apiserver_storage::{ObjectKey, Revision, StorageError, StoredObject};

pub(crate) use admission::CRD_CLEANUP_FINALIZER;
pub(crate) use managed::{apply_create, apply_update, object_type, patch_error};

mod managed;

/// `apiVersion`/`kind` checks for bodies that skip the pipeline (access reviews).
pub(crate) fn check_type_meta_pub(ctx: &mut Ctx, obj: &mut Value) -> Result<(), ApiError> {
    admission::check_type_meta(ctx, obj, None)
}

/// Finalizer the garbage collector uses for foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// Finalizer the garbage collector uses for orphaning dependents.
pub const ORPHAN_FINALIZER: &str = "orphan";

pub use crate::fieldvalidation::FieldValidation;

/// `propagationPolicy` of a delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are orphaned.
    Orphan,
    /// The owner goes first; the garbage collector removes dependents afterwards.
    Background,
    /// Dependents go first; the owner waits with the `foregroundDeletion` finalizer.
    Foreground,
}

/// Options of a delete.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// Propagation policy, if given.
    pub propagation: Option<Propagation>,
    /// UID precondition.
    pub uid: Option<String>,
    /// resourceVersion precondition.
    pub resource_version: Option<String>,
}

/// Which webhooks a call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Mutating webhooks (after the in-process hooks, before validation).
    Mutating,
    /// Validating webhooks (after validation).
    Validating,
}

/// Which part of an object a write addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The main resource.
    Main,
    /// A subresource: `status`, `approval`, `finalize`...
    Sub(String),
}

/// How managedFields are kept for a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Managed {
    /// Record an `Update` operation for the request's field manager.
    RecordUpdate,
    /// The caller (server-side apply) already computed managedFields.
    Computed,
}

/// The result of a read-modify-write.
#[derive(Debug)]
pub struct Updated {
    /// The object after the write, in the request version.
    pub object: Value,
    /// Whether anything was written.
    pub changed: bool,
    /// Whether the write removed the object (last finalizer gone during deletion).
    pub deleted: bool,
}

/// The result of a delete.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; its last state.
    Gone(Value),
    /// The object waits for finalizers; its state with `deletionTimestamp`.
    Pending(Value),
}

/// One request's view of a resource: who, where, which version, and the write options.
pub(crate) struct Ctx {
    pub inner: Arc<Inner>,
    pub cluster: String,
    pub res: Arc<ResourceInfo>,
    pub version: String,
    pub identity: Identity,
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    pub manager: String,
    pub warnings: Vec<String>,
    /// What strict decoding knows about the request body (see [`crate::fieldvalidation`]).
    pub body: crate::fieldvalidation::BodyCheck,
}

impl Ctx {
    pub fn new(inner: Arc<Inner>, cluster: &str, res: Arc<ResourceInfo>, version: &str) -> Ctx {
        Ctx {
            inner,
            cluster: cluster.to_owned(),
            res,
            version: version.to_owned(),
            identity: Identity::system(),
            dry_run: false,
            field_validation: FieldValidation::Ignore,
            manager: String::new(),
            warnings: Vec::new(),
            body: crate::fieldvalidation::BodyCheck::None,
        }
    }

    pub fn gr(&self) -> Gr<'_> {
        Gr {
            group: &self.res.group,
            resource: &self.res.plural,
        }
    }

    pub fn key(&self, namespace: &str, name: &str) -> ObjectKey {
        let ns = if self.res.namespaced { namespace } else { "" };
        ObjectKey::new(self.res.bucket(&self.cluster), ns, name)
    }

    pub fn storage_err(&self, err: StorageError, name: &str) -> ApiError {
        ApiError::from_storage(err, self.gr(), name)
    }

    /// Parses stored JSON. A custom resource is read as kube reads its stored JSON: an integer
    /// beyond int64 (the text of a float such as `9223372036854776000`) is a float.
    pub fn parse(&self, object: &StoredObject) -> Result<Value, ApiError> {
        let mut value = serde_json::from_slice(&object.value)
            .map_err(|err| ApiError::internal(format!("stored object is corrupt: {err}")))?;
        if self.res.is_custom() {
            ocm_apiserver_schema::widen_out_of_range_integers(&mut value);
        }
        Ok(value)
    }

    /// A stored object as the client sees it: converted to the request version and defaulted.
    pub fn present(&self, stored: Value) -> Result<Value, ApiError> {
        let version = self.version.clone();
        self.present_as(stored, &version)
    }

    /// Stored objects as the client sees them, converted together (one ConversionReview for
    /// a conversion webhook).
    pub fn present_many(&self, stored: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        let target = self.res.api_version(&self.version);
        let mut objects = self.convert_many_to(stored, &target)?;
        if self.res.is_custom() {
            for obj in &mut objects {
                admission::default_custom(self, obj, &self.version);
            }
        }
        Ok(objects)
    }

    pub fn present_as(&self, stored: Value, version: &str) -> Result<Value, ApiError> {
        let mut obj = self.convert(stored, version)?;
        if self.res.is_custom() {
            admission::default_custom(self, &mut obj, version);
        }
        Ok(obj)
    }

    /// Whether stored bytes can be sent as they are (no conversion or defaulting needed).
    pub fn passthrough(&self) -> bool {
        self.res.stored_as_served()
    }

    /// The current object, in the request version.
    pub fn get(&self, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let stored = self
            .inner
            .store
            .get(&self.key(namespace, name))
            .ok_or_else(|| ApiError::not_found(self.gr(), name))?;
        let value = self.parse(&stored)?;
        self.present(value)
    }

    /// Checks that `namespace` exists and is not terminating (for creates).
    fn check_namespace(&self, namespace: &str, name: &str) -> Result<(), ApiError> {
        if !self.res.namespaced {
            return Ok(());
        }
        let key = ObjectKey::new(
            ocm_apiserver_storage::Bucket::new(&self.cluster, "/namespaces"),
            "",
            namespace,
        );
        let Some(stored) = self.inner.store.get(&key) else {
            return Err(ApiError::not_found(
                Gr {
                    group: "",
                    resource: "namespaces",
                },
                namespace,
            ));
        };
        let ns = self.parse(&stored)?;
        if meta::is_deleting(&ns)
            || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        {
            return Err(ApiError::forbidden(
                self.gr(),
                name,
                &format!("unable to create new content in namespace {namespace} because it is being terminated"),
            )
            .with_causes(vec![ocm_apiserver_status::Cause::new(
                "NamespaceTerminating",
                format!("namespace {namespace} is being terminated"),
                "metadata.namespace",
            )]));
        }
        Ok(())
    }

    /// Creates `obj` (in the request version) in `namespace`. Returns the created object in
    /// the request version.
    pub async fn create(
        &mut self,
        namespace: &str,
        mut obj: Value,
        managed: Managed,
    ) -> Result<Value, ApiError> {
        admission::check_type_meta(self, &mut obj, None)?;
        // Namespace: must match the URL; filled in when empty; cleared for cluster scope.
        let body_ns = meta::meta_str(&obj, "namespace").to_owned();
        if self.res.namespaced {
            if !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta::set_meta(&mut obj, "namespace", Some(json!(namespace)));
        } else {
            meta::set_meta(&mut obj, "namespace", None);
        }
        if !meta::meta_str(&obj, "resourceVersion").is_empty() {
            return Err(ApiError::new(
                500,
                "",
                "resourceVersion should not be set on objects to be created",
            ));
        }
        admission::normalize(self, &mut obj, None)?;
        // generateName.
        if meta::meta_str(&obj, "name").is_empty() {
            let prefix = meta::meta_str(&obj, "generateName").to_owned();
            if !prefix.is_empty() {
                meta::set_meta(&mut obj, "name", Some(json!(generate_name(&prefix))));
            }
        }
        let name = meta::meta_str(&obj, "name").to_owned();
        self.check_namespace(namespace, &name)?;
        admission::prepare_create(self, &mut obj)?;
        builtin_admission::admit(self, namespace, "", &obj, None, &Target::Main)?;
        admission_hooks::run(
            self,
            crate::admission::AdmissionOperation::Create,
            namespace,
            &name,
            None,
            Some(&mut obj),
            None,
        )?;
        self.call_webhooks(
            Phase::Mutating,
            crate::admission::AdmissionOperation::Create,
            namespace,
            &name,
            None,
            Some(&mut obj),
            None,
            None,
        )
        .await?;
        // System fields.
        meta::set_meta(
            &mut obj,
            "uid",
            Some(json!(uuid::Uuid::new_v4().to_string())),
        );
        meta::set_meta(&mut obj, "creationTimestamp", Some(json!(meta::now())));
        if self.res.has_generation() {
            meta::set_meta(&mut obj, "generation", Some(json!(1)));
        } else {
            meta::set_meta(&mut obj, "generation", None);
        }
        meta::set_meta(&mut obj, "deletionTimestamp", None);
        meta::set_meta(&mut obj, "deletionGracePeriodSeconds", None);
        meta::set_meta(&mut obj, "selfLink", None);
        if self.res.builtin() == Some(crate::registry::BuiltinKind::ValidatingAdmissionPolicy) {
            let warnings = self.type_check_policy(&obj);
            crate::policy::status::observe(&mut obj, warnings);
        }
        admission::validate(self, &obj, None, &Target::Main)?;
        self.call_webhooks(
            Phase::Validating,
            crate::admission::AdmissionOperation::Create,
            namespace,
            &name,
            None,
            Some(&mut obj),
            None,
            None,
        )
        .await?;
        // Quota admission comes last, as in kube-apiserver (dry runs are refused too).
        if self.res.namespaced
            && let Some(why) = crate::quota::exceeded(
                &self.inner,
                &self.cluster,
                namespace,
                &self.res.storage_resource(),
                &obj,
            )
        {
            return Err(ApiError::forbidden(self.gr(), &name, &why));
        }
        if managed == Managed::RecordUpdate {
            admission::record_managed(self, &mut obj, None, &Target::Main);
        }
        meta::drop_empty_metadata(&mut obj);
        let stored = self.convert_to(obj, &self.res.storage_api_version())?;
        if self.dry_run {
            return self.present(stored);
        }
        let key = self.key(namespace, &name);
        let event = self
            .inner
            .store
            .create(key, stored)
            .await
            .map_err(|err| self.storage_err(err, &name))?;
        let value: Value = serde_json::from_slice(&event.object)
            .map_err(|err| ApiError::internal(err.to_string()))?;
        self.present(value)
    }

    /// Read-modify-write of one object. `mutate` gets the current object (request version)
    /// and returns the desired one. A `metadata.resourceVersion` in the desired object that
    /// differs from the current one fails with 409; without one, storage conflicts are
    /// retried with a fresh read.
    pub async fn update(
        &mut self,
        namespace: &str,
        name: &str,
        target: &Target,
        managed: Managed,
        put_semantics: bool,
        mutate: &mut (dyn FnMut(&mut Ctx, &Value) -> Result<Value, ApiError> + Send),
    ) -> Result<Updated, ApiError> {
        let key = self.key(namespace, name);
        for _attempt in 0..100 {
            let current = self
                .inner
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(self.gr(), name))?;
            let old_stored = self.parse(&current)?;
            let old = self.present(old_stored.clone())?;
            let mut new = mutate(self, &old)?;
            let requested_rv = meta::meta_str(&new, "resourceVersion").to_owned();
            let current_rv = current.rev.to_string();
            // A PUT's resourceVersion is a precondition; a patch's only when the patch set it.
            let conditional = if put_semantics {
                !requested_rv.is_empty()
            } else {
                !requested_rv.is_empty() && requested_rv != meta::meta_str(&old, "resourceVersion")
            };
            if conditional && requested_rv != current_rv {
                return Err(ApiError::conflict(self.gr(), name));
            }
            if !conditional {
                if put_semantics && !admission::allow_unconditional_update(self) {
                    return Err(admission::rv_required(self, name));
                }
                meta::set_meta(&mut new, "resourceVersion", Some(json!(current_rv)));
            }
            let new_stored = self
                .prepare_update(namespace, name, target, managed, &old, &old_stored, new)
                .await?;
            // No-op: nothing to write.
            if same_object(&new_stored, &old_stored) {
                return Ok(Updated {
                    object: old,
                    changed: false,
                    deleted: false,
                });
            }
            // Not held while the write waits for its commit: under a burst of writes, hundreds
            // wait at once.
            drop((old, old_stored));
            let finished = admission::can_remove(self, &new_stored);
            if self.dry_run {
                let object = self.present(new_stored)?;
                return Ok(Updated {
                    object,
                    changed: true,
                    deleted: finished,
                });
            }
            let result = if finished {
                self.inner
                    .store
                    .delete(key.clone(), Some(current.rev))
                    .await
            } else {
                self.inner
                    .store
                    .update(key.clone(), new_stored, Some(current.rev))
                    .await
            };
            match result {
                Ok(event) => {
                    let value: Value = serde_json::from_slice(&event.object)
                        .map_err(|err| ApiError::internal(err.to_string()))?;
                    let object = self.present(value)?;
                    return Ok(Updated {
                        object,
                        changed: true,
                        deleted: finished,
                    });
                }
                Err(StorageError::Conflict { .. }) if !conditional => continue,
                Err(err) => return Err(self.storage_err(err, name)),
            }
        }
        Err(ApiError::conflict(self.gr(), name))
    }

    /// Turns the desired object (request version) into what is stored, applying the rules of
    /// an update relative to the old object.
    #[allow(clippy::too_many_arguments)]
    async fn prepare_update(
        &mut self,
        namespace: &str,
        name: &str,
        target: &Target,
        managed: Managed,
        old: &Value,
        old_stored: &Value,
        mut new: Value,
    ) -> Result<Value, ApiError> {
        admission::check_type_meta(self, &mut new, Some(old))?;
        let body_name = meta::meta_str(&new, "name").to_owned();
        if body_name.is_empty() {
            meta::set_meta(&mut new, "name", Some(json!(name)));
        } else if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let body_ns = meta::meta_str(&new, "namespace").to_owned();
        if self.res.namespaced {
            if !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta::set_meta(&mut new, "namespace", Some(json!(namespace)));
        } else {
            meta::set_meta(&mut new, "namespace", None);
        }
        admission::normalize(self, &mut new, Some(old))?;
        // Subresource split.
        let has_status = self.res.has_status(&self.version);
        new = match target {
            Target::Main => {
                if has_status {
                    copy_field(&mut new, old, "status");
                }
                new
            }
            Target::Sub(sub) => subresource::merge(self, sub, old, new)?,
        };
        // Metadata the client cannot change.
        let old_meta = meta::metadata(old).cloned().unwrap_or_default();
        if meta::meta_str(&new, "uid").is_empty() {
            meta::set_meta(&mut new, "uid", old_meta.get("uid").cloned());
        }
        meta::set_meta(
            &mut new,
            "creationTimestamp",
            old_meta.get("creationTimestamp").cloned(),
        );
        if old_meta
            .get("deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            meta::set_meta(
                &mut new,
                "deletionTimestamp",
                old_meta.get("deletionTimestamp").cloned(),
            );
            if meta::metadata(&new)
                .and_then(|m| m.get("deletionGracePeriodSeconds"))
                .is_none()
            {
                meta::set_meta(
                    &mut new,
                    "deletionGracePeriodSeconds",
                    old_meta.get("deletionGracePeriodSeconds").cloned(),
                );
            }
        }
        meta::set_meta(&mut new, "selfLink", None);
        admission::prepare_update(self, &mut new, old, target)?;
        builtin_admission::admit(self, namespace, name, &new, Some(old), target)?;
        let subresource = match target {
            Target::Main => None,
            Target::Sub(sub) => Some(sub.as_str()),
        };
        admission_hooks::run(
            self,
            crate::admission::AdmissionOperation::Update,
            namespace,
            name,
            subresource,
            Some(&mut new),
            Some(old),
        )?;
        self.call_webhooks(
            Phase::Mutating,
            crate::admission::AdmissionOperation::Update,
            namespace,
            name,
            subresource,
            Some(&mut new),
            Some(old),
            None,
        )
        .await?;
        if self.res.has_generation() {
            let mut generation = meta::generation(old).max(1);
            if meta::spec_changed(old, &new, has_status) {
                generation += 1;
            }
            meta::set_meta(&mut new, "generation", Some(json!(generation)));
        } else {
            meta::set_meta(&mut new, "generation", old_meta.get("generation").cloned());
        }
        if *target == Target::Main
            && self.res.builtin() == Some(crate::registry::BuiltinKind::ValidatingAdmissionPolicy)
        {
            let warnings = self.type_check_policy(&new);
            crate::policy::status::observe(&mut new, warnings);
        }
        admission::validate(self, &new, Some(old), target)?;
        self.call_webhooks(
            Phase::Validating,
            crate::admission::AdmissionOperation::Update,
            namespace,
            name,
            subresource,
            Some(&mut new),
            Some(old),
            None,
        )
        .await?;
        if managed == Managed::RecordUpdate {
            admission::record_managed(self, &mut new, Some(old), target);
        }
        meta::drop_empty_metadata(&mut new);
        if managed == Managed::Computed {
            ocm_apiserver_patch::managed_fields::keep_times_of_a_no_op(old, &mut new);
        }
        let _ = old_stored;
        self.convert_to(new, &self.res.storage_api_version())
    }

    /// Deletes one object, honouring finalizers and the propagation policy.
    pub async fn delete(
        &mut self,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let key = self.key(namespace, name);
        for attempt in 0..100 {
            let current = self
                .inner
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(self.gr(), name))?;
            let mut obj = self.parse(&current)?;
            // A namespace already terminating is answered as it stands (nothing changed, no
            // validating admission: kube's namespace storage returns before it), once the
            // preconditions hold. Mutating webhooks still see the request, as kube's DELETE
            // handler calls them before the storage.
            let finalizing = admission::namespace_finalizing(self, &obj);
            if attempt == 0
                && !finalizing
                && !self
                    .inner
                    .admission_hooks(&self.res.group, &self.res.plural, None)
                    .is_empty()
            {
                let presented = self.present(obj.clone())?;
                admission_hooks::run(
                    self,
                    crate::admission::AdmissionOperation::Delete,
                    namespace,
                    name,
                    None,
                    None,
                    Some(&presented),
                )?;
            }
            if attempt == 0 {
                let webhooks = self.inner.webhooks.get(&self.inner.store, &self.cluster);
                let policies = self
                    .inner
                    .admission_policies
                    .get(&self.inner.store, &self.cluster)
                    .is_some_and(|p| !p.entries.is_empty());
                if policies || !webhooks.mutating.is_empty() || !webhooks.validating.is_empty() {
                    let presented = self.present(obj.clone())?;
                    let phases: &[Phase] = if finalizing {
                        &[Phase::Mutating]
                    } else {
                        &[Phase::Mutating, Phase::Validating]
                    };
                    for phase in phases.iter().copied() {
                        self.call_webhooks(
                            phase,
                            crate::admission::AdmissionOperation::Delete,
                            namespace,
                            name,
                            None,
                            None,
                            Some(&presented),
                            Some(options),
                        )
                        .await?;
                    }
                }
            }
            if let Some(uid) = &options.uid
                && meta::meta_str(&obj, "uid") != uid
            {
                return Err(ApiError::conflict_because(
                    self.gr(),
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                        uid,
                        meta::meta_str(&obj, "uid")
                    ),
                ));
            }
            if let Some(rv) = &options.resource_version
                && *rv != current.rev.to_string()
            {
                return Err(ApiError::conflict_because(
                    self.gr(),
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object meta: {}",
                        rv, current.rev
                    ),
                ));
            }
            if finalizing {
                return Ok(Deleted::Pending(self.present(obj)?));
            }
            let before = obj.clone();
            let mut finalizers = meta::finalizers(&obj);
            match options.propagation {
                Some(Propagation::Foreground) => {
                    finalizers.retain(|f| f != ORPHAN_FINALIZER);
                    if !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
                        finalizers.push(FOREGROUND_FINALIZER.to_owned());
                    }
                }
                Some(Propagation::Orphan) => {
                    finalizers.retain(|f| f != FOREGROUND_FINALIZER);
                    if !finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                        finalizers.push(ORPHAN_FINALIZER.to_owned());
                    }
                }
                Some(Propagation::Background) => {
                    finalizers.retain(|f| f != ORPHAN_FINALIZER && f != FOREGROUND_FINALIZER);
                }
                None => {}
            }
            meta::set_finalizers(&mut obj, &finalizers);
            let keep = admission::prepare_delete(self, &mut obj)?;
            let finalizers = meta::finalizers(&obj);
            if finalizers.is_empty() && !keep {
                if self.dry_run {
                    return Ok(Deleted::Gone(self.present(obj)?));
                }
                match self
                    .inner
                    .store
                    .delete(key.clone(), Some(current.rev))
                    .await
                {
                    Ok(event) => {
                        let value: Value = serde_json::from_slice(&event.object)
                            .map_err(|err| ApiError::internal(err.to_string()))?;
                        return Ok(Deleted::Gone(self.present(value)?));
                    }
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(err) => return Err(self.storage_err(err, name)),
                }
            }
            if !meta::is_deleting(&obj) {
                meta::set_meta(&mut obj, "deletionTimestamp", Some(json!(meta::now())));
                meta::set_meta(&mut obj, "deletionGracePeriodSeconds", Some(json!(0)));
                let generation = meta::generation(&obj);
                if generation > 0 {
                    meta::set_meta(&mut obj, "generation", Some(json!(generation + 1)));
                }
            }
            if same_object(&obj, &before) || self.dry_run {
                return Ok(Deleted::Pending(self.present(obj)?));
            }
            match self
                .inner
                .store
                .update(key.clone(), obj, Some(current.rev))
                .await
            {
                Ok(event) => {
                    let value: Value = serde_json::from_slice(&event.object)
                        .map_err(|err| ApiError::internal(err.to_string()))?;
                    return Ok(Deleted::Pending(self.present(value)?));
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(err) => return Err(self.storage_err(err, name)),
            }
        }
        Err(ApiError::conflict(self.gr(), name))
    }

    /// Calls the mutating or validating webhooks of this request's logical cluster (see
    /// [`crate::webhook`]); webhook warnings go to the response.
    #[allow(clippy::too_many_arguments)]
    async fn call_webhooks(
        &mut self,
        phase: Phase,
        operation: crate::admission::AdmissionOperation,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        object: Option<&mut Value>,
        old: Option<&Value>,
        delete: Option<&DeleteOptions>,
    ) -> Result<(), ApiError> {
        if crate::webhook::matching::is_exempt_configuration(&self.res.group, &self.res.kind) {
            return Ok(());
        }
        let webhooks = self.inner.webhooks.get(&self.inner.store, &self.cluster);
        let hooks = match phase {
            Phase::Mutating => webhooks.mutating,
            Phase::Validating => webhooks.validating,
        };
        // ValidatingAdmissionPolicies run with the validating webhooks, just before them.
        let policies = match phase {
            Phase::Mutating => None,
            Phase::Validating => self
                .inner
                .admission_policies
                .get(&self.inner.store, &self.cluster)
                .filter(|p| !p.entries.is_empty()),
        };
        if hooks.is_empty() && policies.is_none() {
            return Ok(());
        }
        let res = self.res.clone();
        let is_namespace = res.builtin() == Some(crate::registry::BuiltinKind::Namespace);
        // kube-apiserver gives a Namespace object its own name as the request namespace.
        let object_name = object
            .as_deref()
            .or(old)
            .map(|o| meta::meta_str(o, "name").to_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| name.to_owned());
        let request_namespace = if is_namespace {
            object_name.clone()
        } else if res.namespaced {
            namespace.to_owned()
        } else {
            String::new()
        };
        let kind = match operation {
            crate::admission::AdmissionOperation::Create => "CreateOptions",
            crate::admission::AdmissionOperation::Update => "UpdateOptions",
            crate::admission::AdmissionOperation::Delete => "DeleteOptions",
        };
        let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": kind});
        if self.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(propagation) = delete.and_then(|d| d.propagation) {
            options["propagationPolicy"] = json!(format!("{propagation:?}"));
        }
        let version = self.version.clone();
        let identity = self.identity.clone();
        let equivalents = self.equivalents(subresource.unwrap_or(""));
        let converter = Ctx::new(self.inner.clone(), &self.cluster, res.clone(), &version);
        let convert = |obj: Value, target: &str| converter.convert_to(obj, target);
        let (inner, cluster) = (self.inner.clone(), self.cluster.clone());
        let authorize: crate::admission_cel::authorizer::Authorize =
            std::sync::Arc::new(move |attrs: &ocm_apiserver_rbac::Attributes| {
                inner.policy(&cluster).authorize(attrs)
            });
        let authorizer = crate::admission_cel::authorizer::value(
            &identity,
            &authorize,
            &crate::admission_cel::authorizer::RequestResource {
                group: &res.group,
                resource: &res.plural,
                subresource: subresource.unwrap_or(""),
                namespace: &request_namespace,
                name: &object_name,
            },
        );
        let invocation = crate::webhook::Invocation {
            attrs: crate::webhook::RequestAttributes {
                operation: operation.as_str(),
                group: &res.group,
                version: &version,
                resource: &res.plural,
                subresource: subresource.unwrap_or(""),
                namespace: &request_namespace,
            },
            cluster: &self.cluster,
            kind: &res.kind,
            name: &object_name,
            user: &identity,
            dry_run: self.dry_run,
            options,
            equivalents: &equivalents,
            convert: &convert,
            authorizer: &authorizer,
        };
        let mut warnings = Vec::new();
        let store = &self.inner.store;
        if let Some(policies) = &policies {
            let mut request =
                invocation.review_request(&uuid::Uuid::new_v4().to_string(), None, None);
            if let Some(map) = request.as_object_mut() {
                map.remove("object");
                map.remove("oldObject");
            }
            let env = crate::policy::Env {
                store,
                registry: &self.inner.registry,
                gr: Gr {
                    group: &res.group,
                    resource: &res.plural,
                },
            };
            let req = crate::policy::Request {
                attrs: invocation.attrs,
                cluster: &self.cluster,
                name: &object_name,
                is_namespace,
                object: object.as_deref(),
                old_object: old,
                request: &request,
                equivalents: &equivalents,
                convert: &convert,
                authorizer: &authorizer,
            };
            let result = crate::policy::admit(env, policies, &req, &mut warnings);
            self.warnings.extend(std::mem::take(&mut warnings));
            result?;
        }
        let result = match phase {
            Phase::Mutating => {
                let mut object = object;
                let before = object.as_deref().cloned();
                let result = crate::webhook::run_mutating(
                    store,
                    &hooks,
                    &invocation,
                    object.as_deref_mut(),
                    old,
                    &mut warnings,
                )
                .await;
                if let Some(obj) = object
                    && before.as_ref() != Some(&*obj)
                {
                    admission::normalize_patched(&res, &version, obj)?;
                }
                result
            }
            Phase::Validating => {
                crate::webhook::run_validating(
                    store,
                    &hooks,
                    &invocation,
                    object.as_deref(),
                    old,
                    &mut warnings,
                )
                .await
            }
        };
        self.warnings.extend(warnings);
        result
    }

    /// The `expressionWarnings` of a ValidatingAdmissionPolicy: its expressions checked
    /// against the schemas of the kinds its rules name (see [`crate::policy::typecheck`]).
    fn type_check_policy(&self, policy: &Value) -> Vec<Value> {
        use crate::policy::typecheck;
        let registry = &self.inner.registry;
        let (Some(object_meta), definitions) = (
            crate::openapi::v2::builtin::object_meta_definition(),
            crate::openapi::v2::builtin::builtin_definitions(),
        ) else {
            return Vec::new();
        };
        // A kind's schema: its built-in definition, or its CRD version's openAPIV3Schema.
        let schema_of = |res: &ResourceInfo, version: &str| -> Option<std::sync::Arc<Value>> {
            match res.builtin() {
                Some(kind) => crate::openapi::v2::builtin::builtin_definition(kind)
                    .map(|d| std::sync::Arc::new(d.clone())),
                None => res
                    .version(version)
                    .and_then(|v| v.schema.as_ref())
                    .map(|s| s.value()),
            }
        };
        let kinds: Vec<(String, std::sync::Arc<Value>)> = typecheck::named_resources(policy)
            .into_iter()
            .filter_map(|(group, version, resource)| {
                let res = registry.lookup(&self.cluster, &group, &version, &resource)?;
                let schema = schema_of(&res, &version)?;
                Some((format!("{group}/{version}, Kind={}", res.kind), schema))
            })
            .collect();
        if kinds.is_empty() {
            return Vec::new();
        }
        let params = policy.pointer("/spec/paramKind").and_then(|p| {
            let api_version = p.get("apiVersion")?.as_str()?;
            let kind = p.get("kind")?.as_str()?;
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let res = registry.lookup_kind(&self.cluster, group, kind)?;
            schema_of(&res, version)
        });
        let namespace = crate::openapi::v2::builtin::builtin_definition(
            crate::registry::BuiltinKind::Namespace,
        );
        let kinds: Vec<typecheck::Kind<'_>> = kinds
            .iter()
            .map(|(gvk, schema)| typecheck::Kind { gvk, schema })
            .collect();
        typecheck::expression_warnings(
            policy,
            &kinds,
            typecheck::Schemas {
                definitions,
                object_meta,
                params: params.as_deref(),
                namespace,
            },
        )
    }

    /// The other groups and versions serving this resource's objects, as kube-apiserver counts
    /// them equivalent for `matchPolicy: Equivalent`: every other served version of a custom
    /// resource (most preferred first) and Events between the core group and
    /// `events.k8s.io`. None for subresources other than `status` (their objects are not the
    /// resource's).
    fn equivalents(&self, subresource: &str) -> Vec<crate::webhook::Equivalent> {
        if !subresource.is_empty() && subresource != "status" {
            return Vec::new();
        }
        let res = &self.res;
        let of = |group: &str, version: &str| crate::webhook::Equivalent {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: res.plural.clone(),
            kind: res.kind.clone(),
        };
        match res.builtin() {
            Some(crate::registry::BuiltinKind::CoreEvent) => vec![of("events.k8s.io", "v1")],
            Some(crate::registry::BuiltinKind::EventsEvent) => vec![of("", "v1")],
            _ => res
                .versions
                .iter()
                .filter(|v| v.name != self.version)
                .map(|v| of(&res.group, &v.name))
                .collect(),
        }
    }

    /// The revision of the store now.
    pub fn revision(&self) -> Revision {
        self.inner.store.revision()
    }
}

fn copy_field(to: &mut Value, from: &Value, field: &str) {
    let Some(map) = to.as_object_mut() else {
        return;
    };
    match from.get(field) {
        Some(v) => {
            map.insert(field.to_owned(), v.clone());
        }
        None => {
            map.remove(field);
        }
    }
}

/// Equal apart from `metadata.resourceVersion`, as kube compares an update with what it holds:
/// by the JSON each would store (so `1.0` is no change from `1`).
fn same_object(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(x), Some(y)) => same_fields(x, y, |key, v, w| {
            if key == "metadata" {
                same_metadata(v, w)
            } else {
                ocm_apiserver_json::same_value(v, w)
            }
        }),
        _ => ocm_apiserver_json::same_value(a, b),
    }
}

/// Metadata equal apart from `resourceVersion` (compared whole when it is not an object).
fn same_metadata(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(x), Some(y)) => {
            let rest = |m: &serde_json::Map<String, Value>| {
                m.keys().filter(|k| *k != "resourceVersion").count()
            };
            rest(x) == rest(y)
                && x.iter().all(|(key, v)| {
                    key == "resourceVersion"
                        || y.get(key)
                            .is_some_and(|w| ocm_apiserver_json::same_value(v, w))
                })
        }
        _ => ocm_apiserver_json::same_value(a, b),
    }
}

/// Same keys, and each key's values equal by `same`.
fn same_fields(
    x: &serde_json::Map<String, Value>,
    y: &serde_json::Map<String, Value>,
    same: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(key, v)| y.get(key).is_some_and(|w| same(key, v, w)))
}

/// `generateName` plus five random characters.
fn generate_name(prefix: &str) -> String {
    let alphabet = crate::validation::GENERATE_NAME_ALPHABET.as_bytes();
    let random = uuid::Uuid::new_v4();
    let suffix: String = random
        .as_bytes()
        .iter()
        .take(crate::validation::GENERATE_NAME_SUFFIX_LEN)
        .map(|b| alphabet[(*b as usize) % alphabet.len()] as char)
        .collect();
    crate::validation::generate_name(prefix, &suffix)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::same_object;

    #[test]
    fn objects_are_the_same_apart_from_their_resource_version() {
        let a = json!({"metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"n": 1}});
        let b = json!({"spec": {"n": 1.0}, "metadata": {"resourceVersion": "2", "name": "a"}});
        assert!(same_object(&a, &b));
        let without = json!({"metadata": {"name": "a"}, "spec": {"n": 1}});
        assert!(same_object(&a, &without));
        assert!(same_object(&without, &a));
        assert!(!same_object(
            &a,
            &json!({"metadata": {"name": "b"}, "spec": {"n": 1}})
        ));
        assert!(!same_object(
            &a,
            &json!({"metadata": {"name": "a"}, "spec": {"n": 2}})
        ));
        assert!(!same_object(
            &a,
            &json!({"metadata": {"name": "a", "uid": "u"}, "spec": {"n": 1}})
        ));
        assert!(!same_object(&a, &json!({"metadata": {"name": "a"}})));
        assert!(!same_object(
            &json!({"metadata": "x"}),
            &json!({"metadata": "y"})
        ));
        assert!(same_object(&json!([1, 2]), &json!([1.0, 2])));
    }
}

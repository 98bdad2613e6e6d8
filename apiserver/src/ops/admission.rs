//! Kind-specific rules of the write path ("strategies" in kube-apiserver): type checks,
//! normalization and unknown fields, create/update preparation, subresources, delete rules,
//! and validation.

use serde_json::{Value, json};

use super::{Ctx, Target};
use crate::meta;
use crate::registry::{BuiltinKind, resource_from_crd};
use ocm_apiserver_patch::ObjectType;
use ocm_apiserver_patch::typeinfo::TypeRef;
use ocm_apiserver_status::{ApiError, Cause};

/// Finalizer that keeps a CRD until its custom resources are gone.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// A 422 Invalid from validation causes.
pub(crate) fn validation_error(
    ctx: &Ctx,
    name: &str,
    causes: Vec<crate::validation::Cause>,
) -> ApiError {
    let message = crate::validation::invalid_message(&ctx.res.qualified_kind(), name, &causes);
    let converted = causes
        .iter()
        .map(|c| {
            Cause::new(
                &format!("{:?}", c.reason),
                c.message.clone(),
                c.field.clone(),
            )
        })
        .collect();
    let mut err = ApiError::invalid(
        &ctx.res.qualified_kind(),
        &ctx.res.group,
        &ctx.res.kind,
        name,
        converted,
    );
    err.message = message;
    err
}

/// `apiVersion` and `kind` of a request body against the URL (filled in when missing).
pub(crate) fn check_type_meta(
    ctx: &Ctx,
    obj: &mut Value,
    _old: Option<&Value>,
) -> Result<(), ApiError> {
    let expected_av = ctx.res.api_version(&ctx.version);
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {})",
            ctx.res.kind
        )));
    };
    let av = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if av.is_empty() {
        map.insert("apiVersion".into(), json!(expected_av));
    } else if av != expected_av {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({expected_av})"
        )));
    }
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if kind.is_empty() {
        map.insert("kind".into(), json!(ctx.res.kind));
    } else if kind != ctx.res.kind {
        let name = map
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if ctx.res.is_custom() {
            let qualified = format!("{}.{}", kind, ctx.res.group);
            let cause = Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: \"{}\": must be {}", kind, ctx.res.kind),
                "kind",
            );
            let mut err = ApiError::invalid(&qualified, &ctx.res.group, &kind, &name, vec![cause]);
            err.message = format!(
                "{qualified} \"{name}\" is invalid: kind: Invalid value: \"{kind}\": must be {}",
                ctx.res.kind
            );
            return Err(err);
        }
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            ctx.res.kind
        )));
    }
    Ok(())
}

/// Decoding rules: metadata shape, typed normalization of built-ins, pruning and defaulting
/// of custom resources; unknown fields handled per `fieldValidation`.
pub(crate) fn normalize(
    ctx: &mut Ctx,
    obj: &mut Value,
    _old: Option<&Value>,
) -> Result<(), ApiError> {
    // The object as decoding received it: the value of a patch's strict 422.
    let patched = (ctx.field_validation == super::FieldValidation::Strict && ctx.body.is_patch())
        .then(|| obj.clone());
    let mut unknown: Vec<String> = crate::validation::coerce_object_meta(obj, "")
        .map_err(|err| ApiError::bad_request(err.to_string()))?;
    if let Some(kind) = ctx.res.builtin() {
        if kind == BuiltinKind::Secret {
            merge_secret_string_data(obj);
        }
        if let Err(err) = crate::quantity::fields::canonicalize(kind, obj) {
            let subject = crate::fieldvalidation::Subject {
                kind: &ctx.res.kind,
                version: &ctx.version,
                typed: true,
            };
            let shown = || crate::validation::go_json(patched.as_ref().unwrap_or(obj));
            return Err(crate::fieldvalidation::decode_error(
                &ctx.body,
                subject,
                &err.to_string(),
                shown,
            ));
        }
        let input = obj.clone();
        let output = kind.normalize(input.clone()).map_err(|err| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): {}",
                ctx.res.kind, err
            ))
        })?;
        let types = ObjectType::builtin(&ctx.res.group, &ctx.res.kind);
        let ty = types.as_ref().map(ObjectType::root);
        dropped_fields(&input, &output, ty, "", &mut unknown);
        *obj = output;
        crate::kinds::apply_defaults(kind, obj);
        if let Some(mutating) = webhook_configuration(kind) {
            crate::webhook::apply_defaults(obj, mutating);
        }
        match kind {
            BuiltinKind::ValidatingAdmissionPolicy => crate::policy::apply_policy_defaults(obj),
            BuiltinKind::ValidatingAdmissionPolicyBinding => {
                crate::policy::apply_binding_defaults(obj)
            }
            _ => {}
        }
        flowcontrol_defaults(kind, obj);
        // Metadata went through the typed ObjectMeta too; drop what Go omits.
        meta::drop_empty_metadata(obj);
    } else {
        // kube decodes custom resources as unstructured JSON: no int64, a float.
        ocm_apiserver_schema::widen_out_of_range_integers(obj);
        if let Some(schema) = ctx.res.version(&ctx.version).and_then(|v| v.structural()) {
            let pruned = schema
                .prune(obj)
                .map_err(|err| ApiError::bad_request(err.message))?;
            unknown.extend(pruned);
            schema.apply_defaults(obj);
        }
        // An applied configuration with fields the schema does not declare fails the field
        // manager's typed conversion in kube, whatever `fieldValidation` says.
        if matches!(ctx.body, crate::fieldvalidation::BodyCheck::Apply) && !unknown.is_empty() {
            return Err(crate::fieldvalidation::apply_undeclared(
                meta::meta_str(obj, "namespace"),
                meta::meta_str(obj, "name"),
                &ctx.res.api_version(&ctx.version),
                &ctx.res.kind,
                &unknown,
            ));
        }
    }
    let warnings = crate::fieldvalidation::report(
        ctx.field_validation,
        &ctx.body,
        unknown,
        crate::fieldvalidation::Subject {
            kind: &ctx.res.kind,
            version: &ctx.version,
            typed: ctx.res.builtin().is_some(),
        },
        // kube shows the JSON the patch library wrote: Go maps, so keys sorted and `<>&`
        // escaped (built-in kinds: except subtrees the patch left alone, see Known gaps).
        || {
            patched
                .as_ref()
                .map(crate::validation::go_json)
                .unwrap_or_default()
        },
    )?;
    ctx.warnings.extend(warnings);
    Ok(())
}

/// What kube-apiserver does when it decodes a v1 Secret: every `stringData` entry is written,
/// base64-encoded, into `data` (overriding a `data` entry of the same key), and `stringData`
/// itself is never stored. Non-string values are left for the typed decoding to reject.
/// An object changed by mutating webhooks is decoded again: built-ins through their type
/// (unknown fields dropped), custom resources pruned and defaulted, as kube-apiserver does
/// after non-empty webhook patches.
pub(crate) fn normalize_patched(
    res: &crate::registry::ResourceInfo,
    version: &str,
    obj: &mut Value,
) -> Result<(), ApiError> {
    if let Some(kind) = res.builtin() {
        let invalid = |err: &dyn std::fmt::Display| {
            ApiError::internal(format!(
                "the object patched by an admission webhook is not a valid {}: {err}",
                res.kind
            ))
        };
        crate::quantity::fields::canonicalize(kind, obj).map_err(|err| invalid(&err))?;
        *obj = kind.normalize(obj.clone()).map_err(|err| invalid(&err))?;
        crate::kinds::apply_defaults(kind, obj);
        flowcontrol_defaults(kind, obj);
        meta::drop_empty_metadata(obj);
    } else {
        ocm_apiserver_schema::widen_out_of_range_integers(obj);
        if let Some(schema) = res.version(version).and_then(|v| v.structural()) {
            schema
                .prune(obj)
                .map_err(|err| ApiError::internal(err.message))?;
            schema.apply_defaults(obj);
        }
    }
    Ok(())
}

/// The flowcontrol kind of a built-in kind, if it is one.
fn flowcontrol_kind(kind: BuiltinKind) -> Option<crate::flowcontrol::Kind> {
    match kind {
        BuiltinKind::FlowSchema => Some(crate::flowcontrol::Kind::FlowSchema),
        BuiltinKind::PriorityLevelConfiguration => Some(crate::flowcontrol::Kind::PriorityLevel),
        _ => None,
    }
}

/// kube's v1 defaults of FlowSchemas and PriorityLevelConfigurations, and the `status: {}`
/// Go always writes for them (their status is a struct, not a pointer; the typed decoding
/// drops an empty one).
fn flowcontrol_defaults(kind: BuiltinKind, obj: &mut Value) {
    let Some(fc) = flowcontrol_kind(kind) else {
        return;
    };
    crate::flowcontrol::apply_defaults(fc, obj);
    if let Some(map) = obj.as_object_mut() {
        map.entry("status").or_insert_with(|| json!({}));
    }
}

fn merge_secret_string_data(obj: &mut Value) {
    use base64::Engine;
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.get("stringData") else {
        return;
    };
    if string_data.values().any(|v| !v.is_string()) {
        return;
    }
    let encoded: Vec<(String, Value)> = string_data
        .iter()
        .map(|(k, v)| {
            let text = v.as_str().unwrap_or_default();
            let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
            (k.clone(), Value::String(b64))
        })
        .collect();
    map.remove("stringData");
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if data.is_null() {
        *data = Value::Object(serde_json::Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        data.extend(encoded);
    }
}

/// Paths present in `input` but missing from `output` (the typed decoding of a built-in kind,
/// whose fields are `ty`): the unknown fields. A null the decoding dropped is unknown only where
/// `ty` says the object is a struct without that field (a declared field set to null is
/// omitted too); without types, nulls are never reported.
fn dropped_fields(
    input: &Value,
    output: &Value,
    ty: Option<TypeRef<'_>>,
    prefix: &str,
    out: &mut Vec<String>,
) {
    match (input, output) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match b.get(k) {
                    None => {
                        if path != "metadata"
                            && (!v.is_null() || ty.is_some_and(|t| undeclared(t, k)))
                        {
                            out.push(path);
                        }
                    }
                    Some(w) => dropped_fields(v, w, ty.map(|t| t.field(k).0), &path, out),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                dropped_fields(v, w, ty.map(TypeRef::items), &format!("{prefix}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Whether `name` is not a member `t` can hold: `t` is a struct that does not declare it and
/// takes no other keys.
fn undeclared(t: TypeRef<'_>, name: &str) -> bool {
    t.map()
        .is_some_and(|m| m.elem.is_none() && !m.fields.contains_key(name))
}

/// Defaults applied when custom resources are read (schema defaults).
pub(crate) fn default_custom(ctx: &Ctx, obj: &mut Value, version: &str) {
    if let Some(schema) = ctx.res.version(version).and_then(|v| v.structural()) {
        schema.apply_defaults(obj);
    }
}

/// For a webhook configuration kind: whether it is the mutating one.
fn webhook_configuration(kind: BuiltinKind) -> Option<bool> {
    match kind {
        BuiltinKind::MutatingWebhookConfiguration => Some(true),
        BuiltinKind::ValidatingWebhookConfiguration => Some(false),
        _ => None,
    }
}

/// Create-time preparation (`PrepareForCreate`).
pub(crate) fn prepare_create(ctx: &mut Ctx, obj: &mut Value) -> Result<(), ApiError> {
    let has_status = ctx.res.has_status(&ctx.version);
    match ctx.res.builtin() {
        Some(BuiltinKind::Namespace) => {
            let name = meta::meta_str(obj, "name").to_owned();
            set_namespace_label(obj, &name);
            let spec = obj
                .as_object_mut()
                .map(|m| m.entry("spec").or_insert_with(|| json!({})).clone())
                .unwrap_or_else(|| json!({}));
            if spec.get("finalizers").is_none() {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
            }
            obj["status"] = json!({"phase": "Active"});
        }
        Some(BuiltinKind::Node) => {}
        Some(BuiltinKind::FlowSchema | BuiltinKind::PriorityLevelConfiguration) => {
            obj["status"] = json!({});
        }
        Some(BuiltinKind::CertificateSigningRequest) => {
            if let Some(map) = obj.as_object_mut() {
                map.remove("status");
            }
            obj["spec"]["username"] = json!(ctx.identity.user);
            obj["spec"]["groups"] = json!(ctx.identity.groups);
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("uid");
                spec.remove("extra");
                if !ctx.identity.uid.is_empty() {
                    spec.insert("uid".into(), json!(ctx.identity.uid));
                }
                if !ctx.identity.extra.is_empty() {
                    spec.insert("extra".into(), json!(ctx.identity.extra));
                }
            }
        }
        Some(BuiltinKind::Pod) => {
            let mut status = json!({"phase": "Pending"});
            if let Some(q) = obj.pointer("/status/qosClass") {
                status["qosClass"] = q.clone();
            }
            obj["status"] = status;
        }
        Some(BuiltinKind::Service) => {
            obj["status"] = json!({"loadBalancer": {}});
            allocate_service(ctx, obj)?;
        }
        Some(kind) if let Some(status) = crate::kinds::status_on_create(kind, obj) => {
            obj["status"] = status;
        }
        _ if has_status => {
            if let Some(map) = obj.as_object_mut() {
                map.remove("status");
            }
        }
        _ => {}
    }
    if ctx.res.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
        validate_crd(ctx, obj, None)?;
    }
    Ok(())
}

/// Allocates a new Service's cluster IP and node ports among those the cluster's Services
/// hold (kube's 422 when a requested one is taken or out of range).
fn allocate_service(ctx: &Ctx, obj: &mut Value) -> Result<(), ApiError> {
    let bucket = ocm_apiserver_storage::Bucket::new(&ctx.cluster, "/services");
    let (_, items) = ctx.inner.store.list(&bucket, None, None);
    let services: Vec<Value> = items
        .into_iter()
        .filter_map(|(_, _, o)| serde_json::from_slice(&o.value).ok())
        .collect();
    let allocated = crate::kinds::Allocated::of(&services);
    let seed = uuid::Uuid::new_v4().as_u128();
    let causes = crate::kinds::allocate(obj, &allocated, seed);
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta::meta_str(obj, "name").to_owned();
    Err(validation_error(ctx, &name, causes))
}

fn set_namespace_label(obj: &mut Value, name: &str) {
    if let Some(meta) = meta::metadata_mut(obj) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    }
}

/// The CEL expressions (rules and message expressions) anywhere in a CRD's schemas.
fn cel_expressions(crd: &Value, out: &mut std::collections::HashSet<String>) {
    match crd {
        Value::Object(map) => {
            if let Some(rules) = map
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
            {
                for rule in rules {
                    for k in ["rule", "messageExpression"] {
                        if let Some(text) = rule.get(k).and_then(Value::as_str) {
                            out.insert(text.to_owned());
                        }
                    }
                }
            }
            map.values().for_each(|v| cel_expressions(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| cel_expressions(v, out)),
        _ => {}
    }
}

/// Validates a CRD written (`old`: the stored one on update, whose CEL expressions are not
/// refused again).
fn validate_crd(ctx: &Ctx, obj: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let mut preexisting = std::collections::HashSet::new();
    if let Some(old) = old {
        cel_expressions(old, &mut preexisting);
    }
    let name = meta::meta_str(obj, "name").to_owned();
    if let Err(crate::registry::CrdError::Invalid { field, message }) = resource_from_crd(obj) {
        let cause = Cause::new("FieldValueInvalid", message, field);
        return Err(ApiError::invalid(
            &ctx.res.qualified_kind(),
            &ctx.res.group,
            &ctx.res.kind,
            &name,
            vec![cause],
        ));
    }
    let versions = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut causes = crate::webhook::conversion::validate_crd_conversion(obj);
    for (i, v) in versions.iter().enumerate() {
        let Some(schema) = v.pointer("/schema/openAPIV3Schema") else {
            continue;
        };
        let status = v
            .pointer("/subresources/status")
            .is_some_and(|s| !s.is_null());
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match ocm_apiserver_schema::StructuralSchema::new_in_crd_update(
            schema,
            &path,
            status,
            &preexisting,
        ) {
            Ok(structural) => {
                let fields: Vec<&str> = v
                    .get("selectableFields")
                    .and_then(Value::as_array)
                    .map(|f| {
                        f.iter()
                            .filter_map(|x| x.get("jsonPath").and_then(Value::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                if !fields.is_empty() {
                    let path = format!("spec.versions[{i}].selectableFields");
                    causes.extend(structural.validate_selectable_fields(&fields, &path));
                }
            }
            Err(ocm_apiserver_schema::SchemaError::Decode { message }) => {
                return Err(ApiError::bad_request(message));
            }
            Err(ocm_apiserver_schema::SchemaError::Invalid { causes: c }) => causes.extend(c),
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(validation_error(ctx, &name, causes))
}

/// Update-time preparation (`PrepareForUpdate`) after the status split.
pub(crate) fn prepare_update(
    ctx: &mut Ctx,
    new: &mut Value,
    old: &Value,
    target: &Target,
) -> Result<(), ApiError> {
    match ctx.res.builtin() {
        Some(BuiltinKind::Namespace) => {
            let name = meta::meta_str(new, "name").to_owned();
            set_namespace_label(new, &name);
            // spec.finalizers change only through /finalize.
            if *target != Target::Sub("finalize".into()) {
                let old_spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
                if let Some(map) = new.as_object_mut() {
                    map.insert("spec".into(), old_spec);
                }
            }
        }
        Some(BuiltinKind::CertificateSigningRequest) => {
            let old_spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
            if let Some(map) = new.as_object_mut() {
                map.insert("spec".into(), old_spec);
            }
        }
        Some(BuiltinKind::Service) if *target == Target::Main => {
            crate::kinds::keep_allocations(new, old);
        }
        // kube validates a CRD's spec on writes of the CRD itself; a `/status` write keeps
        // the stored spec (the status split above) and is checked as status only.
        Some(BuiltinKind::CustomResourceDefinition) if *target == Target::Main => {
            validate_crd(ctx, new, Some(old))?
        }
        _ => {}
    }
    Ok(())
}

/// Whether `obj` is a namespace already terminating whose `spec.finalizers` are not done: a
/// DELETE of it changes nothing and answers the namespace as it stands (kube-apiserver's
/// namespace storage does the same, after checking the preconditions).
pub(crate) fn namespace_finalizing(ctx: &Ctx, obj: &Value) -> bool {
    ctx.res.builtin() == Some(BuiltinKind::Namespace)
        && meta::is_deleting(obj)
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

/// Delete-time rules. Returns whether the object must stay even without finalizers.
pub(crate) fn prepare_delete(ctx: &mut Ctx, obj: &mut Value) -> Result<bool, ApiError> {
    match ctx.res.builtin() {
        Some(BuiltinKind::Namespace) => {
            let name = meta::meta_str(obj, "name").to_owned();
            if matches!(name.as_str(), "default" | "kube-system" | "kube-public") {
                return Err(ApiError::forbidden(
                    ctx.gr(),
                    &name,
                    "this namespace may not be deleted",
                ));
            }
            let spec_finalizers = obj
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if meta::is_deleting(obj) {
                return Ok(false);
            }
            obj["status"] = json!({"phase": "Terminating"});
            Ok(spec_finalizers)
        }
        Some(BuiltinKind::CustomResourceDefinition) => {
            if !meta::is_deleting(obj) {
                let mut finalizers = meta::finalizers(obj);
                if !finalizers.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
                    finalizers.push(CRD_CLEANUP_FINALIZER.to_owned());
                }
                meta::set_finalizers(obj, &finalizers);
                let now = meta::now();
                let conditions = obj
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let mut conditions: Vec<Value> = conditions
                    .into_iter()
                    .filter(|c| c.get("type").and_then(Value::as_str) != Some("Terminating"))
                    .collect();
                conditions.push(json!({
                    "type": "Terminating",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "InstanceDeletionPending",
                    "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
                }));
                if let Some(map) = obj.as_object_mut() {
                    let status = map.entry("status").or_insert_with(|| json!({}));
                    status["conditions"] = Value::Array(conditions);
                }
            }
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// Whether an object being deleted may now be removed: no finalizers left (and, for
/// namespaces, no `spec.finalizers` either).
pub(crate) fn can_remove(ctx: &Ctx, obj: &Value) -> bool {
    if !meta::is_deleting(obj) || !meta::finalizers(obj).is_empty() {
        return false;
    }
    if ctx.res.builtin() == Some(BuiltinKind::Namespace) {
        return obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
    }
    true
}

/// Validation of a new object (and of an update relative to `old`).
pub(crate) fn validate(
    ctx: &mut Ctx,
    obj: &Value,
    old: Option<&Value>,
    target: &Target,
) -> Result<(), ApiError> {
    let rule = crate::validation::name_rule_for(&ctx.res.group, &ctx.res.plural);
    let mut causes = crate::validation::validate_object_meta(obj, rule, ctx.res.namespaced);
    if let Some(old) = old {
        causes.extend(crate::validation::validate_object_meta_update(obj, old));
    }
    if let Some(mutating) = ctx.res.builtin().and_then(webhook_configuration) {
        causes.extend(crate::webhook::validate_configuration(obj, mutating));
    }
    match (ctx.res.builtin(), target) {
        (Some(BuiltinKind::ValidatingAdmissionPolicy), Target::Main) => {
            causes.extend(crate::policy::validate_policy(obj));
        }
        (Some(BuiltinKind::ValidatingAdmissionPolicyBinding), _) => {
            causes.extend(crate::policy::validate_binding(obj));
        }
        (Some(BuiltinKind::FlowSchema), Target::Main) => {
            causes.extend(crate::validation::validate_flow_schema(obj));
        }
        (Some(BuiltinKind::PriorityLevelConfiguration), Target::Main) => {
            causes.extend(crate::validation::validate_priority_level(obj));
        }
        (Some(BuiltinKind::FlowSchema | BuiltinKind::PriorityLevelConfiguration), _) => {
            causes.extend(crate::validation::validate_flowcontrol_status(obj));
        }
        _ => {}
    }
    match (ctx.res.builtin(), old) {
        (Some(BuiltinKind::ConfigMap), None) => {
            causes.extend(crate::validation::validate_config_map(obj));
        }
        (Some(BuiltinKind::ConfigMap), Some(old)) => {
            causes.extend(crate::validation::validate_config_map_update(obj, old));
        }
        (Some(BuiltinKind::Secret), None) => causes.extend(crate::validation::validate_secret(obj)),
        (Some(BuiltinKind::Secret), Some(old)) => {
            causes.extend(crate::validation::validate_secret_update(obj, old));
        }
        (Some(kind), _) => causes.extend(crate::kinds::validate(kind, obj, old)),
        _ => {}
    }
    // Schema (and CEL) errors are reported together with the metadata errors, in one 422, as
    // kube-apiserver does for custom resources.
    if let Some(schema) = ctx.res.version(&ctx.version).and_then(|v| v.structural()) {
        let status_only = matches!(target, Target::Sub(s) if s == "status");
        let (more, warnings) = schema.validate_after_with_warnings(obj, old, status_only, &causes);
        causes.extend(more);
        ctx.warnings.extend(warnings);
    }
    if ctx.res.is_custom() {
        ctx.warnings
            .extend(crate::validation::finalizer_warnings(obj, old));
    }
    if causes.is_empty() {
        // A well-formed policy or binding is also checked for read access to its params.
        causes.extend(param_access(ctx, obj, old, target));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta::meta_str(obj, "name").to_owned();
    Err(validation_error(ctx, &name, causes))
}

/// kube's check that the writer of a ValidatingAdmissionPolicy (`paramKind`) or of a binding
/// (`paramRef`) may read the params (see [`crate::policy::authz`]).
fn param_access(
    ctx: &Ctx,
    obj: &Value,
    old: Option<&Value>,
    target: &Target,
) -> Option<crate::validation::Cause> {
    use crate::policy::spec::ParamKind;
    let kind = ctx.res.builtin()?;
    let resolve = |k: &ParamKind| {
        ctx.inner
            .registry
            .lookup_kind(&ctx.cluster, k.group(), &k.kind)
            .filter(|r| r.version(k.version()).is_some())
            .map(|r| r.plural.clone())
    };
    let allowed = |t: &ocm_apiserver_rbac::ResourceAttributes| {
        ctx.inner
            .policy(&ctx.cluster)
            .authorize(&ocm_apiserver_rbac::Attributes {
                user: ctx.identity.clone(),
                verb: "get".to_owned(),
                target: ocm_apiserver_rbac::Target::Resource(t.clone()),
            })
            .allowed
    };
    match (kind, target) {
        (BuiltinKind::ValidatingAdmissionPolicy, Target::Main) => {
            crate::policy::authz::check_policy(obj, old, &ctx.identity, &resolve, &allowed)
        }
        (BuiltinKind::ValidatingAdmissionPolicyBinding, _) => {
            let policy_name = obj
                .pointer("/spec/policyName")
                .and_then(Value::as_str)
                .unwrap_or("");
            let key = ocm_apiserver_storage::ObjectKey::new(
                ocm_apiserver_storage::Bucket::new(&ctx.cluster, crate::policy::admit::POLICIES),
                "",
                policy_name,
            );
            let policy_kind = ctx
                .inner
                .store
                .get(&key)
                .and_then(|o| serde_json::from_slice::<Value>(&o.value).ok())
                .and_then(|p| ParamKind::of_policy(&p));
            crate::policy::authz::check_binding(
                obj,
                old,
                policy_kind.as_ref(),
                &ctx.identity,
                &resolve,
                &allowed,
            )
        }
        _ => None,
    }
}

/// Records the write in `metadata.managedFields` for the request's field manager.
pub(crate) fn record_managed(ctx: &Ctx, obj: &mut Value, old: Option<&Value>, target: &Target) {
    let types = super::object_type(&ctx.res, &ctx.version);
    let subresource = match target {
        Target::Main => None,
        Target::Sub(s) => Some(s.as_str()),
    };
    let api_version = ctx.res.api_version(&ctx.version);
    let now = meta::now();
    let manager = if ctx.manager.is_empty() {
        "unknown"
    } else {
        ctx.manager.as_str()
    };
    let opts = ocm_apiserver_patch::UpdateOptions {
        manager,
        api_version: &api_version,
        subresource,
        reset_fields: ocm_apiserver_patch::default_reset_fields(
            subresource,
            ctx.res.has_status(&ctx.version),
        ),
        now: &now,
    };
    ocm_apiserver_patch::record_update(old, obj, &types, &opts);
}

/// Whether a PUT without `resourceVersion` is allowed.
pub(crate) fn allow_unconditional_update(ctx: &Ctx) -> bool {
    !ctx.res.is_custom() && ctx.res.builtin() != Some(BuiltinKind::CustomResourceDefinition)
}

/// 422 for an update without resourceVersion where one is required.
pub(crate) fn rv_required(ctx: &Ctx, name: &str) -> ApiError {
    let cause = Cause::new(
        "FieldValueInvalid",
        "Invalid value: 0: must be specified for an update",
        "metadata.resourceVersion",
    );
    ApiError::invalid(
        &ctx.res.qualified_kind(),
        &ctx.res.group,
        &ctx.res.kind,
        name,
        vec![cause],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_paths() {
        let input = json!({"a": 1, "spec": {"x": 1, "y": null, "list": [{"k": 1, "z": 2}]}});
        let output = json!({"a": 1, "spec": {"x": 1, "list": [{"k": 1}]}});
        let mut out = Vec::new();
        dropped_fields(&input, &output, None, "", &mut out);
        assert_eq!(out, ["spec.list[0].z"]);
    }

    #[test]
    fn nulls_are_unknown_where_the_struct_does_not_declare_them() {
        let types = ObjectType::builtin("", "ConfigMap").unwrap();
        let input = json!({"data": {"k": "v"}, "immutable": null, "bogus": null, "metadata": {}});
        let output = json!({"data": {"k": "v"}, "metadata": {}});
        let mut out = Vec::new();
        dropped_fields(&input, &output, Some(types.root()), "", &mut out);
        assert_eq!(out, ["bogus"]);
    }
}

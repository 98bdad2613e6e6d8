//! get and list.

use bytes::{BufMut, Bytes, BytesMut};
use http::StatusCode;
use serde_json::{Value, json};

use super::{Output, Reply, ResourceRequest, object_reply};
use crate::meta;
use crate::meta::partial_metadata;
use ocm_apiserver_selector::{FieldSelector, FieldSet, LabelSelector, Operator};
use ocm_apiserver_status::ApiError;
use ocm_apiserver_storage::{Revision, StorageError, StoredObject};

/// Label and field selector of a request, checked against what the resource supports.
pub(crate) struct Filter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub field_set: FieldSet,
    pub namespace: Option<String>,
    /// What [`Filter::could_match`] looks for, built once per request.
    needles: Vec<memchr::memmem::Finder<'static>>,
}

impl Filter {
    pub fn from_request(req: &ResourceRequest) -> Result<Filter, ApiError> {
        let labels = LabelSelector::parse(req.query.get("labelSelector").unwrap_or(""))
            .map_err(|err| ApiError::bad_request(err.to_string()))?;
        let field_set = if req.res.is_custom() {
            let paths: Vec<String> = req
                .res
                .version(&req.path.version)
                .map(|v| v.selectable_fields.clone())
                .unwrap_or_default();
            FieldSet::for_custom_resource(req.res.namespaced, &paths)
        } else {
            FieldSet::for_builtin(&req.res.group, &req.res.plural)
        };
        let fields = FieldSelector::parse(req.query.get("fieldSelector").unwrap_or(""))
            .map_err(|err| ApiError::bad_request(err.to_string()))?;
        let fields = field_set
            .check(&fields)
            .map_err(|err| ApiError::bad_request(err.to_string()))?;
        Ok(Filter::new(
            labels,
            fields,
            field_set,
            req.path.namespace.clone(),
        ))
    }

    /// A filter of these selectors, in `namespace` when given.
    pub fn new(
        labels: LabelSelector,
        fields: FieldSelector,
        field_set: FieldSet,
        namespace: Option<String>,
    ) -> Filter {
        let needles = needles(&labels, &fields);
        Filter {
            labels,
            fields,
            field_set,
            namespace,
            needles,
        }
    }

    /// Whether nothing needs the parsed object.
    pub fn is_everything(&self) -> bool {
        self.labels.is_everything() && self.fields.is_everything()
    }

    /// A necessary condition on an object's stored JSON, checked without parsing it: `false`
    /// means the object cannot match. Equality requirements on labels and on `metadata.name` /
    /// `metadata.namespace` must appear as `"key":"value"` in the bytes, which holds because
    /// storage writes compact JSON (serde_json: no spaces, only `"`, `\` and control
    /// characters escaped) and presenting an object in another version keeps its metadata.
    /// A list or watch with a selector over a large collection (every agent lists its own
    /// CSRs by label) thus parses only the objects that may match.
    pub fn could_match(&self, raw: &[u8]) -> bool {
        self.needles.iter().all(|n| n.find(raw).is_some())
    }

    /// The one object a list can hold when the field selector requires its name
    /// (`metadata.name=`) and its namespace is known (the path's, a `metadata.namespace=`
    /// term, or none for a cluster-scoped resource): then the list reads that key instead of
    /// scanning the bucket. The selectors still apply to what it finds.
    pub fn named_key<'a>(
        &'a self,
        path_namespace: Option<&'a str>,
        namespaced: bool,
    ) -> Option<(&'a str, &'a str)> {
        let required = |field: &str| {
            self.fields
                .terms()
                .iter()
                .find(|t| t.field == field && !t.negated)
                .map(|t| t.value.as_str())
        };
        let name = required("metadata.name")?;
        let namespace = if namespaced {
            path_namespace.or_else(|| required("metadata.namespace"))?
        } else {
            ""
        };
        Some((namespace, name))
    }

    /// Whether the field selector reads only `metadata.name` and `metadata.namespace`, so
    /// that, with the label selector, it selects the same objects in every version.
    pub fn selects_by_metadata_only(&self) -> bool {
        self.fields
            .terms()
            .iter()
            .all(|t| matches!(t.field.as_str(), "metadata.name" | "metadata.namespace"))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && meta::meta_str(obj, "namespace") != ns
        {
            return false;
        }
        self.labels.matches_value(obj) && self.fields.matches(obj, &self.field_set)
    }
}

/// The `"key":"value"` members an object must hold in its compact JSON to match: equality
/// requirements on labels (`=`, `==`, `in` with one value) and on `metadata.name` /
/// `metadata.namespace`. Pairs with characters JSON escapes are left out (the bytes cannot
/// tell), as are all other requirements (left to the full match).
fn needles(labels: &LabelSelector, fields: &FieldSelector) -> Vec<memchr::memmem::Finder<'static>> {
    let labels = labels.requirements().iter().filter_map(|r| {
        let single = matches!(
            r.operator(),
            Operator::Equals | Operator::DoubleEquals | Operator::In
        ) && r.values().len() == 1;
        single.then(|| (r.key(), r.values()[0].as_str()))
    });
    let fields = fields.terms().iter().filter_map(|t| {
        let key = match t.field.as_str() {
            "metadata.name" => "name",
            "metadata.namespace" => "namespace",
            _ => return None,
        };
        (!t.negated && !t.value.is_empty()).then_some((key, t.value.as_str()))
    });
    let plain = |s: &str| !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
    labels
        .chain(fields)
        .filter(|(key, value)| plain(key) && plain(value))
        .map(|(key, value)| {
            memchr::memmem::Finder::new(format!("\"{key}\":\"{value}\"").as_bytes()).into_owned()
        })
        .collect()
}

/// GET of one object (or of its status/approval/scale subresource).
pub(crate) fn get(req: &ResourceRequest) -> Result<Reply, ApiError> {
    let ctx = req.ctx()?;
    let name = req.path.name.clone().unwrap_or_default();
    let obj = ctx.get(req.namespace(), &name)?;
    if req.path.subresource.as_deref() == Some("scale") {
        return Ok(Reply::json(
            StatusCode::OK,
            &crate::handlers::write::scale_of(req, &obj),
        ));
    }
    object_reply(req, StatusCode::OK, &obj)
}

/// A continue token: the list revision and the last key returned.
pub(crate) fn encode_continue(rev: Revision, ns: &str, name: &str) -> String {
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rev, "ns": ns, "name": name}).to_string();
    raw.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> Option<(Revision, String, String)> {
    if !token.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| {
            token
                .get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect();
    let v: Value = serde_json::from_slice(&bytes?).ok()?;
    Some((
        v.get("rv")?.as_u64()?,
        v.get("ns")?.as_str()?.to_owned(),
        v.get("name")?.as_str()?.to_owned(),
    ))
}

/// Items of a list, after selectors and paging; parsed items are already presented.
pub(crate) struct Page {
    pub revision: Revision,
    pub items: Vec<(StoredObject, Option<Value>)>,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// Collects a page of a list request.
pub(crate) fn collect_page(req: &ResourceRequest, filter: &Filter) -> Result<Page, ApiError> {
    let store = &req.inner.store;
    let bucket = req.res.bucket(&req.cluster);
    let ns = req.path.namespace.as_deref();
    let limit: usize = match req.query.non_empty("limit") {
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?
            .max(0) as usize,
        None => 0,
    };
    let rv_param = req.query.non_empty("resourceVersion");
    let rv_match = req.query.non_empty("resourceVersionMatch");
    if rv_match.is_some() && rv_param.is_none() {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    let continue_token = req.query.non_empty("continue");
    let (revision, items) = if let Some(token) = continue_token {
        if rv_param.is_some_and(|rv| rv != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let Some((rev, tns, tname)) = decode_continue(token) else {
            return Err(ApiError::bad_request(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        };
        match store.list_at(&bucket, ns, Some((&tns, &tname)), rev) {
            Ok(items) => (rev, items),
            Err(StorageError::Compacted { .. }) => {
                return Err(ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                ));
            }
            Err(err) => {
                return Err(ApiError::from_storage(
                    err,
                    ocm_apiserver_status::Gr {
                        group: "",
                        resource: "",
                    },
                    "",
                ));
            }
        }
    } else {
        let requested: Option<Revision> =
            match rv_param {
                Some(rv) => Some(rv.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {rv}"))
                })?),
                None => None,
            };
        match (rv_match, requested) {
            (Some("Exact"), Some(rev)) if rev > 0 => {
                if rev > store.revision() {
                    return Err(ApiError::timeout(format!(
                        "Too large resource version: {rev}, current: {}",
                        store.revision()
                    )));
                }
                match store.list_at(&bucket, ns, None, rev) {
                    Ok(items) => (rev, items),
                    Err(StorageError::Compacted { requested, oldest }) => {
                        return Err(ApiError::expired(format!(
                            "too old resource version: {requested} ({oldest})"
                        )));
                    }
                    Err(err) => return Err(ApiError::internal(err)),
                }
            }
            (Some(m), _) if m != "NotOlderThan" && m != "Exact" => {
                return Err(ApiError::bad_request(format!(
                    "resourceVersionMatch: Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
                )));
            }
            (_, Some(rev)) if rev > store.revision() => {
                return Err(ApiError::timeout(format!(
                    "Too large resource version: {rev}, current: {}",
                    store.revision()
                )));
            }
            _ => match filter.named_key(ns, req.res.namespaced) {
                Some((namespace, name)) => store.list_named(&bucket, namespace, name),
                None => store.list(&bucket, ns, None),
            },
        }
    };
    let mut page = Vec::new();
    let mut last: Option<(String, String)> = None;
    let mut more = false;
    let total = items.len();
    let mut consumed = 0;
    let everything = filter.is_everything();
    let ctx = req.ctx()?;
    let passthrough = ctx.passthrough();
    for (ins, iname, object) in items {
        if limit > 0 && page.len() >= limit {
            more = true;
            break;
        }
        consumed += 1;
        if everything {
            page.push((object, None));
        } else if !filter.could_match(&object.value) {
            last = Some((ins, iname));
            continue;
        } else {
            let value: Value = match serde_json::from_slice(&object.value) {
                Ok(v) => v,
                Err(_) => continue,
            };
            // Selectors apply to the object as the client sees it.
            let value = if passthrough {
                value
            } else {
                ctx.present(value)?
            };
            if !filter.matches(&value) {
                last = Some((ins, iname));
                continue;
            }
            page.push((object, Some(value)));
        }
        last = Some((ins, iname));
    }
    let continue_token = match (more, &last) {
        (true, Some((ns, name))) => Some(encode_continue(revision, ns, name)),
        _ => None,
    };
    let remaining = (more && everything).then(|| total - consumed);
    Ok(Page {
        revision,
        items: page,
        continue_token,
        remaining,
    })
}

/// GET of a collection.
pub(crate) fn list(req: &ResourceRequest) -> Result<Reply, ApiError> {
    let output = req.output()?;
    let filter = Filter::from_request(req)?;
    let page = collect_page(req, &filter)?;
    let ctx = req.ctx()?;
    let mut list_meta = json!({"resourceVersion": page.revision.to_string()});
    if let Some(token) = &page.continue_token {
        list_meta["continue"] = json!(token);
    }
    if let Some(n) = page.remaining {
        list_meta["remainingItemCount"] = json!(n);
    }
    if output == Output::Json && ctx.passthrough() {
        let head = json!({
            "kind": req.res.list_kind,
            "apiVersion": req.res.api_version(&req.path.version),
            "metadata": list_meta,
        })
        .to_string();
        let mut buf = BytesMut::with_capacity(
            head.len()
                + page
                    .items
                    .iter()
                    .map(|i| i.0.value.len() + 1)
                    .sum::<usize>()
                + 16,
        );
        buf.put_slice(&head.as_bytes()[..head.len() - 1]);
        buf.put_slice(b",\"items\":[");
        let strip = super::list_items::strips_type_meta(&req.res);
        for (i, (object, _)) in page.items.iter().enumerate() {
            if i > 0 {
                buf.put_u8(b',');
            }
            if strip {
                super::list_items::put_without_type_meta(&mut buf, &object.value);
            } else {
                buf.put_slice(&object.value);
            }
        }
        buf.put_slice(b"]}");
        return Ok(Reply::bytes(StatusCode::OK, Bytes::from(buf)));
    }
    // Items not presented yet are presented together (one conversion webhook call).
    let mut objects: Vec<Option<Value>> = Vec::with_capacity(page.items.len());
    let mut pending = Vec::new();
    for (object, parsed) in page.items {
        if parsed.is_none() {
            pending.push(ctx.parse(&object)?);
        }
        objects.push(parsed);
    }
    let mut presented = ctx.present_many(pending)?.into_iter();
    let objects: Vec<Value> = objects
        .into_iter()
        .filter_map(|o| o.or_else(|| presented.next()))
        .collect();
    match output {
        Output::Json => Ok(Reply::json(
            StatusCode::OK,
            &json!({
                "kind": req.res.list_kind,
                "apiVersion": req.res.api_version(&req.path.version),
                "metadata": list_meta,
                "items": super::list_items::list_items(&req.res, objects),
            }),
        )),
        Output::PartialMeta => {
            let items: Vec<Value> = objects.iter().map(partial_metadata).collect();
            Ok(Reply::json(
                StatusCode::OK,
                &json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": list_meta,
                    "items": items,
                }),
            ))
        }
        Output::Table => {
            let token = page.continue_token.unwrap_or_default();
            let table = crate::table::table(
                &req.res,
                &req.path.version,
                &objects,
                &page.revision.to_string(),
                &token,
                true,
            );
            // kube names the plain media type (no `as`, `g`, `v` parameters).
            Ok(Reply::json(StatusCode::OK, &table))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_roundtrip() {
        let t = encode_continue(42, "ns", "a/b");
        assert_eq!(decode_continue(&t), Some((42, "ns".into(), "a/b".into())));
        assert_eq!(decode_continue("zz"), None);
    }

    fn filter(labels: &str, fields: &str) -> Filter {
        Filter::new(
            LabelSelector::parse(labels).unwrap(),
            FieldSelector::parse(fields).unwrap(),
            FieldSet::for_builtin("certificates.k8s.io", "certificatesigningrequests"),
            None,
        )
    }

    #[test]
    fn a_list_naming_its_object_reads_one_key() {
        let named = filter("", "metadata.name=a");
        assert_eq!(named.named_key(None, false), Some(("", "a")));
        assert_eq!(named.named_key(Some("ns"), true), Some(("ns", "a")));
        // Across namespaces the name alone does not say which key.
        assert_eq!(named.named_key(None, true), None);
        let both = filter("", "metadata.namespace=ns,metadata.name=a");
        assert_eq!(both.named_key(None, true), Some(("ns", "a")));
        assert_eq!(filter("", "metadata.name!=a").named_key(None, false), None);
        assert_eq!(filter("x=y", "").named_key(None, false), None);
    }

    /// The stored bytes of an object, as storage writes them.
    fn stored(value: Value) -> Vec<u8> {
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn could_match_is_implied_by_every_match() {
        let objects = [
            json!({"metadata": {"name": "csr-1", "labels": {"open-cluster-management.io/cluster-name": "c1"}}}),
            json!({"metadata": {"name": "csr-2", "labels": {"open-cluster-management.io/cluster-name": "c12"}}}),
            json!({"metadata": {"name": "c1", "labels": {"team": "a b", "x": "c1"}}}),
            json!({"metadata": {"name": "csr-3"}}),
        ];
        let selectors = [
            ("open-cluster-management.io/cluster-name=c1", ""),
            ("open-cluster-management.io/cluster-name==c12", ""),
            ("open-cluster-management.io/cluster-name in (c1)", ""),
            ("open-cluster-management.io/cluster-name in (c1,c12)", ""),
            ("open-cluster-management.io/cluster-name!=c1", ""),
            ("!open-cluster-management.io/cluster-name", ""),
            ("x=c1", "metadata.name=c1"),
            ("", "metadata.name=csr-3"),
            ("", "metadata.name!=csr-3"),
        ];
        for (labels, fields) in selectors {
            let filter = filter(labels, fields);
            for object in &objects {
                if filter.matches(object) {
                    assert!(
                        filter.could_match(&stored(object.clone())),
                        "{labels} {fields} {object}"
                    );
                }
            }
        }
    }

    #[test]
    fn could_match_rules_out_objects_without_the_pair() {
        let c12 = stored(
            json!({"metadata": {"name": "csr-2", "labels": {"open-cluster-management.io/cluster-name": "c12"}}}),
        );
        assert!(!filter("open-cluster-management.io/cluster-name=c1", "").could_match(&c12));
        assert!(!filter("", "metadata.name=csr-1").could_match(&c12));
        assert!(filter("open-cluster-management.io/cluster-name=c12", "").could_match(&c12));
        // Several values, negations and existence tests are left to the full match.
        assert!(filter("open-cluster-management.io/cluster-name in (c1,c3)", "").could_match(&c12));
        assert!(filter("open-cluster-management.io/cluster-name!=c12", "").could_match(&c12));
    }
}

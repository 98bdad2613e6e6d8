//! Version conversion of objects: built-ins have one version (events.k8s.io Events are core
//! Events with renamed fields); custom resources are rewritten to the target `apiVersion`
//! (strategy `None`), passed through a registered in-process hook (which keeps priority), or
//! sent to the CRD's conversion webhook (strategy `Webhook`, see [`crate::webhook::conversion`]).

use serde_json::{Map, Value, json};

use super::Ctx;
use crate::registry::BuiltinKind;
use ocm_apiserver_status::ApiError;

/// Field renames between core/v1 and events.k8s.io/v1 Events (core name, events name).
const EVENT_FIELDS: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Converts an Event between `v1` and `events.k8s.io/v1`.
pub fn convert_event(obj: Value, to: &str) -> Value {
    let Value::Object(map) = obj else { return obj };
    let to_events = to == "events.k8s.io/v1";
    let mut out = Map::new();
    for (k, v) in map {
        let renamed = EVENT_FIELDS
            .iter()
            .find(|(core, events)| if to_events { k == *core } else { k == *events })
            .map(|(core, events)| if to_events { *events } else { *core });
        out.insert(renamed.map(str::to_owned).unwrap_or(k), v);
    }
    out.insert("apiVersion".into(), json!(to));
    Value::Object(out)
}

impl Ctx {
    /// Converts `obj` to `version` of this resource.
    pub fn convert(&self, obj: Value, version: &str) -> Result<Value, ApiError> {
        let target = self.res.api_version(version);
        self.convert_to(obj, &target)
    }

    /// Converts objects to the `apiVersion` `target`; with a conversion webhook (and no
    /// in-process hook), the objects needing conversion go in one ConversionReview.
    pub fn convert_many_to(
        &self,
        objects: Vec<Value>,
        target: &str,
    ) -> Result<Vec<Value>, ApiError> {
        let Some(client) = self.res.conversion_webhook.as_ref().filter(|_| {
            self.res.is_custom()
                && self
                    .inner
                    .conversion(&self.res.group, &self.res.kind)
                    .is_none()
        }) else {
            return objects
                .into_iter()
                .map(|o| self.convert_to(o, target))
                .collect();
        };
        let needs = |o: &Value| {
            let current = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            !current.is_empty() && current != target
        };
        // One review per source version (a review's objects share their version).
        let mut out: Vec<Option<Value>> = Vec::with_capacity(objects.len());
        let mut batches: Vec<(String, Vec<usize>, Vec<Value>)> = Vec::new();
        for (i, o) in objects.into_iter().enumerate() {
            if !needs(&o) {
                out.push(Some(o));
                continue;
            }
            let version = o
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            out.push(None);
            match batches.iter_mut().find(|(v, _, _)| *v == version) {
                Some((_, idx, objs)) => {
                    idx.push(i);
                    objs.push(o);
                }
                None => batches.push((version, vec![i], vec![o])),
            }
        }
        let client = crate::webhook::service::resolve(&self.inner.store, &self.cluster, client);
        for (_, idx, objs) in batches {
            let converted = crate::webhook::conversion::convert(&client, objs, target)
                .map_err(ApiError::internal)?;
            for (i, o) in idx.into_iter().zip(converted) {
                out[i] = Some(o);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Converts `obj` to the `apiVersion` `target`.
    pub fn convert_to(&self, mut obj: Value, target: &str) -> Result<Value, ApiError> {
        let current = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if current == target {
            return Ok(obj);
        }
        if matches!(
            self.res.builtin(),
            Some(BuiltinKind::EventsEvent | BuiltinKind::CoreEvent)
        ) {
            return Ok(convert_event(obj, target));
        }
        if self.res.is_custom()
            && !current.is_empty()
            && let Some(hook) = self.inner.conversion(&self.res.group, &self.res.kind)
        {
            let mut converted = hook(obj, target).map_err(|err| {
                ApiError::internal(format!(
                    "conversion webhook for {}, Kind={} failed: {}",
                    target, self.res.kind, err
                ))
            })?;
            if let Some(map) = converted.as_object_mut() {
                map.insert("apiVersion".into(), json!(target));
            }
            return Ok(converted);
        }
        if self.res.is_custom()
            && !current.is_empty()
            && let Some(client) = &self.res.conversion_webhook
        {
            let client = crate::webhook::service::resolve(&self.inner.store, &self.cluster, client);
            let mut converted = crate::webhook::conversion::convert(&client, vec![obj], target)
                .map_err(ApiError::internal)?;
            return match converted.pop() {
                Some(object) => Ok(object),
                None => Err(ApiError::internal("conversion webhook returned no object")),
            };
        }
        if let Some(map) = obj.as_object_mut() {
            map.insert("apiVersion".into(), json!(target));
        }
        Ok(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_roundtrip() {
        let core = json!({"apiVersion": "v1", "kind": "Event", "involvedObject": {"name": "p"}, "message": "m", "reason": "R", "count": 2});
        let ev = convert_event(core.clone(), "events.k8s.io/v1");
        assert_eq!(ev["regarding"]["name"], "p");
        assert_eq!(ev["note"], "m");
        assert_eq!(ev["deprecatedCount"], 2);
        assert_eq!(convert_event(ev, "v1"), core);
    }
}

//! Schema-aware operations on JSON values used by server-side apply, following
//! structured-merge-diff: the field set of a value, merging two values, comparing two values,
//! and removing a set of fields.
//!
//! Where a value does not fit its declared type (or the type is unknown), the value is
//! treated as untyped: objects merge per key, lists are atomic.

use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, Path, PathElement};
use super::typeinfo::{ListKind, Node, TypeRef};

/// The shape a value takes at a node: objects, lists, or leaves (scalars, atomic values and
/// mismatches are leaves at their own level).
enum Shape<'v> {
    Absent,
    Map(Option<&'v Map<String, Value>>),
    List(Option<&'v Vec<Value>>),
    Leaf,
}

impl Shape<'_> {
    fn same_kind(&self, other: &Shape<'_>) -> bool {
        matches!(
            (self, other),
            (Shape::Map(_), Shape::Map(_))
                | (Shape::List(_), Shape::List(_))
                | (Shape::Leaf, Shape::Leaf)
        )
    }
}

/// The shape of `v` under `ty`, and the type to use below it (untyped on mismatch).
fn shape<'v, 't>(ty: TypeRef<'t>, v: Option<&'v Value>) -> (Shape<'v>, TypeRef<'t>) {
    let Some(v) = v else {
        return (Shape::Absent, ty);
    };
    match (ty.node(), v) {
        (Node::Map(_), Value::Object(m)) => (Shape::Map(Some(m)), ty),
        (Node::Map(_), Value::Null) => (Shape::Map(None), ty),
        (Node::List { .. }, Value::Array(l)) => (Shape::List(Some(l)), ty),
        (Node::List { .. }, Value::Null) => (Shape::List(None), ty),
        (_, Value::Object(m)) => (Shape::Map(Some(m)), ty.untyped()),
        (_, Value::Array(l)) => (Shape::List(Some(l)), ty.untyped()),
        _ => (Shape::Leaf, ty),
    }
}

fn is_atomic_list(ty: TypeRef<'_>) -> bool {
    matches!(ty.list_kind(), ListKind::Atomic)
}

/// The path element of a list item (`Err` when the item cannot be identified).
pub(crate) fn item_element(list: TypeRef<'_>, item: &Value) -> Result<PathElement, String> {
    match list.list_kind() {
        // A map list without keys is a set (structured-merge-diff).
        ListKind::Map(keys) if keys.is_empty() => item_element_of_set(item),
        ListKind::Map(keys) => {
            let Value::Object(m) = item else {
                return Err(if item.is_null() {
                    "associative list with keys may not have a null element".to_string()
                } else {
                    "associative list with keys may not have non-map elements".to_string()
                });
            };
            let items = list.items();
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(v) = m.get(key) {
                    fields.push((key.clone(), v.clone()));
                } else if let Some(d) = items.field_default(key) {
                    fields.push((key.clone(), d.clone()));
                }
            }
            if !keys.is_empty() && fields.is_empty() {
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {:?} (and doesn't have default values for any key fields)",
                    keys
                ));
            }
            Ok(PathElement::key(fields))
        }
        ListKind::Set => item_element_of_set(item),
        ListKind::Atomic => Err("invalid indexing of non-associative list".to_string()),
    }
}

fn item_element_of_set(item: &Value) -> Result<PathElement, String> {
    match item {
        Value::Object(_) => {
            Err("associative list without keys has an element that's a map type".to_string())
        }
        Value::Array(_) => {
            Err("not supported: associative list with lists as elements".to_string())
        }
        Value::Null => {
            Err("associative list without keys has an element that's an explicit null".to_string())
        }
        scalar => Ok(PathElement::Value(scalar.clone())),
    }
}

/// The path elements of a list's items, in order.
fn item_elements(
    list: TypeRef<'_>,
    items: &[Value],
    path: &Path,
) -> Result<Vec<PathElement>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item_element(list, item)
                .map_err(|e| format!("{}: element {i}: {e}", super::fieldpath::path_string(path)))
        })
        .collect()
}

/// The set of fields `v` sets (structured-merge-diff `ToFieldSet`). `allow_duplicates`
/// accepts repeated list keys (live objects); applied configurations must not repeat them.
pub(crate) fn to_field_set(
    v: &Value,
    ty: TypeRef<'_>,
    allow_duplicates: bool,
) -> Result<FieldSet, String> {
    let mut out = FieldSet::default();
    let mut path = Vec::new();
    field_set_walk(Some(v), ty, &mut path, &mut out, allow_duplicates)?;
    Ok(out)
}

fn field_set_walk(
    v: Option<&Value>,
    ty: TypeRef<'_>,
    path: &mut Path,
    out: &mut FieldSet,
    allow_duplicates: bool,
) -> Result<(), String> {
    let (shape, ty) = shape(ty, v);
    match shape {
        Shape::Absent => Ok(()),
        Shape::Leaf => {
            out.insert(path);
            Ok(())
        }
        Shape::Map(m) => {
            if ty.map_is_atomic() {
                out.insert(path);
                return Ok(());
            }
            let Some(m) = m else { return Ok(()) };
            for (key, child) in m {
                let (child_ty, declared) = ty.field(key);
                path.push(PathElement::Field(key.clone()));
                field_set_walk(Some(child), child_ty, path, out, allow_duplicates)?;
                let empty_map = child.as_object().is_some_and(Map::is_empty);
                if child.is_null() || empty_map || declared.is_none() {
                    out.insert(path);
                }
                path.pop();
            }
            Ok(())
        }
        Shape::List(l) => {
            if is_atomic_list(ty) {
                out.insert(path);
                return Ok(());
            }
            let Some(l) = l else { return Ok(()) };
            let pes = item_elements(ty, l, path)?;
            let mut duplicates = std::collections::BTreeSet::new();
            let mut seen = std::collections::BTreeSet::new();
            for pe in &pes {
                if !seen.insert(pe) {
                    if !allow_duplicates {
                        return Err(format!(
                            "{}: duplicate entries for key {pe}",
                            super::fieldpath::path_string(path)
                        ));
                    }
                    duplicates.insert(pe);
                }
            }
            for pe in &duplicates {
                path.push((*pe).clone());
                out.insert(path);
                path.pop();
            }
            for (pe, item) in pes.iter().zip(l) {
                if duplicates.contains(pe) {
                    continue;
                }
                path.push(pe.clone());
                field_set_walk(Some(item), ty.items(), path, out, allow_duplicates)?;
                out.insert(path);
                path.pop();
            }
            Ok(())
        }
    }
}

/// Merges `rhs` (an applied configuration) into `lhs` (the live object)
/// (structured-merge-diff `Merge`). Leaves and atomic values of `rhs` win; objects merge per
/// key; associative lists merge per item, ordered as structured-merge-diff orders them.
pub(crate) fn merge(lhs: &Value, rhs: &Value, ty: TypeRef<'_>) -> Result<Value, String> {
    let mut path = Vec::new();
    Ok(merge_walk(Some(lhs), Some(rhs), ty, &mut path)?.unwrap_or(Value::Object(Map::new())))
}

fn merge_walk(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: TypeRef<'_>,
    path: &mut Path,
) -> Result<Option<Value>, String> {
    let (ls, lty) = shape(ty, lhs);
    let (rs, rty) = shape(ty, rhs);
    let leaf = || Ok(rhs.or(lhs).cloned());
    let (shape, ty) = match (&ls, &rs) {
        (Shape::Absent, _) => (rs, rty),
        (_, Shape::Absent) => (ls, lty),
        _ if ls.same_kind(&rs) => (rs, rty),
        _ => return leaf(),
    };
    let (lhs_shape, _) = self::shape(ty, lhs);
    match shape {
        Shape::Absent | Shape::Leaf => leaf(),
        Shape::Map(rm) => {
            let lm = match lhs_shape {
                Shape::Map(m) => m,
                _ => None,
            };
            let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
            if ty.map_is_atomic() || (empty(lm) && empty(rm)) {
                return leaf();
            }
            let mut out = Map::new();
            let mut keys: Vec<&String> = lm.map(|m| m.keys().collect()).unwrap_or_default();
            if let Some(rm) = rm {
                keys.extend(
                    rm.keys()
                        .filter(|k| !lm.is_some_and(|l| l.contains_key(*k))),
                );
            }
            for key in keys {
                let (child_ty, _) = ty.field(key);
                path.push(PathElement::Field(key.clone()));
                let merged = merge_walk(
                    lm.and_then(|m| m.get(key)),
                    rm.and_then(|m| m.get(key)),
                    child_ty,
                    path,
                )?;
                path.pop();
                if let Some(v) = merged {
                    out.insert(key.clone(), v);
                }
            }
            Ok(Some(Value::Object(out)))
        }
        Shape::List(rl) => {
            let ll = match lhs_shape {
                Shape::List(l) => l,
                _ => None,
            };
            let empty = |l: Option<&Vec<Value>>| l.is_none_or(Vec::is_empty);
            if is_atomic_list(ty) || (empty(ll) && empty(rl)) {
                return leaf();
            }
            merge_list(
                ll.map(Vec::as_slice).unwrap_or(&[]),
                rl.map(Vec::as_slice).unwrap_or(&[]),
                ty,
                path,
            )
        }
    }
}

/// structured-merge-diff's associative list merge, with its item order.
fn merge_list(
    lhs: &[Value],
    rhs: &[Value],
    ty: TypeRef<'_>,
    path: &mut Path,
) -> Result<Option<Value>, String> {
    use std::collections::{BTreeMap, BTreeSet};
    let rhs_pes = item_elements(ty, rhs, path)?;
    let lhs_pes = item_elements(ty, lhs, path)?;
    let mut observed_rhs: BTreeMap<&PathElement, &Value> = BTreeMap::new();
    for (pe, v) in rhs_pes.iter().zip(rhs) {
        if observed_rhs.insert(pe, v).is_some() {
            return Err(format!(
                "{}: duplicate entries for key {pe}",
                super::fieldpath::path_string(path)
            ));
        }
    }
    // Duplicated live items are not merged with the applied one: they merge as null.
    static NULL: Value = Value::Null;
    let mut observed_lhs: BTreeMap<&PathElement, &Value> = BTreeMap::new();
    for (pe, v) in lhs_pes.iter().zip(lhs) {
        observed_lhs
            .entry(pe)
            .and_modify(|e| *e = &NULL)
            .or_insert(v);
    }
    let mut shared = rhs_pes.iter().filter(|pe| observed_lhs.contains_key(pe));
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let items = ty.items();
    let (mut li, mut ri) = (0, 0);
    let merge_item = |pe: &PathElement,
                      l: Option<&Value>,
                      r: Option<&Value>,
                      out: &mut Vec<Value>,
                      path: &mut Path|
     -> Result<(), String> {
        path.push(pe.clone());
        let merged = merge_walk(l, r, items, path)?;
        path.pop();
        out.extend(merged);
        Ok(())
    };
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if let (Some(lpe), Some(rpe)) = (lhs_pes.get(li), rhs_pes.get(ri)) {
            if lpe == rpe {
                merged_rhs.insert(lpe);
                merge_item(
                    lpe,
                    observed_lhs.get(lpe).copied(),
                    observed_rhs.get(rpe).copied(),
                    &mut out,
                    path,
                )?;
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_rhs.contains_key(lpe) && next_shared.is_some_and(|n| n != lpe) {
                li += 1;
                continue;
            }
        }
        if let Some(lpe) = lhs_pes.get(li) {
            if !observed_rhs.contains_key(lpe) {
                merge_item(lpe, lhs.get(li), None, &mut out, path)?;
                li += 1;
                continue;
            } else if merged_rhs.contains(lpe) {
                li += 1;
            }
        }
        if let Some(rpe) = rhs_pes.get(ri) {
            merged_rhs.insert(rpe);
            merge_item(
                rpe,
                observed_lhs.get(rpe).copied(),
                observed_rhs.get(rpe).copied(),
                &mut out,
                path,
            )?;
            ri += 1;
            if next_shared == Some(rpe) {
                next_shared = shared.next();
            }
        }
    }
    Ok(if out.is_empty() {
        None
    } else {
        Some(Value::Array(out))
    })
}

/// What changed from one value to another.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Comparison {
    /// Fields only in the new value.
    pub(crate) added: FieldSet,
    /// Leaf fields (scalars, atomic values) present in both with different values.
    pub(crate) modified: FieldSet,
    /// Fields only in the old value.
    pub(crate) removed: FieldSet,
}

impl Comparison {
    /// Whether nothing changed.
    pub(crate) fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// The comparison without the fields in `ignored` (and below them).
    pub(crate) fn excluding(self, ignored: &FieldSet) -> Comparison {
        if ignored.is_empty() {
            return self;
        }
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Compares `lhs` (old) with `rhs` (new) (structured-merge-diff `Compare`).
pub(crate) fn compare(lhs: &Value, rhs: &Value, ty: TypeRef<'_>) -> Result<Comparison, String> {
    let mut cmp = Comparison::default();
    let mut path = Vec::new();
    compare_walk(Some(lhs), Some(rhs), ty, &mut path, &mut cmp)?;
    Ok(cmp)
}

fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x.is_f64() || y.is_f64() {
                x.as_f64() == y.as_f64()
            } else {
                x == y
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(l, r)| values_equal(l, r))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

fn compare_leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, cmp: &mut Comparison) {
    match (lhs, rhs) {
        (None, Some(_)) => cmp.added.insert(path),
        (Some(_), None) => cmp.removed.insert(path),
        (Some(l), Some(r)) if !values_equal(l, r) => cmp.modified.insert(path),
        _ => {}
    }
}

fn compare_walk(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: TypeRef<'_>,
    path: &mut Path,
    cmp: &mut Comparison,
) -> Result<(), String> {
    let (ls, lty) = shape(ty, lhs);
    let (rs, rty) = shape(ty, rhs);
    let (shape, ty) = match (&ls, &rs) {
        (Shape::Absent, _) => (rs, rty),
        (_, Shape::Absent) => (ls, lty),
        _ if ls.same_kind(&rs) => (rs, rty),
        _ => {
            compare_leaf(lhs, rhs, path, cmp);
            return Ok(());
        }
    };
    let (lhs_shape, _) = self::shape(ty, lhs);
    let (rhs_shape, _) = self::shape(ty, rhs);
    let visited = match shape {
        Shape::Absent | Shape::Leaf => false,
        Shape::Map(_) => {
            let lm = if let Shape::Map(m) = lhs_shape {
                m
            } else {
                None
            };
            let rm = if let Shape::Map(m) = rhs_shape {
                m
            } else {
                None
            };
            let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
            if ty.map_is_atomic() || (empty(lm) && empty(rm)) {
                false
            } else {
                let mut keys: Vec<&String> = lm.map(|m| m.keys().collect()).unwrap_or_default();
                if let Some(rm) = rm {
                    keys.extend(
                        rm.keys()
                            .filter(|k| !lm.is_some_and(|l| l.contains_key(*k))),
                    );
                }
                for key in keys {
                    let (child_ty, _) = ty.field(key);
                    path.push(PathElement::Field(key.clone()));
                    compare_walk(
                        lm.and_then(|m| m.get(key)),
                        rm.and_then(|m| m.get(key)),
                        child_ty,
                        path,
                        cmp,
                    )?;
                    path.pop();
                }
                true
            }
        }
        Shape::List(_) => {
            let ll = if let Shape::List(l) = lhs_shape {
                l
            } else {
                None
            };
            let rl = if let Shape::List(l) = rhs_shape {
                l
            } else {
                None
            };
            let empty = |l: Option<&Vec<Value>>| l.is_none_or(Vec::is_empty);
            if is_atomic_list(ty) || (empty(ll) && empty(rl)) {
                false
            } else {
                compare_list(
                    ll.map(Vec::as_slice).unwrap_or(&[]),
                    rl.map(Vec::as_slice).unwrap_or(&[]),
                    ty,
                    path,
                    cmp,
                )?;
                true
            }
        }
    };
    if visited {
        match (lhs, rhs) {
            (None, Some(_)) => cmp.added.insert(path),
            (Some(_), None) => cmp.removed.insert(path),
            _ => {}
        }
    } else {
        compare_leaf(lhs, rhs, path, cmp);
    }
    Ok(())
}

fn compare_list(
    lhs: &[Value],
    rhs: &[Value],
    ty: TypeRef<'_>,
    path: &mut Path,
    cmp: &mut Comparison,
) -> Result<(), String> {
    let lhs_pes = item_elements(ty, lhs, path)?;
    let rhs_pes = item_elements(ty, rhs, path)?;
    let mut order: Vec<&PathElement> = Vec::new();
    let mut l_items: std::collections::BTreeMap<&PathElement, Vec<&Value>> = Default::default();
    let mut r_items: std::collections::BTreeMap<&PathElement, Vec<&Value>> = Default::default();
    for (pe, v) in lhs_pes.iter().zip(lhs) {
        let e = l_items.entry(pe).or_default();
        if e.is_empty() {
            order.push(pe);
        }
        e.push(v);
    }
    for (pe, v) in rhs_pes.iter().zip(rhs) {
        let e = r_items.entry(pe).or_default();
        if e.is_empty() && !l_items.contains_key(pe) {
            order.push(pe);
        }
        e.push(v);
    }
    let items = ty.items();
    for pe in order {
        let l = l_items.get(pe).map(Vec::as_slice).unwrap_or(&[]);
        let r = r_items.get(pe).map(Vec::as_slice).unwrap_or(&[]);
        path.push(pe.clone());
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => {
                compare_walk(l.first().copied(), r.first().copied(), items, path, cmp)?
            }
            (2.., 2..) => {
                if l.len() != r.len() || l.iter().zip(r).any(|(a, b)| !values_equal(a, b)) {
                    cmp.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    compare_walk(None, Some(first), items, path, cmp)?;
                }
                cmp.removed.insert(path);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    compare_walk(Some(first), None, items, path, cmp)?;
                }
                cmp.added.insert(path);
            }
        }
        path.pop();
    }
    Ok(())
}

/// `v` without the fields in `to_remove` (structured-merge-diff `RemoveItems`). Objects and
/// lists emptied by the removal disappear.
pub(crate) fn remove_items(v: &Value, to_remove: &FieldSet, ty: TypeRef<'_>) -> Value {
    remove_walk(v, to_remove, ty).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_walk(v: &Value, to_remove: &FieldSet, ty: TypeRef<'_>) -> Option<Value> {
    let (shape, ty) = shape(ty, Some(v));
    match shape {
        Shape::Absent | Shape::Leaf => Some(v.clone()),
        Shape::Map(m) => {
            let m = m.filter(|m| !m.is_empty())?;
            if ty.map_is_atomic() {
                return None;
            }
            let mut out = Map::new();
            for (key, child) in m {
                let pe = PathElement::Field(key.clone());
                if to_remove.members.contains(&pe) {
                    continue;
                }
                let kept = match to_remove.with_prefix(&pe) {
                    Some(sub) => remove_walk(child, sub, ty.field(key).0),
                    None => Some(child.clone()),
                };
                if let Some(c) = kept {
                    out.insert(key.clone(), c);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Shape::List(l) => {
            let l = l.filter(|l| !l.is_empty())?;
            if is_atomic_list(ty) {
                return None;
            }
            let mut out = Vec::with_capacity(l.len());
            for item in l {
                let Ok(pe) = item_element(ty, item) else {
                    out.push(item.clone());
                    continue;
                };
                if to_remove.members.contains(&pe) {
                    continue;
                }
                let kept = match to_remove.with_prefix(&pe) {
                    Some(sub) => remove_walk(item, sub, ty.items()),
                    None => Some(item.clone()),
                };
                out.extend(kept);
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
    }
}

/// The set plus every struct field that has paths below it
/// (structured-merge-diff `EnsureNamedFieldsAreMembers`).
pub(crate) fn ensure_named_fields_are_members(set: &FieldSet, ty: TypeRef<'_>) -> FieldSet {
    let mut out = FieldSet {
        members: set.members.clone(),
        children: Default::default(),
    };
    for (pe, child) in &set.children {
        let child_ty = match pe {
            PathElement::Field(name) => {
                if ty.has_field(name) {
                    out.members.insert(pe.clone());
                }
                ty.field(name).0
            }
            PathElement::Key(_) => match ty.node() {
                Node::List { .. } => ty.items(),
                _ => ty.untyped(),
            },
            _ => ty.untyped(),
        };
        out.children
            .insert(pe.clone(), ensure_named_fields_are_members(child, child_ty));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldpath::path_string;
    use crate::typeinfo::ObjectType;
    use serde_json::json;

    fn deploy() -> ObjectType {
        match ObjectType::builtin("apps", "Deployment") {
            Some(t) => t,
            None => panic!("Deployment is built in"),
        }
    }

    fn paths(set: &FieldSet) -> Vec<String> {
        set.paths().iter().map(|p| path_string(p)).collect()
    }

    #[test]
    fn field_set_of_an_applied_deployment() {
        let t = deploy();
        let config = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {"spec": {"containers": [
                    {"name": "c", "image": "i", "ports": [{"containerPort": 80}]}
                ]}}
            }
        });
        let set = to_field_set(&config, t.root(), false).unwrap_or_default();
        let wire = set.to_fields_v1();
        assert_eq!(
            wire,
            json!({
                "f:apiVersion": {}, "f:kind": {},
                "f:metadata": {"f:labels": {"f:app": {}}, "f:name": {}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"c\"}": {
                            ".": {}, "f:image": {}, "f:name": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                        }
                    }}}
                }
            })
        );
    }

    #[test]
    fn duplicate_keys_are_refused_in_applied_configs_only() {
        let t = deploy();
        let config =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}}});
        let err = to_field_set(&config, t.root(), false)
            .err()
            .unwrap_or_default();
        assert!(
            err.contains("duplicate entries for key [name=\"c\"]"),
            "{err}"
        );
        let live = to_field_set(&config, t.root(), true).unwrap_or_default();
        assert_eq!(paths(&live), [".spec.template.spec.containers[name=\"c\"]"]);
    }

    #[test]
    fn merge_keeps_live_items_and_orders_like_smd() {
        let t = deploy();
        let live = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "a", "image": "a1"}, {"name": "b", "image": "b1"}, {"name": "c", "image": "c1"}
        ]}}}});
        let config = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "c", "image": "c2"}, {"name": "d", "image": "d2"}, {"name": "a", "image": "a2"}
        ]}}}});
        let merged = merge(&live, &config, t.root()).unwrap_or_default();
        let names: Vec<(&str, &str)> = merged["spec"]["template"]["spec"]["containers"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap_or(""),
                            c["image"].as_str().unwrap_or(""),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, [("b", "b1"), ("c", "c2"), ("d", "d2"), ("a", "a2")]);
        assert_eq!(merged["spec"]["replicas"], json!(3));
    }

    #[test]
    fn merge_replaces_atomic_values() {
        let t = deploy();
        let live = json!({"spec": {"selector": {"matchLabels": {"a": "1", "b": "2"}}, "template": {"spec": {"tolerations": [{"key": "x"}]}}}});
        let config = json!({"spec": {"selector": {"matchLabels": {"c": "3"}}, "template": {"spec": {"tolerations": [{"key": "y"}]}}}});
        let merged = merge(&live, &config, t.root()).unwrap_or_default();
        assert_eq!(merged, config);
    }

    #[test]
    fn compare_reports_added_modified_removed() {
        let t = deploy();
        let old = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1}});
        let new = json!({"metadata": {"labels": {"a": "9"}, "annotations": {"x": "y"}}, "spec": {"replicas": 1, "paused": true}});
        let cmp = compare(&old, &new, t.root()).unwrap_or_default();
        assert_eq!(paths(&cmp.modified), [".metadata.labels.a"]);
        assert_eq!(paths(&cmp.removed), [".metadata.labels.b"]);
        assert_eq!(
            paths(&cmp.added),
            [
                ".metadata.annotations",
                ".metadata.annotations.x",
                ".spec.paused"
            ]
        );
    }

    #[test]
    fn remove_items_drops_fields_and_emptied_objects() {
        let t = deploy();
        let v = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b"}]}}}, "metadata": {"labels": {"x": "1"}}});
        let mut set = FieldSet::default();
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("replicas".into()),
        ]);
        let key_b = PathElement::key(vec![("name".into(), json!("b"))]);
        let containers = [
            PathElement::Field("spec".into()),
            PathElement::Field("template".into()),
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
        ];
        let mut p = containers.to_vec();
        p.push(key_b);
        set.insert(&p);
        let mut labels_x = vec![
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
        ];
        labels_x.push(PathElement::Field("x".into()));
        set.insert(&labels_x);
        assert_eq!(
            remove_items(&v, &set, t.root()),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}})
        );
    }

    #[test]
    fn named_fields_become_members() {
        let t = deploy();
        let mut set = FieldSet::default();
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("replicas".into()),
        ]);
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
            PathElement::Field("a".into()),
        ]);
        let ensured = ensure_named_fields_are_members(&set, t.root());
        assert_eq!(
            paths(&ensured),
            [
                ".metadata",
                ".spec",
                ".metadata.labels",
                ".metadata.labels.a",
                ".spec.replicas"
            ]
        );
    }
}

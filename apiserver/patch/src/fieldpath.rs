//! Field paths and sets of field paths, with the FieldsV1 wire format of `managedFields`
//! (`f:<name>`, `k:{"key":value}`, `v:<json>`, `i:<index>`, `.` for the node itself) and
//! kube's printed notation (`.spec.containers[name="app"].image`).
//!
//! Ordering, serialization and parsing follow structured-merge-diff so that the FieldsV1
//! written here is byte-for-byte what kube-apiserver writes.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Debug, Clone)]
pub(crate) enum PathElement {
    /// A field of an object (struct field or map key).
    Field(String),
    /// An item of an associative list, identified by its key fields (sorted by name).
    Key(Vec<(String, Value)>),
    /// An item of a set, identified by its value.
    Value(Value),
    /// An item of a list by position (kube never writes these for built-in lists).
    Index(i64),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 key of this element.
    pub(crate) fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut s = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    go_json_string(&mut s, name);
                    s.push(':');
                    go_json(&mut s, value);
                }
                s.push('}');
                s
            }
            PathElement::Value(v) => {
                let mut s = String::from("v:");
                go_json(&mut s, v);
                s
            }
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a FieldsV1 key; `Ok(None)` for an unknown element type (ignored, as kube does).
    pub(crate) fn parse(key: &str) -> Result<Option<PathElement>, String> {
        let Some((kind, rest)) = key.split_at_checked(2) else {
            return Err(format!("key must be 2 characters long: {key}"));
        };
        if !kind.ends_with(':') {
            return Err(format!("missing colon: {key}"));
        }
        match kind {
            "f:" => Ok(Some(PathElement::Field(rest.to_string()))),
            "v:" => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                Ok(Some(PathElement::Value(v)))
            }
            "k:" => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                let Value::Object(m) = v else {
                    return Err(format!("key element is not an object: {key}"));
                };
                Ok(Some(PathElement::key(m.into_iter().collect())))
            }
            "i:" => rest
                .parse::<i64>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| e.to_string()),
            _ => Ok(None),
        }
    }

    /// A key element from (name, value) pairs, sorted by name.
    pub(crate) fn key(mut fields: Vec<(String, Value)>) -> PathElement {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
                    let c = an.cmp(bn).then_with(|| value_cmp(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => value_cmp(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_char('[')?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{name}={}", ValueString(value))?;
                }
                f.write_char(']')
            }
            PathElement::Value(v) => write!(f, "[={}]", ValueString(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// structured-merge-diff's `value.ToString`: strings quoted, everything else plain.
struct ValueString<'a>(&'a Value);

impl fmt::Display for ValueString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Null => f.write_str("null"),
            Value::String(s) => {
                let mut out = String::new();
                go_quote(&mut out, s);
                f.write_str(&out)
            }
            Value::Array(items) => {
                f.write_char('[')?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", ValueString(v))?;
                }
                f.write_char(']')
            }
            Value::Object(m) => {
                f.write_char('{')?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}={}", ValueString(v))?;
                }
                f.write_char('}')
            }
            other => write!(f, "{other}"),
        }
    }
}

/// Go's `%q`.
fn go_quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON string as Go's `encoding/json` writes it (HTML characters escaped).
fn go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON value as Go's `encoding/json` writes it (object keys sorted, HTML escaped).
pub(crate) fn go_json(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => go_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(out, k);
                out.push(':');
                if let Some(v) = m.get(k) {
                    go_json(out, v);
                }
            }
            out.push('}');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// structured-merge-diff's total order of values: numbers (compared numerically) < strings <
/// booleans < lists < maps < null.
pub(crate) fn value_cmp(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x.cmp(&y),
                (_, _, Some(x), Some(y)) => x.cmp(&y),
                _ => {
                    let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                    x.partial_cmp(&y).unwrap_or(Ordering::Equal)
                }
            }
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y.iter()) {
                let c = value_cmp(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xk: Vec<&String> = x.keys().collect();
            let mut yk: Vec<&String> = y.keys().collect();
            xk.sort();
            yk.sort();
            for (l, r) in xk.iter().zip(yk.iter()) {
                let c = l.cmp(r).then_with(|| match (x.get(*l), y.get(*r)) {
                    (Some(lv), Some(rv)) => value_cmp(lv, rv),
                    _ => Ordering::Equal,
                });
                if c != Ordering::Equal {
                    return c;
                }
            }
            xk.len().cmp(&yk.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A path from the object root.
pub(crate) type Path = Vec<PathElement>;

/// Prints a path as kube does (`.spec.replicas`).
pub(crate) fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of field paths, as a tree: `members` are paths ending here, `children` continue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    pub(crate) members: BTreeSet<PathElement>,
    pub(crate) children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// Whether the set has no paths.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path (the empty path is ignored).
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut node = self;
        for pe in parents {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.members.insert(last.clone());
    }

    /// Whether the set contains exactly this path.
    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        let mut node = self;
        for pe in parents {
            match node.children.get(pe) {
                Some(n) => node = n,
                None => return false,
            }
        }
        node.members.contains(last)
    }

    /// The paths below `pe` (relative to it).
    pub(crate) fn with_prefix(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe).filter(|c| !c.is_empty())
    }

    /// `self ∪ other`.
    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_in_place(other);
        out
    }

    pub(crate) fn union_in_place(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            self.children
                .entry(pe.clone())
                .or_default()
                .union_in_place(child);
        }
    }

    /// `self − other` (exact paths).
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let c = match other.children.get(pe) {
                Some(o) => child.difference(o),
                None => child.clone(),
            };
            if !c.is_empty() {
                children.insert(pe.clone(), c);
            }
        }
        FieldSet { members, children }
    }

    /// `self ∩ other` (exact paths).
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(o) = other.children.get(pe) {
                let c = child.intersection(o);
                if !c.is_empty() {
                    children.insert(pe.clone(), c);
                }
            }
        }
        FieldSet { members, children }
    }

    /// `self` without every path that equals or lies below a path of `other`.
    pub(crate) fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            let c = match other.children.get(pe) {
                Some(o) => child.recursive_difference(o),
                None => child.clone(),
            };
            if !c.is_empty() {
                children.insert(pe.clone(), c);
            }
        }
        FieldSet { members, children }
    }

    /// Every path, members before children, each in sorted order (structured-merge-diff's
    /// iteration order).
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for pe in &self.members {
            let mut p = prefix.clone();
            p.push(pe.clone());
            out.push(p);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The FieldsV1 JSON of the set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit(false))
    }

    fn emit(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !self.is_empty() {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let next = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => Step::Member,
                (None, Some(_)) => Step::Child,
                (Some(m), Some((c, _))) => match (*m).cmp(*c) {
                    Ordering::Less => Step::Member,
                    Ordering::Greater => Step::Child,
                    Ordering::Equal => Step::Both,
                },
            };
            match next {
                Step::Member => {
                    if let Some(m) = members.next() {
                        out.insert(m.serialize(), Value::Object(Map::new()));
                    }
                }
                Step::Child => {
                    if let Some((pe, child)) = children.next() {
                        out.insert(pe.serialize(), Value::Object(child.emit(false)));
                    }
                }
                Step::Both => {
                    members.next();
                    if let Some((pe, child)) = children.next() {
                        out.insert(pe.serialize(), Value::Object(child.emit(true)));
                    }
                }
            }
        }
        out
    }

    /// Parses FieldsV1 JSON.
    pub(crate) fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let Value::Object(m) = v else {
            return Err("FieldsV1 must be a JSON object".to_string());
        };
        Ok(Self::read(m).0.unwrap_or_default())
    }

    /// The set below an object and whether the object itself is a member.
    fn read(m: &Map<String, Value>) -> (Option<FieldSet>, bool) {
        let mut is_member = false;
        let mut set: Option<FieldSet> = None;
        for (key, value) in m {
            if key == "." {
                is_member = true;
                continue;
            }
            let pe = match PathElement::parse(key) {
                Ok(Some(pe)) => pe,
                _ => continue,
            };
            let (grandchildren, child_is_member) = match value {
                Value::Object(c) => Self::read(c),
                _ => (None, true),
            };
            if child_is_member {
                set.get_or_insert_with(FieldSet::default)
                    .members
                    .insert(pe.clone());
            }
            if let Some(g) = grandchildren {
                set.get_or_insert_with(FieldSet::default)
                    .children
                    .insert(pe, g);
            }
        }
        if set.is_none() {
            is_member = true;
        }
        (set, is_member)
    }
}

enum Step {
    Member,
    Child,
    Both,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    #[test]
    fn fields_v1_round_trip_keeps_kube_layout() {
        let wire = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {
                    "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}
                },
                "f:finalizers": {"v:\"a\"": {}},
                "f:replicas": {}
            }
        });
        let set = FieldSet::from_fields_v1(&wire).unwrap_or_default();
        assert!(set.has(&[f("spec"), f("replicas")]));
        assert!(set.has(&[f("metadata"), f("labels")]));
        assert!(!set.has(&[f("spec")]));
        let key = PathElement::key(vec![("name".into(), json!("app"))]);
        assert!(set.has(&[f("spec"), f("containers"), key.clone()]));
        assert!(set.has(&[f("spec"), f("containers"), key, f("image")]));
        assert_eq!(set.to_fields_v1().to_string(), wire.to_string());
    }

    #[test]
    fn serialization_orders_fields_before_keys_and_values() {
        let mut set = FieldSet::default();
        set.insert(&[PathElement::Value(json!("b"))]);
        set.insert(&[PathElement::Value(json!(1))]);
        set.insert(&[PathElement::key(vec![
            ("port".into(), json!(80)),
            ("name".into(), json!("<x>")),
        ])]);
        set.insert(&[f("z")]);
        assert_eq!(
            set.to_fields_v1().to_string(),
            r#"{"f:z":{},"k:{\"name\":\"\\u003cx\\u003e\",\"port\":80}":{},"v:1":{},"v:\"b\"":{}}"#
        );
    }

    #[test]
    fn printed_paths_match_kube() {
        let key = PathElement::key(vec![
            ("protocol".into(), json!("TCP")),
            ("port".into(), json!(80)),
        ]);
        let path = vec![f("spec"), f("ports"), key, f("targetPort")];
        assert_eq!(
            path_string(&path),
            ".spec.ports[port=80,protocol=\"TCP\"].targetPort"
        );
        let set_item = vec![
            f("metadata"),
            f("finalizers"),
            PathElement::Value(json!("x")),
        ];
        assert_eq!(path_string(&set_item), ".metadata.finalizers[=\"x\"]");
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::default();
        a.insert(&[f("spec"), f("a")]);
        a.insert(&[f("spec"), f("b")]);
        a.insert(&[f("status")]);
        let mut b = FieldSet::default();
        b.insert(&[f("spec"), f("b")]);
        b.insert(&[f("other")]);
        let mut only_a = FieldSet::default();
        only_a.insert(&[f("spec"), f("a")]);
        only_a.insert(&[f("status")]);
        assert_eq!(a.difference(&b), only_a);
        let mut both = FieldSet::default();
        both.insert(&[f("spec"), f("b")]);
        assert_eq!(a.intersection(&b), both);
        assert_eq!(a.union(&b).paths().len(), 4);
        let mut spec = FieldSet::default();
        spec.insert(&[f("spec")]);
        let mut status_only = FieldSet::default();
        status_only.insert(&[f("status")]);
        assert_eq!(a.recursive_difference(&spec), status_only);
        assert_eq!(
            a.paths().iter().map(|p| path_string(p)).collect::<Vec<_>>(),
            [".status", ".spec.a", ".spec.b"]
        );
    }

    #[test]
    fn unknown_element_types_are_ignored_and_bad_ones_too() {
        let set = FieldSet::from_fields_v1(&json!({"x:1": {}, "f:a": {}, "k:[1]": {}}))
            .unwrap_or_default();
        let mut want = FieldSet::default();
        want.insert(&[f("a")]);
        assert_eq!(set, want);
    }
}

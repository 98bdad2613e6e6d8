//! Field selectors: the `fieldSelector=` grammar and the selectable fields of each resource.

use std::fmt;

use serde_json::Value;

use super::SelectorError;
use ocm_apiserver_validation::go_float;

/// One `field=value` (or `field!=value`) term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field label, e.g. `metadata.name` (not trimmed: kube keeps whitespace).
    pub field: String,
    /// The unescaped value.
    pub value: String,
    /// `!=` rather than `=`/`==`.
    pub negated: bool,
}

impl fmt::Display for FieldTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.negated { "!=" } else { "=" };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A parsed field selector: terms ANDed together (no terms: everything).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl FieldSelector {
    /// The selector matching everything.
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// Whether the selector has no terms.
    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms, in the order kube-apiserver sorts them (by their raw text).
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// A selector of the given terms, in the given order (kube's `fields.Requirements` built
    /// from an access review's structured requirements).
    pub fn from_terms(terms: Vec<FieldTerm>) -> Self {
        FieldSelector { terms }
    }

    /// Parse as apimachinery's `fields.ParseSelector` does: split on unescaped commas, sort,
    /// split each term at its first `!=`, `==` or `=`, unescape the value (`\\`, `\,`, `\=`).
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(selector);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(SelectorError::new(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                )));
            };
            terms.push(FieldTerm {
                field: lhs.to_string(),
                value: unescape_value(rhs)?,
                negated: op == "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    /// The value a `field=value` (or `field==value`) term requires, if there is one: lets the
    /// caller look `metadata.name` / `metadata.namespace` up directly.
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && !t.negated)
            .map(|t| t.value.as_str())
    }

    /// Whether an object of a resource with selectable fields `fields` matches.
    /// Call [`FieldSet::check`] first: unsupported fields read as `""` here.
    pub fn matches(&self, obj: &Value, fields: &FieldSet) -> bool {
        self.terms.iter().all(|t| {
            let have = fields.value(obj, &t.field);
            (have == t.value) != t.negated
        })
    }
}

fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if rest.starts_with(op) {
                return Some((&term[..i], op, &term[i + op.len()..]));
            }
        }
    }
    None
}

fn unescape_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(SelectorError::new(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(SelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )));
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err(SelectorError::new(
            "invalid field selector: invalid escape sequence: \\",
        ));
    }
    Ok(out)
}

fn escape_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// How a selectable field's value is read from the JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// A dotted path to a scalar; missing reads as `""`, as `fmt.Sprint` prints scalars.
    Path(Vec<String>),
    /// A dotted path to a boolean; missing reads as `"false"` (Go's zero value).
    Bool(Vec<String>),
    /// A dotted path to an integer; missing reads as `"0"`.
    Int(Vec<String>),
    /// core/v1 Event `source`: `source.component`, else `reportingComponent`.
    EventOrigin,
    /// Pod `status.podIPs`: the first entry's `ip`.
    FirstPodIp,
}

/// How an unsupported field is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// `field label not supported: x` (kinds with their own conversion function, CRs).
    Specific,
    /// `"x" is not a known field selector: only "metadata.name", "metadata.namespace"`.
    Default,
}

/// The fields a resource supports in field selectors and where their values come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSet {
    fields: Vec<(String, Source)>,
    /// Labels rewritten before lookup (`spec.host` → `spec.nodeName` for pods).
    aliases: Vec<(&'static str, &'static str)>,
    style: Style,
}

fn path(p: &str) -> Vec<String> {
    p.split('.').map(str::to_string).collect()
}

impl FieldSet {
    fn new(style: Style, fields: &[(&str, Source)]) -> Self {
        FieldSet {
            fields: fields
                .iter()
                .map(|(l, s)| (l.to_string(), s.clone()))
                .collect(),
            aliases: Vec::new(),
            style,
        }
    }

    fn meta(namespace: bool) -> Vec<(&'static str, Source)> {
        let mut v = vec![("metadata.name", Source::Path(path("metadata.name")))];
        if namespace {
            v.push((
                "metadata.namespace",
                Source::Path(path("metadata.namespace")),
            ));
        }
        v
    }

    /// The selectable fields kube-apiserver supports for a built-in resource (`group` is `""`
    /// for the core group). Unknown resources get `metadata.name` and `metadata.namespace`
    /// (apimachinery's default conversion).
    pub fn for_builtin(group: &str, resource: &str) -> FieldSet {
        use Source::{Bool, Int, Path as P};
        let s = |f: &[(&str, Source)]| FieldSet::new(Style::Specific, f);
        let with_meta = |ns: bool, extra: Vec<(&'static str, Source)>| {
            let mut v = FieldSet::meta(ns);
            v.extend(extra);
            v
        };
        match (group, resource) {
            ("", "pods") => {
                let mut set = s(&with_meta(
                    true,
                    vec![
                        ("spec.nodeName", P(path("spec.nodeName"))),
                        ("spec.restartPolicy", P(path("spec.restartPolicy"))),
                        ("spec.schedulerName", P(path("spec.schedulerName"))),
                        (
                            "spec.serviceAccountName",
                            P(path("spec.serviceAccountName")),
                        ),
                        ("spec.hostNetwork", Bool(path("spec.hostNetwork"))),
                        ("status.phase", P(path("status.phase"))),
                        ("status.podIP", P(path("status.podIP"))),
                        ("status.podIPs", Source::FirstPodIp),
                        (
                            "status.nominatedNodeName",
                            P(path("status.nominatedNodeName")),
                        ),
                    ],
                ));
                set.aliases.push(("spec.host", "spec.nodeName"));
                set
            }
            ("", "nodes") => s(&with_meta(
                false,
                vec![("spec.unschedulable", Bool(path("spec.unschedulable")))],
            )),
            ("", "namespaces") => s(&with_meta(
                false,
                vec![("status.phase", P(path("status.phase")))],
            )),
            ("", "secrets") => s(&with_meta(true, vec![("type", P(path("type")))])),
            ("", "services") => s(&with_meta(
                true,
                vec![
                    ("spec.clusterIP", P(path("spec.clusterIP"))),
                    ("spec.type", P(path("spec.type"))),
                ],
            )),
            ("", "replicationcontrollers") | ("apps", "replicasets") => s(&with_meta(
                true,
                vec![("status.replicas", Int(path("status.replicas")))],
            )),
            ("", "events") => {
                let mut v = Vec::new();
                for f in [
                    "kind",
                    "namespace",
                    "name",
                    "uid",
                    "apiVersion",
                    "resourceVersion",
                    "fieldPath",
                ] {
                    let label = format!("involvedObject.{f}");
                    v.push((label.clone(), P(path(&label))));
                }
                v.push(("reason".into(), P(path("reason"))));
                v.push(("reportingComponent".into(), P(path("reportingComponent"))));
                v.push(("source".into(), Source::EventOrigin));
                v.push(("type".into(), P(path("type"))));
                for (l, src) in FieldSet::meta(true) {
                    v.push((l.to_string(), src));
                }
                FieldSet {
                    fields: v,
                    aliases: Vec::new(),
                    style: Style::Specific,
                }
            }
            ("events.k8s.io", "events") => {
                let mut v = Vec::new();
                for f in [
                    "kind",
                    "namespace",
                    "name",
                    "uid",
                    "apiVersion",
                    "resourceVersion",
                    "fieldPath",
                ] {
                    let label = format!("regarding.{f}");
                    v.push((label.clone(), P(path(&label))));
                }
                v.push(("reason".into(), P(path("reason"))));
                v.push(("reportingController".into(), P(path("reportingController"))));
                v.push(("type".into(), P(path("type"))));
                for (l, src) in FieldSet::meta(true) {
                    v.push((l.to_string(), src));
                }
                FieldSet {
                    fields: v,
                    aliases: Vec::new(),
                    style: Style::Specific,
                }
            }
            ("batch", "jobs") => s(&with_meta(
                true,
                vec![("status.successful", Int(path("status.successful")))],
            )),
            ("certificates.k8s.io", "certificatesigningrequests") => s(&with_meta(
                false,
                vec![("spec.signerName", P(path("spec.signerName")))],
            )),
            _ => FieldSet::new(Style::Default, &FieldSet::meta(true)),
        }
    }

    /// The selectable fields of a custom resource: `metadata.name`, `metadata.namespace` when
    /// namespaced, and the CRD version's `selectableFields[].jsonPath` (e.g. `.spec.color`).
    pub fn for_custom_resource<S: AsRef<str>>(
        namespaced: bool,
        selectable_json_paths: &[S],
    ) -> FieldSet {
        let mut set = FieldSet::new(Style::Specific, &FieldSet::meta(namespaced));
        for p in selectable_json_paths {
            let label = p.as_ref().trim_start_matches('.').to_string();
            let src = Source::Path(path(&label));
            set.fields.push((label, src));
        }
        set
    }

    fn canonical<'a>(&self, label: &'a str) -> &'a str {
        for (from, to) in &self.aliases {
            if label == *from {
                return to;
            }
        }
        label
    }

    /// Whether `label` may be used in a field selector.
    pub fn supports(&self, label: &str) -> bool {
        let label = self.canonical(label);
        self.fields.iter().any(|(l, _)| l == label)
    }

    /// Check every term of a selector (apimachinery's `ConvertFieldLabel`), rewriting aliases;
    /// an unsupported field is an error with kube-apiserver's message (400 BadRequest).
    pub fn check(&self, selector: &FieldSelector) -> Result<FieldSelector, SelectorError> {
        let mut out = selector.clone();
        for t in &mut out.terms {
            if !self.supports(&t.field) {
                return Err(SelectorError::new(match self.style {
                    Style::Specific => format!("field label not supported: {}", t.field),
                    Style::Default => format!(
                        "\"{}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                        t.field
                    ),
                }));
            }
            t.field = self.canonical(&t.field).to_string();
        }
        Ok(out)
    }

    /// The value of a selectable field of `obj`, formatted as kube-apiserver formats it for
    /// matching (`""` for unknown labels and missing strings).
    pub fn value(&self, obj: &Value, label: &str) -> String {
        let label = self.canonical(label);
        let Some((_, src)) = self.fields.iter().find(|(l, _)| l == label) else {
            return String::new();
        };
        match src {
            Source::Path(p) => lookup(obj, p).map(scalar_string).unwrap_or_default(),
            Source::Bool(p) => match lookup(obj, p) {
                Some(Value::Bool(b)) => b.to_string(),
                _ => "false".to_string(),
            },
            Source::Int(p) => match lookup(obj, p) {
                Some(v @ Value::Number(_)) => scalar_string(v),
                _ => "0".to_string(),
            },
            Source::EventOrigin => {
                let comp = obj
                    .pointer("/source/component")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if comp.is_empty() {
                    obj.get("reportingComponent")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                } else {
                    comp.to_string()
                }
            }
            Source::FirstPodIp => obj
                .pointer("/status/podIPs/0/ip")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }
    }
}

fn lookup<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path {
        cur = cur.as_object()?.get(seg)?;
    }
    Some(cur)
}

/// `fmt.Sprint` of a scalar JSON value; null and compound values read as `""`.
fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::Null | Value::Array(_) | Value::Object(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_terms() {
        let cases = [
            ("", ""),
            ("metadata.name=foo", "metadata.name=foo"),
            ("metadata.name==foo", "metadata.name=foo"),
            ("b!=2,a=1", "a=1,b!=2"),
            ("a=x\\,y", "a=x\\,y"),
            ("a=", "a="),
            (",a=1,,", "a=1"),
            ("a!==b", "a!=\\=b"),
        ];
        for (input, want) in cases {
            match FieldSelector::parse(input) {
                Ok(s) => assert_eq!(s.to_string(), want, "{input}"),
                Err(e) if input == "a!==b" => {
                    assert_eq!(
                        e.message,
                        "invalid field selector: unescaped character in value: 61"
                    )
                }
                Err(e) => panic!("{input}: {e}"),
            }
        }
        let s = FieldSelector::parse("a=x\\,y\\\\z\\=").unwrap();
        assert_eq!(s.terms()[0].value, "x,y\\z=");
    }

    #[test]
    fn parse_errors() {
        let cases = [
            ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
            ("a=1,b", "invalid selector: 'a=1,b'; can't understand 'b'"),
            (
                "a=b\\x",
                "invalid field selector: invalid escape sequence: \\x",
            ),
            (
                "a=b\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
            (
                "a=b=c",
                "invalid field selector: unescaped character in value: 61",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                FieldSelector::parse(input).unwrap_err().message,
                want,
                "{input}"
            );
        }
    }

    #[test]
    fn supported_fields_per_resource() {
        let pods = FieldSet::for_builtin("", "pods");
        assert!(
            pods.supports("spec.nodeName")
                && pods.supports("spec.host")
                && pods.supports("metadata.namespace")
        );
        let sel = FieldSelector::parse("status.hostIP=1.2.3.4").unwrap();
        assert_eq!(
            pods.check(&sel).unwrap_err().message,
            "field label not supported: status.hostIP"
        );

        let cm = FieldSet::for_builtin("", "configmaps");
        let sel = FieldSelector::parse("data.x=1").unwrap();
        assert_eq!(
            cm.check(&sel).unwrap_err().message,
            "\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let ns = FieldSet::for_builtin("", "namespaces");
        assert!(!ns.supports("metadata.namespace") && ns.supports("status.phase"));
        assert!(FieldSet::for_builtin("", "secrets").supports("type"));
        assert!(FieldSet::for_builtin("", "events").supports("involvedObject.uid"));
        assert!(FieldSet::for_builtin("events.k8s.io", "events").supports("regarding.name"));
        assert!(
            FieldSet::for_builtin("certificates.k8s.io", "certificatesigningrequests")
                .supports("spec.signerName")
        );

        let cr = FieldSet::for_custom_resource(false, &[".spec.color"]);
        assert!(
            cr.supports("spec.color")
                && cr.supports("metadata.name")
                && !cr.supports("metadata.namespace")
        );
        let sel = FieldSelector::parse("metadata.namespace=x").unwrap();
        assert_eq!(
            cr.check(&sel).unwrap_err().message,
            "field label not supported: metadata.namespace"
        );
    }

    #[test]
    fn matching() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "hostNetwork": true}, "status": {"phase": "Running"}});
        let pods = FieldSet::for_builtin("", "pods");
        let m = |s: &str| {
            let sel = pods.check(&FieldSelector::parse(s).unwrap()).unwrap();
            sel.matches(&pod, &pods)
        };
        assert!(m("metadata.name=p"));
        assert!(!m("metadata.name=q"));
        assert!(m("metadata.name!=q,metadata.namespace=ns"));
        assert!(m("spec.host=n1"));
        assert!(m("spec.hostNetwork=true"));
        assert!(m("spec.restartPolicy="));
        assert!(m("status.phase!=Pending"));
        assert!(m(""));

        let node = json!({"metadata": {"name": "n"}});
        let nodes = FieldSet::for_builtin("", "nodes");
        let sel = FieldSelector::parse("spec.unschedulable=false").unwrap();
        assert!(sel.matches(&node, &nodes));

        let rs = FieldSet::for_builtin("apps", "replicasets");
        let sel = FieldSelector::parse("status.replicas=0").unwrap();
        assert!(sel.matches(&json!({}), &rs));
        assert!(sel.matches(&json!({"status": {"replicas": 0}}), &rs));

        let ev = FieldSet::for_builtin("", "events");
        let sel = FieldSelector::parse("source=kubelet").unwrap();
        assert!(sel.matches(&json!({"source": {"component": "kubelet"}}), &ev));
        assert!(sel.matches(&json!({"reportingComponent": "kubelet"}), &ev));

        let cr = FieldSet::for_custom_resource(true, &[".spec.replicas", ".spec.enabled"]);
        let obj = json!({"spec": {"replicas": 3, "enabled": false}});
        assert!(
            FieldSelector::parse("spec.replicas=3,spec.enabled=false")
                .unwrap()
                .matches(&obj, &cr)
        );
        assert!(
            FieldSelector::parse("spec.missing=")
                .unwrap()
                .matches(&obj, &cr)
        );
    }

    #[test]
    fn exact_match_lookup() {
        let s = FieldSelector::parse("metadata.name=a,metadata.namespace!=b").unwrap();
        assert_eq!(s.exact_match("metadata.name"), Some("a"));
        assert_eq!(s.exact_match("metadata.namespace"), None);
    }
}

//! Label selectors: the `labelSelector=` string grammar and the structured `metav1.LabelSelector`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use super::SelectorError;
use ocm_apiserver_validation::{Cause, go_quote, qualified_name_errors};
use ocm_apiserver_validation::{validate_label_key, validate_label_value, validate_labels};

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (a,b)`; `In` in a structured selector.
    In,
    /// `key notin (a,b)`; `NotIn` in a structured selector. Also matches objects without the key.
    NotIn,
    /// `key=value`.
    Equals,
    /// `key==value`.
    DoubleEquals,
    /// `key!=value`. Also matches objects without the key.
    NotEquals,
    /// `key`; `Exists` in a structured selector.
    Exists,
    /// `!key`; `DoesNotExist` in a structured selector.
    DoesNotExist,
    /// `key>5` (integer comparison).
    GreaterThan,
    /// `key<5` (integer comparison).
    LessThan,
}

impl Operator {
    /// The operator's name in apimachinery's `selection.Operator`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One term of a label selector: a key, an operator and a (sorted, de-duplicated) value set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted and without duplicates.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    fn matches(&self, labels: &dyn Fn(&str) -> Option<String>) -> bool {
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                labels(&self.key).is_some_and(|v| self.has_value(&v))
            }
            Operator::NotIn | Operator::NotEquals => {
                labels(&self.key).is_none_or(|v| !self.has_value(&v))
            }
            Operator::Exists => labels(&self.key).is_some(),
            Operator::DoesNotExist => labels(&self.key).is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(v) = labels(&self.key) else {
                    return false;
                };
                let (Ok(have), [want]) = (v.parse::<i64>(), self.values.as_slice()) else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: requirements ANDed together, or the selector that matches nothing
/// (a `null` structured selector).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSelector {
    /// `None` selects nothing; otherwise every requirement must match (none: everything).
    requirements: Option<Vec<Requirement>>,
}

impl Default for LabelSelector {
    fn default() -> Self {
        LabelSelector::everything()
    }
}

impl LabelSelector {
    /// The selector that matches every object (the empty string).
    pub fn everything() -> Self {
        LabelSelector {
            requirements: Some(Vec::new()),
        }
    }

    /// The selector that matches no object (what a `null` structured selector means).
    pub fn nothing() -> Self {
        LabelSelector { requirements: None }
    }

    /// Whether the selector has no requirements (matches everything).
    pub fn is_everything(&self) -> bool {
        self.requirements.as_ref().is_some_and(Vec::is_empty)
    }

    /// The requirements, sorted by key (empty for [`LabelSelector::nothing`]).
    pub fn requirements(&self) -> &[Requirement] {
        self.requirements.as_deref().unwrap_or(&[])
    }

    /// Parse the `labelSelector=` grammar exactly as apimachinery's `labels.Parse` does,
    /// including its error messages (`unable to parse requirement: ...`,
    /// `found 'x', expected: ...`).
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut parser = Parser {
            items: lex(selector),
            pos: 0,
        };
        let mut reqs = parser.parse().map_err(SelectorError::new)?;
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements: Some(reqs),
        })
    }

    /// Convert a structured `metav1.LabelSelector` (`{matchLabels, matchExpressions}`), as
    /// `metav1.LabelSelectorAsSelector` does: `null` selects nothing, `{}` everything.
    /// Errors carry apimachinery's messages (e.g. `"Foo" is not a valid label selector
    /// operator`).
    pub fn from_structured(selector: &Value) -> Result<Self, SelectorError> {
        let obj = match selector {
            Value::Null => return Ok(LabelSelector::nothing()),
            Value::Object(o) => o,
            other => {
                return Err(SelectorError::new(format!(
                    "label selector must be an object, got {other}"
                )));
            }
        };
        let match_labels = obj.get("matchLabels").and_then(Value::as_object);
        let exprs = obj.get("matchExpressions").and_then(Value::as_array);
        let mut reqs = Vec::new();
        for (k, v) in match_labels.into_iter().flatten() {
            let v = v.as_str().unwrap_or("").to_string();
            reqs.push(
                new_requirement(k, Operator::Equals, vec![v], false).map_err(SelectorError::new)?,
            );
        }
        for e in exprs.into_iter().flatten() {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let op_name = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let op = match op_name {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::new(format!(
                        "{} is not a valid label selector operator",
                        go_quote(other)
                    )));
                }
            };
            let values: Option<Vec<String>> = e.get("values").and_then(Value::as_array).map(|a| {
                a.iter()
                    .map(|v| v.as_str().unwrap_or("").to_string())
                    .collect()
            });
            let nil = values.as_ref().is_none_or(Vec::is_empty);
            reqs.push(
                new_requirement(key, op, values.unwrap_or_default(), nil)
                    .map_err(SelectorError::new)?,
            );
        }
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements: Some(reqs),
        })
    }

    /// Whether a label set matches.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(&|k| labels.get(k).cloned())
    }

    /// Whether a JSON label map (`metadata.labels`) matches; non-string values count as absent.
    pub fn matches_map(&self, labels: &Map<String, Value>) -> bool {
        self.matches_with(&|k| labels.get(k).and_then(Value::as_str).map(str::to_string))
    }

    /// Whether an object matches, by its `metadata.labels`.
    pub fn matches_value(&self, obj: &Value) -> bool {
        match obj.pointer("/metadata/labels").and_then(Value::as_object) {
            Some(labels) => self.matches_map(labels),
            None => self.matches_map(&Map::new()),
        }
    }

    fn matches_with(&self, labels: &dyn Fn(&str) -> Option<String>) -> bool {
        match &self.requirements {
            None => false,
            Some(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// `ValidateLabelSelector` on a structured selector at `field` (e.g. `spec.selector`), as
/// kube-apiserver validates selectors embedded in built-in objects.
pub fn validate_structured_label_selector(selector: &Value, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(obj) = selector.as_object() else {
        return causes;
    };
    if let Some(ml) = obj.get("matchLabels").and_then(Value::as_object) {
        causes.extend(validate_labels(ml, &format!("{field}.matchLabels")));
    }
    let exprs = obj.get("matchExpressions").and_then(Value::as_array);
    for (i, e) in exprs.into_iter().flatten().enumerate() {
        let path = format!("{field}.matchExpressions[{i}]");
        causes.extend(validate_label_requirement(e, &path, false));
    }
    causes
}

/// `ValidateLabelSelectorRequirement` on one `{key, operator, values}` at `path`. With
/// `allow_unknown_operator` (how kube validates the requirements of an access review), an
/// operator other than `In`/`NotIn`/`Exists`/`DoesNotExist` is not an error.
pub fn validate_label_requirement(
    requirement: &Value,
    path: &str,
    allow_unknown_operator: bool,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let op = requirement
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or("");
    let values: Vec<&Value> = requirement
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    causes.extend(operator_value_causes(op, values.len(), path));
    if !allow_unknown_operator && !KNOWN_OPERATORS.contains(&op) {
        causes.push(Cause::invalid(
            format!("{path}.operator"),
            op,
            "not a valid selector operator",
        ));
    }
    let key = requirement.get("key").and_then(Value::as_str).unwrap_or("");
    causes.extend(validate_label_key(key, &format!("{path}.key")));
    for (j, v) in values.iter().enumerate() {
        causes.extend(validate_label_value(
            v.as_str().unwrap_or(""),
            &format!("{path}.values[{j}]"),
        ));
    }
    causes
}

/// The operators of a structured selector requirement (label and field alike).
const KNOWN_OPERATORS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];

/// The value count a structured requirement's operator demands (kube's label and field
/// requirement validation share these messages): some values for `In`/`NotIn`, none for
/// `Exists`/`DoesNotExist`; other operators are not checked here.
pub fn operator_value_causes(op: &str, value_count: usize, path: &str) -> Vec<Cause> {
    match op {
        "In" | "NotIn" if value_count == 0 => vec![Cause::required(
            format!("{path}.values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )],
        "Exists" | "DoesNotExist" if value_count > 0 => vec![Cause::forbidden(
            format!("{path}.values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )],
        _ => Vec::new(),
    }
}

/// `["a","b"]` (or `null` for a nil slice): how kube 1.35's field errors print a string
/// slice (its JSON).
fn go_string_slice(values: &[String], nil: bool) -> String {
    if nil && values.is_empty() {
        return "null".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[{}]", quoted.join(","))
}

/// `labels.NewRequirement`: validates the key, the value count for the operator and each
/// value; the error is an aggregate of field errors (paths relative to a nil root).
fn new_requirement(
    key: &str,
    op: Operator,
    values: Vec<String>,
    nil_values: bool,
) -> Result<Requirement, String> {
    let mut errs: Vec<String> = Vec::new();
    for c in validate_label_key(key, "key") {
        errs.push(c.to_string());
    }
    let shown = go_string_slice(&values, nil_values);
    match op {
        Operator::In | Operator::NotIn if values.is_empty() => errs.push(format!(
            "values: Invalid value: {shown}: for 'in', 'notin' operators, values set can't be empty"
        )),
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            errs.push(format!(
                "values: Invalid value: {shown}: exact-match compatibility requires one single value"
            ))
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(format!(
            "values: Invalid value: {shown}: values set must be empty for exists and does not exist"
        )),
        Operator::GreaterThan | Operator::LessThan => {
            if values.len() != 1 {
                errs.push(format!(
                    "values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one value is required"
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(format!(
                        "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                        go_quote(v)
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        for c in validate_label_value(v, &format!("values[{i}][{key}]")) {
            errs.push(c.to_string());
        }
    }
    if errs.is_empty() {
        let set: BTreeSet<String> = values.into_iter().collect();
        Ok(Requirement {
            key: key.to_string(),
            operator: op,
            values: set.into_iter().collect(),
        })
    } else {
        Err(aggregate(errs))
    }
}

/// `utilerrors.NewAggregate(...).Error()`: one message bare, several de-duplicated in brackets.
fn aggregate(errs: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen.remove(0)
    } else {
        format!("[{}]", seen.join(", "))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &[u8]) -> Option<Tok> {
    Some(match s {
        b")" => Tok::ClosedPar,
        b"," => Tok::Comma,
        b"!" => Tok::DoesNotExist,
        b"==" => Tok::DoubleEquals,
        b"=" => Tok::Equals,
        b">" => Tok::GreaterThan,
        b"in" => Tok::In,
        b"<" => Tok::LessThan,
        b"!=" => Tok::NotEquals,
        b"notin" => Tok::NotIn,
        b"(" => Tok::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// The whole input as tokens, ending with `EndOfString` (apimachinery's lexer works on bytes and
/// treats a NUL byte as the end of the input).
fn lex(s: &str) -> Vec<(Tok, String)> {
    let bytes = s.as_bytes();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let mut pos = 0;
    let mut items = Vec::new();
    loop {
        while pos < end && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= end {
            items.push((Tok::EndOfString, String::new()));
            return items;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            let mut last: Option<(Tok, usize)> = None;
            while pos < end && is_special(bytes[pos]) {
                match keyword(&bytes[start..=pos]) {
                    Some(t) => last = Some((t, pos + 1)),
                    None if last.is_some() => break,
                    None => {}
                }
                pos += 1;
            }
            match last {
                Some((t, stop)) => {
                    pos = stop;
                    items.push((t, s[start..stop].to_string()));
                }
                None => items.push((
                    Tok::Error,
                    format!("error expected: keyword found '{}'", &s[start..pos]),
                )),
            }
        } else {
            while pos < end && !is_special(bytes[pos]) && !is_whitespace(bytes[pos]) {
                pos += 1;
            }
            let lit = &s[start..pos];
            let tok = keyword(lit.as_bytes()).unwrap_or(Tok::Identifier);
            items.push((tok, lit.to_string()));
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Tok, String)>,
    pos: usize,
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

impl Parser {
    fn at(&self, i: usize, ctx: Context) -> (Tok, String) {
        let (tok, lit) = self
            .items
            .get(i)
            .cloned()
            .unwrap_or((Tok::EndOfString, String::new()));
        let tok = match (ctx, tok) {
            (Context::Values, Tok::In | Tok::NotIn) => Tok::Identifier,
            (_, t) => t,
        };
        (tok, lit)
    }

    fn lookahead(&self, ctx: Context) -> (Tok, String) {
        self.at(self.pos, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Tok, String) {
        let item = self.at(self.pos, ctx);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Tok::EndOfString => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Tok::Identifier && t2 != Tok::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Tok::EndOfString => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = op {
            return new_requirement(&key, op, Vec::new(), false);
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(&key, op, values.into_iter().collect(), false)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Tok::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Tok::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let key_errors = qualified_name_errors(&lit);
        if !key_errors.is_empty() {
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                go_quote(&lit),
                key_errors.join("; ")
            ));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Tok::EndOfString | Tok::Comma) && op != Some(Operator::DoesNotExist) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Tok::In => Operator::In,
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::GreaterThan => Operator::GreaterThan,
            Tok::LessThan => Operator::LessThan,
            Tok::NotIn => Operator::NotIn,
            Tok::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.parse_identifiers_list()?;
                let (t, _) = self.consume(Context::Values);
                if t != Tok::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Tok::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Tok::Identifier => {
                    set.insert(lit);
                    let (t2, l2) = self.lookahead(Context::Values);
                    match t2 {
                        Tok::Comma => continue,
                        Tok::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (t2, _) = self.lookahead(Context::Values);
                    if t2 == Tok::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if t2 == Tok::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if matches!(tok, Tok::EndOfString | Tok::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Tok::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_and_prints_every_operator() {
        let cases = [
            ("", ""),
            ("a=b", "a=b"),
            ("a==b", "a==b"),
            ("a!=b", "a!=b"),
            ("a in (y,x)", "a in (x,y)"),
            ("a notin (x)", "a notin (x)"),
            ("a", "a"),
            ("!a", "!a"),
            ("a>5", "a>5"),
            ("a<5", "a<5"),
            ("  b = c , a in ( x , y ) ", "a in (x,y),b=c"),
            (
                "x in (foo,,baz),y,z notin ()",
                "x in (,baz,foo),y,z notin ()",
            ),
            ("a=", "a="),
            ("a=,b", "a=,b"),
            ("example.com/tier=web", "example.com/tier=web"),
            ("in in (in,notin)", "in in (in,notin)"),
            ("a in (,)", "a in ()"),
            ("a\tin\n(x)", "a in (x)"),
        ];
        for (input, want) in cases {
            let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(sel.to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn parse_errors_match_apimachinery() {
        let key_msg = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        let cases: Vec<(&str, String)> = vec![
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("a=b c", "found 'c', expected: ',' or 'end of string'".into()),
            ("a,", "found '', expected: identifier after ','".into()),
            (",a", "found ',', expected: !, identifier, or 'end of string'".into()),
            ("=a", "found '=', expected: !, identifier, or 'end of string'".into()),
            ("!", "unable to parse requirement: found '', expected: identifier".into()),
            ("a in x", "unable to parse requirement: found 'x' expected: '('".into()),
            ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            ("a in (x,=)", "unable to parse requirement: found '=', expected: ',', or identifier".into()),
            ("a==(", "unable to parse requirement: found '(', expected: identifier".into()),
            ("a/b/c", format!("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": {key_msg}")),
            ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
            ("a=-b", "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into()),
            ("a>", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ];
        for (input, want) in cases {
            let got = LabelSelector::parse(input).map(|s| s.to_string());
            assert_eq!(got, Err(SelectorError::new(want.clone())), "{input:?}");
        }
    }

    #[test]
    fn matching_semantics() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "7")]);
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("app in (db,web)", true),
            ("app notin (web)", false),
            ("missing notin (x)", true),
            ("missing in (x)", false),
            ("app", true),
            ("missing", false),
            ("!missing", true),
            ("!app", false),
            ("n>5", true),
            ("n<5", false),
            ("app>5", false),
            ("missing<5", false),
            ("app=web,tier=back", false),
            ("app=web,tier=front", true),
            ("missing=", false),
        ];
        for (sel, want) in cases {
            let s = LabelSelector::parse(sel).unwrap();
            assert_eq!(s.matches(&l), want, "{sel}");
        }
    }

    #[test]
    fn matches_object_labels() {
        let s = LabelSelector::parse("app=web").unwrap();
        assert!(s.matches_value(&json!({"metadata": {"labels": {"app": "web"}}})));
        assert!(!s.matches_value(&json!({"metadata": {}})));
        assert!(!s.matches_value(&json!({})));
        assert!(
            LabelSelector::parse("!app")
                .unwrap()
                .matches_value(&json!({}))
        );
        assert!(!LabelSelector::nothing().matches_value(&json!({})));
        assert!(LabelSelector::everything().matches_value(&json!({})));
    }

    #[test]
    fn structured_selectors() {
        let l = labels(&[("app", "web"), ("env", "prod")]);
        let sel = LabelSelector::from_structured(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "stage"]},
                {"key": "gone", "operator": "DoesNotExist"}
            ]
        }))
        .unwrap();
        assert!(sel.matches(&l));
        assert_eq!(sel.to_string(), "app=web,env in (prod,stage),!gone");
        assert!(
            LabelSelector::from_structured(&json!({}))
                .unwrap()
                .is_everything()
        );
        assert!(
            !LabelSelector::from_structured(&Value::Null)
                .unwrap()
                .matches(&l)
        );

        let err = LabelSelector::from_structured(
            &json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]}),
        );
        assert_eq!(
            err.unwrap_err().message,
            "\"Foo\" is not a valid label selector operator"
        );
        let err = LabelSelector::from_structured(
            &json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
        );
        assert_eq!(
            err.unwrap_err().message,
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
        );
        let err = LabelSelector::from_structured(
            &json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
        );
        assert_eq!(
            err.unwrap_err().message,
            "values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist"
        );
    }

    #[test]
    fn structured_selector_validation() {
        let causes = validate_structured_label_selector(
            &json!({"matchLabels": {"ok": "v"}, "matchExpressions": [
                {"key": "a", "operator": "In"},
                {"key": "b", "operator": "Exists", "values": ["x"]},
                {"key": "bad key", "operator": "Nope", "values": ["-x"]}
            ]}),
            "spec.selector",
        );
        let msgs: Vec<String> = causes.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs[0],
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        );
        assert_eq!(
            msgs[1],
            "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        );
        assert_eq!(
            msgs[2],
            "spec.selector.matchExpressions[2].operator: Invalid value: \"Nope\": not a valid selector operator"
        );
        assert!(
            msgs[3]
                .starts_with("spec.selector.matchExpressions[2].key: Invalid value: \"bad key\"")
        );
        assert!(
            msgs[4]
                .starts_with("spec.selector.matchExpressions[2].values[0]: Invalid value: \"-x\"")
        );
        assert_eq!(msgs.len(), 5);
    }

    #[test]
    fn nul_byte_ends_the_input() {
        assert_eq!(
            LabelSelector::parse("a=b\0garbage(").unwrap().to_string(),
            "a=b"
        );
    }
}

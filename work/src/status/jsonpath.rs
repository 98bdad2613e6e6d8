//! Kubernetes' JSONPath dialect (what `kubectl -o jsonpath` and ManifestWork feedback rules
//! use), for reading values out of an object: `.status.readyReplicas`, `{.a.b}` (braces
//! optional), `['quoted.key']`, `[0]`, `[-1]`, `[1:3]`, `[*]`, `..name` (recursive), and
//! filters `[?(@.type=="Ready")]` with `==`, `!=`, `<`, `>`, `<=`, `>=` or existence
//! `[?(@.x)]`.

use serde_json::Value;

/// A path that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSONPath {path:?}: {message}")]
pub struct JsonPathError {
    /// The path.
    pub path: String,
    /// Why.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Wildcard,
    Recursive(Option<String>),
    Index(i64),
    Slice(Option<i64>, Option<i64>),
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    path: Vec<String>,
    op: Option<(String, Value)>,
}

/// Evaluates `path` against `root`; returns every value it selects, in document order.
pub fn evaluate<'a>(path: &str, root: &'a Value) -> Result<Vec<&'a Value>, JsonPathError> {
    let steps = parse(path)?;
    let mut current = vec![root];
    for step in &steps {
        let mut next = Vec::new();
        for value in current {
            apply(step, value, &mut next);
        }
        current = next;
    }
    Ok(current)
}

fn apply<'a>(step: &Step, value: &'a Value, out: &mut Vec<&'a Value>) {
    match step {
        Step::Field(name) => {
            if let Some(v) = value.get(name.as_str()) {
                out.push(v);
            }
        }
        Step::Wildcard => match value {
            Value::Array(items) => out.extend(items.iter()),
            Value::Object(map) => out.extend(map.values()),
            _ => {}
        },
        Step::Recursive(name) => recurse(value, name.as_deref(), out),
        Step::Index(i) => {
            if let Value::Array(items) = value {
                let len = items.len() as i64;
                let at = if *i < 0 { len + i } else { *i };
                if (0..len).contains(&at) {
                    out.push(&items[at as usize]);
                }
            }
        }
        Step::Slice(start, end) => {
            if let Value::Array(items) = value {
                let len = items.len() as i64;
                let fix = |v: i64| if v < 0 { (len + v).max(0) } else { v.min(len) };
                let s = start.map(fix).unwrap_or(0);
                let e = end.map(fix).unwrap_or(len);
                if s < e {
                    out.extend(items[s as usize..e as usize].iter());
                }
            }
        }
        Step::Filter(filter) => {
            if let Value::Array(items) = value {
                out.extend(items.iter().filter(|item| filter.matches(item)));
            }
        }
    }
}

fn recurse<'a>(value: &'a Value, name: Option<&str>, out: &mut Vec<&'a Value>) {
    match name {
        Some(n) => {
            if let Some(v) = value.get(n) {
                out.push(v);
            }
        }
        None => out.push(value),
    }
    match value {
        Value::Array(items) => items.iter().for_each(|v| recurse(v, name, out)),
        Value::Object(map) => map.values().for_each(|v| recurse(v, name, out)),
        _ => {}
    }
}

impl Filter {
    fn matches(&self, item: &Value) -> bool {
        let mut v = Some(item);
        for key in &self.path {
            v = v.and_then(|x| x.get(key.as_str()));
        }
        match (&self.op, v) {
            (None, found) => found.is_some(),
            (Some(_), None) => false,
            (Some((op, want)), Some(have)) => compare(op, have, want),
        }
    }
}

fn compare(op: &str, have: &Value, want: &Value) -> bool {
    let numbers = have.as_f64().zip(want.as_f64());
    match op {
        "==" => numbers.map_or(have == want, |(a, b)| a == b),
        "!=" => numbers.map_or(have != want, |(a, b)| a != b),
        "<" => numbers.is_some_and(|(a, b)| a < b),
        ">" => numbers.is_some_and(|(a, b)| a > b),
        "<=" => numbers.is_some_and(|(a, b)| a <= b),
        ">=" => numbers.is_some_and(|(a, b)| a >= b),
        _ => false,
    }
}

fn parse(path: &str) -> Result<Vec<Step>, JsonPathError> {
    let err = |message: &str| JsonPathError {
        path: path.to_owned(),
        message: message.to_owned(),
    };
    let mut text = path.trim();
    if let Some(inner) = text.strip_prefix('{') {
        text = inner
            .strip_suffix('}')
            .ok_or_else(|| err("unclosed {"))?
            .trim();
    }
    let text = text.strip_prefix('$').unwrap_or(text);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut steps = Vec::new();
    while i < chars.len() {
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                i += 2;
                let name = read_name(&chars, &mut i);
                steps.push(Step::Recursive((!name.is_empty()).then_some(name)));
            }
            '.' => {
                i += 1;
                if chars.get(i) == Some(&'*') {
                    i += 1;
                    steps.push(Step::Wildcard);
                    continue;
                }
                let name = read_name(&chars, &mut i);
                if name.is_empty() {
                    if i >= chars.len() {
                        break;
                    }
                    if chars[i] != '[' {
                        return Err(err("empty field name"));
                    }
                    continue;
                }
                steps.push(Step::Field(name));
            }
            '[' => {
                let close = find_close(&chars, i).ok_or_else(|| err("unclosed ["))?;
                let inner: String = chars[i + 1..close].iter().collect();
                steps.push(bracket(inner.trim()).map_err(|m| err(&m))?);
                i = close + 1;
            }
            c if c.is_alphanumeric() || c == '_' => {
                let name = read_name(&chars, &mut i);
                steps.push(Step::Field(name));
            }
            c => return Err(err(&format!("unexpected character {c:?}"))),
        }
    }
    Ok(steps)
}

fn read_name(chars: &[char], i: &mut usize) -> String {
    let start = *i;
    while *i < chars.len() && !matches!(chars[*i], '.' | '[') {
        *i += 1;
    }
    chars[start..*i].iter().collect()
}

fn find_close(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (j, c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if *c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(*c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    for q in ['\'', '"'] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return Some(inner.to_owned());
        }
    }
    None
}

fn bracket(inner: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::Wildcard);
    }
    if let Some(name) = unquote(inner) {
        return Ok(Step::Field(name));
    }
    if let Some(expr) = inner.strip_prefix("?(").and_then(|r| r.strip_suffix(')')) {
        return filter(expr.trim()).map(Step::Filter);
    }
    if let Some((a, b)) = inner.split_once(':') {
        let num = |s: &str| -> Result<Option<i64>, String> {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                s.parse()
                    .map(Some)
                    .map_err(|_| format!("bad slice bound {s:?}"))
            }
        };
        return Ok(Step::Slice(num(a)?, num(b)?));
    }
    inner
        .parse()
        .map(Step::Index)
        .map_err(|_| format!("unsupported subscript [{inner}]"))
}

fn filter(expr: &str) -> Result<Filter, String> {
    let ops = ["==", "!=", "<=", ">=", "<", ">"];
    let (lhs, op) = match ops
        .iter()
        .find_map(|op| expr.split_once(op).map(|(l, r)| (l, Some((*op, r)))))
    {
        Some((l, op)) => (l.trim(), op),
        None => (expr, None),
    };
    let path = lhs
        .strip_prefix('@')
        .ok_or_else(|| format!("filter must start with @: {expr}"))?;
    let path: Vec<String> = path
        .split('.')
        .filter(|s| !s.is_empty())
        .map(|s| unquote(s).unwrap_or_else(|| s.to_owned()))
        .collect();
    let op = match op {
        None => None,
        Some((op, rhs)) => {
            let rhs = rhs.trim();
            let value = unquote(rhs)
                .map(Value::String)
                .or_else(|| serde_json::from_str(rhs).ok())
                .ok_or_else(|| format!("bad filter value {rhs:?}"))?;
            Some((op.to_owned(), value))
        }
    };
    Ok(Filter { path, op })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 3, "paused": false},
            "status": {
                "readyReplicas": 2,
                "conditions": [
                    {"type": "Available", "status": "True"},
                    {"type": "Progressing", "status": "False", "count": 4}
                ]
            }
        })
    }

    fn eval(path: &str) -> Vec<Value> {
        evaluate(path, &doc())
            .unwrap()
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn fields_indexes_and_braces() {
        assert_eq!(eval(".status.readyReplicas"), [json!(2)]);
        assert_eq!(eval("{.spec.replicas}"), [json!(3)]);
        assert_eq!(eval(".spec.paused"), [json!(false)]);
        assert_eq!(eval(".status.conditions[0].type"), [json!("Available")]);
        assert_eq!(eval(".status.conditions[-1].type"), [json!("Progressing")]);
        assert_eq!(
            eval(".status.conditions[*].type"),
            [json!("Available"), json!("Progressing")]
        );
        assert_eq!(eval(".status.conditions[0:1].status"), [json!("True")]);
        assert_eq!(
            eval(".metadata.labels['app.kubernetes.io/name']"),
            [json!("web")]
        );
        assert!(eval(".status.missing").is_empty());
    }

    #[test]
    fn filters_and_recursion() {
        assert_eq!(
            eval(".status.conditions[?(@.type==\"Available\")].status"),
            [json!("True")]
        );
        assert_eq!(
            eval(".status.conditions[?(@.type=='Progressing')].status"),
            [json!("False")]
        );
        assert_eq!(
            eval(".status.conditions[?(@.count>3)].type"),
            [json!("Progressing")]
        );
        assert_eq!(
            eval(".status.conditions[?(@.count)].type"),
            [json!("Progressing")]
        );
        assert_eq!(eval("..readyReplicas"), [json!(2)]);
    }

    #[test]
    fn bad_paths_are_errors() {
        assert!(evaluate(".status[", &doc()).is_err());
        assert!(evaluate("{.status", &doc()).is_err());
        assert!(evaluate(".status.conditions[?(type==1)]", &doc()).is_err());
    }
}

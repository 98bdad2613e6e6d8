//! Label selectors (`matchLabels` / `matchExpressions`) compiled once and matched many times,
//! with the validation and error messages of Kubernetes' `LabelSelectorAsSelector`.
//!
//! The same code serves label selectors over ManagedCluster labels and claim selectors over
//! `status.clusterClaims` (claim name as key), as upstream OCM does.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// A compiled selector.
#[derive(Clone, Debug)]
pub enum Selector {
    /// Matches nothing (a missing selector where Kubernetes means "nothing").
    Nothing,
    /// All requirements must hold; empty matches everything.
    All(Vec<Requirement>),
}

/// One requirement of a selector.
#[derive(Clone, Debug)]
pub struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Equals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl Selector {
    /// A selector matching everything.
    pub fn everything() -> Self {
        Selector::All(Vec::new())
    }

    /// Compiles a label selector; `None` compiles to `none_means` (upstream treats a missing
    /// selector differently in different places).
    pub fn from_label_selector(
        selector: Option<&LabelSelector>,
        none_means: Selector,
    ) -> Result<Self, String> {
        let Some(selector) = selector else {
            return Ok(none_means);
        };
        let labels = selector.match_labels.as_ref();
        let expressions = selector.match_expressions.as_deref().unwrap_or_default();
        let mut requirements = Vec::new();
        if let Some(labels) = labels {
            for (key, value) in labels {
                requirements.push(Requirement::new(key, Op::Equals, vec![value.clone()])?);
            }
        }
        Self::push_expressions(&mut requirements, expressions)?;
        Ok(Selector::All(requirements))
    }

    /// Compiles a list of requirements (a claim selector).
    pub fn from_expressions(expressions: &[LabelSelectorRequirement]) -> Result<Self, String> {
        let mut requirements = Vec::new();
        Self::push_expressions(&mut requirements, expressions)?;
        Ok(Selector::All(requirements))
    }

    fn push_expressions(
        requirements: &mut Vec<Requirement>,
        expressions: &[LabelSelectorRequirement],
    ) -> Result<(), String> {
        for expression in expressions {
            let op = match expression.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            };
            let values = expression.values.clone().unwrap_or_default();
            requirements.push(Requirement::new(&expression.key, op, values)?);
        }
        Ok(())
    }

    /// Whether the key/value pairs returned by `lookup` satisfy the selector.
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::All(requirements) => requirements.iter().all(|r| r.matches(&lookup)),
        }
    }

    /// Whether `map` satisfies the selector.
    pub fn matches_map(&self, map: &BTreeMap<String, String>) -> bool {
        self.matches(|k| map.get(k).map(String::as_str))
    }

    /// Whether the selector matches every set of labels.
    pub fn is_everything(&self) -> bool {
        matches!(self, Selector::All(r) if r.is_empty())
    }
}

impl Requirement {
    fn new(key: &str, op: Op, values: Vec<String>) -> Result<Self, String> {
        let mut errors = Vec::new();
        let key_errors = qualified_name_errors(key);
        if !key_errors.is_empty() {
            errors.push(format!(
                "key: Invalid value: {key:?}: {}",
                key_errors.join("; ")
            ));
        }
        match op {
            Op::In | Op::NotIn if values.is_empty() => errors.push(format!(
                "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                go_string_slice(&values)
            )),
            Op::Equals if values.len() != 1 => errors.push(format!(
                "values: Invalid value: {}: exact-match compatibility requires one single value",
                go_string_slice(&values)
            )),
            Op::Exists | Op::DoesNotExist if !values.is_empty() => errors.push(format!(
                "values: Invalid value: {}: values set must be empty for exists and does not exist",
                go_string_slice(&values)
            )),
            _ => {}
        }
        for (i, value) in values.iter().enumerate() {
            let value_errors = label_value_errors(value);
            if !value_errors.is_empty() {
                errors.push(format!(
                    "values[{i}]: Invalid value: {value:?}: {}",
                    value_errors.join("; ")
                ));
            }
        }
        match errors.len() {
            0 => Ok(Requirement {
                key: key.to_string(),
                op,
                values,
            }),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    fn matches<'a>(&self, lookup: &impl Fn(&str) -> Option<&'a str>) -> bool {
        let found = lookup(&self.key);
        match self.op {
            Op::Equals | Op::In => found.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Op::NotIn => found.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Op::Exists => found.is_some(),
            Op::DoesNotExist => found.is_none(),
        }
    }
}

/// Go's `%#v` of a `[]string`, as it appears in Kubernetes validation messages.
fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// Kubernetes' `RegexError` text.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: u8| c.is_ascii_alphanumeric();
    let inner = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.';
    !b.is_empty() && edge(b[0]) && edge(b[b.len() - 1]) && b.iter().all(|&c| inner(c))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty()
            && edge(b[0])
            && edge(b[b.len() - 1])
            && b.iter().all(|&c| edge(c) || c == b'-')
    })
}

/// Kubernetes' `IsQualifiedName`.
pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_dns1123_subdomain(prefix) {
                    errors.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_MSG,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errors.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_string());
    }
    if !name.is_empty() && !is_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// Kubernetes' `IsValidLabelValue`.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errors.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    use super::Selector;

    fn req(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| v.to_string()).collect())
            },
        }
    }

    #[test]
    fn operators_match_as_kubernetes() {
        let labels: BTreeMap<String, String> = [("env".to_string(), "prod".to_string())]
            .into_iter()
            .collect();
        let cases = [
            (req("env", "In", &["prod", "dev"]), true),
            (req("env", "In", &["dev"]), false),
            (req("env", "NotIn", &["dev"]), true),
            (req("env", "NotIn", &["prod"]), false),
            (req("zone", "NotIn", &["a"]), true),
            (req("env", "Exists", &[]), true),
            (req("zone", "Exists", &[]), false),
            (req("zone", "DoesNotExist", &[]), true),
            (req("env", "DoesNotExist", &[]), false),
        ];
        for (requirement, want) in cases {
            let selector = Selector::from_expressions(std::slice::from_ref(&requirement))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(selector.matches_map(&labels), want, "{requirement:?}");
        }
    }

    #[test]
    fn invalid_selectors_report_kubernetes_messages() {
        let cases = [
            (
                req("env", "Within", &["a"]),
                "\"Within\" is not a valid label selector operator",
            ),
            (
                req("env", "In", &[]),
                "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
            ),
            (
                req("env", "Exists", &["a"]),
                "values: Invalid value: []string{\"a\"}: values set must be empty for exists and does not exist",
            ),
            (
                req("bad key", "Exists", &[]),
                "key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
        ];
        for (requirement, want) in cases {
            let err = Selector::from_expressions(std::slice::from_ref(&requirement))
                .err()
                .unwrap_or_default();
            assert_eq!(err, want);
        }
        let bad_label = LabelSelector {
            match_labels: Some([("a".to_string(), "b c".to_string())].into_iter().collect()),
            match_expressions: None,
        };
        let err = Selector::from_label_selector(Some(&bad_label), Selector::Nothing)
            .err()
            .unwrap_or_default();
        assert!(
            err.starts_with("values[0]: Invalid value: \"b c\": a valid label"),
            "{err}"
        );
    }
}

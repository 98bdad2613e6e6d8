//! Name, label key and label value syntax, with kube-apiserver's message texts.

use serde_json::{Map, Value};

use super::cause::Cause;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// Characters kube-apiserver draws the random `generateName` suffix from.
pub const GENERATE_NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";
/// Length of the random `generateName` suffix.
pub const GENERATE_NAME_SUFFIX_LEN: usize = 5;
const MAX_GENERATED_NAME_PREFIX: usize = 58;

/// Which syntax `metadata.name` must follow for a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameRule {
    /// Lowercase RFC 1123 subdomain, at most 253 characters (most kinds and all custom resources).
    DnsSubdomain,
    /// Lowercase RFC 1123 label, at most 63 characters (namespaces).
    DnsLabel,
    /// DNS-1035 label: starts with a letter, at most 63 characters (services).
    Dns1035Label,
    /// Any string usable as a URL path segment: not `.`/`..`, no `/` or `%` (RBAC kinds,
    /// certificate signing requests, core/v1 events).
    PathSegment,
}

impl NameRule {
    /// The messages for a bad `name` (or, with `prefix`, a bad `generateName`); empty when valid.
    ///
    /// A `generateName` prefix may end with `-`: kube masks the trailing dash before checking.
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            NameRule::PathSegment => {
                if prefix {
                    path_segment_prefix_errors(name)
                } else {
                    path_segment_name_errors(name)
                }
            }
            NameRule::DnsSubdomain => dns1123_subdomain_errors(&mask(name, prefix)),
            NameRule::DnsLabel => dns1123_label_errors(&mask(name, prefix)),
            NameRule::Dns1035Label => dns1035_label_errors(&mask(name, prefix)),
        }
    }
}

/// apimachinery's `maskTrailingDash`: a prefix `abc-` is checked as `aba` (the last two
/// characters replaced by `a`), so a trailing dash is accepted.
fn mask(name: &str, prefix: bool) -> String {
    if prefix && name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
    }
    name.to_string()
}

/// The name rule kube-apiserver applies to `metadata.name` of a resource (`group` is `""` for
/// the core group). Unknown resources, including every custom resource, get
/// [`NameRule::DnsSubdomain`].
pub fn name_rule_for(group: &str, resource: &str) -> NameRule {
    match (group, resource) {
        ("", "namespaces") => NameRule::DnsLabel,
        ("", "services") => NameRule::Dns1035Label,
        // core/v1 events only get the generic path-segment check (legacy validation).
        ("", "events") => NameRule::PathSegment,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        ("certificates.k8s.io", "certificatesigningrequests") => NameRule::PathSegment,
        ("apiregistration.k8s.io", "apiservices") => NameRule::PathSegment,
        _ => NameRule::DnsSubdomain,
    }
}

/// The name kube-apiserver generates from `generateName`: the prefix cut to 58 bytes plus
/// `suffix` (which the caller draws: [`GENERATE_NAME_SUFFIX_LEN`] characters from
/// [`GENERATE_NAME_ALPHABET`]).
pub fn generate_name(base: &str, suffix: &str) -> String {
    let mut cut = base.len().min(MAX_GENERATED_NAME_PREFIX);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &base[..cut])
}

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(ex);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// The length message of the checks kube 1.35 moved to `k8s.io/apimachinery/pkg/api/validate/content`
/// (label keys and their prefix part, label values), which count bytes; the older checks (object
/// names, config keys) still say "characters".
fn max_bytes_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length limit).
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f)
                && is_lower_alnum(l)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Whether `s` is a lowercase RFC 1123 label of at most 63 characters.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && matches_dns1123_label(s)
}

/// Whether `s` is a lowercase RFC 1123 subdomain of at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && matches_dns1123_subdomain(s)
}

/// Whether `s` is a DNS-1035 label of at most 63 characters.
pub fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() <= 63
        && matches!(b.first(), Some(f) if f.is_ascii_lowercase())
        && matches!(b.last(), Some(&l) if is_lower_alnum(l))
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

/// Why `s` is not a DNS-1123 label (at most 63 lower-case alphanumerics or `-`, starting and
/// ending alphanumeric), in kube's words; empty when it is one.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_dns1123_label(s) {
        if matches_dns1123_subdomain(s) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Why `s` is not a DNS-1123 subdomain (at most 253 characters of dot-separated labels), in
/// kube's words; empty when it is one.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    subdomain_errors(s, max_len_error)
}

/// [`dns1123_subdomain_errors`] with the length message `too_long` gives for the limit.
fn subdomain_errors(s: &str, too_long: fn(usize) -> String) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(too_long(253));
    }
    if !matches_dns1123_subdomain(s) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsConfigMapKey`: why `key` cannot name an entry of a ConfigMap or Secret (empty when it
/// can): at most 253 characters of `[-._a-zA-Z0-9]`, and not `.`, `..` or `..`-prefixed.
pub fn config_map_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push(max_len_error(253));
    }
    let valid = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !valid {
        errs.push(regex_error(
            CONFIG_MAP_KEY_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match key {
        "." => errs.push("must not be '.'".to_owned()),
        ".." => errs.push("must not be '..'".to_owned()),
        _ if key.starts_with("..") => errs.push("must not start with '..'".to_owned()),
        _ => {}
    }
    errs
}

/// Why `s` is not a DNS-1035 label (a DNS-1123 label starting with a letter), in kube's
/// words; empty when it is one.
pub fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    let b = s.as_bytes();
    let ok = matches!(b.first(), Some(f) if f.is_ascii_lowercase())
        && matches!(b.last(), Some(&l) if is_lower_alnum(l))
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-');
    if !ok {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Why `s` cannot be a name used as a URL path segment (`.`, `..`, `/` or `%`), in kube's
/// words; empty when it can.
pub fn path_segment_name_errors(s: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if s == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    path_segment_prefix_errors(s)
}

fn path_segment_prefix_errors(s: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|bad| s.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Whether `s` is usable as a URL path segment name.
pub fn is_path_segment_name(s: &str) -> bool {
    path_segment_name_errors(s).is_empty()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// The messages for a bad qualified name (label key, annotation key, finalizer, selector key):
/// an optional DNS-subdomain prefix and `/`, then a name of at most 63 bytes. Since 1.35 kube
/// checks all of these with one label-key function, so a key with more than one `/` reads
/// "a valid label key must consist of …" and lengths are counted in bytes.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in subdomain_errors(prefix, max_bytes_error) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_bytes_error(63)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Whether `s` is a qualified name (the syntax of label keys, annotation keys and finalizers).
pub fn is_qualified_name(s: &str) -> bool {
    qualified_name_errors(s).is_empty()
}

pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_bytes_error(63));
    }
    if !(value.is_empty() || matches_qualified_name_part(value)) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Whether `s` is a valid label value (empty, or at most 63 characters of the label charset).
pub fn is_label_value(s: &str) -> bool {
    label_value_errors(s).is_empty()
}

/// The causes for a bad label key at `field` (each message its own cause, like
/// `ValidateLabelName`).
pub fn validate_label_key(key: &str, field: &str) -> Vec<Cause> {
    qualified_name_errors(key)
        .iter()
        .map(|m| Cause::invalid(field, key, m))
        .collect()
}

/// The causes for a bad label value at `field`.
pub fn validate_label_value(value: &str, field: &str) -> Vec<Cause> {
    label_value_errors(value)
        .iter()
        .map(|m| Cause::invalid(field, value, m))
        .collect()
}

/// `ValidateLabels`: every key and value of a label map, all reported at `field` (kube reports
/// label errors at `metadata.labels`, not at the individual key). Non-string values are reported
/// as invalid.
pub fn validate_labels(labels: &Map<String, Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (k, v) in labels {
        causes.extend(validate_label_key(k, field));
        match v {
            Value::String(s) => causes.extend(validate_label_value(s, field)),
            other => causes.push(Cause::invalid(field, other, "must be a string")),
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn subdomain_names() {
        for ok in ["a", "a.b", "my-name", "123", "a-1.b-2.c", &"a".repeat(253)] {
            assert!(NameRule::DnsSubdomain.check(ok, false).is_empty(), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a..b", ".a", "a_b", "é"] {
            assert_eq!(
                NameRule::DnsSubdomain.check(bad, false),
                vec![SUBDOMAIN_MSG],
                "{bad}"
            );
        }
        assert_eq!(
            NameRule::DnsSubdomain.check(&"a".repeat(254), false),
            vec!["must be no more than 253 characters".to_string()]
        );
    }

    #[test]
    fn label_names() {
        assert!(NameRule::DnsLabel.check("kube-system", false).is_empty());
        assert_eq!(
            NameRule::DnsLabel.check("a.b", false),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(
            NameRule::DnsLabel.check("A", false),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()
            ]
        );
        assert_eq!(
            NameRule::DnsLabel.check(&"a".repeat(64), false),
            vec!["must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn dns1035_names() {
        assert!(NameRule::Dns1035Label.check("svc-1", false).is_empty());
        assert_eq!(
            NameRule::Dns1035Label.check("1svc", false),
            vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
    }

    #[test]
    fn path_segment_names() {
        assert!(
            NameRule::PathSegment
                .check("system:controller:x", false)
                .is_empty()
        );
        assert!(NameRule::PathSegment.check("Upper_Case", false).is_empty());
        assert_eq!(
            NameRule::PathSegment.check("..", false),
            vec!["may not be '..'"]
        );
        assert_eq!(
            NameRule::PathSegment.check("a/b%c", false),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert!(NameRule::PathSegment.check(".", true).is_empty());
    }

    #[test]
    fn generate_name_prefixes_may_end_with_dash() {
        assert!(NameRule::DnsSubdomain.check("web-", true).is_empty());
        assert!(NameRule::DnsLabel.check("ns-", true).is_empty());
        assert!(!NameRule::DnsSubdomain.check("web-", false).is_empty());
        assert!(!NameRule::DnsSubdomain.check("-", true).is_empty());
        assert!(!NameRule::DnsSubdomain.check("Web-", true).is_empty());
    }

    #[test]
    fn name_rules_by_resource() {
        assert_eq!(name_rule_for("", "namespaces"), NameRule::DnsLabel);
        assert_eq!(name_rule_for("", "services"), NameRule::Dns1035Label);
        assert_eq!(name_rule_for("", "configmaps"), NameRule::DnsSubdomain);
        assert_eq!(name_rule_for("", "events"), NameRule::PathSegment);
        assert_eq!(
            name_rule_for("events.k8s.io", "events"),
            NameRule::DnsSubdomain
        );
        assert_eq!(
            name_rule_for("rbac.authorization.k8s.io", "clusterroles"),
            NameRule::PathSegment
        );
        assert_eq!(
            name_rule_for("certificates.k8s.io", "certificatesigningrequests"),
            NameRule::PathSegment
        );
        assert_eq!(
            name_rule_for("cluster.open-cluster-management.io", "managedclusters"),
            NameRule::DnsSubdomain
        );
    }

    #[test]
    fn generated_names() {
        assert_eq!(generate_name("web-", "x2b4c"), "web-x2b4c");
        let long = "a".repeat(70);
        assert_eq!(generate_name(&long, "bbbbb").len(), 63);
        assert!(generate_name("ééééééééééééééééééééééééééééééé", "b").len() <= 59);
    }

    #[test]
    fn qualified_names() {
        for ok in ["a", "A_b.c-D", "example.com/x", "a.b/C"] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        assert_eq!(
            qualified_name_errors("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(qualified_name_errors("a/"), vec![
            "name part must be non-empty".to_string(),
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string(),
        ]);
        assert_eq!(qualified_name_errors("a/b/c"), vec![
            "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()
        ]);
        assert_eq!(qualified_name_errors(&"a".repeat(64)).len(), 1);
        assert_eq!(
            qualified_name_errors(&format!("Ex.com/{}", "a".repeat(64))),
            vec![
                format!("prefix part {SUBDOMAIN_MSG}"),
                "name part must be no more than 63 bytes".to_string()
            ]
        );
        assert_eq!(
            qualified_name_errors(&format!("{}/x", "a".repeat(254))),
            vec!["prefix part must be no more than 253 bytes"]
        );
    }

    #[test]
    fn label_values() {
        for ok in ["", "a", "my_value", "12345", &"a".repeat(63)] {
            assert!(is_label_value(ok), "{ok}");
        }
        assert_eq!(label_value_errors("-a"), vec![
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()
        ]);
        assert_eq!(
            label_value_errors(&"a".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
    }

    #[test]
    fn label_map_causes_are_reported_at_the_map() {
        let labels: Map<String, Value> =
            serde_json::from_str(r#"{"ok":"fine","bad key":"v","k":"bad value!"}"#).unwrap();
        let causes = validate_labels(&labels, "metadata.labels");
        assert_eq!(causes.len(), 2);
        assert!(causes.iter().all(|c| c.field == "metadata.labels"));
        assert!(
            causes[0]
                .message
                .starts_with("Invalid value: \"bad key\": name part must consist")
        );
        assert!(
            causes[1]
                .message
                .starts_with("Invalid value: \"bad value!\": a valid label")
        );
    }
}

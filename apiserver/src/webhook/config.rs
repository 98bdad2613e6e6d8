//! `admissionregistration.k8s.io/v1` webhook configurations: v1 defaulting, validation (with
//! kube-apiserver's field paths and messages) and parsing into [`Webhook`]s. Pure functions.

use std::time::Duration;

use serde_json::{Value, json};

pub use crate::client_config::ClientConfig;
pub(crate) use crate::meta::{str_of, strings};
use crate::validation::{BadValue, Cause};
use ocm_apiserver_selector::{LabelSelector, validate_structured_label_selector};

/// The AdmissionReview versions this server speaks.
pub const SUPPORTED_REVIEW_VERSIONS: &[&str] = &["v1"];

/// `failurePolicy`: what a failed call does to the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The request fails (500).
    Fail,
    /// The request continues as if the webhook had allowed it.
    Ignore,
}

/// One rule (`RuleWithOperations`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    pub operations: Vec<String>,
    /// API groups (`*` for all).
    pub api_groups: Vec<String>,
    /// API versions (`*` for all).
    pub api_versions: Vec<String>,
    /// Resources: `res`, `*`, `res/sub`, `*/sub`, `res/*`, `*/*`.
    pub resources: Vec<String>,
    /// `Cluster`, `Namespaced` or `*`.
    pub scope: String,
}

impl Rule {
    /// Reads a `RuleWithOperations` (a missing scope is `*`).
    pub fn from_value(r: &Value) -> Rule {
        Rule {
            operations: strings(r.get("operations")),
            api_groups: strings(r.get("apiGroups")),
            api_versions: strings(r.get("apiVersions")),
            resources: strings(r.get("resources")),
            scope: match str_of(r, "scope") {
                "" => "*".to_owned(),
                s => s.to_owned(),
            },
        }
    }
}

/// A `matchConditions` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchCondition {
    /// Its name.
    pub name: String,
    /// The CEL expression.
    pub expression: String,
}

/// One webhook of a configuration, defaulted.
#[derive(Clone, Debug)]
pub struct Webhook {
    /// Name of the configuration holding it.
    pub configuration: String,
    /// Webhook name.
    pub name: String,
    /// Whether it is a mutating webhook.
    pub mutating: bool,
    /// Where it is reached.
    pub client: ClientConfig,
    /// Which requests it sees.
    pub rules: Vec<Rule>,
    /// What a failed call does.
    pub failure_policy: FailurePolicy,
    /// Selects by the labels of the object's namespace.
    pub namespace_selector: LabelSelector,
    /// Selects by the labels of the object (or old object).
    pub object_selector: LabelSelector,
    /// `sideEffects` (`None`, `NoneOnDryRun`, or a v1beta1 value).
    pub side_effects: String,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub reinvoke_if_needed: bool,
    /// `matchConditions`.
    pub match_conditions: Vec<MatchCondition>,
    /// `matchPolicy: Equivalent` (the default): rules also match the request through the
    /// other groups and versions serving the same objects.
    pub match_equivalent: bool,
}

/// Applies kube's v1 defaults to a webhook configuration (`mutating` for
/// MutatingWebhookConfiguration): failurePolicy Fail, matchPolicy Equivalent, selectors `{}`,
/// timeoutSeconds 10, reinvocationPolicy Never, rule scope `*`, service port 443.
pub fn apply_defaults(obj: &mut Value, mutating: bool) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for hook in hooks {
        let Some(map) = hook.as_object_mut() else {
            continue;
        };
        let mut set = |key: &str, value: Value| {
            if map.get(key).is_none_or(Value::is_null) {
                map.insert(key.to_owned(), value);
            }
        };
        set("failurePolicy", json!("Fail"));
        set("matchPolicy", json!("Equivalent"));
        set("namespaceSelector", json!({}));
        set("objectSelector", json!({}));
        set("timeoutSeconds", json!(10));
        if mutating {
            set("reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = map.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                if rule.get("scope").is_none_or(Value::is_null) {
                    rule.insert("scope".into(), json!("*"));
                }
            }
        }
        if let Some(service) = map
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), json!(443));
        }
    }
}

fn not_supported(field: String, value: &str, supported: &[&str]) -> Cause {
    Cause::not_supported(field, BadValue::Str(value.to_owned()), supported)
}

/// Validates a webhook configuration as kube-apiserver does (`mutating` for
/// MutatingWebhookConfiguration); returns the causes of a 422.
pub fn validate_configuration(obj: &Value, mutating: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let hooks = obj
        .get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut names = std::collections::HashSet::new();
    for (i, hook) in hooks.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        let name = str_of(hook, "name");
        if !name.is_empty() && !names.insert(name.to_owned()) {
            causes.push(Cause::duplicate(format!("{path}.name"), name));
        }
        validate_webhook(hook, &path, mutating, &mut causes);
    }
    causes
}

fn validate_webhook(hook: &Value, path: &str, mutating: bool, causes: &mut Vec<Cause>) {
    let name = str_of(hook, "name");
    let name_path = format!("{path}.name");
    if name.is_empty() {
        causes.push(Cause::required(name_path, ""));
    } else {
        for msg in crate::validation::dns1123_subdomain_errors(name) {
            causes.push(Cause::invalid(name_path.clone(), name, &msg));
        }
        if name.split('.').count() < 3 {
            causes.push(Cause::invalid(
                name_path,
                name,
                "should be a domain with at least three segments separated by dots",
            ));
        }
    }
    for (j, rule) in hook
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        validate_rule(rule, &format!("{path}.rules[{j}]"), causes);
    }
    let enum_field = |key: &str, supported: &[&str], causes: &mut Vec<Cause>| {
        if let Some(v) = hook.get(key).and_then(Value::as_str)
            && !supported.contains(&v)
        {
            causes.push(not_supported(format!("{path}.{key}"), v, supported));
        }
    };
    enum_field("failurePolicy", &["Fail", "Ignore"], causes);
    enum_field("matchPolicy", &["Equivalent", "Exact"], causes);
    if mutating {
        enum_field("reinvocationPolicy", &["IfNeeded", "Never"], causes);
    }
    // The typed decoding writes a missing sideEffects as "".
    match hook
        .get("sideEffects")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        None => causes.push(Cause::required(
            format!("{path}.sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some(v) if v != "None" && v != "NoneOnDryRun" => causes.push(not_supported(
            format!("{path}.sideEffects"),
            v,
            &["None", "NoneOnDryRun"],
        )),
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        causes.push(Cause::invalid(
            format!("{path}.timeoutSeconds"),
            BadValue::Int(t),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    let versions = strings(hook.get("admissionReviewVersions"));
    let versions_path = format!("{path}.admissionReviewVersions");
    if versions.is_empty() {
        causes.push(Cause::required(
            versions_path,
            &format!(
                "must specify one of {}",
                SUPPORTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    } else if !versions
        .iter()
        .any(|v| SUPPORTED_REVIEW_VERSIONS.contains(&v.as_str()))
    {
        causes.push(Cause::invalid(
            versions_path,
            BadValue::StringList(versions),
            &format!(
                "must include at least one of {}",
                SUPPORTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    validate_client_config(
        hook.get("clientConfig").unwrap_or(&Value::Null),
        &format!("{path}.clientConfig"),
        causes,
    );
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = hook.get(key) {
            let field = format!("{path}.{key}");
            causes.extend(validate_structured_label_selector(sel, &field));
            if causes.iter().all(|c| !c.field.starts_with(&field))
                && let Err(err) = LabelSelector::from_structured(sel)
            {
                causes.push(Cause::invalid(field, sel, &err.to_string()));
            }
        }
    }
    // A webhook's match conditions see these variables only (no params, no namespaceObject).
    let compile = |expression: &str| {
        crate::admission_cel::check(
            expression.trim(),
            &["object", "oldObject", "request", "authorizer"],
        )
    };
    validate_match_conditions(hook, path, &compile, causes);
}

/// Validates one `RuleWithOperations` at `path` (operations, groups, versions, resources, scope).
pub(crate) fn validate_rule(rule: &Value, path: &str, causes: &mut Vec<Cause>) {
    let ops = strings(rule.get("operations"));
    let ops_path = format!("{path}.operations");
    if ops.is_empty() {
        causes.push(Cause::required(ops_path.clone(), ""));
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        causes.push(Cause::invalid(
            ops_path.clone(),
            BadValue::StringList(ops.clone()),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        let supported = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
        if !supported.contains(&op.as_str()) {
            causes.push(not_supported(format!("{ops_path}[{i}]"), op, &supported));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let values = strings(rule.get(key));
        let field = format!("{path}.{key}");
        if values.is_empty() {
            causes.push(Cause::required(field.clone(), ""));
        }
        if values.len() > 1 && values.iter().any(|v| v == "*") {
            causes.push(Cause::invalid(
                field.clone(),
                BadValue::StringList(values.clone()),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if key == "apiVersions" {
            for (i, v) in values.iter().enumerate() {
                if v.is_empty() {
                    causes.push(Cause::required(format!("{field}[{i}]"), ""));
                }
            }
        }
    }
    let resources = strings(rule.get("resources"));
    let res_path = format!("{path}.resources");
    if resources.is_empty() {
        causes.push(Cause::required(res_path.clone(), ""));
    }
    for (i, r) in resources.iter().enumerate() {
        if r.is_empty() {
            causes.push(Cause::required(format!("{res_path}[{i}]"), ""));
        }
    }
    if resources.len() > 1 && resources.iter().any(|r| r == "*/*") {
        causes.push(Cause::invalid(
            res_path,
            BadValue::StringList(resources.clone()),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        causes.push(not_supported(
            format!("{path}.scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

/// Validates a `clientConfig` at `path` (exactly one of url/service; url https, with a host,
/// no user information, query or fragment).
pub fn validate_client_config(config: &Value, path: &str, causes: &mut Vec<Cause>) {
    let url = config.get("url").and_then(Value::as_str);
    let service = config.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => {
            causes.push(Cause::required(
                path.to_owned(),
                "exactly one of url or service is required",
            ));
        }
        (Some(url), None) => causes.extend(validate_url(url, &format!("{path}.url"))),
        (None, Some(service)) => {
            let sp = format!("{path}.service");
            if str_of(service, "name").is_empty() {
                causes.push(Cause::required(
                    format!("{sp}.name"),
                    "service name is required",
                ));
            }
            if str_of(service, "namespace").is_empty() {
                causes.push(Cause::required(
                    format!("{sp}.namespace"),
                    "service namespace is required",
                ));
            }
            if let Some(port) = service.get("port").and_then(Value::as_i64)
                && !(1..=65535).contains(&port)
            {
                causes.push(Cause::invalid(
                    format!("{sp}.port"),
                    BadValue::Int(port),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
            if let Some(p) = service.get("path").and_then(Value::as_str)
                && !p.starts_with('/')
            {
                causes.push(Cause::invalid(
                    format!("{sp}.path"),
                    p,
                    "must start with a '/'",
                ));
            }
        }
    }
}

fn validate_url(url: &str, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if url.is_empty() {
        causes.push(Cause::required(path.to_owned(), "host must be specified"));
        return causes;
    }
    let (rest, fragment) = match url.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (url, None),
    };
    let uri: http::Uri = match rest.parse() {
        Ok(u) => u,
        Err(err) => {
            causes.push(Cause::invalid(
                path.to_owned(),
                url,
                &format!("url must be a valid URL: {err}"),
            ));
            return causes;
        }
    };
    let scheme = uri.scheme_str().unwrap_or("");
    if scheme != "https" {
        causes.push(Cause::invalid(
            path.to_owned(),
            scheme,
            "'https' is the only allowed URL scheme",
        ));
    }
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
    if let Some((user, _)) = authority.split_once('@') {
        causes.push(Cause::invalid(
            path.to_owned(),
            user,
            "user information is not permitted in the URL",
        ));
    }
    if uri.host().unwrap_or("").is_empty() {
        causes.push(Cause::invalid(
            path.to_owned(),
            "",
            "host must be specified",
        ));
    }
    if let Some(fragment) = fragment {
        causes.push(Cause::invalid(
            path.to_owned(),
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if let Some(query) = uri.query() {
        causes.push(Cause::invalid(
            path.to_owned(),
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    causes
}

/// Validates the `matchConditions` of `hook` (a webhook, or a policy's spec) under `path`;
/// `compile` checks an expression and gives the detail of its `Invalid` cause.
pub(crate) fn validate_match_conditions(
    hook: &Value,
    path: &str,
    compile: &dyn Fn(&str) -> Result<(), String>,
    causes: &mut Vec<Cause>,
) {
    let Some(conditions) = hook.get("matchConditions").and_then(Value::as_array) else {
        return;
    };
    let mc_path = format!("{path}.matchConditions");
    if conditions.len() > 64 {
        causes.push(Cause::too_many(
            mc_path.clone(),
            Some(conditions.len() as i64),
            64,
        ));
    }
    let mut names = std::collections::HashSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = format!("{mc_path}[{i}]");
        let name = str_of(c, "name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{p}.name"), ""));
        } else {
            for msg in crate::validation::qualified_name_errors(name) {
                causes.push(Cause::invalid(format!("{p}.name"), name, &msg));
            }
            if !names.insert(name.to_owned()) {
                causes.push(Cause::duplicate(format!("{p}.name"), name));
            }
        }
        let expression = str_of(c, "expression");
        if expression.is_empty() {
            causes.push(Cause::required(format!("{p}.expression"), ""));
        } else if let Err(detail) = compile(expression) {
            causes.push(Cause::invalid(
                format!("{p}.expression"),
                expression,
                &detail,
            ));
        }
    }
}

/// The webhooks of a stored configuration, in order (entries that do not parse are skipped).
pub fn parse_configuration(obj: &Value, mutating: bool) -> Vec<Webhook> {
    let mut obj = obj.clone();
    apply_defaults(&mut obj, mutating);
    let configuration = crate::meta::meta_str(&obj, "name").to_owned();
    let mut out = Vec::new();
    for hook in obj
        .get("webhooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let selector = |key: &str| {
            LabelSelector::from_structured(hook.get(key).unwrap_or(&json!({})))
                .unwrap_or_else(|_| LabelSelector::nothing())
        };
        let rules = hook
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(Rule::from_value)
            .collect();
        let match_conditions = hook
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| MatchCondition {
                name: str_of(c, "name").to_owned(),
                expression: str_of(c, "expression").to_owned(),
            })
            .collect();
        out.push(Webhook {
            configuration: configuration.clone(),
            name: str_of(hook, "name").to_owned(),
            mutating,
            client: ClientConfig::from_value(hook.get("clientConfig").unwrap_or(&Value::Null)),
            rules,
            failure_policy: if str_of(hook, "failurePolicy") == "Ignore" {
                FailurePolicy::Ignore
            } else {
                FailurePolicy::Fail
            },
            namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"),
            side_effects: str_of(hook, "sideEffects").to_owned(),
            match_equivalent: str_of(hook, "matchPolicy") != "Exact",
            timeout: Duration::from_secs(
                hook.get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .clamp(1, 30),
            ),
            reinvoke_if_needed: mutating && str_of(hook, "reinvocationPolicy") == "IfNeeded",
            match_conditions,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> Value {
        json!({
            "name": "a.example.com",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:1/x"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        })
    }

    fn fields(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn defaults_are_kube_v1_defaults() {
        let mut obj = json!({"webhooks": [hook()]});
        apply_defaults(&mut obj, true);
        let h = &obj["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["matchPolicy"], "Equivalent");
        assert_eq!(h["namespaceSelector"], json!({}));
        assert_eq!(h["objectSelector"], json!({}));
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["rules"][0]["scope"], "*");
        let mut v = json!({"webhooks": [hook()]});
        apply_defaults(&mut v, false);
        assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
    }

    #[test]
    fn valid_configuration_has_no_causes() {
        let obj = json!({"webhooks": [hook()]});
        assert!(validate_configuration(&obj, false).is_empty());
    }

    #[test]
    fn invalid_configurations_name_the_field() {
        let mut h = hook();
        h["name"] = json!("short.name");
        h["sideEffects"] = json!("Some");
        h["admissionReviewVersions"] = json!(["v1beta1"]);
        h["timeoutSeconds"] = json!(31);
        h["clientConfig"] = json!({"url": "http://x.example.com/a"});
        let obj = json!({"webhooks": [h, hook(), hook()]});
        let got = fields(&validate_configuration(&obj, false));
        let want = [
            "webhooks[0].name: Invalid value: \"short.name\": should be a domain with at least three segments separated by dots",
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].admissionReviewVersions: Invalid value: [\"v1beta1\"]: must include at least one of v1",
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme",
            "webhooks[2].name: Duplicate value: \"a.example.com\"",
        ];
        for w in want {
            assert!(got.iter().any(|g| g == w), "missing {w}\n got {got:#?}");
        }
    }

    #[test]
    fn client_config_needs_exactly_one_target() {
        let mut h = hook();
        h["clientConfig"] =
            json!({"url": "https://a.example.com", "service": {"name": "s", "namespace": "n"}});
        let got = fields(&validate_configuration(
            &json!({"webhooks": [h.clone()]}),
            false,
        ));
        assert_eq!(
            got,
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]
        );
        h["clientConfig"] = json!({});
        assert_eq!(
            fields(&validate_configuration(&json!({"webhooks": [h]}), false)).len(),
            1
        );
        let mut h = hook();
        h.as_object_mut().map(|m| m.remove("sideEffects"));
        h["rules"][0]["operations"] = json!(["CREATE", "*"]);
        let got = fields(&validate_configuration(&json!({"webhooks": [h]}), false));
        assert!(
            got.contains(
                &"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"
                    .to_owned()
            ),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|g| g.starts_with("webhooks[0].rules[0].operations: Invalid value")),
            "{got:?}"
        );
    }

    #[test]
    fn parse_reads_policies() {
        let mut h = hook();
        h["failurePolicy"] = json!("Ignore");
        h["timeoutSeconds"] = json!(3);
        h["reinvocationPolicy"] = json!("IfNeeded");
        h["clientConfig"]["caBundle"] = json!("aGVsbG8=");
        let hooks = parse_configuration(&json!({"metadata": {"name": "c"}, "webhooks": [h]}), true);
        assert_eq!(hooks.len(), 1);
        let w = &hooks[0];
        assert_eq!(w.configuration, "c");
        assert_eq!(w.failure_policy, FailurePolicy::Ignore);
        assert_eq!(w.timeout, Duration::from_secs(3));
        assert!(w.reinvoke_if_needed);
        assert_eq!(
            w.client,
            ClientConfig::Url {
                url: "https://127.0.0.1:1/x".into(),
                ca_bundle: Some(b"hello".to_vec())
            }
        );
        assert_eq!(w.rules[0].scope, "*");
    }
}

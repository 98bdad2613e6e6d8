//! `optionalOldSelf: true` rules. kube-apiserver binds `oldSelf` of such a rule to a CEL
//! optional — `optional.of(old)` on update, `optional.none()` where there is no old value
//! (on create, for a new field) — so the rule can ask `oldSelf.hasValue()`, `oldSelf.value()`
//! or `oldSelf.orValue(x)`. The interpreter binds the old value itself (or `null`), so each
//! such rule is compiled with every `oldSelf` read as
//! `(oldSelf == null ? optional.none() : optional.of(oldSelf))`; errors are reported with
//! the rule as written.

use serde_json::Value;

/// What `oldSelf` reads as in a rewritten rule.
const OPTIONAL_OLD_SELF: &str = "(oldSelf == null ? optional.none() : optional.of(oldSelf))";

/// Rewrites the `optionalOldSelf: true` rules of `schema` (every `x-kubernetes-validations`
/// of every node), recording each (rewritten, as written) pair in `rewritten`.
pub(crate) fn rewrite_schema(schema: &mut Value, rewritten: &mut Vec<(String, String)>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(rules)) = map.get_mut("x-kubernetes-validations") {
                for rule in rules.iter_mut() {
                    let optional =
                        rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
                    let text = rule.get("rule").and_then(Value::as_str).map(str::to_owned);
                    if let (true, Some(text)) = (optional, text) {
                        let compiled = rewrite(&text);
                        if compiled != text {
                            rule["rule"] = Value::String(compiled.clone());
                            rewritten.push((compiled, text));
                        }
                    }
                }
            }
            for (key, child) in map.iter_mut() {
                if key != "x-kubernetes-validations"
                    && key != "default"
                    && key != "example"
                    && key != "enum"
                {
                    rewrite_schema(child, rewritten);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_schema(item, rewritten);
            }
        }
        _ => {}
    }
}

/// `expression` with each read of the variable `oldSelf` (an identifier, not a field
/// `.oldSelf`, nothing inside a string literal) made an optional.
pub(crate) fn rewrite(expression: &str) -> String {
    let chars: Vec<char> = expression.chars().collect();
    let mut out = String::with_capacity(expression.len() + 64);
    let mut i = 0;
    let mut last_significant: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        // String literals (with an optional r/b prefix, single or triple quotes).
        let prefixed = (c == 'r' || c == 'R' || c == 'b' || c == 'B')
            && matches!(chars.get(i + 1), Some('"' | '\''))
            && !last_significant.is_some_and(|p| p.is_alphanumeric() || p == '_');
        if c == '"' || c == '\'' || prefixed {
            let raw = prefixed && (c == 'r' || c == 'R');
            let start = i;
            if prefixed {
                i += 1;
            }
            let quote = chars[i];
            let triple = chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote);
            i += if triple { 3 } else { 1 };
            while i < chars.len() {
                if !raw && chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == quote
                    && (!triple
                        || (chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote)))
                {
                    i += if triple { 3 } else { 1 };
                    break;
                }
                i += 1;
            }
            let end = i.min(chars.len());
            out.extend(&chars[start..end]);
            last_significant = Some(quote);
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let ident: String = chars[start..i].iter().collect();
            if ident == "oldSelf" && last_significant != Some('.') {
                out.push_str(OPTIONAL_OLD_SELF);
            } else {
                out.push_str(&ident);
            }
            last_significant = chars.get(i - 1).copied();
            continue;
        }
        if !c.is_whitespace() {
            last_significant = Some(c);
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_variable_is_rewritten() {
        assert_eq!(
            rewrite("!oldSelf.hasValue() || self != oldSelf.value()"),
            format!("!{OPTIONAL_OLD_SELF}.hasValue() || self != {OPTIONAL_OLD_SELF}.value()")
        );
        assert_eq!(
            rewrite("self.oldSelf == 'oldSelf'"),
            "self.oldSelf == 'oldSelf'"
        );
        assert_eq!(
            rewrite(r#"self == "a\"oldSelf""#),
            r#"self == "a\"oldSelf""#
        );
        assert_eq!(rewrite("oldSelfish == 1"), "oldSelfish == 1");
    }

    #[test]
    fn rules_of_every_node_are_rewritten() {
        let mut schema = serde_json::json!({"type": "object", "properties": {"x": {"type": "string",
            "x-kubernetes-validations": [
                {"rule": "oldSelf.orValue('') != 'x'", "optionalOldSelf": true},
                {"rule": "self == oldSelf"}]}}});
        let mut pairs = Vec::new();
        rewrite_schema(&mut schema, &mut pairs);
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].1, "oldSelf.orValue('') != 'x'");
        assert_eq!(
            schema["properties"]["x"]["x-kubernetes-validations"][1]["rule"],
            "self == oldSelf"
        );
    }
}

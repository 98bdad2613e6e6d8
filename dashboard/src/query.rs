//! Query strings and form bodies (`application/x-www-form-urlencoded`): parsing and encoding.

use std::collections::BTreeMap;

/// Decoded `key=value` pairs; of repeated keys the last wins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query(pub BTreeMap<String, String>);

impl Query {
    /// Parses `a=1&b=two+words`.
    pub fn parse(text: &str) -> Query {
        Query(
            text.split('&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    (decode(k), decode(v))
                })
                .collect(),
        )
    }

    /// The value of `key`, if present and not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The value of `key` as a number, else `default`.
    pub fn number(&self, key: &str, default: usize) -> usize {
        self.get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// This query with `key` set to `value` (removed when `value` is empty), encoded with a
    /// leading `?`; keys in order, `fragment` never kept.
    pub fn with(&self, key: &str, value: &str) -> String {
        let mut map = self.0.clone();
        map.remove("fragment");
        if value.is_empty() {
            map.remove(key);
        } else {
            map.insert(key.to_owned(), value.to_owned());
        }
        let pairs: Vec<String> = map
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        if pairs.is_empty() {
            "?".to_owned()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

/// Percent-decodes `text`, `+` meaning a space; invalid escapes are kept as they are.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            ) {
                (Some(hi), Some(lo)) => {
                    out.push(hi * 16 + lo);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-encodes everything but unreserved characters.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_decodes() {
        let q = Query::parse("q=web+app&state=unknown&x=%3Cb%3E&bad=%zz&empty=&flag");
        assert_eq!(q.get("q"), Some("web app"));
        assert_eq!(q.get("state"), Some("unknown"));
        assert_eq!(q.get("x"), Some("<b>"));
        assert_eq!(q.get("bad"), Some("%zz"));
        assert_eq!(q.get("empty"), None);
        assert_eq!(q.get("flag"), None);
        assert_eq!(q.number("page", 1), 1);
        assert_eq!(Query::parse("page=3").number("page", 1), 3);
        assert_eq!(decode("%E2%9C%93"), "✓");
    }

    #[test]
    fn builds_links_that_keep_the_other_parameters() {
        let q = Query::parse("q=a b&page=2&fragment=1");
        assert_eq!(q.with("page", "3"), "?page=3&q=a%20b");
        assert_eq!(q.with("page", ""), "?q=a%20b");
        assert_eq!(Query::default().with("x", ""), "?");
        assert_eq!(encode("ns/name"), "ns%2Fname");
    }
}

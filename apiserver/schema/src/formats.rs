//! The string `format`s kube-apiserver validates in custom resources.
//!
//! kube-apiserver strips every format not in its supported list before validating (so
//! `int32`, `int64`, `float`, `double`, `int-or-string` and unknown formats are never enforced)
//! and checks the rest with go-openapi's validators. A name matches after removing `-`
//! (`date-time` is `datetime`).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether kube-apiserver validates this `format` (it strips the others).
pub(crate) fn supported_format(format: &str) -> bool {
    !format.is_empty() && SUPPORTED.contains(&normalize(format).as_str())
}

/// A constant pattern; `None` only if it failed to compile (caught by the unit tests).
type Pat = LazyLock<Option<Regex>>;

fn matches(p: &Pat, s: &str) -> bool {
    p.as_ref().is_some_and(|r| r.is_match(s))
}

static HOSTNAME: Pat = LazyLock::new(|| {
    Regex::new(r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$").ok()
});
static UUID: Pat = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$").ok()
});
static UUID3: Pat = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$").ok()
});
static UUID4: Pat = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
        .ok()
});
static UUID5: Pat = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
        .ok()
});
static BASE64: Pat = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
        .ok()
});
static HEXCOLOR: Pat = LazyLock::new(|| Regex::new(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$").ok());
static RGBCOLOR: Pat = LazyLock::new(|| {
    Regex::new(r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$").ok()
});
static SSN: Pat = LazyLock::new(|| Regex::new(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$").ok());
static CREDITCARD: Pat = LazyLock::new(|| {
    Regex::new(r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$").ok()
});
static DATETIME_TIME: Pat = LazyLock::new(|| {
    Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").ok()
});
static DURATION_PART: Pat = LazyLock::new(|| Regex::new(r"((\d+)\s*([A-Za-zµ]+))").ok());

/// Whether `value` satisfies `format` (which must be supported).
pub(crate) fn validates(format: &str, value: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => is_ipv4_sloppy(value),
        "ipv6" => value.contains(':') && parse_ip_sloppy(value),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => matches(&UUID, value),
        "uuid3" => matches(&UUID3, value),
        "uuid4" => matches(&UUID4, value),
        "uuid5" => matches(&UUID5, value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => value.len() == 11 && matches(&SSN, value),
        "hexcolor" => matches(&HEXCOLOR, value),
        "rgbcolor" => matches(&RGBCOLOR, value),
        "byte" => matches(&BASE64, value),
        "password" => true,
        "date" => is_date(value),
        "duration" => is_duration(value),
        "datetime" => is_date_time(value),
        _ => true,
    }
}

/// Go's `url.ParseRequestURI` succeeds: an absolute URI (`scheme:...`) or an absolute path,
/// without spaces or control characters.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return false;
    }
    match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let authority = authority_and_path
                .split(['/', '?', '#'])
                .next()
                .unwrap_or("");
            !authority.contains('%') || authority.contains("%25")
        }
        None => true,
    }
}

/// `net/mail.ParseAddress` succeeds with a non-empty address: `local@domain`, optionally as
/// `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.ends_with('>')) {
        (Some(i), true) => &s[i + 1..s.len() - 1],
        (None, false) => s,
        _ => return false,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    let local_ok = if local.starts_with('"') && local.ends_with('"') && local.len() >= 2 {
        true
    } else {
        !local.is_empty()
            && !local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
            && local.chars().all(|c| atext(c) || c == '.')
    };
    let domain_ok = if domain.starts_with('[') && domain.ends_with(']') {
        true
    } else {
        !domain.is_empty()
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains("..")
            && domain.chars().all(|c| atext(c) || c == '.')
    };
    local_ok && domain_ok
}

fn is_hostname(s: &str) -> bool {
    matches(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// Go's `netutils.ParseIPSloppy`: IPv4 with leading zeros allowed, or IPv6.
fn parse_ip_sloppy(s: &str) -> bool {
    parse_ipv4_sloppy(s).is_some() || s.parse::<Ipv6Addr>().is_ok()
}

fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        octets[i] = p.parse::<u8>().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

fn is_ipv4_sloppy(s: &str) -> bool {
    s.contains('.') && parse_ip_sloppy(s)
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = bits.parse::<u32>() else {
        return false;
    };
    if parse_ipv4_sloppy(ip).is_some() {
        bits <= 32
    } else if ip.parse::<Ipv6Addr>().is_ok() {
        bits <= 128
    } else {
        false
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `aa:bb:..`, `aa-bb-..` or `aabb.ccdd...`.
fn is_mac(s: &str) -> bool {
    let hex2 = |p: &str| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit());
    let hex4 = |p: &str| p.len() == 4 && p.bytes().all(|b| b.is_ascii_hexdigit());
    for sep in [':', '-'] {
        if s.contains(sep) {
            let parts: Vec<&str> = s.split(sep).collect();
            return matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex2(p));
        }
    }
    if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        return matches!(parts.len(), 3 | 4 | 10) && parts.iter().all(|p| hex4(p));
    }
    false
}

fn isbn_digits(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) {
        return false;
    }
    if !(b[9].is_ascii_digit() || b[9] == b'X') {
        return false;
    }
    let mut sum = 0u32;
    for (i, &c) in b.iter().enumerate().take(9) {
        sum += (i as u32 + 1) * u32::from(c - b'0');
    }
    let last = if b[9] == b'X' {
        10
    } else {
        u32::from(b[9] - b'0')
    };
    sum += 10 * last;
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = b[..12]
        .iter()
        .enumerate()
        .map(|(i, &c)| u32::from(c - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    (10 - sum % 10) % 10 == u32::from(b[12] - b'0')
}

fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !matches(&CREDITCARD, &digits) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for c in digits.bytes().rev() {
        let mut d = u32::from(c - b'0');
        if double {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// Go's `time.Parse("2006-01-02", s)`.
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !(1..=12).contains(&m) || d == 0 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d <= days
}

/// go-openapi's `IsDateTime`: lowercase, split at `t`, a date then `hh:mm:ss[.frac](z|±hh:mm)`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(caps) = DATETIME_TIME.as_ref().and_then(|r| r.captures(parts[1])) else {
        return false;
    };
    let get = |i: usize| caps.get(i).map_or("", |m| m.as_str());
    get(1) <= "23" && get(2) <= "59" && get(3) <= "59"
}

/// Go's `time.ParseDuration`, or go-openapi's lenient `<n> <unit>` fallback.
fn is_duration(s: &str) -> bool {
    if is_go_duration(s) {
        return true;
    }
    let units: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    let Some(part_re) = DURATION_PART.as_ref() else {
        return false;
    };
    for caps in part_re.captures_iter(s) {
        if caps
            .get(2)
            .is_none_or(|m| m.as_str().parse::<i64>().is_err())
        {
            return false;
        }
        let unit = caps.get(3).map_or("", |m| m.as_str()).trim().to_lowercase();
        for variants in units {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || unit.eq_ignore_ascii_case(v) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`, with units ns us µs μs ms s m h.
fn is_go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut consumed = int_len;
        let mut frac_len = 0;
        if rest[consumed..].starts_with('.') {
            consumed += 1;
            frac_len = rest[consumed..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            consumed += frac_len;
        }
        if int_len == 0 && frac_len == 0 {
            return false;
        }
        rest = &rest[consumed..];
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_len];
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return false;
        }
        rest = &rest[unit_len..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_formats() {
        for f in [
            "date-time",
            "datetime",
            "date",
            "byte",
            "uuid",
            "email",
            "hostname",
            "ipv4",
            "uri",
        ] {
            assert!(supported_format(f), "{f}");
        }
        for f in [
            "",
            "int32",
            "int64",
            "float",
            "double",
            "int-or-string",
            "k8s-short-name",
            "quantity",
        ] {
            assert!(!supported_format(f), "{f}");
        }
    }

    #[test]
    fn format_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+01:00", true),
            ("date-time", "2024-01-02t03:04:05z", true),
            ("date-time", "2024-01-02 03:04:05Z", false),
            ("date-time", "2024-01-02T25:04:05Z", false),
            ("date-time", "garbage", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date", "2024-13-01", false),
            ("date", "24-01-01", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "aGVsbG8", false),
            ("byte", "", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123E4567E89B12D3A456426614174000", true),
            ("uuid", "not-a-uuid", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("email", "a@b.c", true),
            ("email", "Bob <bob@example.com>", true),
            ("email", "nope", false),
            ("hostname", "example.com", true),
            ("hostname", "a", true),
            ("hostname", "-bad-", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv4", "256.0.0.1", false),
            ("ipv6", "::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "fd00::/64", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "00-1a-2b-3c-4d-5e", true),
            ("mac", "001a.2b3c.4d5e", true),
            ("mac", "00:1a", false),
            ("uri", "https://example.com/x?y", true),
            ("uri", "/relative/path", true),
            ("uri", "relative", false),
            ("uri", "http://a b", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "1.5s", true),
            ("duration", "forever", false),
            ("isbn10", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            ("isbn", "0321751044", false),
            ("creditcard", "4111 1111 1111 1111", true),
            ("creditcard", "4111 1111 1111 1112", false),
            ("ssn", "123-45-6789", true),
            ("ssn", "123456789", false),
            ("hexcolor", "#ffF", true),
            ("hexcolor", "#ffff", false),
            ("rgbcolor", "rgb(255, 0, 10)", true),
            ("rgbcolor", "rgb(256,0,0)", false),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("bsonobjectid", "507f1f77", false),
            ("password", "anything", true),
        ];
        for (format, value, want) in cases {
            assert_eq!(validates(format, value), *want, "{format} {value:?}");
        }
    }
}

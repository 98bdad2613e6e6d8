//! Go's `time.ParseDuration`, with its error texts: kube-apiserver reads the `timeout` query
//! parameter with it, and a client sees its message in the 400 answer.
//!
//! A duration is an optional sign and a sequence of decimal numbers, each with an optional
//! fraction and a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), such as `300ms` or
//! `-1.5h`; `0` alone needs no unit. The value must fit in an `i64` of nanoseconds.

/// Nanoseconds in one of Go's duration units.
fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Go's `time.quote`: the text in double quotes, with `"` and `\` escaped and every byte of a
/// non-ASCII or control character written as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for (i, c) in s.char_indices() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
            continue;
        }
        // Go writes a replacement character at the very end of the text as one byte.
        let width = if c == char::REPLACEMENT_CHARACTER && i + 2 >= s.len() {
            1
        } else {
            c.len_utf8()
        };
        for b in &s.as_bytes()[i..i + width] {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

const LIMIT: u64 = 1 << 63;

/// The digits at the start of `s` as an integer, and how many bytes they took; `None` when the
/// number passes 2^63.
fn leading_int(s: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    let mut used = 0;
    for &b in s.iter().take_while(|b| b.is_ascii_digit()) {
        if value > LIMIT / 10 {
            return None;
        }
        value = value * 10 + u64::from(b - b'0');
        if value > LIMIT {
            return None;
        }
        used += 1;
    }
    Some((value, used))
}

/// The fraction digits at the start of `s`: (digits as an integer, 10^digits kept, bytes used).
/// Digits past what fits are read but ignored.
fn leading_fraction(s: &[u8]) -> (u64, f64, usize) {
    let mut value: u64 = 0;
    let mut scale = 1.0;
    let mut overflow = false;
    let mut used = 0;
    for &b in s.iter().take_while(|b| b.is_ascii_digit()) {
        used += 1;
        if overflow {
            continue;
        }
        if value > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let next = value * 10 + u64::from(b - b'0');
        if next > LIMIT {
            overflow = true;
            continue;
        }
        value = next;
        scale *= 10.0;
    }
    (value, scale, used)
}

/// Parses a Go duration into nanoseconds, or returns Go's error message.
pub fn parse_go_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", quote(text));
    let mut rest = text;
    let mut negative = false;
    if let Some(stripped) = rest.strip_prefix('-') {
        negative = true;
        rest = stripped;
    } else if let Some(stripped) = rest.strip_prefix('+') {
        rest = stripped;
    }
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let bytes = rest.as_bytes();
        if !(bytes[0] == b'.' || bytes[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let (mut value, int_len) = leading_int(bytes).ok_or_else(invalid)?;
        let mut pos = int_len;
        let (mut fraction, mut scale, mut frac_len) = (0, 1.0, 0);
        if bytes.get(pos) == Some(&b'.') {
            pos += 1;
            (fraction, scale, frac_len) = leading_fraction(&bytes[pos..]);
            pos += frac_len;
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = bytes[pos..]
            .iter()
            .take_while(|b| !(**b == b'.' || b.is_ascii_digit()))
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(text)));
        }
        // The unit ends at an ASCII byte or at the end, so both are character boundaries.
        let unit = &rest[pos..pos + unit_len];
        rest = &rest[pos + unit_len..];
        let Some(nanos) = unit_nanos(unit) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                quote(unit),
                quote(text)
            ));
        };
        if value > LIMIT / nanos {
            return Err(invalid());
        }
        value *= nanos;
        if fraction > 0 {
            // Go computes the fraction in float64 and truncates it.
            value += (fraction as f64 * (nanos as f64 / scale)) as u64;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total += u128::from(value);
        if total > u128::from(LIMIT) {
            return Err(invalid());
        }
    }
    if negative {
        return Ok(i64::try_from(-(total as i128)).unwrap_or(i64::MIN));
    }
    i64::try_from(total).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid() {
        for (text, nanos) in [
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("10s", 10_000_000_000),
            ("1h2m3s", 3_723_000_000_000),
            ("1.5h", 5_400_000_000_000),
            (".5s", 500_000_000),
            ("5.s", 5_000_000_000),
            ("-2m", -120_000_000_000),
            ("300ms", 300_000_000),
            ("1us", 1_000),
            ("1\u{b5}s", 1_000),
            ("1\u{3bc}s", 1_000),
            ("0s", 0),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("0.3333333333333333333h", 1_200_000_000_000),
            ("9223372036854775.807us", i64::MAX),
        ] {
            assert_eq!(parse_go_duration(text), Ok(nanos), "{text}");
        }
    }

    #[test]
    fn errors() {
        for (text, message) in [
            ("", r#"time: invalid duration """#),
            ("foo", r#"time: invalid duration "foo""#),
            ("-", r#"time: invalid duration "-""#),
            (".s", r#"time: invalid duration ".s""#),
            ("10", r#"time: missing unit in duration "10""#),
            ("1s2", r#"time: missing unit in duration "1s2""#),
            ("10x", r#"time: unknown unit "x" in duration "10x""#),
            ("3S", r#"time: unknown unit "S" in duration "3S""#),
            ("1d", r#"time: unknown unit "d" in duration "1d""#),
            (
                "9223372036854775808ns",
                r#"time: invalid duration "9223372036854775808ns""#,
            ),
            ("3000000h", r#"time: invalid duration "3000000h""#),
            ("1\"s", r#"time: unknown unit "\"s" in duration "1\"s""#),
            (
                "1é",
                r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#,
            ),
            ("s1", r#"time: invalid duration "s1""#),
        ] {
            assert_eq!(parse_go_duration(text), Err(message.to_owned()), "{text}");
        }
    }
}

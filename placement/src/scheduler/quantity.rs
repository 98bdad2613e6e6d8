//! Reading Kubernetes quantities (`4`, `3800m`, `16Gi`, `1e3`) as approximate floats, the way
//! the allocatable prioritizers need them.
//!
//! Kubernetes keeps a quantity as an integer mantissa and a power-of-ten scale, and converts it
//! to a float as `mantissa × 10^scale` with Go's `math.Pow10`. Scores are truncated to integers,
//! so the same float operations are used here to land on the same side of every truncation:
//! quantities that Kubernetes parses on its fast path (at most 18 significant digits, no
//! fractional binary suffix, scale not below nano) are converted bit-for-bit the same way; the
//! rare rest is computed with plain float arithmetic.

/// Parses `text` as a Kubernetes quantity and returns its approximate value, or `None` when it
/// is not a valid quantity.
pub(crate) fn approximate_f64(text: &str) -> Option<f64> {
    let parts = split(text)?;
    if parts.num == "0" && parts.denom.is_empty() && parts.suffix.is_empty() {
        return Some(0.0);
    }
    let (base, exponent) = suffix(parts.suffix)?;
    Some(fast_path(&parts, base, exponent).unwrap_or_else(|| slow_path(&parts, base, exponent)))
}

/// The pieces of a quantity string: sign, integer digits (leading zeros removed), fraction
/// digits and suffix.
struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn split(text: &str) -> Option<Parts<'_>> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    let mut pos = 0;
    let mut positive = true;
    match bytes[0] {
        b'-' => {
            positive = false;
            pos = 1;
        }
        b'+' => pos = 1,
        _ => {}
    }
    while pos < bytes.len() && bytes[pos] == b'0' {
        pos += 1;
    }
    let num_start = pos;
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &text[num_start..pos];
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &text[start..pos];
    }
    let suffix = &text[pos..];
    // A suffix is letters from the suffix alphabet, optionally followed by a signed integer
    // (the decimal exponent form).
    let sb = suffix.as_bytes();
    let mut i = 0;
    while i < sb.len() && b"eEinumkKMGTP".contains(&sb[i]) {
        i += 1;
    }
    if i < sb.len() && (sb[i] == b'-' || sb[i] == b'+') {
        i += 1;
    }
    while i < sb.len() && sb[i].is_ascii_digit() {
        i += 1;
    }
    if i != sb.len() {
        return None;
    }
    Some(Parts {
        positive,
        num,
        denom,
        suffix,
    })
}

/// Base (2 or 10) and exponent of a suffix.
fn suffix(s: &str) -> Option<(u32, i32)> {
    let decimal = match s {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((10, e));
    }
    let binary = match s {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = binary {
        return Some((2, e));
    }
    let rest = s.strip_prefix('e').or_else(|| s.strip_prefix('E'))?;
    let exponent: i64 = rest.parse().ok()?;
    Some((10, i32::try_from(exponent).ok()?))
}

/// Kubernetes' int64 representation: `value × 10^scale`.
fn fast_path(p: &Parts<'_>, base: u32, exponent: i32) -> Option<f64> {
    let digits = p.num.len() + p.denom.len();
    let (mantissa, mut scale, precision): (i64, i32, i64) = if base == 10 {
        (1, exponent, 18 - digits as i64)
    } else if p.denom.is_empty() && exponent >= 0 {
        let shifted = 1i64.checked_shl(u32::try_from(exponent).ok()?)?;
        let precision = 15 - p.num.len() as i64 - ((exponent as f32) * 3.0 / 10.0) as i64 - 1;
        (shifted, 0, precision)
    } else {
        return None;
    };
    if precision < 0 {
        return None;
    }
    scale -= i32::try_from(p.denom.len()).ok()?;
    if scale < -9 {
        return None;
    }
    let mut joined = String::with_capacity(digits);
    joined.push_str(p.num);
    joined.push_str(p.denom);
    let value: i64 = joined.parse().ok()?;
    let mut result = value.checked_mul(mantissa)?;
    if !p.positive {
        result = -result;
    }
    let base = result as f64;
    if scale == 0 {
        return Some(base);
    }
    Some(base * pow10(scale))
}

/// Plain float arithmetic for quantities Kubernetes keeps as big decimals. Non-zero values
/// smaller than one nano are rounded up to one nano, as Kubernetes does.
fn slow_path(p: &Parts<'_>, base: u32, exponent: i32) -> f64 {
    let text = format!(
        "{}.{}",
        p.num,
        if p.denom.is_empty() { "0" } else { p.denom }
    );
    let magnitude: f64 = text.parse().unwrap_or(0.0);
    let factor = if base == 2 {
        2f64.powi(exponent)
    } else {
        pow10(exponent)
    };
    let mut value = magnitude * factor;
    if value != 0.0 && value < 1e-9 {
        value = 1e-9;
    }
    if p.positive { value } else { -value }
}

/// `10^n` computed as Go's `math.Pow10` does (table lookups, one multiplication or division),
/// so that `value × 10^scale` rounds the same way.
fn pow10(n: i32) -> f64 {
    const SMALL: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEG32: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        let n = n as usize;
        return POS32[n / 32] * SMALL[n % 32];
    }
    if (-323..0).contains(&n) {
        let m = (-n) as usize;
        return NEG32[m / 32] / SMALL[m % 32];
    }
    if n > 0 { f64::INFINITY } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::approximate_f64;

    #[test]
    fn parses_like_kubernetes() {
        let cases: &[(&str, Option<f64>)] = &[
            ("0", Some(0.0)),
            ("4", Some(4.0)),
            ("+4", Some(4.0)),
            ("-2", Some(-2.0)),
            ("3800m", Some(3800.0 * 0.001)),
            ("3.8", Some(38.0 * 0.1)),
            ("1k", Some(1000.0)),
            ("16Gi", Some(17_179_869_184.0)),
            ("100Mi", Some(104_857_600.0)),
            ("1e3", Some(1000.0)),
            ("1E3", Some(1000.0)),
            ("2E", Some(2e18)),
            ("007", Some(7.0)),
            ("1.5Gi", Some(1_610_612_736.0)),
            ("", None),
            ("abc", None),
            ("1Qi", None),
            ("1.2.3", None),
            ("12 ", None),
        ];
        for (text, want) in cases {
            assert_eq!(approximate_f64(text), *want, "quantity {text:?}");
        }
    }
}

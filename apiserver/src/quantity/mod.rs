//! Kubernetes resource quantities (`resource.Quantity`): parsing and the canonical text
//! kube-apiserver writes for them.
//!
//! kube-apiserver decodes built-in objects into Go types, so every Quantity field is parsed
//! and written again in canonical form: the value is kept exactly (rounded up to a multiple of
//! 10⁻⁹ when finer, binary-suffixed values capped at 2⁶³-1), the suffix kind of the input
//! (binary `Ki`…`Ei`, decimal `n`…`E`, or an `e` exponent) is remembered, and the output uses
//! the largest suffix of that kind that needs no fraction (`0.5` → `500m`, `1024Mi` → `1Gi`,
//! `1000m` → `1`). An input already in a form Go's fast parser recognizes as canonical is
//! written back as given (`1.500` stays `1.500`, `+1` stays `+1`), as Go does.
//!
//! `fields` finds the Quantity fields of the built-in kinds and rewrites them in objects.

pub(crate) mod fields;

use std::cmp::Ordering;
use std::fmt;

use num_bigint::BigUint;

/// Why a text is not a quantity (kube's messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text does not have a quantity's shape.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    /// The number before the suffix is not a number.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The suffix is not one kube knows.
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// How a quantity is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `12e6`.
    DecimalExponent,
    /// `12Mi` (12 × 2²⁰).
    BinarySI,
    /// `12M` (12 × 10⁶).
    DecimalSI,
}

/// A parsed quantity: `(-1)^negative × magnitude × 10^exponent`, with its format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    magnitude: BigUint,
    exponent: i64,
    format: Format,
    /// The input text, when Go keeps it as the quantity's string.
    kept: Option<String>,
}

/// The largest value of a binary-suffixed quantity (Go's `maxAllowed`, 2⁶³-1).
const MAX_BINARY: u64 = i64::MAX as u64;
/// Go's `maxInt64Factors`: the decimal digits its fast parser handles.
const MAX_INT64_FACTORS: i64 = 18;
/// The finest scale a quantity keeps (nano).
const NANO: i64 = -9;

/// The pieces of a quantity's text, as Go's scanner splits it.
struct Parts<'a> {
    positive: bool,
    value: &'a str,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// Splits a quantity into sign, digits before and after the point, and suffix.
fn split(s: &str) -> Result<Parts<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut parts = Parts {
        positive: true,
        value: "",
        num: "",
        denom: "",
        suffix: "",
    };
    let mut pos = 0;
    match b.first() {
        Some(b'-') => {
            parts.positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        parts.num = "0";
        parts.value = "0";
        return Ok(parts);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        parts.num = &s[start..];
        parts.value = s;
        return Ok(parts);
    }
    parts.num = if pos == start { "0" } else { &s[start..pos] };
    if b[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        parts.denom = &s[denom_start..pos];
        if pos >= end {
            parts.value = s;
            return Ok(parts);
        }
    }
    parts.value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::FormatWrong);
    }
    parts.suffix = &s[suffix_start..];
    Ok(parts)
}

/// The base, exponent and format a suffix stands for.
fn interpret(suffix: &str) -> Option<(u32, i64, Format)> {
    use Format::*;
    let (base, exponent, format) = match suffix {
        "n" => (10, -9, DecimalSI),
        "u" => (10, -6, DecimalSI),
        "m" => (10, -3, DecimalSI),
        "" => (10, 0, DecimalSI),
        "k" => (10, 3, DecimalSI),
        "M" => (10, 6, DecimalSI),
        "G" => (10, 9, DecimalSI),
        "T" => (10, 12, DecimalSI),
        "P" => (10, 15, DecimalSI),
        "E" => (10, 18, DecimalSI),
        "Ki" => (2, 10, BinarySI),
        "Mi" => (2, 20, BinarySI),
        "Gi" => (2, 30, BinarySI),
        "Ti" => (2, 40, BinarySI),
        "Pi" => (2, 50, BinarySI),
        "Ei" => (2, 60, BinarySI),
        _ => {
            let digits = suffix.strip_prefix(['e', 'E']).filter(|d| !d.is_empty())?;
            // Go keeps the exponent in an int32.
            let exponent = digits.parse::<i64>().ok()? as i32;
            (10, i64::from(exponent), DecimalExponent)
        }
    };
    Some((base, exponent, format))
}

/// 10^n.
fn pow10(n: u64) -> BigUint {
    BigUint::from(10u32).pow(n as u32)
}

/// The decimal suffix of a multiple-of-three exponent (empty where Go has none).
fn decimal_suffix(exponent: i64) -> &'static str {
    match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

/// The binary suffix of a power of 1024 (empty where Go has none).
fn binary_suffix(power: u32) -> &'static str {
    match power {
        1 => "Ki",
        2 => "Mi",
        3 => "Gi",
        4 => "Ti",
        5 => "Pi",
        6 => "Ei",
        _ => "",
    }
}

impl Quantity {
    /// Parses a quantity as Go's `resource.ParseQuantity` does (no surrounding blanks).
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        if s == "0" {
            let mut zero = Quantity::from_count(0);
            zero.kept = Some(s.to_owned());
            return Ok(zero);
        }
        let parts = split(s)?;
        let (base, exponent, format) = interpret(parts.suffix).ok_or(QuantityError::Suffix)?;
        let num_len = parts.num.len() as i64;
        let denom_len = parts.denom.len() as i64;
        let shifted = format!("{}{}", parts.num, parts.denom);
        // Go's fast path (an int64 mantissa): only it keeps the input text.
        let (precision, scale) = match format {
            Format::BinarySI if parts.denom.is_empty() => (15 - num_len - exponent * 3 / 10 - 1, 0),
            Format::BinarySI => (-1, 0),
            _ => (
                MAX_INT64_FACTORS - num_len - denom_len,
                exponent - denom_len,
            ),
        };
        let fast = precision >= 0 && scale >= NANO;
        if !fast && !parts.value.bytes().any(|b| b.is_ascii_digit()) {
            return Err(QuantityError::Numeric);
        }
        let digits = BigUint::parse_bytes(shifted.as_bytes(), 10).ok_or(QuantityError::Numeric)?;
        let (magnitude, exponent10) = if base == 10 {
            (digits, exponent - denom_len)
        } else {
            (digits << (exponent as usize), -denom_len)
        };
        let kept = fast
            .then(|| {
                let keep = match format {
                    Format::BinarySI => exponent % 10 == 0 && digits_low_bits(&shifted) & 7 != 0,
                    _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
                };
                keep.then(|| s.to_owned())
            })
            .flatten();
        let mut q = Quantity {
            negative: !parts.positive,
            magnitude,
            exponent: exponent10,
            format,
            kept,
        };
        q.settle();
        Ok(q)
    }

    /// A whole number written in decimal SI form (an object count).
    pub fn from_count(n: u64) -> Quantity {
        Quantity {
            negative: false,
            magnitude: BigUint::from(n),
            exponent: 0,
            format: Format::DecimalSI,
            kept: None,
        }
    }

    /// The sum of two quantities (Go's `Quantity.Add`): in the format of `self`, or of
    /// `other` when `self` is zero.
    pub fn plus(&self, other: &Quantity) -> Quantity {
        let exponent = self.exponent.min(other.exponent);
        let scaled = |q: &Quantity| &q.magnitude * pow10((q.exponent - exponent).unsigned_abs());
        let (a, b) = (scaled(self), scaled(other));
        let (negative, magnitude) = if self.negative == other.negative {
            (self.negative, a + b)
        } else if a >= b {
            (self.negative, a - b)
        } else {
            (other.negative, b - a)
        };
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        let mut sum = Quantity {
            negative,
            magnitude,
            exponent,
            format,
            kept: None,
        };
        sum.settle();
        sum
    }

    /// Compares two quantities by value.
    pub fn cmp_value(&self, other: &Quantity) -> Ordering {
        let exponent = self.exponent.min(other.exponent);
        let scaled = |q: &Quantity| &q.magnitude * pow10((q.exponent - exponent).unsigned_abs());
        let signed = |q: &Quantity| q.negative && !q.is_zero();
        match (signed(self), signed(other)) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => scaled(self).cmp(&scaled(other)),
            (true, true) => scaled(other).cmp(&scaled(self)),
        }
    }

    /// The quantity's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.magnitude == BigUint::ZERO
    }

    /// Compares the value with a whole number.
    pub fn cmp_count(&self, n: u64) -> Ordering {
        if self.negative && !self.is_zero() {
            return Ordering::Less;
        }
        self.cmp_magnitude(n)
    }

    /// Compares the absolute value with a whole number.
    fn cmp_magnitude(&self, n: u64) -> Ordering {
        if self.is_zero() {
            return 0.cmp(&n);
        }
        // Beyond 10^40 a nonzero value is larger than any u64.
        if self.exponent > 40 && !self.is_zero() {
            return Ordering::Greater;
        }
        let count = BigUint::from(n);
        if self.exponent >= 0 {
            (&self.magnitude * pow10(self.exponent as u64)).cmp(&count)
        } else {
            self.magnitude
                .cmp(&(count * pow10(self.exponent.unsigned_abs())))
        }
    }

    /// Go's adjustments after parsing: round up to nano, cap binary values, and write values
    /// below one in decimal form.
    fn settle(&mut self) {
        if self.is_zero() {
            return;
        }
        if self.exponent < NANO {
            let shift = (NANO - self.exponent) as u64;
            let digits = self.magnitude.to_string().len() as u64;
            self.magnitude = if shift >= digits {
                BigUint::from(1u32)
            } else {
                let unit = pow10(shift);
                let rounded_down = &self.magnitude / &unit;
                if &rounded_down * &unit == self.magnitude {
                    rounded_down
                } else {
                    rounded_down + 1u32
                }
            };
            self.exponent = NANO;
        }
        if self.format == Format::BinarySI {
            // A binary value's exponent is never positive.
            let unit = pow10(self.exponent.unsigned_abs());
            if self.magnitude > BigUint::from(MAX_BINARY) * &unit {
                self.magnitude = BigUint::from(MAX_BINARY);
                self.exponent = 0;
            } else if self.magnitude < unit {
                self.format = Format::DecimalSI;
            }
        }
    }

    /// The value as a whole number when it is one (exponent not positive only).
    fn whole(&self) -> Option<BigUint> {
        if self.exponent >= 0 {
            return Some(&self.magnitude * pow10(self.exponent as u64));
        }
        let unit = pow10(self.exponent.unsigned_abs());
        let whole = &self.magnitude / &unit;
        (&whole * &unit == self.magnitude).then_some(whole)
    }

    /// The canonical text of a non-zero quantity in a decimal format: trailing zeros moved
    /// into the exponent, which then goes down to a multiple of three (on the digit text: one
    /// conversion, however many zeros).
    fn write_decimal(&self, f: &mut fmt::Formatter<'_>, format: Format) -> fmt::Result {
        let text = self.magnitude.to_string();
        let digits = text.trim_end_matches('0');
        let mut exponent = self.exponent + (text.len() - digits.len()) as i64;
        let padding = exponent.rem_euclid(3);
        exponent -= padding;
        let zeros = "0".repeat(padding as usize);
        let sign = if self.negative { "-" } else { "" };
        match format {
            Format::DecimalExponent if exponent != 0 => {
                write!(f, "{sign}{digits}{zeros}e{exponent}")
            }
            Format::DecimalExponent => write!(f, "{sign}{digits}{zeros}"),
            _ => write!(f, "{sign}{digits}{zeros}{}", decimal_suffix(exponent)),
        }
    }
}

/// The low three bits of a decimal digit string (which Go checks with `value & 7`).
fn digits_low_bits(digits: &str) -> u64 {
    digits.parse::<u64>().map(|v| v & 7).unwrap_or_default()
}

impl fmt::Display for Quantity {
    /// The text kube writes for the quantity.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(kept) = &self.kept {
            return f.write_str(kept);
        }
        if self.is_zero() {
            return f.write_str("0");
        }
        if self.format != Format::BinarySI {
            return self.write_decimal(f, self.format);
        }
        let small = self.cmp_magnitude(1024) == Ordering::Less;
        let whole = if small { None } else { self.whole() };
        let Some(mut whole) = whole else {
            return self.write_decimal(f, Format::DecimalSI);
        };
        let k = BigUint::from(1024u32);
        let mut power = 0u32;
        while whole >= k && (&whole % &k) == BigUint::ZERO {
            whole /= &k;
            power += 1;
        }
        let sign = if self.negative { "-" } else { "" };
        write!(f, "{sign}{whole}{}", binary_suffix(power))
    }
}

/// The canonical text of a quantity written as `text` (surrounding blanks ignored, as Go's
/// JSON decoding of a Quantity does).
pub fn canonical(text: &str) -> Result<String, QuantityError> {
    Quantity::parse(text.trim()).map(|q| q.to_string())
}

#[cfg(test)]
mod tests;

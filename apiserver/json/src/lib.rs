//! JSON as kube-apiserver writes it: serde_json's compact form, with floats written the way
//! Go's `encoding/json` writes a `float64` (the ECMAScript number-to-string rule):
//! - `1e-6 <= |x| < 1e21`: the shortest digits that read back as `x`, without an exponent
//!   (`strconv.FormatFloat(x, 'f', -1, 64)`): `1`, `2.5`, `0.000001`,
//!   `100000000000000000000`, `18446744073709552000`;
//! - otherwise the shortest digits with an exponent, signed and unpadded: `1e-7`, `1e+21`,
//!   `1.5e-300`.
//!
//! Zero is `0` whatever its sign. Go writes `-0` for a negative zero, but kube decodes every
//! object it answers from the JSON it stored, and its decoder reads `-0` as the integer 0; a
//! stored `-0` would read back here as the float `-0.0` and be answered `-0` forever.
//! [`go_float64`] keeps Go's `-0`, for messages that quote a value before it is stored.
//!
//! Everything the server writes as JSON goes through [`to_vec`] / [`to_writer`]: stored
//! objects, answers, watch events, webhook requests.

use std::fmt::{Display, LowerExp};
use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};
use serde_json::{Number, Value};

/// serde_json's compact formatter, with Go's text for floats.
#[derive(Clone, Copy, Debug, Default)]
pub struct GoFloats;

impl Formatter for GoFloats {
    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        if value == 0.0 {
            return writer.write_all(b"0");
        }
        write_go_float64(writer, value)
    }

    fn write_f32<W: ?Sized + Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        // Go compares a float32 with the bounds as float32s and writes its own shortest digits.
        let abs = value.abs();
        write_float(
            writer,
            value,
            abs == 0.0 || (1e-6f32..1e21f32).contains(&abs),
        )
    }
}

/// Writes a finite float64 exactly as Go's `encoding/json` does (`-0` for a negative zero).
pub fn write_go_float64<W: ?Sized + Write>(writer: &mut W, value: f64) -> io::Result<()> {
    let abs = value.abs();
    write_float(writer, value, abs == 0.0 || (1e-6..1e21).contains(&abs))
}

/// Go's `encoding/json` text of a finite float64 (`-0` for a negative zero), for messages that
/// quote JSON.
pub fn go_float64(value: f64) -> String {
    let mut out = Vec::with_capacity(24);
    // Writing into a Vec does not fail, and the text is ASCII.
    let _ = write_go_float64(&mut out, value);
    String::from_utf8(out).unwrap_or_default()
}

/// Writes a finite float (serde_json writes non-finite ones as `null` before asking): plain
/// digits when `plain`, else Go's exponent form.
fn write_float<W, F>(writer: &mut W, value: F, plain: bool) -> io::Result<()>
where
    W: ?Sized + Write,
    F: Display + LowerExp,
{
    if plain {
        // Rust's `Display` of a float: the shortest round-trip digits, never an exponent.
        return write!(writer, "{value}");
    }
    // Rust's `{:e}` has the same digits and writes `1e-7` and `1e21`; Go signs a positive
    // exponent (`1e+21`) and pads none to two digits once it has cleaned `e-07` to `e-7`.
    let text = format!("{value:e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => {
            write!(writer, "{mantissa}e+{exponent}")
        }
        _ => writer.write_all(text.as_bytes()),
    }
}

/// Serializes `value` into `writer` as kube writes JSON.
pub fn to_writer<W: Write, T: ?Sized + Serialize>(writer: W, value: &T) -> serde_json::Result<()> {
    value.serialize(&mut Serializer::with_formatter(writer, GoFloats))
}

/// `value` as kube writes it in JSON.
pub fn to_vec<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    Ok(out)
}

/// A 64-bit digest of `value` written as JSON ([`to_writer`]), computed as it is written,
/// without the text: equal values give equal digests within one build (the same hasher, the
/// same writing), which is what a cache of "what was written" or a change check needs. Not for
/// anything kept across versions.
pub fn digest<T: ?Sized + Serialize>(value: &T) -> u64 {
    use std::hash::Hasher;
    /// Feeds what is written to the hasher.
    struct Digest(std::hash::DefaultHasher);
    impl Write for Digest {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut sink = Digest(std::hash::DefaultHasher::new());
    // The sink never fails; a value that cannot be written (a map with non-string keys)
    // digests as what was written of it before that.
    let _ = to_writer(&mut sink, value);
    sink.0.finish()
}

/// `value` as kube writes it in JSON, as a string (the tests' view of [`to_vec`]).
#[cfg(test)]
pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    let bytes = to_vec(value)?;
    // serde_json writes UTF-8 only.
    String::from_utf8(bytes).map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// Whether two numbers are written the same (`1` and `1.0`, `0` and `-0.0`): kube, which
/// compares what it would store, sees no difference between them.
pub fn same_number(a: &Number, b: &Number) -> bool {
    if a == b {
        return true;
    }
    if a.is_f64() == b.is_f64() {
        // Two integers, or two floats, that differ (floats equal as numbers compared equal).
        return false;
    }
    let (mut x, mut y) = (Vec::with_capacity(24), Vec::with_capacity(24));
    to_writer(&mut x, a).is_ok() && to_writer(&mut y, b).is_ok() && x == y
}

/// Whether two values are written the same, numbers compared by [`same_number`] and object
/// keys in any order.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, v)| y.get(key).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(f: f64) -> String {
        to_string(&json!(f)).unwrap()
    }

    #[test]
    fn a_digest_follows_the_written_text() {
        let a = json!({"spec": {"x": [1, 2.5, "é"]}});
        assert_eq!(digest(&a), digest(&a.clone()));
        // Pieces written in any chunks digest as their whole: the same text, the same digest.
        let text: serde_json::Value = serde_json::from_str(&to_string(&a).unwrap()).unwrap();
        assert_eq!(digest(&text), digest(&a));
        assert_ne!(digest(&a), digest(&json!({"spec": {"x": [1, 2.5, "e"]}})));
        assert_ne!(digest(&json!(1)), digest(&json!(2)));
    }

    #[test]
    fn floats_are_written_as_go_writes_them() {
        let cases = [
            (1.0, "1"),
            (2.5, "2.5"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (-1e21, "-1e+21"),
            (1.5e300, "1.5e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (1e-6, "0.000001"),
            (-1e-6, "-0.000001"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (1e-10, "1e-10"),
            (5e-324, "5e-324"),
            (123_456_789.0, "123456789"),
            (18_446_744_073_709_551_615.0, "18446744073709552000"),
            (9_223_372_036_854_775_808.0, "9223372036854776000"),
            (1.2345678901234568e20, "123456789012345680000"),
            (999_999_999_999_999_900_000.0, "999999999999999900000"),
            (0.0, "0"),
            (-0.0, "0"),
        ];
        for (f, want) in cases {
            assert_eq!(text(f), want, "{f:e}");
        }
    }

    #[test]
    fn go_text_keeps_the_sign_of_zero() {
        assert_eq!(go_float64(-0.0), "-0");
        assert_eq!(go_float64(0.0), "0");
        assert_eq!(go_float64(1e21), "1e+21");
        assert_eq!(go_float64(-1e-7), "-1e-7");
        assert_eq!(go_float64(100.0), "100");
    }

    #[test]
    fn float32s_use_their_own_digits_and_bounds() {
        let text = |f: f32| to_string(&f).unwrap();
        assert_eq!(text(0.1), "0.1");
        assert_eq!(text(1e-7), "1e-7");
        assert_eq!(text(1e21), "1e+21");
        assert_eq!(text(16_777_216.0), "16777216");
    }

    #[test]
    fn everything_but_floats_is_serde_json_compact_form() {
        let value = json!({"a": [1, -2, 18446744073709551615u64, "x\"y\u{1}", null, true],
                           "b": {"c": 1.5}, "é": "ü"});
        let ours = to_string(&value).unwrap();
        assert_eq!(
            ours,
            r#"{"a":[1,-2,18446744073709551615,"x\"y\u0001",null,true],"b":{"c":1.5},"é":"ü"}"#
        );
        assert_eq!(to_vec(&value).unwrap(), ours.as_bytes());
        // Non-finite floats have no JSON form; serde_json writes null, as before.
        assert_eq!(to_string(&f64::NAN).unwrap(), "null");
    }

    #[test]
    fn what_it_writes_reads_back_as_the_same_number() {
        for f in [
            1e20,
            1e21,
            1e-7,
            0.000001,
            2.5,
            1.8446744073709552e19,
            5e-324,
        ] {
            let back: f64 = serde_json::from_str(&text(f)).unwrap();
            assert_eq!(back, f);
        }
    }

    #[test]
    fn numbers_written_alike_are_the_same() {
        let n = |v: Value| match v {
            Value::Number(n) => n,
            other => panic!("{other}"),
        };
        assert!(same_number(&n(json!(1)), &n(json!(1.0))));
        assert!(same_number(&n(json!(0)), &n(json!(-0.0))));
        assert!(same_number(
            &n(json!(9223372036854776000u64)),
            &n(json!(9_223_372_036_854_775_808.0))
        ));
        assert!(!same_number(&n(json!(1)), &n(json!(2))));
        assert!(!same_number(&n(json!(1)), &n(json!(1.5))));
        assert!(!same_number(&n(json!(1.5)), &n(json!(2.5))));
        assert!(same_value(
            &json!({"a": [1, {"b": 2.0}], "c": "x"}),
            &json!({"c": "x", "a": [1.0, {"b": 2}]})
        ));
        assert!(!same_value(&json!({"a": 1}), &json!({"a": 1, "b": 1})));
        assert!(!same_value(&json!([1, 2]), &json!([2, 1])));
        assert!(!same_value(&json!("1"), &json!(1)));
    }
}

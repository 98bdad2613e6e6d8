//! Integers too large for int64 in custom resources, as kube-apiserver's unstructured JSON
//! decoding reads them: a number that does not fit an `int64` becomes a `float64` (so
//! `18446744073709551615` is kept as the float 2^64, answered `18446744073709552000`, and a
//! `type: integer` schema then refuses it as a `number`). Stored custom resources are read
//! back the same way: the stored text of such a float is an integer to serde_json.

use serde_json::{Number, Value};

/// Turns every integer above `i64::MAX` in `value` into the nearest float, as kube's decoder
/// does. (Integers below `i64::MIN` are floats already when the JSON is read.)
pub fn widen_out_of_range_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_u64() && !n.is_i64() => {
            if let Some(f) = n.as_f64().and_then(Number::from_f64) {
                *n = f;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(widen_out_of_range_integers),
        Value::Object(map) => map.values_mut().for_each(widen_out_of_range_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_beyond_int64_become_floats() {
        let mut v: Value = serde_json::from_str(
            r#"{"a": 9223372036854775807, "b": 9223372036854775808, "c": [18446744073709551615],
                "d": -9223372036854775808, "e": 1.5, "f": 3}"#,
        )
        .expect("json");
        widen_out_of_range_integers(&mut v);
        assert_eq!(v["a"], json!(i64::MAX));
        assert!(v["b"].is_f64());
        assert_eq!(v["b"].as_f64(), Some(9_223_372_036_854_775_808.0));
        assert_eq!(v["c"][0].as_f64(), Some(18_446_744_073_709_551_615.0));
        assert!(v["c"][0].is_f64());
        assert_eq!(v["d"], json!(i64::MIN));
        assert_eq!((v["e"].clone(), v["f"].clone()), (json!(1.5), json!(3)));
    }
}

//! Cases after kube's own quantity tables (`quantity_test.go`): the value each input parses to,
//! written as kube-apiserver writes it back.

use std::cmp::Ordering;

use super::*;

fn check(table: &[(&str, &str)]) {
    for (input, want) in table {
        assert_eq!(canonical(input).as_deref(), Ok(*want), "{input}");
    }
}

#[test]
fn binary_suffixes_take_the_largest_exact_power_of_1024() {
    check(&[
        ("1024Mi", "1Gi"),
        ("307200Ki", "300Mi"),
        ("1025024Mi", "1001Gi"),
        ("1024Gi", "1Ti"),
        ("1024Ki", "1Mi"),
        ("8Ki", "8Ki"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("-1.5Gi", "-1536Mi"),
        ("0.5Mi", "512Ki"),
        ("7Ei", "7Ei"),
        ("4Pi", "4Pi"),
        ("-1024Mi", "-1Gi"),
    ]);
}

#[test]
fn binary_values_below_1024_or_fractional_are_written_as_decimal() {
    check(&[
        ("0.5Ki", "512"),
        ("1.5Ki", "1536"),
        ("100.035Ki", "102435840m"),
        ("0.05Gi", "53687091200m"),
        ("0.025Ti", "27487790694400m"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("0.000000000001Ki", "2n"),
        ("-.001Ki", "-1024m"),
    ]);
}

#[test]
fn binary_values_are_capped_at_the_int64_maximum() {
    check(&[
        ("9Ei", "9223372036854775807"),
        ("8Ei", "9223372036854775807"),
        ("9223372036854775807Ki", "9223372036854775807"),
        ("-9Ei", "-9223372036854775807"),
    ]);
}

#[test]
fn decimal_si_takes_the_largest_suffix_without_a_fraction() {
    check(&[
        ("0.5", "500m"),
        ("1000m", "1"),
        ("5000m", "5"),
        ("1000M", "1G"),
        ("0.001T", "1G"),
        ("1000u", "1m"),
        ("1.08", "1080m"),
        ("1080000000n", "1080m"),
        ("1.5", "1500m"),
        ("9.01", "9010m"),
        ("8.1k", "8100"),
        ("40.1T", "40100G"),
        ("300.2T", "300200G"),
        ("2.5P", "2500T"),
        ("1.01E", "1010P"),
        ("0.001", "1m"),
        ("0.0005k", "500m"),
        ("0.05", "50m"),
        ("0.00050k", "500m"),
        ("0.00500", "5m"),
        (".0001k", "100m"),
        (".001", "1m"),
        ("1.0", "1"),
        ("1000", "1k"),
        ("2048", "2048"),
        ("-5000m", "-5"),
        ("0.1", "100m"),
    ]);
}

#[test]
fn large_decimal_values_keep_every_digit() {
    check(&[
        ("999999999999999999.1", "999999999999999999100m"),
        ("-999999999999999999.1", "-999999999999999999100m"),
        ("1000000000000000000", "1E"),
        ("-1000000000000000000.0", "-1E"),
        ("10000000000000000000", "10E"),
        ("10000000000000000000000m", "10E"),
        ("1.0E", "1E"),
        ("9999999999999999999000m", "9999999999999999999"),
        ("1.000000000000000001E", "1000000000000000001"),
        ("-10.0000000000000000001E", "-10000000000000000000100m"),
        ("9223372036854775808.1", "9223372036854775808100m"),
        ("-9223372036854775809000m", "-9223372036854775809"),
    ]);
}

#[test]
fn values_finer_than_nano_round_up() {
    check(&[
        ("3.001n", "4n"),
        ("1.1E-9", "2e-9"),
        ("0.0000000001", "1n"),
        ("0.0000000005", "1n"),
        ("0.00000000050", "1n"),
        ("0.5e-9", "1e-9"),
        ("0.9n", "1n"),
        ("0.00000012345", "124n"),
        ("0.00000012354", "124n"),
        ("-0.00000012345", "-124n"),
        ("1e-99999", "1e-9"),
    ]);
}

#[test]
fn decimal_exponents_stay_exponents() {
    check(&[
        (".001e12", "1e9"),
        ("0.001e0", "1e-3"),
        ("1000e-12", "1e-9"),
        ("1.2e3", "1200"),
        ("1.3E+6", "1300e3"),
        ("1.40e9", "1400e6"),
        ("1.53E12", "1530e9"),
        ("1.6e15", "1600e12"),
        ("1.7E18", "1700e15"),
        ("1e14", "100e12"),
        ("1e13", "10e12"),
        ("0.5e0", "500e-3"),
        ("0.5e-1", "50e-3"),
        ("0.5e-2", "5e-3"),
        ("1e1000", "10e999"),
    ]);
}

#[test]
fn zero_is_always_0() {
    check(&[
        ("0", "0"),
        ("00", "0"),
        ("-0", "0"),
        ("0n", "0"),
        ("0Ki", "0"),
        ("0Ti", "0"),
        ("0.0", "0"),
        ("0e5", "0"),
        (".", "0"),
        ("-", "0"),
    ]);
}

/// Go's fast parser keeps the text of an input it takes for canonical; its test is looser
/// than canonical form, so a few inputs come back exactly as written.
#[test]
fn text_go_takes_for_canonical_is_written_as_given() {
    check(&[
        ("1Ki", "1Ki"),
        ("1025Ki", "1025Ki"),
        ("+1Ki", "+1Ki"),
        ("100m", "100m"),
        ("50k", "50k"),
        ("12E", "12E"),
        ("1e3", "1e3"),
        ("1E6", "1E6"),
        ("1E-3", "1E-3"),
        ("1e999", "1e999"),
        ("+1", "+1"),
        ("01", "01"),
        ("1.500", "1.500"),
        ("-1.500", "-1.500"),
        ("100.035k", "100.035k"),
        ("7.123456M", "7.123456M"),
        ("5.444T", "5.444T"),
        ("1.", "1."),
        ("1.G", "1.G"),
    ]);
}

/// A decimal SI value beyond `E` has no suffix in Go's table, and Go writes its mantissa alone.
#[test]
fn decimal_si_beyond_exa_loses_its_suffix_as_in_go() {
    check(&[("1000E", "1"), ("2000.0E", "2"), ("1500E", "1500E")]);
}

#[test]
fn blanks_around_the_text_are_ignored() {
    check(&[(" 1 ", "1"), ("\t500m\n", "500m")]);
    assert_eq!(Quantity::parse(" 1"), Err(QuantityError::FormatWrong));
    assert_eq!(Quantity::parse("1 "), Err(QuantityError::FormatWrong));
}

#[test]
fn malformed_quantities_are_refused_with_kubes_message() {
    use QuantityError::*;
    for (input, want) in [
        ("", FormatWrong),
        ("1.1.M", FormatWrong),
        ("1+1.0M", FormatWrong),
        ("0.1am", FormatWrong),
        ("aoeu", FormatWrong),
        ("1Qi", FormatWrong),
        ("0.1mi", Suffix),
        (".5i", Suffix),
        ("1i", Suffix),
        ("-3.01i", Suffix),
        ("-3.01e-", Suffix),
        ("1e", Suffix),
        ("1ki", Suffix),
    ] {
        assert_eq!(Quantity::parse(input), Err(want), "{input}");
    }
    assert_eq!(
        FormatWrong.to_string(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(Suffix.to_string(), "unable to parse quantity's suffix");
}

#[test]
fn formats_follow_the_suffix() {
    for (input, want) in [
        ("1Ki", Format::BinarySI),
        ("0.5Ki", Format::BinarySI),
        ("0.0001Ki", Format::DecimalSI),
        ("1k", Format::DecimalSI),
        ("1", Format::DecimalSI),
        ("1e3", Format::DecimalExponent),
        ("1E", Format::DecimalSI),
    ] {
        assert_eq!(
            Quantity::parse(input).map(|q| q.format()),
            Ok(want),
            "{input}"
        );
    }
}

#[test]
fn counts_compare_by_value() {
    let cmp = |text: &str, n: u64| Quantity::parse(text).map(|q| q.cmp_count(n));
    assert_eq!(cmp("5", 5), Ok(Ordering::Equal));
    assert_eq!(cmp("5.5", 5), Ok(Ordering::Greater));
    assert_eq!(cmp("5.5", 6), Ok(Ordering::Less));
    assert_eq!(cmp("1k", 1000), Ok(Ordering::Equal));
    assert_eq!(cmp("1Ki", 1024), Ok(Ordering::Equal));
    assert_eq!(cmp("500m", 1), Ok(Ordering::Less));
    assert_eq!(cmp("-1", 0), Ok(Ordering::Less));
    assert_eq!(cmp("0", 0), Ok(Ordering::Equal));
    assert_eq!(cmp("1e100", u64::MAX), Ok(Ordering::Greater));
    assert_eq!(cmp("1e-999999", 0), Ok(Ordering::Greater));
}

#[test]
fn counts_are_written_in_decimal_si() {
    assert_eq!(Quantity::from_count(0).to_string(), "0");
    assert_eq!(Quantity::from_count(3).to_string(), "3");
    assert_eq!(Quantity::from_count(1000).to_string(), "1k");
    assert_eq!(Quantity::from_count(1500).to_string(), "1500");
}

#[test]
fn long_inputs_stay_cheap() {
    let zeros = "0".repeat(100_000);
    // 10^100000: exponent 99999 in decimal SI has no suffix in Go's table.
    assert_eq!(canonical(&format!("1{zeros}")).as_deref(), Ok("10"));
    assert_eq!(canonical(&format!("1{zeros}e0")).as_deref(), Ok("10e99999"));
    assert_eq!(
        canonical(&format!("1{zeros}Ki")).as_deref(),
        Ok("9223372036854775807")
    );
    assert_eq!(canonical(&format!("0.{zeros}1")).as_deref(), Ok("1n"));
    let nines = "9".repeat(100_000);
    assert_eq!(canonical(&format!("0.{nines}")).as_deref(), Ok("1"));
}

#[test]
fn sums_keep_the_first_format_and_compare_by_value() {
    let q = |s: &str| Quantity::parse(s).unwrap();
    assert_eq!(q("1Gi").plus(&q("2Gi")).to_string(), "3Gi");
    assert_eq!(q("0").plus(&q("512Mi")).to_string(), "512Mi");
    assert_eq!(q("1G").plus(&q("500M")).to_string(), "1500M");
    assert_eq!(q("100m").plus(&q("-300m")).to_string(), "-200m");
    assert_eq!(q("1Gi").cmp_value(&q("1024Mi")), std::cmp::Ordering::Equal);
    assert_eq!(q("2Gi").cmp_value(&q("2G")), std::cmp::Ordering::Greater);
    assert_eq!(q("-1").cmp_value(&q("0")), std::cmp::Ordering::Less);
}

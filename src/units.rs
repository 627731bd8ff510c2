//! Sizes as people read and write them, in one place for every message, report, table and
//! parser: `parse_size` is the one reading of a size in rmm-rs (RMM_ALLOC_CONF and
//! `rmmResourceCreateFromSpec`, RMM_SIM_DEVICES, `rmmParseSize`, and through it every size the
//! Python package takes as a string).
//!
//! The units, as the IEC and SI define them and as RAPIDS RMM's Python `parse_bytes` and Dask
//! read them: `kB`, `MB`, `GB`, `TB`, `PB` are powers of 1000 (`1GB` is 10^9 bytes); `KiB`,
//! `MiB`, `GiB`, `TiB`, `PiB` are powers of 1024 (`1GiB` is 2^30 bytes); `B` or nothing is
//! bytes. Case does not matter (`mb` is megabytes, never millibits), spaces may stand between
//! the number and its unit, and the number may have a fraction (`1.5GiB`; a fraction of a byte
//! is dropped, as RAPIDS' `parse_bytes` drops it). A letter alone (`4G`) is refused as
//! ambiguous: Dask reads it as 10^9, GNU tools, the JVM and the kernel as 2^30, and RAPIDS'
//! `parse_bytes` refuses it. What rmm-rs writes (`exact`, `approximate`, `spec_size`) uses the
//! binary units only.

use std::fmt;

const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

/// The largest binary unit below `bytes` and the value in it (`(1.5, "GiB")`).
fn scaled(bytes: f64) -> (f64, &'static str) {
    let mut value = bytes;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    (value, UNITS[unit])
}

/// A size for tables and reports: `512 B`, `5.0 MiB` (negative within a statistics scope).
pub fn approximate(bytes: i64) -> String {
    match scaled(bytes as f64) {
        (_, "B") => format!("{bytes} B"),
        (value, unit) => format!("{value:.1} {unit}"),
    }
}

/// A size for messages, readable and exact: `1.50 GiB (1610612736 bytes)`, `512 bytes`.
pub fn exact(bytes: usize) -> String {
    match scaled(bytes as f64) {
        (_, "B") => format!("{bytes} bytes"),
        (value, unit) => format!("{value:.2} {unit} ({bytes} bytes)"),
    }
}

/// Why a text is not a size (`Display`: the reason, without the text; `SizeError::text` has
/// it quoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeError {
    /// No number where one must start: empty, a sign, a unit alone, `.5`.
    NotANumber,
    /// Something after the number that is not a unit.
    UnknownUnit(String),
    /// A prefix letter alone (`4G`).
    Ambiguous {
        /// The number as written (`1.5`).
        number: String,
        /// The letter, upper case (`G`).
        letter: char,
        /// The bytes with the binary unit (`GiB`); None where more than SIZE_MAX.
        binary: Option<usize>,
        /// The bytes with the SI unit (`GB`); None where more than SIZE_MAX.
        decimal: Option<usize>,
    },
    /// More bytes than a `size_t` holds.
    TooLarge,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::NotANumber => write!(f, "expected a number of bytes, optionally with a unit (4096, 64KiB, 1.5GiB, 512MB)"),
            SizeError::UnknownUnit(unit) => {
                write!(f, "{unit:?} is not a unit (B; kB, MB, GB, TB, PB are powers of 1000; KiB, MiB, GiB, TiB, PiB powers of 1024)")
            }
            SizeError::Ambiguous { number, letter, binary, decimal } => {
                let bytes = |value: &Option<usize>| value.map_or_else(|| "too large".to_string(), |b| format!("{b} bytes"));
                let si = if *letter == 'K' { 'k' } else { *letter };
                write!(
                    f,
                    "{number}{letter} is ambiguous: write {number}{letter}iB ({}) or {number}{si}B ({})",
                    bytes(binary),
                    bytes(decimal)
                )
            }
            SizeError::TooLarge => write!(f, "more than SIZE_MAX ({}) bytes", usize::MAX),
        }
    }
}

impl SizeError {
    /// The whole message for `text`: `"4G" is not a size: 4G is ambiguous: ...`.
    pub fn text(&self, text: &str) -> String {
        format!("{text:?} is not a size: {self}")
    }
}

/// The multiplier of a unit (lower case); Err(letter) for a prefix letter alone.
fn multiplier(unit: &str) -> Result<Option<u128>, char> {
    const PREFIXES: &str = "kmgtp";
    let power = |letter: u8| PREFIXES.bytes().position(|p| p == letter).map(|i| i as u32 + 1);
    Ok(match unit.as_bytes() {
        [] | [b'b'] => Some(1),
        [letter, b'b'] => power(*letter).map(|p| 1000u128.pow(p)),
        [letter, b'i', b'b'] => power(*letter).map(|p| 1u128 << (10 * p)),
        [letter] if power(*letter).is_some() => return Err(letter.to_ascii_uppercase() as char),
        _ => None,
    })
}

/// `whole.fraction` times `multiplier`, the fraction of a byte dropped (exact: no floating
/// point).
fn scale(whole: &str, fraction: &str, multiplier: u128) -> Option<usize> {
    let mut bytes: u128 = 0;
    for digit in whole.bytes() {
        bytes = bytes.checked_mul(10)?.checked_add(u128::from(digit - b'0'))?;
    }
    bytes = bytes.checked_mul(multiplier)?;
    // floor(multiplier * 0.d1 d2 .. dn), from the last digit: floor((m * d + floor(x)) / 10)
    // is floor((m * d + x) / 10) for any x >= 0, and it stays below `multiplier`.
    let mut part: u128 = 0;
    for digit in fraction.bytes().rev() {
        part = (multiplier * u128::from(digit - b'0') + part) / 10;
    }
    usize::try_from(bytes.checked_add(part)?).ok()
}

/// Reads a size: `4096`, `64KiB`, `1.5 GiB`, `512MB` (the units: this module's comment).
pub fn parse_size(text: &str) -> Result<usize, SizeError> {
    let text = text.trim();
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let whole_len = digits(text);
    if whole_len == 0 {
        return Err(SizeError::NotANumber);
    }
    let (whole, rest) = text.split_at(whole_len);
    let (fraction, rest) = match rest.strip_prefix('.') {
        Some(after) => after.split_at(digits(after)),
        None => ("", rest),
    };
    let number = &text[..text.len() - rest.len()];
    let unit = rest.trim_start_matches([' ', '\t']);
    match multiplier(&unit.to_ascii_lowercase()) {
        Ok(Some(m)) => scale(whole, fraction, m).ok_or(SizeError::TooLarge),
        Ok(None) => Err(SizeError::UnknownUnit(unit.to_string())),
        Err(letter) => {
            let power = "KMGTP".find(letter).unwrap_or(0) as u32 + 1;
            Err(SizeError::Ambiguous {
                number: number.to_string(),
                letter,
                binary: scale(whole, fraction, 1u128 << (10 * power)),
                decimal: scale(whole, fraction, 1000u128.pow(power)),
            })
        }
    }
}

/// A size as specs write it: the largest binary unit that divides it, `unlimited` for
/// SIZE_MAX (a threshold that keeps everything); `parse_size` reads it back.
pub fn spec_size(bytes: usize) -> String {
    if bytes == usize::MAX {
        return "unlimited".to_string();
    }
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if bytes != 0 && bytes.is_multiple_of(1usize << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(exact(1_610_612_736), "1.50 GiB (1610612736 bytes)");
        assert_eq!(exact(512), "512 bytes");
        assert_eq!(exact(1024), "1.00 KiB (1024 bytes)");
        assert_eq!(approximate(5 << 20), "5.0 MiB");
        assert_eq!(approximate(-2048), "-2.0 KiB");
        assert_eq!(approximate(100), "100 B");
        assert_eq!(approximate(3 << 40), "3.0 TiB");
    }

    #[test]
    fn si_units_are_powers_of_1000_and_binary_units_of_1024() {
        for (text, bytes) in [
            ("4096", 4096),
            ("0", 0),
            ("12B", 12),
            ("1kB", 1000),
            ("1KB", 1000),
            ("1MB", 1_000_000),
            ("1GB", 1_000_000_000),
            ("2gb", 2_000_000_000),
            ("1TB", 1_000_000_000_000),
            ("1PB", 1_000_000_000_000_000),
            ("1KiB", 1 << 10),
            ("512MiB", 512 << 20),
            ("8GiB", 8 << 30),
            ("1gib", 1 << 30),
            ("1TiB", 1 << 40),
            ("1PiB", 1 << 50),
            ("3 KB", 3000),
            (" 512 MiB ", 512 << 20),
            ("4\tGiB", 4 << 30),
            ("1.5GiB", 3 << 29),
            ("1.5 kib", 1536),
            ("1.1GB", 1_100_000_000),
            ("2.01kB", 2010),
            ("0.5KiB", 512),
            ("2.", 2),
            ("1.9999B", 1),
            ("0.0009765625KiB", 1),
            ("0.00097656249KiB", 0),
            ("007MiB", 7 << 20),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text:?}");
        }
        assert_eq!(parse_size(&usize::MAX.to_string()), Ok(usize::MAX));
        assert_eq!(parse_size("16EiB"), Err(SizeError::UnknownUnit("EiB".into())));
    }

    #[test]
    fn what_is_not_a_size_says_why() {
        for text in ["", "GiB", "-1", "+1", ".5GiB", "lots", "1e9"] {
            assert!(parse_size(text).is_err(), "{text:?}");
        }
        assert_eq!(parse_size(".5"), Err(SizeError::NotANumber));
        assert_eq!(parse_size("3 parsecs"), Err(SizeError::UnknownUnit("parsecs".into())));
        assert_eq!(parse_size("2GB!"), Err(SizeError::UnknownUnit("GB!".into())));
        assert_eq!(parse_size("1Gi"), Err(SizeError::UnknownUnit("Gi".into())));
        assert_eq!(
            parse_size("4G").unwrap_err().text("4G"),
            "\"4G\" is not a size: 4G is ambiguous: write 4GiB (4294967296 bytes) or 4GB (4000000000 bytes)"
        );
        assert_eq!(parse_size("1.5k").unwrap_err().to_string(), "1.5K is ambiguous: write 1.5KiB (1536 bytes) or 1.5kB (1500 bytes)");
        assert_eq!(
            parse_size("17000P").unwrap_err().to_string(),
            "17000P is ambiguous: write 17000PiB (too large) or 17000PB (17000000000000000000 bytes)"
        );
        assert_eq!(parse_size("16384PiB"), Err(SizeError::TooLarge));
        assert_eq!(parse_size("18446744073709551616"), Err(SizeError::TooLarge));
        assert_eq!(parse_size("99999999999999999999999999999999999999999"), Err(SizeError::TooLarge));
        assert!(parse_size("lots").unwrap_err().text("lots").starts_with("\"lots\" is not a size: expected a number"));
    }

    #[test]
    fn spec_sizes_read_back() {
        for bytes in [0, 1, 1000, 4096, 3 << 29, 5 << 40, usize::MAX - 1] {
            assert_eq!(parse_size(&spec_size(bytes)), Ok(bytes), "{}", spec_size(bytes));
        }
    }
}

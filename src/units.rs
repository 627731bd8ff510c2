//! Sizes as people read them, in one place for every message, report and table.

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

/// Parses sizes such as `8GiB`, `512MiB`, `1GB`, `4096`.
pub fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits.parse().ok()?;
    let multiplier: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(multiplier)
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
}

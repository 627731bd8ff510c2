// Reads the error codes of include/rmm.h, the one source of them for this crate: build.rs
// writes them into the crate, and tests/error_codes.rs checks the reading. (A plain file, not
// a module of the crate: build.rs and the test include it.)

/// `(name, value)` of each enumerator of `typedef enum rmmError_t { ... } rmmError_t;` in
/// `header` (cbindgen's layout: one `NAME = value,` a line, comments between), in order.
pub fn error_codes(header: &str) -> Result<Vec<(String, i64)>, String> {
    let start = header.find("typedef enum rmmError_t {").ok_or("rmm.h declares no `typedef enum rmmError_t {`")?;
    let body = &header[start..];
    let body = &body[body.find('{').unwrap_or(0) + 1..body.find('}').ok_or("rmmError_t has no closing brace")?];
    let mut codes: Vec<(String, i64)> = Vec::new();
    for line in body.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("//")) {
        let entry = line.trim_end_matches(',');
        let Some((name, value)) = entry.split_once('=') else {
            return Err(format!("rmmError_t: {line:?} has no explicit value"));
        };
        let (name, value) = (name.trim(), value.trim());
        if !name.starts_with("RMM_") || !name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
            return Err(format!("rmmError_t: {name:?} is not an RMM_ name"));
        }
        let value: i64 = value.parse().map_err(|_| format!("rmmError_t: {name} = {value:?} is not a number"))?;
        codes.push((name.to_string(), value));
    }
    if codes.is_empty() {
        return Err("rmmError_t has no enumerators".into());
    }
    Ok(codes)
}

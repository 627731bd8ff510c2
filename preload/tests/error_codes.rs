//! The preload library takes rmm.h's error codes from include/rmm.h (build.rs), never from a
//! copy of its own that could drift from the header.

#[path = "../rmm_h.rs"]
mod rmm_h;

use std::path::Path;

fn crate_file(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

#[test]
fn no_source_file_restates_an_error_code() {
    let codes = rmm_h::error_codes(&crate_file("../include/rmm.h")).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut copies = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            // `const RMM_...: c_int = 2;`, or a literal standing for a code: `== 2 // RMM_...`.
            let defines = code.contains("const ") && codes.iter().any(|(name, _)| code.contains(&format!("{name}:")));
            let commented = line.contains("//")
                && codes.iter().any(|(name, _)| line.split("//").skip(1).any(|note| note.contains(name.as_str())))
                && code.bytes().any(|b| b.is_ascii_digit());
            if defines || commented {
                copies.push(format!("{}:{}: {}", path.display(), number + 1, line.trim()));
            }
        }
    }
    assert!(copies.is_empty(), "error codes restated by hand (use crate::librmm's, from rmm.h):\n{}", copies.join("\n"));
}

#[test]
fn the_codes_are_read_as_rmm_h_has_them() {
    let codes = rmm_h::error_codes(&crate_file("../include/rmm.h")).unwrap();
    // Legacy RMM's values, which rmm.h keeps (new codes are appended, never renumbered).
    for (name, value) in [("RMM_SUCCESS", 0), ("RMM_ERROR_INVALID_ARGUMENT", 2), ("RMM_ERROR_OUT_OF_MEMORY", 4), ("RMM_ERROR_IO", 6)] {
        assert!(codes.contains(&(name.to_string(), value)), "{name} = {value} in {codes:?}");
    }
    let header = crate_file("../include/rmm.h");
    let enumerators = header.lines().filter(|l| l.starts_with("  RMM_") && l.trim_end().ends_with(',')).count();
    assert_eq!(codes.len(), enumerators, "every enumerator of rmmError_t: {codes:?}");
    assert!(rmm_h::error_codes("typedef enum rmmError_t {\n  RMM_SUCCESS,\n} rmmError_t;").is_err());
    assert!(rmm_h::error_codes("enum other { A = 1 };").is_err());
}

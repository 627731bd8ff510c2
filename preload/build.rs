// The error codes of rmm.h (`rmmError_t`) for this crate, from include/rmm.h itself: the
// crate has no copy of them to drift (tests/error_codes.rs checks that none comes back).

include!("rmm_h.rs");

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let header = manifest.join("../include/rmm.h");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rerun-if-changed=rmm_h.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&header).unwrap_or_else(|e| panic!("cannot read {}: {e}", header.display()));
    let codes = error_codes(&text).unwrap_or_else(|e| panic!("{}: {e}", header.display()));
    let mut out = String::from("// The error codes of include/rmm.h (rmmError_t), written by preload/build.rs.\n");
    for (name, value) in codes {
        out += &format!("pub const {name}: std::ffi::c_int = {value};\n");
    }
    let path = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("rmm_error_codes.rs");
    std::fs::write(&path, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

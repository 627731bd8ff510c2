//! The committed `include/rmm.h` must be what cbindgen generates from the current sources.

use std::path::Path;

#[test]
fn committed_header_matches_the_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let mut generated = Vec::new();
    cbindgen::Builder::new().with_crate(root).with_config(config).generate().expect("cbindgen generates the header").write(&mut generated);
    let generated = String::from_utf8(generated).expect("header is UTF-8");
    let header = root.join("include/rmm.h");
    if std::env::var_os("RMM_UPDATE_HEADER").is_some() {
        std::fs::write(&header, &generated).expect("write include/rmm.h");
        return;
    }
    let legacy_names = ["CudaDefaultAllocation", "PoolAllocation", "CudaManagedMemory", "CudaAsyncAllocation"];
    for line in generated.lines().filter(|l| l.starts_with("#define ")) {
        let name = line.split_whitespace().nth(1).unwrap_or_default();
        let name = name.split('(').next().unwrap_or_default();
        assert!(
            name.starts_with("RMM_") || legacy_names.contains(&name),
            "rmm.h defines `{name}`: C API macros start with RMM_ (exclude Rust-only constants in cbindgen.toml)"
        );
    }
    let committed = std::fs::read_to_string(&header).unwrap_or_default();
    assert!(
        committed == generated,
        "include/rmm.h is out of date with the Rust sources: run `RMM_UPDATE_HEADER=1 cargo test --test header` and commit it"
    );
}

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

/// The text between `begin` and `end` in `text`, and where it starts.
fn between<'a>(text: &'a str, begin: &str, end: &str) -> (usize, &'a str) {
    let start = text.find(begin).unwrap_or_else(|| panic!("no line {begin:?}")) + begin.len();
    let length = text[start..].find(end).unwrap_or_else(|| panic!("no line {end:?}"));
    (start, &text[start..start + length])
}

/// `per_device_resource.hpp` recognises the RAPIDS-shaped class of every kind that has one, as
/// the registry (src/resources/kinds.rs) lists them: generated from it, and written back with
/// RMM_UPDATE_HEADER=1.
#[test]
fn per_device_resource_hpp_knows_every_registered_class() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("include/rmm/mr/per_device_resource.hpp");
    let classes: Vec<&str> = rmm::resources::kinds::KINDS.iter().flat_map(|kind| kind.cxx_classes.iter().copied()).collect();
    let mut files: Vec<String> = classes.iter().map(|class| format!("{}.hpp", class.split('<').next().unwrap_or_default())).collect();
    files.sort();
    files.dedup();
    for file in &files {
        assert!(
            root.join("include/rmm/mr").join(file).exists(),
            "the registry names a class of include/rmm/mr/{file}, which does not exist"
        );
    }
    let includes: String = files.iter().map(|file| format!("#include \"{file}\"\n")).collect();
    let casts: String = classes.iter().map(|class| format!("  as(static_cast<{class} *>(nullptr));\n")).collect();
    let committed = std::fs::read_to_string(&path).expect("read per_device_resource.hpp");
    let mut generated = committed.clone();
    for (begin, end, lines) in [
        (
            "// The registry's classes (src/resources/kinds.rs; tests/header.rs writes them):\n",
            "// End of the registry's classes.\n",
            &includes,
        ),
        (
            "  // The registry's classes (src/resources/kinds.rs; tests/header.rs writes them):\n",
            "  // End of the registry's classes.\n",
            &casts,
        ),
    ] {
        let (start, old) = between(&generated, begin, end);
        let old_length = old.len();
        generated.replace_range(start..start + old_length, lines);
    }
    if std::env::var_os("RMM_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write per_device_resource.hpp");
        return;
    }
    assert!(
        committed == generated,
        "per_device_resource.hpp's lists differ from the registry's classes: run `RMM_UPDATE_HEADER=1 cargo test --test header` and commit it"
    );
}

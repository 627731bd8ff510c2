// Gives librmm.so a SONAME, so programs record `librmm.so` rather than the build path.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librmm.so");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

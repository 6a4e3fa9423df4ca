//! Adds an rpath to libflashkit's directory for this crate's own tests and doctests, so
//! `cargo test` runs without LD_LIBRARY_PATH. flashkit-sys found the directory
//! (FLASHKIT_LIB_DIR or pkg-config) and exported it as `links` metadata: DEP_FLASHKIT_LIB_DIR.
//! (rustc-link-arg reaches only this package's linked targets, never a downstream crate.)
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FLASHKIT_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_FLASHKIT_LIB_DIR") {
        if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("windows") {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}

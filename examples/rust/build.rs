// Embeds libflashkit's directory (found by flashkit-sys) as an rpath so the program (and any
// example or test of this package) runs without LD_LIBRARY_PATH.
fn main() {
    if let Ok(dir) = std::env::var("DEP_FLASHKIT_LIB_DIR") {
        if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("windows") {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}

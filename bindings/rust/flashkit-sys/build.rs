//! Finds libflashkit and tells rustc how to link it. std only (no crates).
//!
//! Order:
//! 1. `FLASHKIT_LIB_DIR`: a directory holding `libflashkit.so` (e.g. a CMake build folder).
//! 2. `pkg-config --libs flashkit` (the installed `flashkit.pc`; honours `PKG_CONFIG_PATH`),
//!    run as a program, not through a crate.
//! 3. Otherwise just `-lflashkit` and the linker's default search path.
//!
//! The directory found is exported to dependents' build scripts as `DEP_FLASHKIT_LIB_DIR`
//! (cargo's `links` metadata); the `flashkit` crate uses it to add an rpath to its tests and
//! examples, so they run without `LD_LIBRARY_PATH`.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=FLASHKIT_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");

    if let Some(dir) = env::var_os("FLASHKIT_LIB_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if !has_library(&dir) {
            println!(
                "cargo:warning=FLASHKIT_LIB_DIR={} holds no libflashkit; linking may fail",
                dir.display()
            );
        }
        emit(&[dir], &["flashkit".to_string()]);
        return;
    }

    if let Some((dirs, libs)) = pkg_config() {
        emit(&dirs, &libs);
        return;
    }

    println!(
        "cargo:warning=flashkit not found through FLASHKIT_LIB_DIR or pkg-config; \
         trying the linker's default search path"
    );
    println!("cargo:rustc-link-lib=dylib=flashkit");
}

fn has_library(dir: &Path) -> bool {
    ["libflashkit.so", "libflashkit.dylib", "flashkit.lib"].iter().any(|f| dir.join(f).exists())
}

/// Runs `pkg-config --libs flashkit` and splits the answer into -L dirs and -l libraries.
fn pkg_config() -> Option<(Vec<PathBuf>, Vec<String>)> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(program).args(["--libs", "flashkit"]).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let mut dirs = Vec::new();
    let mut libs = Vec::new();
    for token in text.split_whitespace() {
        if let Some(d) = token.strip_prefix("-L") {
            dirs.push(PathBuf::from(d));
        } else if let Some(l) = token.strip_prefix("-l") {
            libs.push(l.to_string());
        }
    }
    if !libs.iter().any(|l| l == "flashkit") {
        libs.push("flashkit".to_string());
    }
    Some((dirs, libs))
}

fn emit(dirs: &[PathBuf], libs: &[String]) {
    for dir in dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in libs {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
    if let Some(first) = dirs.first() {
        // `links` metadata: dependents' build scripts see DEP_FLASHKIT_LIB_DIR.
        println!("cargo:lib_dir={}", first.display());
        // rpath for this crate's own tests and examples (rustc-link-arg does not reach
        // dependents; they read DEP_FLASHKIT_LIB_DIR instead). ELF and Mach-O linkers only.
        let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
        if os != "windows" {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", first.display());
        }
    }
}

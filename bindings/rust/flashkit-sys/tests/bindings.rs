//! The committed `src/bindings.rs` must match `include/flashkit/flashkit.h`.
//!
//! `bindings_up_to_date` re-runs bindgen through `regen.sh --output` (so the options live in one
//! place) and compares byte for byte; it is skipped, with a message, only when no `bindgen`
//! program is installed. `header_symbols_declared` needs no bindgen: every function, macro
//! constant and enumerator the header declares must appear in the bindings.
use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header() -> PathBuf {
    let path = crate_dir().join(flashkit_sys::HEADER_PATH);
    path.canonicalize().unwrap_or(path)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn bindings_up_to_date() {
    let bindgen = std::env::var("BINDGEN").unwrap_or_else(|_| "bindgen".to_string());
    match Command::new(&bindgen).arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => {
            eprintln!(
                "SKIP bindings_up_to_date: no '{bindgen}' program (install Debian's bindgen); \
                 header_symbols_declared still checks the declarations"
            );
            return;
        }
    }
    let fresh = std::env::temp_dir().join(format!("flashkit-bindings-{}.rs", std::process::id()));
    let status = Command::new("sh")
        .arg(crate_dir().join("regen.sh"))
        .arg("--output")
        .arg(&fresh)
        .status()
        .expect("run regen.sh");
    assert!(status.success(), "regen.sh failed: {status}");
    let fresh_text = read(&fresh);
    let _ = std::fs::remove_file(&fresh);
    let committed = read(&crate_dir().join("src/bindings.rs"));
    if fresh_text != committed {
        let first = fresh_text
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| fresh_text.lines().count().min(committed.lines().count()));
        panic!(
            "bindings/rust/flashkit-sys/src/bindings.rs is out of date with {} (first difference \
             at line {}: committed {:?}, bindgen {:?}); run bindings/rust/flashkit-sys/regen.sh",
            header().display(),
            first + 1,
            committed.lines().nth(first).unwrap_or("<end>"),
            fresh_text.lines().nth(first).unwrap_or("<end>"),
        );
    }
}

/// Identifier characters.
fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Strips /* */ comments so that words in prose are not taken for declarations.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        match rest[start..].find("*/") {
            Some(end) => rest = &rest[start + end + 2..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn header_symbols_declared() {
    let code = strip_comments(&read(&header()));
    let bindings = read(&crate_dir().join("src/bindings.rs"));
    let mut missing = Vec::new();
    let mut functions = 0;

    // Functions: `FK_API <type> <name>(`.
    for (pos, _) in code.match_indices("FK_API ") {
        let decl = &code[pos..];
        let Some(paren) = decl.find('(') else { continue };
        let before = decl[..paren].trim_end();
        let name: String = before.chars().rev().take_while(|&c| is_ident(c)).collect();
        let name: String = name.chars().rev().collect();
        if !name.starts_with("fk_") {
            continue;
        }
        functions += 1;
        if !bindings.contains(&format!("pub fn {name}(")) {
            missing.push(format!("function {name}"));
        }
    }

    // Object-like macros `#define FK_X value` (not FK_API) and enumerators `FK_X = value`.
    for line in code.lines() {
        let line = line.trim();
        let name = if let Some(rest) = line.strip_prefix("#define ") {
            let mut parts = rest.split_whitespace();
            let n = parts.next().unwrap_or("");
            if parts.next().is_none() || n.contains('(') || n == "FK_API" {
                continue;
            }
            n.to_string()
        } else if line.starts_with("FK_") && line.contains('=') {
            line.chars().take_while(|&c| is_ident(c)).collect()
        } else {
            continue;
        };
        if !name.starts_with("FK_") {
            continue;
        }
        if !bindings.contains(&format!("pub const {name}:")) {
            missing.push(format!("constant {name}"));
        }
    }

    // Typedef'd structs and enums: `typedef struct fk_x_t {` / `} fk_x_t;`.
    for line in code.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("} ") {
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if name.starts_with("fk_")
                && !bindings.contains(&format!("pub struct {name} "))
                && !bindings.contains(&format!("pub type {name} ="))
            {
                missing.push(format!("type {name}"));
            }
        }
    }

    assert!(functions > 20, "found only {functions} FK_API functions: is the parser broken?");
    assert!(
        missing.is_empty(),
        "src/bindings.rs lacks declarations the header has: {missing:?}; \
         run bindings/rust/flashkit-sys/regen.sh"
    );
}

#[test]
fn links_and_reports_version() {
    // Proves the build script found the library: a real call through the raw declarations.
    let number = unsafe { flashkit_sys::fk_get_version_number() };
    assert_eq!(number, flashkit_sys::FK_VERSION_NUMBER, "header and library versions differ");
    let text = unsafe { std::ffi::CStr::from_ptr(flashkit_sys::fk_get_version()) };
    let expected = format!(
        "{}.{}.{}",
        flashkit_sys::FK_VERSION_MAJOR,
        flashkit_sys::FK_VERSION_MINOR,
        flashkit_sys::FK_VERSION_PATCH
    );
    assert_eq!(text.to_str().unwrap(), expected);
}

#[test]
fn crate_version_is_the_project_version() {
    // VERSION (top of the tree) is the project's single version source.
    let version = read(&crate_dir().join("../../../VERSION"));
    assert_eq!(
        env!("CARGO_PKG_VERSION"),
        version.trim(),
        "bump [workspace.package] version in bindings/rust/Cargo.toml to match VERSION"
    );
}

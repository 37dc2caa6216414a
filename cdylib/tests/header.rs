//! `include/pcoll.h` and the library's own C API (`src/ffi/api.rs`) declare the same
//! functions with the same parameter counts, and the header's version macros match the crate.

use std::collections::BTreeMap;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// name -> number of parameters, from C prototypes `type name(args);`.
fn header_functions(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let flat: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let no_comments = strip_comments(&flat);
    for stmt in no_comments.split(';') {
        let Some(open) = stmt.find('(') else { continue };
        let name = stmt[..open]
            .trim()
            .rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()
            .unwrap_or("")
            .to_string();
        if !name.starts_with("pcoll_") {
            continue;
        }
        let args = stmt[open + 1..stmt.rfind(')').unwrap()].trim();
        let n = if args == "void" || args.is_empty() {
            0
        } else {
            args.split(',').count()
        };
        out.insert(name, n);
    }
    out
}

fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    out.push_str(rest);
    out
}

/// name -> number of parameters, from `extern "C" fn pcoll_x(a: T, b: U) -> R`.
fn rust_exports(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some(i) = rest.find("extern \"C\" fn pcoll_") {
        let s = &rest[i + "extern \"C\" fn ".len()..];
        let open = s.find('(').unwrap();
        let name = s[..open].to_string();
        let close = s.find(')').unwrap();
        let args = s[open + 1..close].trim().trim_end_matches(',');
        let n = if args.is_empty() {
            0
        } else {
            args.split(',').filter(|a| !a.trim().is_empty()).count()
        };
        out.insert(name, n);
        rest = &s[close..];
    }
    out
}

#[test]
fn header_matches_exports() {
    let h = std::fs::read_to_string(root().join("include/pcoll.h")).unwrap();
    let r = std::fs::read_to_string(root().join("cdylib/src/ffi/api.rs")).unwrap();
    let (hf, rf) = (header_functions(&h), rust_exports(&r));
    assert!(!hf.is_empty(), "no functions found in pcoll.h");
    assert_eq!(hf, rf, "pcoll.h and src/ffi/api.rs disagree");
}

#[test]
fn header_version_matches_crate() {
    let h = std::fs::read_to_string(root().join("include/pcoll.h")).unwrap();
    let get = |m: &str| -> String {
        h.lines()
            .find_map(|l| l.strip_prefix(&format!("#define PCOLL_VERSION_{m} ")))
            .unwrap_or_else(|| panic!("PCOLL_VERSION_{m} missing"))
            .trim()
            .to_string()
    };
    let v = format!("{}.{}.{}", get("MAJOR"), get("MINOR"), get("PATCH"));
    assert_eq!(v, env!("CARGO_PKG_VERSION"));
}

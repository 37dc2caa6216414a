//! `pcoll::envvars::LIBRARY` against what the library reads and what the user guide lists:
//! every quoted `"PCOLL_..."` name in the library's sources (`src/`, `cdylib/src/`) and every
//! variable of the guide's environment table is in it, and each of its names is read
//! somewhere (a variable dropped from the code must leave the list).

use pcoll::envvars::LIBRARY;
use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("src/envvars.rs") {
            // (envvars.rs is the list itself)
            out.push(std::fs::read_to_string(&p).unwrap());
        }
    }
}

/// `PCOLL_[A-Z0-9_]+` names at each occurrence of `open` (e.g. `"` for string literals).
fn names_after(text: &str, open: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(&format!("{open}PCOLL_")) {
        let rest = &text[i + open.len()..];
        let n: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        out.push(n);
    }
    out
}

#[test]
fn the_list_is_what_the_library_reads_and_the_guide_documents() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    rust_files(&root.join("src"), &mut sources);
    rust_files(&root.join("cdylib/src"), &mut sources);
    let mut read: Vec<String> = Vec::new();
    for s in &sources {
        // Quoted whole names; `PCOLL_` alone or a prefix ending in `_` is not a variable.
        read.extend(
            names_after(s, "\"")
                .into_iter()
                .filter(|n| !n.ends_with('_') && s.contains(&format!("\"{n}\""))),
        );
    }
    read.sort();
    read.dedup();
    assert!(read.len() >= 25, "found only {read:?}");
    for n in &read {
        assert!(
            LIBRARY.contains(&n.as_str()),
            "{n} is read but not in envvars::LIBRARY"
        );
    }
    for n in LIBRARY {
        assert!(
            read.iter().any(|r| r == n),
            "{n} is in envvars::LIBRARY but read nowhere"
        );
    }
    let guide = std::fs::read_to_string(root.join("docs/user-guide.md")).unwrap();
    let mut documented = 0;
    for line in guide.lines().filter(|l| l.starts_with("| `PCOLL_")) {
        let first = line.split('|').nth(1).unwrap();
        // Every name in the first cell is in backticks (`PCOLL_REDUCE`, `PCOLL_ALLREDUCE`, ...).
        for n in names_after(first, "`") {
            assert!(
                LIBRARY.contains(&n.as_str()),
                "the guide documents {n}, unknown to envvars::LIBRARY"
            );
            documented += 1;
        }
    }
    assert!(
        documented >= 20,
        "only {documented} variables found in the guide's table"
    );
}

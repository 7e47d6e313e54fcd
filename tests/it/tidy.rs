//! House rules checked over the source tree: every module opens with a `//!` header saying what
//! it owns, and the layer boundaries of docs/ARCHITECTURE.md hold (sled and blake3 only in
//! `ledger/`, rmcp only in `tools/` and `server/`, axum only in `server/`).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(&p).expect("read source"))
        })
        .collect()
}

#[test]
fn every_module_opens_with_a_doc_header() {
    let missing: Vec<String> = sources()
        .into_iter()
        .filter(|(_, text)| !text.starts_with("//!"))
        .map(|(path, _)| path)
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a `//!` header: {missing:?}"
    );
}

#[test]
fn each_dependency_stays_in_its_layer() {
    // (crate path as written in code, the top-level modules allowed to use it)
    let rules: &[(&str, &[&str])] = &[
        ("sled::", &["ledger"]),
        ("blake3::", &["ledger"]),
        ("rmcp::", &["tools", "server"]),
        ("axum::", &["server"]),
    ];
    let mut violations = Vec::new();
    for (path, text) in sources() {
        let top = path
            .split('/')
            .next()
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_owned();
        for (needle, allowed) in rules {
            if text.contains(needle) && !allowed.contains(&top.as_str()) {
                violations.push(format!("{path} uses {needle}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layer boundaries crossed: {violations:?}"
    );
}

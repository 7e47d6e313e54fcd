//! House rules checked over the source tree: every module opens with a `//!` header saying what
//! it owns, the layer boundaries of docs/ARCHITECTURE.md hold (sled and blake3 only in
//! `ledger/`, rmcp only in `tools/` and `server/`, axum only in `server/`), and each tool family
//! keeps to its own rooms (no family imports another; the shared call machinery imports none).

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
        ("tantivy::", &["index"]),
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

/// The tool families. Each is a room of its own under `app/` and, when it has facts or a fold of
/// its own, under `events/` and `projections/` (`<layer>/<family>.rs` or `<layer>/<family>/`).
/// A family is every module directly under `app/` that is neither shared machinery ([`SHARED`])
/// nor the wiring ([`WIRING`]), so a new family is guarded as soon as its room exists.
fn families() -> Vec<String> {
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app");
    let mut out: Vec<String> = std::fs::read_dir(&app)
        .expect("read src/app")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            let shared = |s: &&str| s.strip_prefix("app/") == Some(name.as_str());
            !SHARED.iter().any(shared) && !WIRING.contains(&name.as_str())
        })
        .map(|name| name.trim_end_matches(".rs").to_owned())
        .collect();
    out.sort();
    out
}

/// The files under `app/` that name every family: the decider (`mod.rs`), its dispatch
/// (`registry.rs`) and the tests that drive them.
const WIRING: &[&str] = &["mod.rs", "registry.rs", "tests.rs"];

#[test]
fn every_room_under_app_is_a_dispatched_family_or_shared() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app/registry.rs");
    let registry = std::fs::read_to_string(root).expect("read app/registry.rs");
    let found = families();
    assert!(found.len() >= 7, "too few families found: {found:?}");
    let undispatched: Vec<&String> = found
        .iter()
        .filter(|family| !registry.contains(&format!("{family}::")))
        .collect();
    assert!(
        undispatched.is_empty(),
        "modules under app/ that the registry does not dispatch; add the family's line to \
         app/registry.rs, or list shared machinery in SHARED: {undispatched:?}"
    );
}

/// The layers in which families have rooms.
const FAMILY_LAYERS: &[&str] = &["app", "events", "projections"];

/// The shared machinery under `app/` that every family may use and that must know none of them
/// (`app/mod.rs` and `app/registry.rs` are the wiring that names every family).
const SHARED: &[&str] = &[
    "app/call",
    "app/tags.rs",
    "app/texts.rs",
    "app/lenient.rs",
    "app/idempotency.rs",
    "app/snapshot.rs",
    "app/providers.rs",
];

/// The module path of a source file (`app/deliberation/graph/mod.rs` → app, deliberation, graph).
fn module_path(file: &str) -> Vec<String> {
    let mut path: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    path
}

/// Reads `a::b::{c, d::e}` from the start of `text` (after a path root): every full path it
/// names, each appended to `prefix`.
fn read_paths(text: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    let mut at = 0;
    let bytes = text.as_bytes();
    loop {
        if bytes.get(at) == Some(&b'{') {
            at += 1;
            loop {
                while bytes
                    .get(at)
                    .is_some_and(|b| b.is_ascii_whitespace() || *b == b',')
                {
                    at += 1;
                }
                match bytes.get(at) {
                    None => return at,
                    Some(b'}') => return at + 1,
                    Some(_) => at += read_paths(&text[at..], &path, out).max(1),
                }
            }
        }
        let ident: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        at += ident.len();
        if ident == "super" {
            path.pop();
        } else if !ident.is_empty() && ident != "self" {
            path.push(ident);
        }
        if text[at..].starts_with("::") {
            at += 2;
        } else {
            out.push(path);
            return at;
        }
    }
}

/// Every crate path a source file's code names through `crate::` or `super::`, resolved from
/// its module (comment lines are skipped; a path through a layer's re-exports is not followed).
fn named_paths(file: &str, text: &str) -> Vec<Vec<String>> {
    let here = module_path(file);
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (root, levels_up) in [("crate::", None), ("super::", Some(1))] {
        let mut from = 0;
        while let Some(found) = code[from..].find(root) {
            let start = from + found;
            from = start + root.len();
            let boundary = code[..start]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
            if !boundary {
                continue;
            }
            let base = match levels_up {
                None => Vec::new(),
                Some(up) => here[..here.len().saturating_sub(up)].to_vec(),
            };
            read_paths(&code[from..], &base, &mut out);
        }
    }
    out
}

/// The family a path names, if it names one of `families` (`app::deliberation::…` →
/// deliberation).
fn family_of(path: &[String], families: &[String]) -> Option<String> {
    let layer = path.first()?;
    let family = path.get(1)?;
    if !FAMILY_LAYERS.contains(&layer.as_str()) {
        return None;
    }
    families.iter().find(|f| *f == family).cloned()
}

#[test]
fn no_family_imports_another_family() {
    let families = families();
    let mut violations = Vec::new();
    for (file, text) in sources() {
        let Some(own) = family_of(&module_path(&file), &families) else {
            continue;
        };
        for path in named_paths(&file, &text) {
            if let Some(other) = family_of(&path, &families).filter(|f| *f != own) {
                violations.push(format!(
                    "{file} ({own}) names {} ({other})",
                    path.join("::")
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "families import each other; move what they share into app/call (or another shared \
         module) instead: {violations:#?}"
    );
}

#[test]
fn the_shared_call_machinery_knows_no_family() {
    let families = families();
    let mut violations = Vec::new();
    for (file, text) in sources() {
        if !SHARED
            .iter()
            .any(|s| file == *s || file.starts_with(&format!("{s}/")))
        {
            continue;
        }
        for path in named_paths(&file, &text) {
            if path.first().is_some_and(|l| l == "app")
                && let Some(family) = family_of(&path, &families)
            {
                violations.push(format!("{file} names {} ({family})", path.join("::")));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "shared machinery depends on a family: {violations:#?}"
    );
}

//! House rules checked over the source tree: every module opens with a `//!` header saying what
//! it owns, the layer boundaries of docs/ARCHITECTURE.md hold (sled only in `ledger/`, blake3
//! only in `ledger/` and `model/`, rmcp only in `tools/`, `server/` and `agent/`, axum only in `server/`,
//! OpenTelemetry only in `otel.rs`), docs/ARCHITECTURE.md stays a short map whose invariants name
//! real tests,
//! and each tool family
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
        ("blake3::", &["ledger", "model"]),
        ("foldhash::", &["ledger"]),
        ("rmcp::", &["tools", "server", "agent"]),
        ("axum::", &["server"]),
        ("tantivy::", &["index"]),
        ("candle_core::", &["embed"]),
        ("candle_nn::", &["embed"]),
        ("candle_transformers::", &["embed"]),
        ("tokenizers::", &["embed"]),
        ("model2vec_rs::", &["embed"]),
        ("reqwest::", &["model", "otel", "anchor"]),
        ("opentelemetry::", &["otel"]),
        ("opentelemetry_sdk::", &["otel"]),
        ("opentelemetry_otlp::", &["otel"]),
        ("tokio_postgres::", &["ledger"]),
        ("deadpool_postgres::", &["ledger"]),
        ("rustls::", &["ledger"]),
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

/// The layers inside the crate, innermost first (docs/ARCHITECTURE.md, "Code map"): for each
/// top-level module, the modules it must never name, and why. A lower layer never names a higher
/// one: `tools → app → events/projections → ledger`, and the ledger takes no effects.
const LAYER_EDGES: &[(&str, &[&str], &str)] = &[
    (
        "events",
        &[
            "ledger",
            "projections",
            "effects",
            "audit",
            "export",
            "app",
            "tools",
            "server",
            "cli",
        ],
        "the persisted contract is the innermost layer",
    ),
    (
        "effects",
        &[
            "ledger",
            "projections",
            "audit",
            "export",
            "app",
            "tools",
            "server",
            "cli",
        ],
        "the one door for effects needs nothing above events",
    ),
    (
        "ledger",
        &[
            "effects", "audit", "export", "app", "tools", "server", "cli",
        ],
        "the ledger (its writer included) stores and orders; it takes no effect, provider or rule",
    ),
    (
        "projections",
        &[
            "effects", "audit", "export", "app", "tools", "server", "cli",
        ],
        "folds are pure and know no rules",
    ),
    (
        "embed",
        &[
            "events",
            "ledger",
            "projections",
            "index",
            "effects",
            "audit",
            "export",
            "app",
            "tools",
            "server",
            "cli",
        ],
        "an embedder turns text into vectors and knows nothing of the ledger",
    ),
    (
        "model",
        &[
            "events",
            "ledger",
            "projections",
            "index",
            "embed",
            "effects",
            "audit",
            "export",
            "app",
            "tools",
            "server",
            "cli",
        ],
        "a model provider makes calls and records them; callers take them as effects and record them",
    ),
    (
        "index",
        &[
            "ledger",
            "projections",
            "effects",
            "audit",
            "export",
            "app",
            "tools",
            "server",
            "cli",
        ],
        "a derived index holds what it is given; the log, not the index, is the truth",
    ),
    (
        "audit",
        &["app", "tools", "server", "cli"],
        "the audit format sits below the decisions",
    ),
    (
        "export",
        &["app", "tools", "server", "cli"],
        "read tools compute exports inside decisions",
    ),
    (
        "app",
        &["tools", "server", "cli", "agent"],
        "the rules know no MCP and no transport",
    ),
    (
        "tools",
        &["server", "cli", "agent"],
        "the MCP face knows no transport",
    ),
    (
        "agent",
        &["server", "cli"],
        "the reasoning engine drives the ledger and its tools in process; the CLI wires it",
    ),
    (
        "metrics",
        &[
            "events",
            "ledger",
            "projections",
            "index",
            "embed",
            "model",
            "effects",
            "audit",
            "export",
            "app",
            "tools",
            "agent",
            "server",
            "cli",
        ],
        "the process's metrics are a leaf every layer records into: they are told what to count",
    ),
    (
        "otel",
        &[
            "ledger",
            "projections",
            "index",
            "embed",
            "model",
            "effects",
            "audit",
            "export",
            "app",
            "tools",
            "agent",
            "server",
            "cli",
        ],
        "the spans are told what a call was; they know only the events' trace context",
    ),
    (
        "anchor",
        &[
            "projections",
            "index",
            "embed",
            "model",
            "export",
            "app",
            "tools",
            "agent",
            "server",
            "cli",
            "otel",
        ],
        "time anchoring follows the ledger's checkpoints; it knows no rules, calls or transport",
    ),
];

/// Each crate path `file` names that its layer must not name (by [`LAYER_EDGES`]).
fn layer_violations(file: &str, text: &str) -> Vec<String> {
    let layer = module_path(file).into_iter().next().unwrap_or_default();
    let Some((_, forbidden, why)) = LAYER_EDGES.iter().find(|(l, ..)| *l == layer) else {
        return Vec::new();
    };
    named_paths(file, text)
        .into_iter()
        .filter(|path| {
            path.first()
                .is_some_and(|top| forbidden.contains(&top.as_str()))
        })
        .map(|path| format!("{file} ({layer}) names {} ({why})", path.join("::")))
        .collect()
}

#[test]
fn no_layer_names_a_layer_above_it() {
    let sources = sources();
    let mut violations = Vec::new();
    let mut layers_seen = std::collections::BTreeSet::new();
    for (file, text) in &sources {
        layers_seen.insert(module_path(file).into_iter().next().unwrap_or_default());
        violations.extend(layer_violations(file, text));
    }
    let missing: Vec<&str> = LAYER_EDGES
        .iter()
        .map(|(l, ..)| *l)
        .filter(|l| !layers_seen.contains(*l))
        .collect();
    assert!(missing.is_empty(), "layers with no source: {missing:?}");
    assert!(
        violations.is_empty(),
        "a layer names one above it (docs/ARCHITECTURE.md, \"Code map\"); move what both need \
         down, or pass it in: {violations:#?}"
    );
}

#[test]
fn the_layer_guard_sees_what_it_must() {
    assert_eq!(
        layer_violations(
            "ledger/writer.rs",
            "use crate::effects::Prepared;\nuse crate::events::Event;"
        ),
        [
            "ledger/writer.rs (ledger) names effects::Prepared (the ledger (its writer included) \
          stores and orders; it takes no effect, provider or rule)"
        ]
    );
    assert_eq!(
        layer_violations(
            "app/deliberation/graph/mod.rs",
            "use super::super::super::tools::Catalog;"
        )
        .len(),
        1
    );
    assert_eq!(
        layer_violations("projections/mod.rs", "use crate::{events::Fact, app::App};").len(),
        1
    );
    assert!(
        layer_violations(
            "app/mod.rs",
            "// crate::tools is above\nuse crate::ledger::X;"
        )
        .is_empty()
    );
    assert!(layer_violations("tools/mod.rs", "use crate::app::App;").is_empty());
    assert!(layer_violations("main.rs", "use crate::server;").is_empty());
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

/// The files under `app/` that are no family's room: the decider (`mod.rs`), one call's
/// decision (`decide.rs`), the dispatch (`registry.rs`) and the tests that drive them.
const WIRING: &[&str] = &[
    "mod.rs",
    "decide.rs",
    "registry.rs",
    "tests.rs",
    "two_phase_tests.rs",
];

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
    "app/draws.rs",
    "app/errors.rs",
    "app/bodies.rs",
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

/// The files that are test code only: a `#[cfg(test)]` module declared in its parent (`mod
/// tests;`, `pub mod testing;`), with everything under it.
fn test_only_modules(sources: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in sources {
        let dir = match file.rsplit_once('/') {
            _ if file == "lib.rs" || file == "main.rs" => String::new(),
            Some((dir, "mod.rs")) => format!("{dir}/"),
            _ => format!("{}/", file.trim_end_matches(".rs")),
        };
        let mut lines = text.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if line != "#[cfg(test)]" {
                continue;
            }
            let Some(next) = lines.next() else { break };
            let declared = next
                .split_once("mod ")
                .filter(|(vis, _)| vis.is_empty() || vis.starts_with("pub"))
                .and_then(|(_, rest)| rest.strip_suffix(';'));
            if let Some(name) = declared {
                out.push(format!("{dir}{name}"));
            }
        }
    }
    out
}

/// The text of `file` that is not test code or a comment: an inline `#[cfg(test)] mod tests`
/// at the end is cut, and so is every `//` comment.
fn code_without_tests_or_comments(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every source file that is not test code, with its code stripped of inline tests and
/// comments ([`test_only_modules`], [`code_without_tests_or_comments`]).
fn production_code(sources: &[(String, String)]) -> Vec<(&str, String)> {
    let tests = test_only_modules(sources);
    sources
        .iter()
        .filter(|(file, _)| {
            let stem = file.trim_end_matches(".rs").trim_end_matches("/mod");
            !tests
                .iter()
                .any(|t| stem == t || file.starts_with(&format!("{t}/")))
        })
        .map(|(file, text)| (file.as_str(), code_without_tests_or_comments(text)))
        .collect()
}

/// Most lines of non-test code one source file may hold, so that a reader can take it in at one
/// sitting (issue 42). An inline `#[cfg(test)] mod tests` at the end does not count, nor do
/// test-only modules (`tests.rs` beside the code).
const MOST_LINES: usize = 800;

/// The files still over [`MOST_LINES`]: a list that only shrinks. None may join it; a file
/// leaves it once split along its seams (the test fails while a listed file is within the limit,
/// so the list stays true).
const LONG_FILES: &[&str] = &[];

#[test]
fn no_file_of_non_test_code_is_over_800_lines() {
    let sources = sources();
    let tests = test_only_modules(&sources);
    let mut over = Vec::new();
    let mut within = Vec::new();
    for (file, text) in &sources {
        let stem = file.trim_end_matches(".rs").trim_end_matches("/mod");
        if tests
            .iter()
            .any(|t| stem == t || file.starts_with(&format!("{t}/")))
        {
            continue;
        }
        let code = match text.find("#[cfg(test)]\nmod tests {") {
            Some(at) => &text[..at],
            None => text.as_str(),
        };
        let lines = code.lines().count();
        let listed = LONG_FILES.contains(&file.as_str());
        if lines > MOST_LINES && !listed {
            over.push(format!("{file}: {lines} lines"));
        } else if lines <= MOST_LINES && listed {
            within.push(file.clone());
        }
    }
    let gone: Vec<&&str> = LONG_FILES
        .iter()
        .filter(|listed| !sources.iter().any(|(file, _)| file == *listed))
        .collect();
    assert!(
        over.is_empty(),
        "files over {MOST_LINES} lines of non-test code (split them along their seams): {over:#?}"
    );
    assert!(
        within.is_empty() && gone.is_empty(),
        "LONG_FILES lists files now within {MOST_LINES} lines or gone; take them off: \
         {within:?} {gone:?}"
    );
}

/// Most lines one function of non-test code may span, from its `fn` line to its closing brace
/// (its doc comment and attributes not counted), so that a reader can hold it in one sitting
/// (issue 42): past that, its steps become named helpers.
const MOST_FUNCTION_LINES: usize = 120;

/// The functions still over [`MOST_FUNCTION_LINES`], as `"file::fn"`: a list that only shrinks.
/// None may join it; a function leaves it once split into named steps (the test fails while a
/// listed function is within the limit, so the list stays true).
const LONG_FUNCTIONS: &[&str] = &[];

/// How many functions [`LONG_FUNCTIONS`] may hold: issue 42 allows at most 5.
const MOST_LONG_FUNCTIONS: usize = 5;

/// Each function in `code` (non-test code without comments, [`production_code`]) with the
/// lines it spans, from its `fn` line to its closing brace, in source order. The closing brace
/// is the first line after the signature at the `fn` line's indentation (rustfmt's layout); a
/// body opened and closed on one line spans one line; a declaration without a body (`fn f();`
/// in a trait) is not counted.
fn function_lengths(code: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = declared_fn(line) else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        // The line that opens the body, or ends a declaration without one.
        let Some(open) = (start..lines.len())
            .find(|&i| lines[i].contains('{') || lines[i].trim_end().ends_with(';'))
        else {
            continue;
        };
        if !lines[open].contains('{') {
            continue;
        }
        let (opened, closed) = (
            lines[open].matches('{').count(),
            lines[open].matches('}').count(),
        );
        let end = if opened == closed {
            Some(open)
        } else {
            (open + 1..lines.len()).find(|&i| {
                let l = lines[i];
                l.get(..indent).is_some_and(|pad| pad.trim().is_empty())
                    && l.get(indent..).is_some_and(|rest| rest.starts_with('}'))
            })
        };
        if let Some(end) = end {
            out.push((name.to_owned(), end - start + 1));
        }
    }
    out
}

/// The name of the function a line declares (`pub(crate) async fn name(`, `const fn name<`,
/// …), if it declares one.
fn declared_fn(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scoped) => scoped.split_once(')')?.1,
            None => after,
        }
        .trim_start();
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest).trim_start();
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

#[test]
fn no_function_of_non_test_code_is_over_120_lines() {
    let sources = sources();
    let mut over = Vec::new();
    let mut within = Vec::new();
    let mut seen = Vec::new();
    for (file, code) in production_code(&sources) {
        for (name, lines) in function_lengths(&code) {
            let key = format!("{file}::{name}");
            let listed = LONG_FUNCTIONS.contains(&key.as_str());
            if lines > MOST_FUNCTION_LINES && !listed {
                over.push(format!("{key}: {lines} lines"));
            } else if lines <= MOST_FUNCTION_LINES && listed {
                within.push(key.clone());
            }
            seen.push(key);
        }
    }
    let gone: Vec<&&str> = LONG_FUNCTIONS
        .iter()
        .filter(|listed| !seen.iter().any(|key| key == *listed))
        .collect();
    assert!(
        over.is_empty(),
        "functions over {MOST_FUNCTION_LINES} lines of non-test code (split them into named \
         steps): {over:#?}"
    );
    assert!(
        within.is_empty() && gone.is_empty(),
        "LONG_FUNCTIONS lists functions now within {MOST_FUNCTION_LINES} lines or gone; take \
         them off: {within:?} {gone:?}"
    );
    assert!(
        LONG_FUNCTIONS.len() <= MOST_LONG_FUNCTIONS,
        "at most {MOST_LONG_FUNCTIONS} functions may stay over {MOST_FUNCTION_LINES} lines: \
         {LONG_FUNCTIONS:#?}"
    );
}

#[test]
fn the_function_length_guard_sees_what_it_must() {
    let body = "    let x = 1;\n".repeat(MOST_FUNCTION_LINES);
    let code = code_without_tests_or_comments(&format!(
        "pub(crate) async fn long(\n    a: u8,\n) -> u8 {{\n{body}    if a > 0 {{\n        \
         x\n    }}\n}}\n\nimpl T {{\n    fn empty() {{}}\n    // fn commented() {{\n    \
         pub(in crate::app) const fn short() -> u8 {{\n        1\n    }}\n}}\n\ntrait U {{\n    \
         fn declared(&self);\n}}\n\n#[cfg(test)]\nmod tests {{\n    fn in_a_test() {{\n{body}\
         }}\n}}\n"
    ));
    let lengths = function_lengths(&code);
    assert_eq!(
        lengths,
        [
            ("long".to_owned(), MOST_FUNCTION_LINES + 7),
            ("empty".to_owned(), 1),
            ("short".to_owned(), 3),
        ]
    );
    assert_eq!(declared_fn("    pub fn f<T>(t: T) {"), Some("f"));
    assert_eq!(declared_fn("let f = |x| x; // Fn(u8)"), None);
    assert_eq!(declared_fn("progress: &dyn Fn(u64, u64),"), None);
}

/// Whether `needle` occurs in `code` as a path of its own (not the tail of a longer name, as
/// `rand::` is of `operand::`).
fn names(code: &str, needle: &str) -> bool {
    code.match_indices(needle).any(|(at, _)| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn effects_come_through_one_door() {
    // What a decision must never read: the clock, randomness, the environment.
    const EFFECTS: &[&str] = &[
        "Utc::now",
        "SystemTime::now",
        "env::var",
        "getrandom",
        "Uuid::new_v4",
        "rand::",
        "SessionId::random",
    ];
    // Where they may be read, and why. Everything else takes them from `effects.rs`, on the
    // caller's side, and decisions read them from the prepared command.
    const ALLOWED: &[(&str, &[&str], &str)] = &[
        ("effects.rs", EFFECTS, "the one door"),
        ("main.rs", EFFECTS, "the operator's commands"),
        ("cli/", EFFECTS, "the operator's commands"),
        (
            "ledger/writer/",
            &["Utc::now", "Uuid::new_v4"],
            "the ledger's own stamping: a new ledger's id and createdAt, a checkpoint's time",
        ),
        (
            "ledger/checkpoint/mod.rs",
            &["getrandom"],
            "the ledger's signing key, generated once",
        ),
        (
            "ledger/logfile.rs",
            &["env::var"],
            "the crash drills of debug builds (THINKLEDGER_DRILL_CRASH_BETWEEN_WRITES, \
             THINKLEDGER_DRILL_TORN_WRITE), read once",
        ),
        (
            "server/owner/",
            &["env::var", "SessionId::random"],
            "a relay's first session id and its idempotency keys' prefix, drawn before any \
             command; debug builds' THINKLEDGER_TEST_BUILD, which stages a relay of another \
             build in tests",
        ),
        (
            "tools/current.rs",
            &["SessionId::random"],
            "a caller's current-session slot, drawn on the caller's side before any command",
        ),
    ];
    let sources = sources();
    let mut violations = Vec::new();
    for (file, code) in production_code(&sources) {
        let allowed: Vec<&str> = ALLOWED
            .iter()
            .filter(|(path, ..)| file == *path || (path.ends_with('/') && file.starts_with(path)))
            .flat_map(|(_, effects, _)| effects.iter().copied())
            .collect();
        for effect in EFFECTS {
            if names(&code, effect) && !allowed.contains(effect) {
                violations.push(format!("{file} reads {effect}"));
            }
        }
        if file.starts_with("app/") && names(&code, "Instant::now") {
            violations.push(format!(
                "{file} reads Instant::now (the writer measures a decision's time)"
            ));
        }
    }
    assert!(
        violations.is_empty(),
        "effects taken outside the one door (src/effects.rs): take them in `Effects::prepare` \
         on the caller's side and read them from the command's `Prepared`: {violations:#?}"
    );
}

#[test]
fn the_effects_guard_sees_what_it_must() {
    let sources = vec![
        (
            "app/mod.rs".to_owned(),
            "#[cfg(test)]\nmod tests;\n#[cfg(test)]\npub(crate) mod fixtures;\nmod live;"
                .to_owned(),
        ),
        ("lib.rs".to_owned(), "#[cfg(test)]\nmod testlog;".to_owned()),
        (
            "audit/build.rs".to_owned(),
            "#[cfg(test)]\nmod props;".to_owned(),
        ),
    ];
    assert_eq!(
        test_only_modules(&sources),
        ["app/tests", "app/fixtures", "testlog", "audit/build/props"]
    );
    let code = code_without_tests_or_comments(
        "let t = Utc::now(); // not SystemTime::now\n#[cfg(test)]\nmod tests {\n getrandom::fill() }",
    );
    assert!(names(&code, "Utc::now"));
    assert!(!names(&code, "SystemTime::now") && !names(&code, "getrandom"));
    assert!(names("rand::random()", "rand::") && !names("operand::x", "rand::"));
    assert!(names("std::env::var(x)", "env::var") && names("env::var_os(x)", "env::var"));
}

/// What a fold or a decision must never do itself: read the clock, randomness, the environment
/// or the filesystem (`effects.rs` takes a call's effects on the caller's side; the ledger's
/// views and the derived indexes do their own reading and writing).
const IO: &[&str] = &[
    "Instant::now",
    "SystemTime",
    "Utc::now",
    "Local::now",
    "getrandom",
    "rand::",
    "Uuid::new_v4",
    "SessionId::random",
    "env::var",
    "env::args",
    "std::fs",
    "fs::",
    "File::",
    "OpenOptions",
    "thread::sleep",
    "thread::spawn",
];

/// What a fold must not hold besides: a lock, shared by every view of the state (a cache the
/// fold keeps in step lives outside `projections/`, lent through a trait).
const LOCKS: &[&str] = &["Mutex", "RwLock"];

/// Each file under `app/` and `projections/`, not test code, that names one of [`IO`] (or, in
/// `projections/`, [`LOCKS`]), and what it names.
fn io_in_folds_and_decisions(sources: &[(String, String)]) -> Vec<String> {
    let mut violations = Vec::new();
    for (file, code) in production_code(sources) {
        let banned: Vec<&str> = if file.starts_with("projections/") {
            IO.iter().chain(LOCKS).copied().collect()
        } else if file.starts_with("app/") {
            IO.to_vec()
        } else {
            continue;
        };
        for needle in banned {
            if names(&code, needle) {
                violations.push(format!("{file} names {needle}"));
            }
        }
    }
    violations
}

#[test]
fn folds_and_decisions_do_no_io() {
    let violations = io_in_folds_and_decisions(&sources());
    assert!(
        violations.is_empty(),
        "a fold or a decision reads the clock, randomness, the environment or the filesystem, \
         or a fold holds a lock: take effects in `Effects::prepare`, and keep what is derived \
         from the state (an index, a cache) outside `projections/` and `app/`, fed by the \
         writer (`Decider::derive`) or lent through a trait: {violations:#?}"
    );
}

#[test]
fn the_fold_and_decision_guard_sees_what_it_must() {
    let sources = vec![
        (
            "projections/x.rs".to_owned(),
            "use std::sync::Mutex;\nfn f() { let _ = std::fs::remove_dir_all(\"d\"); }\n\
             #[cfg(test)]\nmod tests {\n fn t() { std::time::Instant::now(); } }"
                .to_owned(),
        ),
        (
            "app/y.rs".to_owned(),
            "// Instant::now in a comment\nstatic C: std::sync::Mutex<u8> = Mutex::new(0);\n\
             fn g() -> u128 { std::time::Instant::now().elapsed().as_nanos() }"
                .to_owned(),
        ),
        (
            "app/mod.rs".to_owned(),
            "#[cfg(test)]\nmod tests;".to_owned(),
        ),
        (
            "app/tests.rs".to_owned(),
            "fn t() { std::fs::read(\"x\").ok(); }".to_owned(),
        ),
        (
            "index/z.rs".to_owned(),
            "fn h() { std::fs::remove_dir_all(\"d\").ok(); }".to_owned(),
        ),
    ];
    assert_eq!(
        io_in_folds_and_decisions(&sources),
        [
            "projections/x.rs names std::fs",
            "projections/x.rs names fs::",
            "projections/x.rs names Mutex",
            "app/y.rs names Instant::now",
        ]
    );
}

/// The tool names, read from their declarations (`pub const <NAME>_TOOL: &str = "<name>";`,
/// next to each tool's spec in its family's room), each with the file declaring it.
fn declared_tool_names(sources: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (file, text) in sources {
        for line in text.lines().map(str::trim) {
            let Some(rest) = line.strip_prefix("pub const ") else {
                continue;
            };
            let Some((ident, value)) = rest.split_once(": &str = \"") else {
                continue;
            };
            if let Some(name) = value.strip_suffix("\";")
                && ident.ends_with("_TOOL")
            {
                out.push((file.clone(), name.to_owned()));
            }
        }
    }
    out
}

/// Where a string literal equal to a tool name means something else, and what.
const NOT_A_TOOL: &[(&str, &str, &str)] = &[
    ("main.rs", "=> \"erase\"", "the CLI's `erase` subcommand"),
    (
        "app/cognition/features.rs",
        "\"think\",",
        "the hedge word \"think\" (as in \"I think\") of the confidence features",
    ),
    (
        "app/cognition/argument/concepts.rs",
        "\"think\",",
        "the word \"think\" of the argument rules (\"think so\" is no inference; a stop word)",
    ),
    (
        "app/cognition/argument_words.rs",
        "\"think\",",
        "the word \"think\" in the argument rules' word lists (a verb of saying, not a claim)",
    ),
    ("main.rs", "=> \"export\"", "the CLI's `export` subcommand"),
    (
        "app/thinking.rs",
        "status: \"reset\"",
        "the reset output's `status` value",
    ),
    (
        "app/thinking.rs",
        "reason: \"reset\"",
        "a session's close reason",
    ),
];

/// The lines of `code` (test code and comments already cut) holding a string literal that is
/// exactly one of `names`: code referring to a tool by a literal rather than by its constant.
/// A name inside a longer literal (a description, a suggestion, prose) is not one.
fn tool_name_literals(file: &str, code: &str, names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("pub const ") && trimmed.contains("_TOOL: &str = ") {
            continue;
        }
        for name in names {
            let literal = format!("\"{name}\"");
            let found = line
                .match_indices(&literal)
                .any(|(at, _)| !line[..at].ends_with('\\'));
            let excused = NOT_A_TOOL
                .iter()
                .any(|(f, snippet, _)| *f == file && line.contains(snippet));
            if found && !excused {
                out.push(format!("{file}: {name} in `{trimmed}`"));
            }
        }
    }
    out
}

#[test]
fn no_tool_name_literal_outside_its_declaration() {
    let sources = sources();
    let declared = declared_tool_names(&sources);
    let names: Vec<String> = declared.iter().map(|(_, n)| n.clone()).collect();
    assert!(names.len() >= 30, "too few tool names declared: {names:?}");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a tool name declared twice");
    let mut violations = Vec::new();
    for (file, code) in production_code(&sources) {
        violations.extend(tool_name_literals(file, &code, &names));
    }
    assert!(
        violations.is_empty(),
        "tool names written as literals: use the tool's `<NAME>_TOOL` constant (declared next \
         to its spec), or, where a tool's behaviour depends on which tool it is, a property \
         of its spec or catalog entry (`tools::CallerEffect`): {violations:#?}"
    );
}

#[test]
fn the_tool_name_guard_sees_what_it_must() {
    let sources = vec![(
        "app/deliberation/mod.rs".to_owned(),
        "pub const CONSENSUS_ANSWER_TOOL: &str = \"consensus_answer\";".to_owned(),
    )];
    let names: Vec<String> = declared_tool_names(&sources)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(names, ["consensus_answer"]);
    let code = code_without_tests_or_comments(
        "const NEXT: &[&str] = &[\"consensus_answer\"];\n\
         let s = \"call consensus_answer next\";\n\
         let t = \"then \\\"consensus_answer\\\" again\";\n\
         // see \"consensus_answer\"\n\
         pub const CONSENSUS_ANSWER_TOOL: &str = \"consensus_answer\";\n\
         #[cfg(test)]\nmod tests {\n g.ok(\"consensus_answer\") }",
    );
    assert_eq!(
        tool_name_literals("app/x.rs", &code, &names),
        ["app/x.rs: consensus_answer in `const NEXT: &[&str] = &[\"consensus_answer\"];`"]
    );
    let reset = ["reset".to_owned()];
    assert!(tool_name_literals("app/thinking.rs", "status: \"reset\".into(),", &reset).is_empty());
    assert_eq!(
        tool_name_literals("app/thinking.rs", "if tool == \"reset\" {", &reset).len(),
        1
    );
}

/// README's "Toolsets" figures are what the server reports: each set's tool count and bytes
/// (`list_toolsets`), the default list's bytes and tools, and every tool's bytes together.
#[test]
fn readme_toolset_figures_match_what_the_server_reports() {
    use thinkledger::tools::{Catalog, Toolsets};
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let number = |text: &str| text.replace(',', "").parse::<u64>().expect("a number");
    let all = Catalog::new(Toolsets::all());
    let statuses = all.statuses(&Toolsets::all());
    let mut problems = Vec::new();
    for status in &statuses {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", status.name)));
        let Some(row) = row else {
            problems.push(format!("no README row for toolset {}", status.name));
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if number(cells[2]) != status.tools.len() as u64 || number(cells[3]) != status.bytes {
            problems.push(format!(
                "{}: README says {} tools, {} bytes; the server {} tools, {} bytes",
                status.name,
                cells[2],
                cells[3],
                status.tools.len(),
                status.bytes
            ));
        }
    }
    let default = Catalog::new(Toolsets::default_sets());
    let listed = default.tools(&Toolsets::default_sets());
    let default_bytes = serde_json::to_vec(&rmcp::model::ListToolsResult::with_all_items(
        listed.clone(),
    ))
    .expect("serialize")
    .len();
    let total: u64 = statuses.iter().map(|s| s.bytes).sum();
    let count: usize = statuses.iter().map(|s| s.tools.len()).sum();
    for (figure, what) in [
        (
            format!(
                "**{} bytes** of `tools/list` ({} tools)",
                thousands(default_bytes as u64),
                listed.len()
            ),
            "the default list",
        ),
        (
            format!(
                "lists all {count} tools (their definitions weigh {} bytes together)",
                thousands(total)
            ),
            "every tool",
        ),
    ] {
        if !readme.replace('\n', " ").contains(&figure) {
            problems.push(format!("README does not say {what}: {figure}"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// docs/ARCHITECTURE.md is a map a newcomer reads in one sitting, and what it claims is checked:
/// at most 6,000 words (as `wc -w` counts them), and each of its architecture invariants names
/// the test that checks it as `` `test: path::to::fn_name` `` (a function that exists under
/// `src/` or `tests/`), or says "(no test yet)".
#[test]
fn the_architecture_map_is_short_and_its_invariants_name_real_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE");
    let words = map.split_whitespace().count();
    assert!(
        words <= 6_000,
        "docs/ARCHITECTURE.md has {words} words (at most 6,000): move the detail to the doc it \
         belongs to and leave a line and a link"
    );

    let cited = cited_tests(&map);
    assert!(cited.len() >= 20, "too few tests cited: {cited:?}");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    let code: Vec<String> = files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read source"))
        .collect();
    let missing: Vec<&String> = cited
        .iter()
        .filter(|path| {
            let name = path.rsplit("::").next().unwrap_or(path.as_str());
            let declared = [format!("fn {name}("), format!("fn {name}<")];
            !code
                .iter()
                .any(|text| declared.iter().any(|d| text.contains(d.as_str())))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md cites tests that do not exist: {missing:?}"
    );

    let section = map
        .split("\n## ")
        .find(|s| s.starts_with("Architecture invariants"))
        .expect("an \"Architecture invariants\" section");
    let mut invariants: Vec<String> = Vec::new();
    for line in section.lines() {
        if line.starts_with("- ") {
            invariants.push(line.to_owned());
        } else if line.starts_with("  ")
            && let Some(last) = invariants.last_mut()
        {
            last.push_str(line);
        }
    }
    let unguarded: Vec<&String> = invariants
        .iter()
        .filter(|i| !i.contains("`test: ") && !i.contains("(no test yet)"))
        .collect();
    assert!(
        unguarded.is_empty(),
        "invariants that name no test (cite one as `test: path::fn_name`, or say \
         \"(no test yet)\"): {unguarded:#?}"
    );
}

/// The tests a text cites: every `` `test: path::fn_name` `` in it, by path.
fn cited_tests(text: &str) -> Vec<String> {
    text.split("`test: ")
        .skip(1)
        .filter_map(|rest| rest.split('`').next())
        .map(|path| path.trim().to_owned())
        .collect()
}

#[test]
fn the_cited_test_reader_sees_what_it_must() {
    assert_eq!(
        cited_tests("- **A.** Checked by `test: tidy::a_b` and `test: x::y::c_d`; `fn e`."),
        ["tidy::a_b", "x::y::c_d"]
    );
    assert!(cited_tests("no citation: `tidy::a_b`").is_empty());
}

/// The code map of docs/ARCHITECTURE.md has one line per module that is not test code,
/// `` - `path/to/module.rs` — what it is for ``, and names no module that does not exist.
#[test]
fn the_code_map_lists_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE");
    let code_map = map
        .split("\n## ")
        .find(|s| s.starts_with("Code map"))
        .expect("a \"Code map\" section");
    let listed: Vec<&str> = code_map
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split_once("` — "))
        .map(|(path, _)| path)
        .filter(|path| path.ends_with(".rs"))
        .collect();
    let sources = sources();
    let unlisted: Vec<&str> = production_code(&sources)
        .into_iter()
        .map(|(file, _)| file)
        .filter(|file| !listed.contains(file))
        .collect();
    assert!(
        unlisted.is_empty(),
        "modules without a line in docs/ARCHITECTURE.md's code map (add \
         `- \\`path\\` — what it is for, in one sentence.`): {unlisted:?}"
    );
    let gone: Vec<&&str> = listed
        .iter()
        .filter(|path| !sources.iter().any(|(file, _)| file.as_str() == **path))
        .collect();
    assert!(
        gone.is_empty(),
        "docs/ARCHITECTURE.md's code map names modules that do not exist: {gone:?}"
    );
}

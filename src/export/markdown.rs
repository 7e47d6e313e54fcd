//! The `export` tool's markdown document, in the shape of the MAXential Thinking v2.2 plan:
//!
//! ```markdown
//! # Thinking Chain
//!
//! ## Main Thread
//!
//! ### Thought 1
//! Testing after restart
//!
//! ### Thought 3 (revises #2) [decision]
//! Confirmed: API layer was the problem.
//!
//! ---
//!
//! ## Branch: alt-approach
//! *Branched from thought 2*
//!
//! ### Thought 4
//! What if we tried a different approach...
//!
//! *Branch concluded at thought 4*
//! ```
//!
//! Choices the plan leaves open:
//! - Branches are never closed in this server, so the plan's `*Branch closed with conclusion: …*`
//!   has no source. Instead, when a branch's last thought said `nextThoughtNeeded: false`, the
//!   branch ends with `*Branch concluded at thought N*`.
//! - A revision without a revised number shows ` (revision)`; an erased text shows
//!   `*[text erased]*`; an empty main thread shows `*No thoughts recorded*`. Exporting one branch
//!   (`branch_id`) leaves out the main-thread section.
//! - Tags and branch ids are flattened to one line, so a heading stays one heading.
//!
//! Thought text is user markdown and keeps rendering as markdown (lists, emphasis, code), but it
//! cannot change the document's structure. Each line that would start a block able to spoof or
//! swallow ours gets a backslash before its first character, which renders as the literal
//! character: ATX headings (`#`), thematic breaks and setext underlines (`---`, `***`, `___`,
//! `===`), HTML blocks (`<`), and whole-line `*italic*` (the shape of this document's own
//! markers). Fenced code blocks are kept, and one left open is closed at the end of its thought.
//! Other control characters (NUL, escape sequences) become `�`, as CommonMark does with NUL.
//! A lone CR counts as a line break (as in CommonMark) and lines indented four columns or more
//! cannot start a block, so they are left alone; every thought is followed by a blank line,
//! which ends any paragraph, list or quote it opened.
//!
//! Must not know: MCP, the ledger, or which tool asked.

use super::{ExportOptions, SelectedBranch, Selection, select, single_line};
use crate::projections::{Session, Thought};

/// The markdown document for `session`.
#[must_use]
pub fn render(session: &Session, opts: &ExportOptions) -> String {
    let Selection { main, branches } = select(session, opts);
    let mut blocks = vec!["# Thinking Chain".to_owned()];
    if opts.branch_id.is_none() {
        blocks.push("## Main Thread".to_owned());
        if main.is_empty() {
            blocks.push("*No thoughts recorded*".to_owned());
        }
        blocks.extend(main.iter().map(|(_, t)| thought_block(t)));
    }
    for branch in &branches {
        if blocks.len() > 1 {
            blocks.push("---".to_owned());
        }
        branch_blocks(branch, &mut blocks);
    }
    let mut out = blocks.join("\n\n");
    out.push('\n');
    out
}

fn branch_blocks(selected: &SelectedBranch<'_>, blocks: &mut Vec<String>) {
    let branch = selected.branch;
    blocks.push(format!(
        "## Branch: {}\n*Branched from thought {}*",
        heading_text(&branch.id),
        branch.from_thought
    ));
    if selected.thoughts.is_empty() {
        blocks.push("*No thoughts recorded*".to_owned());
    }
    blocks.extend(selected.thoughts.iter().map(|(_, t)| thought_block(t)));
    if let Some((_, last)) = selected.thoughts.last()
        && !last.next_thought_needed
    {
        blocks.push(format!(
            "*Branch concluded at thought {}*",
            last.thought_number
        ));
    }
}

fn thought_block(thought: &Thought) -> String {
    let mut out = format!("### Thought {}", thought.thought_number);
    if let Some(revised) = thought.revises_thought {
        out.push_str(&format!(" (revises #{revised})"));
    } else if thought.is_revision {
        out.push_str(" (revision)");
    }
    let tags: Vec<String> = thought
        .tags
        .iter()
        .map(|t| single_line(t))
        .filter(|t| !t.is_empty())
        .collect();
    if !tags.is_empty() {
        out.push_str(&format!(" [{}]", tags.join(", ")));
    }
    match thought.text.as_deref() {
        None => out.push_str("\n*[text erased]*"),
        Some(text) => push_body(&mut out, text),
    }
    out
}

/// A user string for a heading: one line, and a trailing `#` escaped so it is not taken for the
/// heading's optional closing sequence.
fn heading_text(raw: &str) -> String {
    let mut text = single_line(raw);
    if text.ends_with('#') {
        text.insert(text.len() - 1, '\\');
    }
    text
}

/// An open fenced code block: its fence character and length.
#[derive(Clone, Copy)]
struct Fence {
    mark: char,
    len: usize,
}

/// Appends the thought text, one line at a time, as described in the module docs.
fn push_body(out: &mut String, text: &str) {
    let text: String = text
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    let text = text.trim_end();
    if text.is_empty() {
        return;
    }
    let mut open: Option<Fence> = None;
    for line in text.split('\n') {
        out.push('\n');
        let Some(start) = block_start(line) else {
            out.push_str(line);
            continue;
        };
        let (indent, rest) = line.split_at(start);
        match open {
            Some(fence) => {
                if closes(rest, fence) {
                    open = None;
                }
                out.push_str(line);
            }
            None => {
                open = opening_fence(rest);
                out.push_str(indent);
                if open.is_none() && needs_escape(rest) {
                    out.push('\\');
                }
                out.push_str(rest);
            }
        }
    }
    if let Some(fence) = open {
        out.push('\n');
        out.extend(std::iter::repeat_n(fence.mark, fence.len));
    }
}

/// Where a line's content starts if it is indented less than four columns (so it may start a
/// block); `None` for deeper indentation. Tabs advance to the next multiple of four.
fn block_start(line: &str) -> Option<usize> {
    let mut column = 0;
    for (at, c) in line.char_indices() {
        match c {
            ' ' => column += 1,
            '\t' => column += 4 - column % 4,
            _ => return (column < 4).then_some(at),
        }
        if column >= 4 {
            return None;
        }
    }
    Some(line.len())
}

fn opening_fence(rest: &str) -> Option<Fence> {
    let mark = rest.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = rest.chars().take_while(|&c| c == mark).count();
    let info = rest.trim_start_matches(mark);
    (len >= 3 && !(mark == '`' && info.contains('`'))).then_some(Fence { mark, len })
}

fn closes(rest: &str, fence: Fence) -> bool {
    let len = rest.chars().take_while(|&c| c == fence.mark).count();
    len >= fence.len && rest.trim_start_matches(fence.mark).trim().is_empty()
}

/// Whether a line (without its indentation) would start a heading, a rule, an HTML block or a
/// line shaped like this document's italic markers.
fn needs_escape(rest: &str) -> bool {
    let rest = rest.trim_end();
    let Some(first) = rest.chars().next() else {
        return false;
    };
    match first {
        '#' | '<' => true,
        '-' | '*' | '_' | '=' if rest.chars().all(|c| c == first || c == ' ' || c == '\t') => true,
        '*' => {
            let inner = rest.strip_prefix('*').and_then(|r| r.strip_suffix('*'));
            inner.is_some_and(|i| !i.is_empty() && !i.starts_with([' ', '\t']) && !i.contains('*'))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    fn check(name: &str, session: &Session, opts: &ExportOptions) {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(format!("export__markdown_{name}"), render(session, opts));
        });
    }

    #[test]
    fn markdown_of_every_fixture() {
        for (name, session) in fixtures::all() {
            check(name, &session, &ExportOptions::default());
        }
    }

    #[test]
    fn markdown_without_branches() {
        let opts = ExportOptions {
            include_branches: false,
            branch_id: None,
        };
        check("branching_main_only", &fixtures::branching(), &opts);
    }

    #[test]
    fn markdown_of_one_branch() {
        let opts = ExportOptions {
            include_branches: true,
            branch_id: Some("alt-approach".into()),
        };
        check("branching_one_branch", &fixtures::branching(), &opts);
    }

    #[test]
    fn markdown_of_the_seed_matches_the_plan() {
        let doc = render(&fixtures::seed(), &ExportOptions::default());
        let expected = "# Thinking Chain\n\n## Main Thread\n\n### Thought 1\nTesting after restart\n\n\
            ### Thought 2 [hypothesis]\nMaybe the issue is in the API layer...\n\n\
            ### Thought 3 (revises #2) [decision]\nConfirmed: API layer was the problem.\n\n---\n\n\
            ## Branch: alt-approach\n*Branched from thought 2*\n\n\
            ### Thought 4\nWhat if we tried a different approach...\n\n\
            *Branch concluded at thought 4*\n";
        assert_eq!(doc, expected);
    }

    /// Only this renderer's own lines may look like structure, whatever the thoughts say.
    #[test]
    fn user_text_cannot_add_structure() {
        let ours = regex::Regex::new(
            r"^(# Thinking Chain|## Main Thread|## Branch: .*|### Thought \d+( \(revises #\d+\))?( \[.+\])?)$",
        );
        let ours = ours.expect("the pattern is valid");
        for (name, session) in fixtures::all() {
            let doc = render(&session, &ExportOptions::default());
            let mut in_code = false;
            let mut headings = Vec::new();
            for line in doc.lines() {
                if line.starts_with("```") {
                    in_code = !in_code;
                } else if !in_code && line.starts_with('#') {
                    headings.push(line);
                }
            }
            for heading in &headings {
                assert!(
                    ours.is_match(heading),
                    "{name}: unexpected heading line: {heading:?}"
                );
            }
            let branches = session.branches.len();
            assert_eq!(
                headings
                    .iter()
                    .filter(|l| l.starts_with("## Branch: "))
                    .count(),
                branches,
                "{name}"
            );
            assert_eq!(
                doc.lines().filter(|l| *l == "---").count(),
                branches,
                "{name}"
            );
            assert!(
                !doc.contains(|c: char| c.is_control() && c != '\n' && c != '\t'),
                "{name}"
            );
        }
        let doc = render(&fixtures::hostile(), &ExportOptions::default());
        assert!(doc.contains("\n\\## Branch: fake\n"));
        assert!(doc.contains("\n\\*Branch concluded at thought 9*\n"));
        assert!(
            doc.contains("\nfn main() {}\n```\n"),
            "an open fence is closed"
        );
    }

    #[test]
    fn fences_keep_their_content_and_close_once() {
        let mut out = String::new();
        push_body(&mut out, "~~~~\n# code\n~~~\n~~~~~\n# text");
        assert_eq!(out, "\n~~~~\n# code\n~~~\n~~~~~\n\\# text");
        let mut out = String::new();
        push_body(&mut out, "``` not`a fence\n# text");
        assert_eq!(out, "\n``` not`a fence\n\\# text");
    }

    #[test]
    fn escapes_only_lines_that_start_blocks() {
        let mut out = String::new();
        push_body(
            &mut out,
            "   # three spaces\n    # four spaces\n\t# tab\n- list\n* item*\n**bold**\n*aside*\n- - -",
        );
        let expected = "\n   \\# three spaces\n    # four spaces\n\t# tab\n- list\n* item*\n**bold**\n\\*aside*\n\\- - -";
        assert_eq!(out, expected);
    }

    #[test]
    fn heading_text_keeps_a_trailing_hash() {
        assert_eq!(heading_text("c#"), "c\\#");
        assert_eq!(heading_text("two\nlines"), "two lines");
    }
}

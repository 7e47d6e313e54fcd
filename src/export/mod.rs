//! Export: pure renderers of one thinking [`Session`] into portable text (the `export` and
//! `visualize` tools of the MAXential Thinking v2.2 plan), and of the comparison of two
//! sessions ([`diff`], the `diff_sessions` tool).
//!
//! Owns the output formats (markdown and JSON in [`markdown`] and [`json`]; ascii and mermaid
//! diagrams in [`visualize`]), their options, and the one rule they share: which thoughts form
//! the main thread and which belong to each branch (`select`). Every function here is a plain
//! function of a `Session` and options: it cannot fail and never panics, whatever the text,
//! tags or branch ids hold (they are user content and are escaped for each format).
//!
//! Must not know: MCP, tool arguments or their validation (an unknown `branch_id` simply selects
//! nothing; saying so to the client is the tool's job), the ledger, hashing or storage.

use crate::projections::{Branch, Session, Thought};

pub mod diff;
pub mod json;
pub mod markdown;
pub mod visualize;

/// What the `export` tool puts in its document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// Include the branches after the main thread (`includeBranches`, default true).
    pub include_branches: bool,
    /// Export only this branch (`branchId`): no main thread and no other branch. It wins over
    /// `include_branches`, because asking for one branch by name is the more specific request.
    pub branch_id: Option<String>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        Self {
            include_branches: true,
            branch_id: None,
        }
    }
}

/// What the `visualize` tool shows on each thought of its diagram.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisualizeOptions {
    /// Show each thought's tags (`showTags`, default false).
    pub show_tags: bool,
    /// Show the first [`PREVIEW_CHARS`] characters of each thought (`showContent`, default false).
    pub show_content: bool,
}

/// How many characters of a thought `showContent` previews.
pub const PREVIEW_CHARS: usize = 30;

/// The thoughts an export covers, each with its index in [`Session::thoughts`].
pub(crate) struct Selection<'s> {
    /// The main thread in recorded order: every thought not listed in any branch (a thought
    /// naming a branch that never opened stays here, as in the projection's branch rule).
    /// Empty when one branch was asked for.
    pub main: Vec<(usize, &'s Thought)>,
    /// The selected branches in the order they were opened.
    pub branches: Vec<SelectedBranch<'s>>,
}

pub(crate) struct SelectedBranch<'s> {
    pub branch: &'s Branch,
    /// The branch's thoughts in order; indexes that do not exist in the session are skipped.
    pub thoughts: Vec<(usize, &'s Thought)>,
}

/// Decides which thoughts are the main thread and which belong to each branch, honouring
/// `include_branches` and `branch_id` (see [`ExportOptions`]).
pub(crate) fn select<'s>(session: &'s Session, opts: &ExportOptions) -> Selection<'s> {
    let branch = |branch: &'s Branch| SelectedBranch {
        branch,
        thoughts: branch
            .thoughts
            .iter()
            .filter_map(|&i| session.thoughts.get(i).map(|t| (i, t)))
            .collect(),
    };
    if let Some(id) = &opts.branch_id {
        return Selection {
            main: Vec::new(),
            branches: session
                .branches
                .iter()
                .filter(|b| &b.id == id)
                .map(branch)
                .collect(),
        };
    }
    let mut in_branch = vec![false; session.thoughts.len()];
    for index in session.branches.iter().flat_map(|b| &b.thoughts) {
        if let Some(flag) = in_branch.get_mut(*index) {
            *flag = true;
        }
    }
    let main = session
        .thoughts
        .iter()
        .enumerate()
        .filter(|(i, _)| !in_branch.get(*i).copied().unwrap_or(false))
        .collect();
    let branches = if opts.include_branches {
        session.branches.iter().map(branch).collect()
    } else {
        Vec::new()
    };
    Selection { main, branches }
}

/// `text` on one line, for headings, labels and diagram nodes: line breaks, tabs and other
/// control characters, and the invisible marks that reorder text (bidi controls), become single
/// spaces; runs of spaces collapse and the ends are trimmed.
pub(crate) fn single_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| c.is_whitespace() || c.is_control() || is_bidi_control(c)) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The `showContent` preview: the thought on one line, cut to [`PREVIEW_CHARS`] characters with
/// `…` when longer; `[text erased]` when the text was erased.
pub(crate) fn preview(thought: &Thought) -> String {
    let Some(text) = thought.text.as_deref() else {
        return "[text erased]".to_owned();
    };
    let line = single_line(text);
    let mut chars = line.chars();
    let mut cut: String = chars.by_ref().take(PREVIEW_CHARS).collect();
    if chars.next().is_some() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_splits_main_thread_and_branches() {
        let session = fixtures::branching();
        let all = select(&session, &ExportOptions::default());
        let numbers =
            |ts: &[(usize, &Thought)]| ts.iter().map(|(_, t)| t.thought_number).collect::<Vec<_>>();
        assert_eq!(numbers(&all.main), [1, 2, 3, 4, 5, 6]);
        let ids: Vec<_> = all.branches.iter().map(|b| b.branch.id.as_str()).collect();
        assert_eq!(ids, ["alt-approach", "skeptic", "deeper"]);

        let main_only = select(
            &session,
            &ExportOptions {
                include_branches: false,
                branch_id: None,
            },
        );
        assert_eq!(numbers(&main_only.main), [1, 2, 3, 4, 5, 6]);
        assert!(main_only.branches.is_empty());

        let one = ExportOptions {
            include_branches: false,
            branch_id: Some("skeptic".into()),
        };
        let one = select(&session, &one);
        assert!(one.main.is_empty());
        assert_eq!(one.branches.len(), 1);
        assert_eq!(numbers(&one.branches[0].thoughts), [4]);

        let unknown = select(
            &session,
            &ExportOptions {
                include_branches: true,
                branch_id: Some("nope".into()),
            },
        );
        assert!(unknown.main.is_empty() && unknown.branches.is_empty());
    }

    #[test]
    fn select_skips_branch_indexes_that_do_not_exist() {
        let mut session = fixtures::branching();
        session.branches[0].thoughts.push_back(999);
        let all = select(&session, &ExportOptions::default());
        assert_eq!(all.branches[0].thoughts.len(), 2);
    }

    #[test]
    fn single_line_flattens_breaks_controls_and_bidi_marks() {
        assert_eq!(single_line("  a\r\nb\t\tc\u{202E}d\u{0}e  "), "a b c d e");
        assert_eq!(single_line("\n\n"), "");
    }

    #[test]
    fn preview_cuts_at_thirty_characters() {
        let mut t = fixtures::thought(1, &"é".repeat(31));
        assert_eq!(preview(&t), format!("{}…", "é".repeat(30)));
        t.text = Some("line one\nline two".into());
        assert_eq!(preview(&t), "line one line two");
        t.text = None;
        assert_eq!(preview(&t), "[text erased]");
    }
}

//! The diff of two thinking sessions (the `diff_sessions` tool and `thinkledger diff`): which
//! thoughts one run added, removed or changed against the other, which branches only one has,
//! how tags moved, and whether the conclusion differs.
//!
//! Main-line thoughts are aligned by their text with Myers' algorithm (from `similar`), so a
//! thought inserted early does not make every later one look changed; branch thoughts are
//! aligned the same way, branch by branch id. A replaced run is paired up position by position
//! as `changed`; what is left over is `removed` or `added`. Thoughts aligned with each other
//! (same or changed) are compared for their tags. The conclusion is the last thought recorded
//! with `nextThoughtNeeded: false`.
//!
//! Owns the comparison and its two renderings: a JSON document and a unified-diff-like text.
//! Must not know: MCP, tool arguments, the ledger or hashing. Every function is a plain,
//! infallible function of two `Session`s.

use schemars::JsonSchema;
use serde::Serialize;
use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::{ExportOptions, select, single_line};
use crate::projections::{Session, SessionStatus, Thought};

/// One thought as a diff shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtRef {
    /// Seq of the event that recorded it.
    pub seq: u64,
    pub thought_number: u32,
    /// The text, or null when it was erased.
    pub text: Option<String>,
    pub tags: Vec<String>,
}

impl ThoughtRef {
    fn of(t: &Thought) -> Self {
        Self {
            seq: t.seq,
            thought_number: t.thought_number,
            text: t.text.as_deref().map(str::to_owned),
            tags: t.tags.clone(),
        }
    }
}

/// How one aligned position of two thought lists compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Same text on both sides.
    Same,
    /// Only in session B.
    Added,
    /// Only in session A.
    Removed,
    /// Aligned with each other, text differs.
    Changed,
}

/// One aligned position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Aligned {
    pub op: Op,
    /// The thought in session A (null for `added`).
    pub a: Option<ThoughtRef>,
    /// The thought in session B (null for `removed`).
    pub b: Option<ThoughtRef>,
}

/// Where a branch exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Both,
    OnlyA,
    OnlyB,
}

/// One branch id of either session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchDiff {
    pub branch_id: String,
    pub presence: Presence,
    /// The thought number it branched from in A and in B (null where it does not exist).
    pub from_thought_a: Option<u32>,
    pub from_thought_b: Option<u32>,
    /// Its thoughts aligned (all `removed` for a branch only in A, all `added` only in B).
    pub thoughts: Vec<Aligned>,
}

/// Tags that differ between two aligned thoughts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagChange {
    /// `null` for the main line, else the branch id.
    pub branch_id: Option<String>,
    pub thought_number_a: u32,
    pub thought_number_b: u32,
    /// In B, not in A.
    pub added: Vec<String>,
    /// In A, not in B.
    pub removed: Vec<String>,
}

/// The two conclusions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConclusionDiff {
    pub a: Option<ThoughtRef>,
    pub b: Option<ThoughtRef>,
    /// True when exactly one side has a conclusion or their texts differ.
    pub changed: bool,
}

/// Counts, for a quick read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Thoughts only in B (main line and shared branches; branches only in B not included).
    pub added: usize,
    /// Thoughts only in A (likewise).
    pub removed: usize,
    pub changed: usize,
    pub branches_only_in_a: Vec<String>,
    pub branches_only_in_b: Vec<String>,
    pub tag_changes: usize,
    pub conclusion_changed: bool,
}

/// One side's identity and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    pub session_id: String,
    /// `active` or `closed`.
    pub status: String,
    pub thoughts: usize,
    pub branches: usize,
}

impl Side {
    fn of(s: &Session) -> Self {
        Self {
            session_id: s.id.to_string(),
            status: match s.status {
                SessionStatus::Active => "active".into(),
                SessionStatus::Closed { .. } => "closed".into(),
            },
            thoughts: s.thoughts.len(),
            branches: s.branches.len(),
        }
    }
}

/// The diff of session A against session B.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiff {
    pub a: Side,
    pub b: Side,
    /// No thought added, removed or changed, no branch on one side only, no tag change and the
    /// same conclusion.
    pub identical: bool,
    pub summary: Summary,
    /// The main lines aligned, unchanged positions included (they give the context).
    pub main_line: Vec<Aligned>,
    /// Every branch id of either session: A's in the order opened, then B's own.
    pub branches: Vec<BranchDiff>,
    pub tags: Vec<TagChange>,
    pub conclusion: ConclusionDiff,
}

/// Compares session `a` with session `b`.
#[must_use]
pub fn diff(a: &Session, b: &Session) -> SessionDiff {
    let everything = ExportOptions::default();
    let (sel_a, sel_b) = (select(a, &everything), select(b, &everything));
    let main_a: Vec<&Thought> = sel_a.main.iter().map(|(_, t)| *t).collect();
    let main_b: Vec<&Thought> = sel_b.main.iter().map(|(_, t)| *t).collect();
    let main_line = align(&main_a, &main_b);
    let mut tags = tag_changes(None, &main_line);

    let mut branches = Vec::new();
    for branch in &sel_a.branches {
        let id = &branch.branch.id;
        let thoughts_a: Vec<&Thought> = branch.thoughts.iter().map(|(_, t)| *t).collect();
        let other = sel_b.branches.iter().find(|o| &o.branch.id == id);
        let thoughts_b: Vec<&Thought> = other
            .map(|o| o.thoughts.iter().map(|(_, t)| *t).collect())
            .unwrap_or_default();
        let aligned = align(&thoughts_a, &thoughts_b);
        tags.extend(tag_changes(Some(id), &aligned));
        branches.push(BranchDiff {
            branch_id: id.clone(),
            presence: if other.is_some() {
                Presence::Both
            } else {
                Presence::OnlyA
            },
            from_thought_a: Some(branch.branch.from_thought),
            from_thought_b: other.map(|o| o.branch.from_thought),
            thoughts: aligned,
        });
    }
    for branch in &sel_b.branches {
        if sel_a
            .branches
            .iter()
            .any(|o| o.branch.id == branch.branch.id)
        {
            continue;
        }
        let thoughts_b: Vec<&Thought> = branch.thoughts.iter().map(|(_, t)| *t).collect();
        branches.push(BranchDiff {
            branch_id: branch.branch.id.clone(),
            presence: Presence::OnlyB,
            from_thought_a: None,
            from_thought_b: Some(branch.branch.from_thought),
            thoughts: align(&[], &thoughts_b),
        });
    }

    let conclusion = {
        let (ca, cb) = (conclusion_of(a), conclusion_of(b));
        let changed = match (ca, cb) {
            (None, None) => false,
            (Some(x), Some(y)) => key(x) != key(y),
            _ => true,
        };
        ConclusionDiff {
            a: ca.map(ThoughtRef::of),
            b: cb.map(ThoughtRef::of),
            changed,
        }
    };

    let mut summary = Summary {
        tag_changes: tags.len(),
        conclusion_changed: conclusion.changed,
        ..Summary::default()
    };
    let shared_ops = main_line.iter().chain(
        branches
            .iter()
            .filter(|b| b.presence == Presence::Both)
            .flat_map(|b| &b.thoughts),
    );
    for aligned in shared_ops {
        match aligned.op {
            Op::Same => {}
            Op::Added => summary.added += 1,
            Op::Removed => summary.removed += 1,
            Op::Changed => summary.changed += 1,
        }
    }
    for branch in &branches {
        match branch.presence {
            Presence::Both => {}
            Presence::OnlyA => summary.branches_only_in_a.push(branch.branch_id.clone()),
            Presence::OnlyB => summary.branches_only_in_b.push(branch.branch_id.clone()),
        }
    }
    let identical = summary == Summary::default();
    SessionDiff {
        a: Side::of(a),
        b: Side::of(b),
        identical,
        summary,
        main_line,
        branches,
        tags,
        conclusion,
    }
}

/// What two thoughts are compared by. An erased text is never equal to anything: nothing is
/// known of it beyond its (salted, so unique) commitment.
#[derive(PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key<'t> {
    Text(&'t str),
    Erased(&'t str),
}

fn key(t: &Thought) -> Key<'_> {
    match t.text.as_deref() {
        Some(text) => Key::Text(text),
        None => Key::Erased(&t.text_ref.commitment),
    }
}

/// Aligns two thought lists by text: Myers' diff, replaced runs paired as `changed`.
fn align(a: &[&Thought], b: &[&Thought]) -> Vec<Aligned> {
    let keys_a: Vec<Key<'_>> = a.iter().map(|t| key(t)).collect();
    let keys_b: Vec<Key<'_>> = b.iter().map(|t| key(t)).collect();
    let side = |list: &[&Thought], i: usize| list.get(i).map(|t| ThoughtRef::of(t));
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    for op in capture_diff_slices(Algorithm::Myers, &keys_a, &keys_b) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    out.push(Aligned {
                        op: Op::Same,
                        a: side(a, old_index + k),
                        b: side(b, new_index + k),
                    });
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                for k in 0..old_len {
                    out.push(Aligned {
                        op: Op::Removed,
                        a: side(a, old_index + k),
                        b: None,
                    });
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                for k in 0..new_len {
                    out.push(Aligned {
                        op: Op::Added,
                        a: None,
                        b: side(b, new_index + k),
                    });
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                for k in 0..old_len.max(new_len) {
                    let (x, y) = (
                        (k < old_len).then(|| side(a, old_index + k)).flatten(),
                        (k < new_len).then(|| side(b, new_index + k)).flatten(),
                    );
                    let op = match (&x, &y) {
                        (Some(_), Some(_)) => Op::Changed,
                        (Some(_), None) => Op::Removed,
                        _ => Op::Added,
                    };
                    out.push(Aligned { op, a: x, b: y });
                }
            }
        }
    }
    out
}

fn tag_changes(branch: Option<&String>, aligned: &[Aligned]) -> Vec<TagChange> {
    aligned
        .iter()
        .filter_map(|pos| {
            let (a, b) = (pos.a.as_ref()?, pos.b.as_ref()?);
            let added: Vec<String> = b
                .tags
                .iter()
                .filter(|t| !a.tags.contains(t))
                .cloned()
                .collect();
            let removed: Vec<String> = a
                .tags
                .iter()
                .filter(|t| !b.tags.contains(t))
                .cloned()
                .collect();
            (!added.is_empty() || !removed.is_empty()).then(|| TagChange {
                branch_id: branch.cloned(),
                thought_number_a: a.thought_number,
                thought_number_b: b.thought_number,
                added,
                removed,
            })
        })
        .collect()
}

fn conclusion_of(s: &Session) -> Option<&Thought> {
    s.thoughts.iter().rev().find(|t| !t.next_thought_needed)
}

/// Runs of unchanged thoughts longer than this are shown as their first and last thought.
const CONTEXT_RUN: usize = 4;

/// The diff as text, in the manner of a unified diff: `-` lines are session A's, `+` lines
/// session B's, two spaces mark context. Identical sessions give the two header lines and
/// `(no differences)`.
#[must_use]
pub fn render_text(d: &SessionDiff) -> String {
    let mut out = String::new();
    let header = |mark: &str, side: &Side| {
        format!(
            "{mark} {}  ({}, {} thoughts, {} branches)\n",
            side.session_id, side.status, side.thoughts, side.branches
        )
    };
    out.push_str(&header("---", &d.a));
    out.push_str(&header("+++", &d.b));
    if d.identical {
        out.push_str("(no differences)\n");
        return out;
    }
    let s = &d.summary;
    out.push_str(&format!(
        "# {} added, {} removed, {} changed; {} tag change(s); branches only in A: {}; only in \
         B: {}; conclusion {}\n",
        s.added,
        s.removed,
        s.changed,
        s.tag_changes,
        list_or_none(&s.branches_only_in_a),
        list_or_none(&s.branches_only_in_b),
        if s.conclusion_changed {
            "changed"
        } else {
            "unchanged"
        },
    ));
    out.push_str("@@ main line @@\n");
    push_aligned(&mut out, &d.main_line);
    for branch in &d.branches {
        let from = |n: Option<u32>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
        let presence = match branch.presence {
            Presence::Both => "in both".to_owned(),
            Presence::OnlyA => "only in A".to_owned(),
            Presence::OnlyB => "only in B".to_owned(),
        };
        let unchanged = branch.thoughts.iter().all(|t| t.op == Op::Same)
            && branch.from_thought_a == branch.from_thought_b;
        out.push_str(&format!(
            "@@ branch {} ({presence}, from thought {} / {}){} @@\n",
            single_line(&branch.branch_id),
            from(branch.from_thought_a),
            from(branch.from_thought_b),
            if unchanged { ", unchanged" } else { "" },
        ));
        if !unchanged {
            push_aligned(&mut out, &branch.thoughts);
        }
    }
    if !d.tags.is_empty() {
        out.push_str("@@ tags @@\n");
        for change in &d.tags {
            let place = change
                .branch_id
                .as_deref()
                .map_or_else(String::new, |b| format!(" [{}]", single_line(b)));
            let mut moves: Vec<String> = change.added.iter().map(|t| format!("+{t}")).collect();
            moves.extend(change.removed.iter().map(|t| format!("-{t}")));
            out.push_str(&format!(
                "~ thought {} / {}{place}: {}\n",
                change.thought_number_a,
                change.thought_number_b,
                single_line(&moves.join(" "))
            ));
        }
    }
    out.push_str("@@ conclusion @@\n");
    let c = &d.conclusion;
    if c.changed {
        match &c.a {
            Some(t) => out.push_str(&line('-', t)),
            None => out.push_str("- (no conclusion)\n"),
        }
        match &c.b {
            Some(t) => out.push_str(&line('+', t)),
            None => out.push_str("+ (no conclusion)\n"),
        }
    } else {
        match &c.a {
            Some(t) => out.push_str(&line(' ', t)),
            None => out.push_str("  (neither concluded)\n"),
        }
    }
    out
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        single_line(&items.join(", "))
    }
}

fn line(mark: char, t: &ThoughtRef) -> String {
    let text = t
        .text
        .as_deref()
        .map_or_else(|| "[text erased]".to_owned(), single_line);
    format!("{mark} {:>3} | {text}\n", t.thought_number)
}

fn push_aligned(out: &mut String, aligned: &[Aligned]) {
    let mut i = 0;
    while i < aligned.len() {
        let run = aligned[i..].iter().take_while(|p| p.op == Op::Same).count();
        if run > CONTEXT_RUN {
            if let Some(t) = &aligned[i].a {
                out.push_str(&line(' ', t));
            }
            out.push_str(&format!("  ... {} unchanged\n", run - 2));
            if let Some(t) = &aligned[i + run - 1].a {
                out.push_str(&line(' ', t));
            }
            i += run;
            continue;
        }
        let pos = &aligned[i];
        match pos.op {
            Op::Same => {
                if let Some(t) = &pos.a {
                    out.push_str(&line(' ', t));
                }
            }
            Op::Added | Op::Removed | Op::Changed => {
                if let Some(t) = &pos.a {
                    out.push_str(&line('-', t));
                }
                if let Some(t) = &pos.b {
                    out.push_str(&line('+', t));
                }
            }
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    fn check(name: &str, d: &SessionDiff) {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(format!("diff__text_{name}"), render_text(d));
        });
    }

    fn texts(aligned: &[Aligned]) -> Vec<(Op, Option<u32>, Option<u32>)> {
        aligned
            .iter()
            .map(|p| {
                (
                    p.op,
                    p.a.as_ref().map(|t| t.thought_number),
                    p.b.as_ref().map(|t| t.thought_number),
                )
            })
            .collect()
    }

    #[test]
    fn a_session_against_itself_is_identical() {
        for (name, session) in fixtures::all() {
            let d = diff(&session, &session);
            assert!(d.identical, "{name}: {d:#?}");
            assert_eq!(d.summary, Summary::default(), "{name}");
            assert!(d.tags.is_empty(), "{name}");
            assert!(d.main_line.iter().all(|p| p.op == Op::Same), "{name}");
        }
        check("identical", &diff(&fixtures::seed(), &fixtures::seed()));
    }

    #[test]
    fn an_inserted_thought_is_added_and_the_rest_stays_aligned() {
        let a = fixtures::session(vec![
            fixtures::thought(1, "one"),
            fixtures::thought(2, "two"),
            fixtures::thought(3, "three"),
        ]);
        let b = fixtures::session(vec![
            fixtures::thought(1, "one"),
            fixtures::thought(2, "one and a half"),
            fixtures::thought(3, "two"),
            fixtures::thought(4, "three"),
        ]);
        let d = diff(&a, &b);
        assert_eq!(
            texts(&d.main_line),
            [
                (Op::Same, Some(1), Some(1)),
                (Op::Added, None, Some(2)),
                (Op::Same, Some(2), Some(3)),
                (Op::Same, Some(3), Some(4)),
            ]
        );
        assert_eq!(
            (d.summary.added, d.summary.removed, d.summary.changed),
            (1, 0, 0)
        );
        assert!(!d.identical);
    }

    #[test]
    fn replaced_thoughts_pair_as_changed_and_leftovers_are_removed() {
        let a = fixtures::session(vec![
            fixtures::thought(1, "one"),
            fixtures::thought(2, "two"),
            fixtures::thought(3, "three"),
            fixtures::thought(4, "four"),
        ]);
        let b = fixtures::session(vec![
            fixtures::thought(1, "one"),
            fixtures::thought(2, "TWO"),
            fixtures::thought(3, "four"),
        ]);
        let d = diff(&a, &b);
        assert_eq!(
            texts(&d.main_line),
            [
                (Op::Same, Some(1), Some(1)),
                (Op::Changed, Some(2), Some(2)),
                (Op::Removed, Some(3), None),
                (Op::Same, Some(4), Some(3)),
            ]
        );
        assert_eq!(
            (d.summary.added, d.summary.removed, d.summary.changed),
            (0, 1, 1)
        );
    }

    #[test]
    fn branches_on_one_side_tags_and_conclusions_are_reported() {
        let a = fixtures::branching();
        let mut b = fixtures::branching();
        // B: the "skeptic" branch renamed "fresh", a tag moved, another conclusion.
        let skeptic = b
            .branches
            .iter()
            .position(|br| br.id == "skeptic")
            .expect("fixture has skeptic");
        b.branches[skeptic].id = "fresh".into();
        b.thoughts[1].tags = vec!["evidence".into()];
        let last = b.thoughts.len() - 1;
        b.thoughts[last].text = Some("Ship the cache fix".into());
        let d = diff(&a, &b);
        assert_eq!(d.summary.branches_only_in_a, ["skeptic"]);
        assert_eq!(d.summary.branches_only_in_b, ["fresh"]);
        assert!(d.conclusion.changed);
        assert_eq!(
            d.conclusion.b.as_ref().and_then(|t| t.text.as_deref()),
            Some("Ship the cache fix")
        );
        let moved = d
            .tags
            .iter()
            .find(|t| t.branch_id.is_none())
            .expect("a main-line tag change");
        assert_eq!((moved.thought_number_a, moved.thought_number_b), (2, 2));
        assert_eq!(moved.added, ["evidence"]);
        assert_eq!(moved.removed, ["hypothesis"]);
        check("branches_tags_conclusion", &d);
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_json_snapshot!("diff__json_branches_tags_conclusion", d);
        });
    }

    #[test]
    fn erased_texts_never_align_as_the_same() {
        let a = fixtures::session(vec![fixtures::thought(1, "x")]);
        let mut b = a.clone();
        b.thoughts[0].text = None;
        let mut a2 = a.clone();
        a2.thoughts[0].text = None;
        assert!(!diff(&a, &b).identical);
        // Both erased: equal commitments (the same recorded thought) align as the same.
        assert!(diff(&a2, &b).identical);
    }
}

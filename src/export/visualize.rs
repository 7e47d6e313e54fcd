//! The `visualize` tool's diagrams of a session's thought tree: [`ascii`] art and a [`mermaid`]
//! flowchart, laid out by `tree` and `flowchart` from one shared `Chart`.
//!
//! Owns the graph both formats draw: the lanes (the main thread, then each branch in the order it
//! opened), where each branch hangs, and which thought a revision points at. A branch hangs from
//! its *anchor*, and a revision points at its *target*: the latest thought carrying the named
//! number that was recorded before the branch's first thought (before the revision). Numbers
//! repeat across branches, so this is the thought the client could have meant at the time, and with
//! real seqs it keeps the tree acyclic (the layouts guard against cycles in hand-made sessions). When there is none the branch is drawn detached and the revision gets
//! no arrow. Node labels: `#N` / `TN`, then with `showContent` the first 30 characters, with
//! `showTags` each tag as `#tag`, then `[CONCLUSION]` on the main thread's last thought and
//! `[concluded]` on a branch's last thought when they said `nextThoughtNeeded: false`.
//!
//! Must not know: MCP, the ledger, or which tool asked. Diagrams always show every branch.

use std::collections::HashMap;

use super::{ExportOptions, VisualizeOptions, preview, select, single_line};
use crate::projections::{Branch, Session, Thought};

mod flowchart;
mod tree;

/// The ascii-art tree, in the shape of the plan's example:
///
/// ```text
/// T1 ─── T2 ─── T3 ─┬─ T4 ─── T5 [CONCLUSION]
///                   │
///                   └─ [alt-approach]
///                        T6 ─── T7 [concluded]
/// ```
#[must_use]
pub fn ascii(session: &Session, opts: &VisualizeOptions) -> String {
    tree::render(&Chart::of(session), opts)
}

/// A mermaid `graph TD` flowchart that parses for any session (see the `flowchart` module).
#[must_use]
pub fn mermaid(session: &Session, opts: &VisualizeOptions) -> String {
    flowchart::render(&Chart::of(session), opts)
}

/// One thread of the diagram.
pub(crate) struct Lane<'s> {
    /// `None` for the main thread.
    pub(crate) branch: Option<&'s Branch>,
    /// Its thoughts in order, with their indexes in [`Session::thoughts`].
    pub(crate) thoughts: Vec<(usize, &'s Thought)>,
    /// The index of the thought a branch hangs from, when there is one.
    pub(crate) anchor: Option<usize>,
}

/// A revision and the index of the thought it points at, when there is one.
pub(crate) struct Revision<'s> {
    pub(crate) by: &'s Thought,
    pub(crate) index: usize,
    pub(crate) target: Option<usize>,
}

/// The graph every diagram draws (these two, and the reviewer's page's SVG).
pub(crate) struct Chart<'s> {
    session: &'s Session,
    /// The main thread first, then each branch in the order it opened.
    pub(crate) lanes: Vec<Lane<'s>>,
    pub(crate) revisions: Vec<Revision<'s>>,
}

impl<'s> Chart<'s> {
    pub(crate) fn of(session: &'s Session) -> Self {
        let selection = select(session, &ExportOptions::default());
        let by_number = ByNumber::of(session);
        let mut lanes = vec![Lane {
            branch: None,
            thoughts: selection.main,
            anchor: None,
        }];
        for selected in selection.branches {
            let anchor = selected.thoughts.first().and_then(|(_, first)| {
                by_number.latest_before(selected.branch.from_thought, first.seq)
            });
            lanes.push(Lane {
                branch: Some(selected.branch),
                thoughts: selected.thoughts,
                anchor,
            });
        }
        let revisions = session
            .thoughts
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_revision || t.revises_thought.is_some())
            .map(|(index, by)| Revision {
                by,
                index,
                target: by
                    .revises_thought
                    .and_then(|n| by_number.latest_before(n, by.seq)),
            })
            .collect();
        Chart {
            session,
            lanes,
            revisions,
        }
    }
}

impl Lane<'_> {
    /// The end marker of the thought at `pos`, if it has one.
    fn marker(&self, pos: usize) -> Option<&'static str> {
        let (_, thought) = self.thoughts.last()?;
        if pos + 1 != self.thoughts.len() || thought.next_thought_needed {
            return None;
        }
        Some(if self.branch.is_some() {
            "[concluded]"
        } else {
            "[CONCLUSION]"
        })
    }

    /// The optional parts of the label of the thought at `pos`.
    fn label_tail(&self, pos: usize, thought: &Thought, opts: &VisualizeOptions) -> LabelTail {
        LabelTail {
            content: opts.show_content.then(|| preview(thought)),
            tags: if opts.show_tags {
                thought
                    .tags
                    .iter()
                    .map(|t| single_line(t))
                    .filter(|t| !t.is_empty())
                    .collect()
            } else {
                Vec::new()
            },
            marker: self.marker(pos),
        }
    }
}

/// The optional parts of a node label, each still plain (unescaped) text.
struct LabelTail {
    content: Option<String>,
    tags: Vec<String>,
    marker: Option<&'static str>,
}

/// Thoughts by number, each list in recorded order: `(seq, index)`.
struct ByNumber(HashMap<u32, Vec<(u64, usize)>>);

impl ByNumber {
    fn of(session: &Session) -> Self {
        let mut map: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        for (index, t) in session.thoughts.iter().enumerate() {
            map.entry(t.thought_number)
                .or_default()
                .push((t.seq, index));
        }
        for list in map.values_mut() {
            list.sort_unstable();
        }
        Self(map)
    }

    /// The index of the latest thought numbered `number` recorded before `seq`.
    fn latest_before(&self, number: u32, seq: u64) -> Option<usize> {
        let list = self.0.get(&number)?;
        let earlier = list.partition_point(|(s, _)| *s < seq);
        let (_, index) = list.get(earlier.checked_sub(1)?)?;
        Some(*index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    const FULL: VisualizeOptions = VisualizeOptions {
        show_tags: true,
        show_content: true,
    };

    /// Every fixture with default options and with tags and content shown.
    fn cases() -> Vec<(String, Session, VisualizeOptions)> {
        let mut cases = Vec::new();
        for (name, session) in fixtures::all() {
            cases.push((
                name.to_owned(),
                session.clone(),
                VisualizeOptions::default(),
            ));
            cases.push((format!("{name}_full"), session, FULL));
        }
        cases
    }

    #[test]
    fn ascii_of_every_fixture() {
        for (name, session, opts) in cases() {
            insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
                insta::assert_snapshot!(format!("export__ascii_{name}"), ascii(&session, &opts));
            });
        }
    }

    #[test]
    fn mermaid_of_every_fixture() {
        for (name, session, opts) in cases() {
            insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
                insta::assert_snapshot!(format!("export__mermaid_{name}"), mermaid(&session, &opts));
            });
        }
    }

    #[test]
    fn mermaid_of_every_fixture_follows_the_strict_grammar() {
        for (name, session, opts) in cases() {
            if let Err(problem) = flowchart::check_grammar(&mermaid(&session, &opts)) {
                panic!("{name}: {problem}");
            }
        }
    }

    /// Keeps tests/mermaid/fixtures/*.mmd equal to the renderer's output, for the validator that
    /// runs mermaid's own parser (tests/mermaid/validate.mjs).
    #[test]
    fn mermaid_fixture_files_are_current() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mermaid/fixtures");
        std::fs::create_dir_all(&dir).expect("create tests/mermaid/fixtures");
        let mut stale = Vec::new();
        let mut expected = Vec::new();
        for (name, session, opts) in cases() {
            let file = format!("{name}.mmd");
            let path = dir.join(&file);
            let text = mermaid(&session, &opts);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&path, text).expect("write a mermaid fixture");
                stale.push(file.clone());
            }
            expected.push(file);
        }
        for entry in std::fs::read_dir(&dir)
            .expect("list tests/mermaid/fixtures")
            .flatten()
        {
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.ends_with(".mmd") && !expected.contains(&file) {
                std::fs::remove_file(entry.path()).expect("remove a stale mermaid fixture");
                stale.push(file);
            }
        }
        assert!(
            stale.is_empty(),
            "tests/mermaid/fixtures was out of date and has been rewritten ({}); \
             re-run the tests, validate with tests/mermaid/validate.mjs and commit the files",
            stale.join(", ")
        );
    }

    #[test]
    fn mermaid_grammar_holds_for_each_nasty_string_alone() {
        for nasty in fixtures::NASTY {
            let session = fixtures::session(vec![
                Thought {
                    tags: vec![(*nasty).to_owned()],
                    ..fixtures::thought(1, nasty)
                },
                Thought {
                    branch_from_thought: Some(1),
                    branch_id: Some((*nasty).to_owned()),
                    ..fixtures::thought(2, nasty)
                },
            ]);
            for opts in [VisualizeOptions::default(), FULL] {
                let chart = mermaid(&session, &opts);
                if let Err(problem) = flowchart::check_grammar(&chart) {
                    panic!("{nasty:?}: {problem}");
                }
            }
        }
    }

    /// Hand-made sessions the projection would never build: every renderer still returns, and
    /// the flowchart still follows the grammar.
    #[test]
    fn renderers_survive_malformed_sessions() {
        let mut deep = vec![fixtures::thought(1, "root")];
        for n in 1..=100u32 {
            let id = format!("level {n}");
            deep.push(Thought {
                branch_from_thought: Some(n),
                branch_id: Some(id),
                ..fixtures::thought(n + 1, "deeper")
            });
        }
        let deep = fixtures::session(deep);

        let mut cycle = fixtures::session((0..5).map(|n| fixtures::thought(n, "x")).collect());
        let seqs = [1, 10, 1, 10, 2];
        for (t, seq) in cycle.thoughts.iter_mut().zip(seqs) {
            t.seq = seq;
        }
        cycle.branches = vec![
            Branch {
                id: "a".into(),
                from_thought: 4,
                thoughts: vec![1, 2, 999].into(),
            },
            Branch {
                id: "b".into(),
                from_thought: 2,
                thoughts: vec![3, 4, 2].into(),
            },
            Branch {
                id: "empty".into(),
                from_thought: 1,
                thoughts: imbl::Vector::new(),
            },
        ];

        for session in [deep, cycle] {
            for opts in [VisualizeOptions::default(), FULL] {
                let art = ascii(&session, &opts);
                assert!(art.ends_with('\n'));
                let chart = mermaid(&session, &opts);
                if let Err(problem) = flowchart::check_grammar(&chart) {
                    panic!("{problem}\n{chart}");
                }
            }
            let _ = crate::export::markdown::render(&session, &ExportOptions::default());
            let _ = crate::export::json::render(&session, &ExportOptions::default());
        }
    }

    #[test]
    fn deep_nesting_is_drawn_detached_past_the_limit() {
        let mut thoughts = vec![fixtures::thought(1, "root")];
        for n in 1..=40u32 {
            thoughts.push(Thought {
                branch_from_thought: Some(n),
                branch_id: Some(format!("b{n}")),
                ..fixtures::thought(n + 1, "deeper")
            });
        }
        let art = ascii(&fixtures::session(thoughts), &VisualizeOptions::default());
        assert!(art.contains("\n[b33] branched from T33\n"), "{art}");
        assert!(!art.contains("(not found)"));
    }

    #[test]
    fn anchors_pick_the_latest_earlier_thought_with_the_number() {
        let session = fixtures::branching();
        let chart = Chart::of(&session);
        let anchors: Vec<_> = chart.lanes.iter().map(|l| l.anchor).collect();
        // alt-approach and skeptic hang from main #3 (index 2); deeper from alt-approach's #5.
        assert_eq!(anchors, [None, Some(2), Some(2), Some(5)]);
        let targets: Vec<_> = chart
            .revisions
            .iter()
            .map(|r| (r.index, r.target))
            .collect();
        assert_eq!(targets, [(2, Some(1))]);
    }

    #[test]
    fn unknown_anchors_and_targets_are_none() {
        let session = fixtures::hostile();
        let chart = Chart::of(&session);
        let orphan = chart
            .lanes
            .iter()
            .find(|l| l.branch.is_some_and(|b| b.id == "orphan"));
        assert_eq!(orphan.map(|l| l.anchor), Some(None));
        assert!(chart.revisions.iter().all(|r| r.target.is_none()));
    }
}

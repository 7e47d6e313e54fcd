//! Test sessions built by hand for the export renderers: the seed's example, a branching chain,
//! hostile user content and an empty session. Branches are derived with the projection's rule
//! (a branch opens on the first thought carrying both `branch_from_thought` and `branch_id`), so
//! the fixtures look like sessions the ledger would produce.
//!
//! Must not know: the ledger or events; seqs and timestamps are made up.

use std::sync::Arc;

use crate::events::{SessionId, TextRef};
use crate::projections::{Session, SessionHead, Thought};

/// Every fixture, by the name its snapshots and mermaid files use.
pub(crate) fn all() -> Vec<(&'static str, Session)> {
    vec![
        ("seed", seed()),
        ("branching", branching()),
        ("hostile", hostile()),
        ("nasty", nasty()),
        ("empty", empty()),
    ]
}

/// A main-thread thought with defaults; adjust fields with struct update syntax.
pub(crate) fn thought(number: u32, text: &str) -> Thought {
    Thought {
        seq: 0,
        recorded_at: String::new(),
        thought_number: number,
        total_thoughts: number.max(3),
        next_thought_needed: true,
        text: Some(Arc::from(text)),
        text_ref: TextRef {
            commitment: "0".repeat(64),
        },
        is_revision: false,
        revises_thought: None,
        branch_from_thought: None,
        branch_id: None,
        needs_more_thoughts: false,
        tags: Vec::new(),
    }
}

fn branched(from: u32, id: &str, t: Thought) -> Thought {
    Thought {
        branch_from_thought: Some(from),
        branch_id: Some(id.to_owned()),
        ..t
    }
}

/// A later thought of an open branch: the client repeats only the `branchId`.
fn continuing(id: &str, t: Thought) -> Thought {
    Thought {
        branch_id: Some(id.to_owned()),
        ..t
    }
}

fn tagged(tags: &[&str], t: Thought) -> Thought {
    Thought {
        tags: tags.iter().map(|&s| s.to_owned()).collect(),
        ..t
    }
}

fn revising(of: u32, t: Thought) -> Thought {
    Thought {
        is_revision: true,
        revises_thought: Some(of),
        ..t
    }
}

fn last(t: Thought) -> Thought {
    Thought {
        next_thought_needed: false,
        ..t
    }
}

fn erased(t: Thought) -> Thought {
    Thought { text: None, ..t }
}

/// A session started at seq 1 holding `thoughts` in recorded order (seqs 2, 3, …).
pub(crate) fn session(thoughts: Vec<Thought>) -> Session {
    let mut head = SessionHead::unstarted(
        SessionId::parse("0b1e7d1c-5a6f-4c2e-9d3b-8f0a1b2c3d4e").unwrap_or_else(SessionId::random),
    );
    head.principal = "local".into();
    head.started_seq = 1;
    head.started_at = stamp(1);
    head.events = 1;
    head.last_seq = 1;
    head.updated_at = stamp(1);
    let mut session = Session::new(head);
    for mut t in thoughts {
        let seq = session.last_seq + 1;
        t.seq = seq;
        t.recorded_at = stamp(seq);
        session.head.last_seq = seq;
        session.head.events += 1;
        session.head.updated_at = t.recorded_at.clone();
        session.push_thought(t);
    }
    session
}

fn stamp(seq: u64) -> String {
    format!("2026-03-01T09:{:02}:{:02}Z", (seq / 60) % 60, seq % 60)
}

/// The example of the plan's markdown format.
pub(crate) fn seed() -> Session {
    session(vec![
        thought(1, "Testing after restart"),
        tagged(
            &["hypothesis"],
            thought(2, "Maybe the issue is in the API layer..."),
        ),
        tagged(
            &["decision"],
            revising(2, thought(3, "Confirmed: API layer was the problem.")),
        ),
        last(branched(
            2,
            "alt-approach",
            thought(4, "What if we tried a different approach..."),
        )),
    ])
}

/// A main thread of six with a revision, tags, an erased text and a conclusion; two branches
/// from thought 3 and one branching from a thought of the first branch.
pub(crate) fn branching() -> Session {
    session(vec![
        thought(
            1,
            "Frame the problem: p99 latency doubled after the release",
        ),
        tagged(
            &["hypothesis"],
            thought(2, "Maybe the cache hit rate dropped"),
        ),
        tagged(
            &["decision", "key"],
            revising(2, thought(3, "Not the cache: hit rate is flat")),
        ),
        erased(thought(4, "secret")),
        branched(
            3,
            "alt-approach",
            thought(4, "Profile the serializer instead"),
        ),
        continuing(
            "alt-approach",
            tagged(&["evidence"], thought(5, "Serializer allocates per field")),
        ),
        branched(
            3,
            "skeptic",
            tagged(&["counter"], thought(4, "Could be noise in the benchmark")),
        ),
        last(branched(5, "deeper", thought(6, "Pool the buffers"))),
        thought(5, "Compare both findings"),
        last(tagged(&["decision"], thought(6, "Ship the serializer fix"))),
    ])
}

/// User content that tries to break every format: markdown structure, mermaid syntax and
/// reserved words, quotes, brackets, entities, control characters and odd branch ids.
pub(crate) fn hostile() -> Session {
    session(vec![
        thought(
            1,
            "Say \"hi\" ]; end\nT1 --> T2\n## Branch: fake\n---\n*Branch concluded at thought 9*",
        ),
        tagged(
            &["\"quoted\"", "a;b", "x]y", "#1;", "multi\nline"],
            thought(
                2,
                "Setext attack\n===\nand\n  ### indented heading\n\ttab\r## after a lone CR\r\nend",
            ),
        ),
        thought(3, "```rust\n# not a heading, inside code\nfn main() {}"),
        thought(
            4,
            "<!-- swallow everything\n<script>alert(1)</script>\n> quoted\n- list\n***\n___",
        ),
        thought(
            5,
            "#quot; #35; &lt; %% comment ﬂ°°60¶ß `code` {curly} (paren) |pipe| \\ back",
        ),
        branched(1, "end", thought(2, "a branch named end")),
        branched(1, "alt approach", thought(2, "spaces in the id")),
        branched(
            2,
            "a-b\"]; click T1 call x()\nsubgraph",
            thought(3, "an id that tries to escape"),
        ),
        branched(3, "ветка 🌿\u{202E}", thought(4, "unicode id")),
        branched(
            42,
            "orphan",
            last(thought(43, "branched from a thought that does not exist")),
        ),
        continuing(
            "never-opened",
            thought(6, "names a branch that never opened"),
        ),
        last(revising(
            99,
            thought(7, "revises a thought that does not exist"),
        )),
    ])
}

/// Strings that are syntax in mermaid or markdown, or otherwise odd.
pub(crate) const NASTY: &[&str] = &[
    "end",
    "END",
    "graph TD",
    "subgraph",
    "%%{init: {'theme':'dark'}}%%",
    "---\ntitle: x\n---",
    "click T1 call alert()",
    "A-->B",
    "A---oB",
    "x --> end",
    "\"]]]\"",
    "[[(({{}}))]]",
    "#quot;",
    "#35;",
    "#9829;",
    "&lt;&gt;&amp;",
    "<b>bold</b><br/>",
    "a;b;c",
    "\"`**md**`\"",
    "\\\"",
    "|x|",
    "T1",
    "style T1 fill:#f00",
    "classDef x fill:#f9f;",
    ":::cls",
    "@{ shape: rect }",
    "\u{0}\u{7}\u{1b}[31m",
    "\u{2028}\u{2029}",
    "ﬂ°°60¶ß ﬂ°38¶ß",
    "   ",
    "",
    "e\u{301} combining",
    "🌿\u{200d}🔥",
    "a\r\nb\rc\nd",
    "-.revises.->",
    "==>",
];

/// One main thought per [`NASTY`] string (as its text and a tag), and a branch named by it.
pub(crate) fn nasty() -> Session {
    let mut thoughts = Vec::new();
    let mut number = 0;
    for text in NASTY {
        number += 1;
        thoughts.push(tagged(&[text], thought(number, text)));
    }
    for id in NASTY {
        number += 1;
        thoughts.push(branched(1, id, tagged(&[id], thought(number, id))));
    }
    session(thoughts)
}

/// A session with no thoughts.
pub(crate) fn empty() -> Session {
    session(Vec::new())
}

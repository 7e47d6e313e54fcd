//! The `export` tool's JSON document: the session's state, each thought in the reference
//! server's `ThoughtData` shape (camelCase) plus its ledger identity (`seq`, `recordedAt`).
//!
//! ```json
//! { "sessionId": "…", "status": "active", "startedAt": "…",
//!   "thoughts": [{ "thought": "…", "thoughtNumber": 1, "totalThoughts": 3,
//!                  "nextThoughtNeeded": true, "isRevision": false, "needsMoreThoughts": false,
//!                  "tags": [], "seq": 2, "recordedAt": "…" }],
//!   "branches": [{ "branchId": "alt", "branchFromThought": 2, "thoughts": [ … ] }] }
//! ```
//!
//! `thoughts` is the main thread; branch thoughts appear only under their branch. Optional
//! `ThoughtData` fields (`revisesThought`, `branchFromThought`, `branchId`) are left out when
//! unset, as `JSON.stringify` leaves out `undefined`; the booleans and `tags` are always present.
//! An erased text is `"thought": null` with `"textErased": true` (the key is absent otherwise).
//! Exporting one branch (`branch_id`) gives an empty `thoughts` and that branch alone.
//!
//! Must not know: MCP, the ledger, or which tool asked. Built from `serde_json::Map` directly,
//! so it cannot fail.

use serde_json::{Map, Value};

use super::{ExportOptions, SelectedBranch, Selection, select};
use crate::projections::{Session, SessionStatus, Thought};

/// The JSON document for `session`.
#[must_use]
pub fn render(session: &Session, opts: &ExportOptions) -> Value {
    let Selection { main, branches } = select(session, opts);
    let status = match session.status {
        SessionStatus::Active => "active",
        SessionStatus::Closed { .. } => "closed",
    };
    let mut doc = Map::new();
    doc.insert("sessionId".into(), session.id.as_str().into());
    doc.insert("status".into(), status.into());
    doc.insert("startedAt".into(), session.started_at.as_str().into());
    doc.insert(
        "thoughts".into(),
        main.iter().map(|(_, t)| thought(t)).collect(),
    );
    doc.insert("branches".into(), branches.iter().map(branch).collect());
    Value::Object(doc)
}

fn branch(selected: &SelectedBranch<'_>) -> Value {
    let mut out = Map::new();
    out.insert("branchId".into(), selected.branch.id.as_str().into());
    out.insert(
        "branchFromThought".into(),
        selected.branch.from_thought.into(),
    );
    out.insert(
        "thoughts".into(),
        selected.thoughts.iter().map(|(_, t)| thought(t)).collect(),
    );
    Value::Object(out)
}

fn thought(t: &Thought) -> Value {
    let mut out = Map::new();
    match t.text.as_deref() {
        Some(text) => {
            out.insert("thought".into(), text.into());
        }
        None => {
            out.insert("thought".into(), Value::Null);
            out.insert("textErased".into(), true.into());
        }
    }
    out.insert("thoughtNumber".into(), t.thought_number.into());
    out.insert("totalThoughts".into(), t.total_thoughts.into());
    out.insert("nextThoughtNeeded".into(), t.next_thought_needed.into());
    out.insert("isRevision".into(), t.is_revision.into());
    if let Some(n) = t.revises_thought {
        out.insert("revisesThought".into(), n.into());
    }
    if let Some(n) = t.branch_from_thought {
        out.insert("branchFromThought".into(), n.into());
    }
    if let Some(id) = &t.branch_id {
        out.insert("branchId".into(), id.as_str().into());
    }
    out.insert("needsMoreThoughts".into(), t.needs_more_thoughts.into());
    out.insert(
        "tags".into(),
        t.tags.iter().map(|tag| Value::from(tag.as_str())).collect(),
    );
    out.insert("seq".into(), t.seq.into());
    out.insert("recordedAt".into(), t.recorded_at.as_str().into());
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;
    use crate::projections::SessionStatus;

    fn check(name: &str, session: &Session, opts: &ExportOptions) {
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_json_snapshot!(format!("export__json_{name}"), render(session, opts));
        });
    }

    #[test]
    fn json_of_every_fixture() {
        for (name, session) in fixtures::all() {
            check(name, &session, &ExportOptions::default());
        }
    }

    #[test]
    fn json_of_one_branch() {
        let opts = ExportOptions {
            include_branches: true,
            branch_id: Some("deeper".into()),
        };
        check("branching_one_branch", &fixtures::branching(), &opts);
    }

    #[test]
    fn json_without_branches_has_an_empty_branch_list() {
        let opts = ExportOptions {
            include_branches: false,
            branch_id: None,
        };
        let doc = render(&fixtures::branching(), &opts);
        assert_eq!(doc["branches"], serde_json::json!([]));
        assert_eq!(doc["thoughts"].as_array().map(Vec::len), Some(6));
    }

    #[test]
    fn json_marks_erased_text_and_closed_sessions() {
        let mut session = fixtures::branching();
        session.head.status = SessionStatus::Closed {
            seq: 99,
            at: "later".into(),
            reason: "done".into(),
        };
        let doc = render(&session, &ExportOptions::default());
        assert_eq!(doc["status"], "closed");
        let erased = &doc["thoughts"][3];
        assert_eq!(erased["thought"], Value::Null);
        assert_eq!(erased["textErased"], true);
        assert!(doc["thoughts"][0].get("textErased").is_none());
    }
}

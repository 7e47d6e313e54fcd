//! The review tools of the `audit` family: `replay_reasoning_session` and `diff_sessions`.

use serde_json::Value;

use super::catalog::{Effect, ToolEntry, entry, render_json};
use crate::app::replay::{DiffSessionsArgs, DiffSessionsOutput, ReplayArgs, ReplayOutput};
use crate::app::{DIFF_SESSIONS_TOOL, REPLAY_REASONING_SESSION_TOOL};

/// The text block of `diff_sessions`: the unified-diff-like rendering.
fn diff_text(body: &Value) -> String {
    body.get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<ReplayArgs, ReplayOutput>(
            REPLAY_REASONING_SESSION_TOOL,
            "Replay Reasoning Session",
            "Reconstruct a session's timeline from its ledger events: every recorded call in \
             order, with when it was recorded, the tool, how it ended and what it changed \
             (thoughts, branches, tags, closes, erasures). With reexecute, every call is also \
             decided again by today's rules and compared with its recorded response digest and \
             facts: divergent calls are named, and calls that cannot be re-executed honestly \
             (erased text, omitted arguments, tools that read the log) are listed as skipped.",
            Effect::Reads,
            render_json,
        ),
        entry::<DiffSessionsArgs, DiffSessionsOutput>(
            DIFF_SESSIONS_TOOL,
            "Diff Sessions",
            "Compare two thinking sessions (e.g. two runs of the same task): main-line thoughts \
             aligned by text (added, removed, changed), branches found in only one, tag \
             changes, and whether the conclusion (the final thought with nextThoughtNeeded=false) \
             differs. Returns the diff as JSON and as unified-diff-like text (- is session_a, + \
             is session_b).",
            Effect::Reads,
            diff_text,
        ),
    ]
}
